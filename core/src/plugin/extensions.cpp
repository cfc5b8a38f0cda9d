#include "estuary/plugin/extensions.h"

#include "estuary/support/error.h"

namespace estuary {

ExtensionPoints& ExtensionPoints::global() {
  static ExtensionPoints* points = new ExtensionPoints();  // never destroyed: plugins outlive statics
  return *points;
}

void ExtensionPoints::provide(const std::string& name, void* registry) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (!registries_.emplace(name, registry).second) raise("extension point '", name, "' is provided twice");
  auto [first, last] = waiting_.equal_range(name);
  std::vector<Waiting> ready;
  for (auto it = first; it != last; ++it) ready.push_back(std::move(it->second));
  waiting_.erase(first, last);
  for (const Waiting& waiting : ready) waiting.contribution(registry, waiting.keep_alive);
}

void ExtensionPoints::contribute(const std::string& name, Contribution contribution,
                                 std::shared_ptr<const void> keep_alive) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto it = registries_.find(name);
  if (it != registries_.end()) {
    contribution(it->second, keep_alive);
    return;
  }
  waiting_.emplace(name, Waiting{std::move(keep_alive), std::move(contribution)});
}

bool ExtensionPoints::isProvided(const std::string& name) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return registries_.count(name) != 0;
}

}  // namespace estuary
