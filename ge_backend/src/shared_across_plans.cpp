#include "shared_across_plans.h"

namespace estuary::ge {

std::shared_ptr<const void> SharedAcrossPlans::getOrMake(const std::string& key,
                                                         const std::function<std::shared_ptr<const void>()>& make) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::shared_ptr<const void> kept = objects_[key].lock()) return kept;
  std::shared_ptr<const void> made = make();
  // Keys of objects no plan holds any more go, so that the map does not grow with every plan
  // a model has dropped.
  for (auto it = objects_.begin(); it != objects_.end();) it = it->second.expired() ? objects_.erase(it) : ++it;
  objects_[key] = made;
  return made;
}

}  // namespace estuary::ge
