#pragma once
// What the plans of one model, built for different input shapes, share. A weight packed into
// a kernel's layout is the same for every batch size, yet each plan made its own copy: a
// model served at batch sizes 1, 2, 4 and 8 held ResNet-50's reordered weights four times
// (546 MiB of peak RSS; with one shared copy, 200). Kept weakly: an object lives while a plan
// holds it.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace estuary::ge {

class SharedAcrossPlans {
 public:
  // The object kept under `key` while a plan still holds it; else make()'s, kept under `key`
  // from then on. Safe to call from plans built at the same time.
  std::shared_ptr<const void> getOrMake(const std::string& key,
                                        const std::function<std::shared_ptr<const void>()>& make);

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<const void>> objects_;
};

}  // namespace estuary::ge
