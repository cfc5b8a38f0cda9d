#pragma once
// Registries that live outside the core library (the GE backend's kernels, later the
// frontends') reach plugins through named extension points: the library owning a registry
// provides it under a name, and a plugin's registrar contributes to it by that name. A
// contribution made before the owner provides its registry waits and runs as soon as it does.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace estuary {

class ExtensionPoints {
 public:
  // Receives the registry (the owner documents its type) and the contributing plugin's
  // keep-alive handle, to attach to whatever it registers.
  using Contribution = std::function<void(void* registry, const std::shared_ptr<const void>& keep_alive)>;

  static ExtensionPoints& global();

  // Makes `registry` available under `name` and runs the contributions waiting for it.
  // Raises an Error if `name` is already provided.
  void provide(const std::string& name, void* registry);
  // Runs `contribution` now if `name` is provided, else when it is.
  void contribute(const std::string& name, Contribution contribution, std::shared_ptr<const void> keep_alive);
  bool isProvided(const std::string& name) const;

 private:
  struct Waiting {
    std::shared_ptr<const void> keep_alive;  // first: destroyed after the contribution
    Contribution contribution;
  };
  mutable std::recursive_mutex mutex_;
  std::map<std::string, void*> registries_;
  std::multimap<std::string, Waiting> waiting_;
};

}  // namespace estuary
