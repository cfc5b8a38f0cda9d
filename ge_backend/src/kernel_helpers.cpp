#include "estuary/ge/kernel_helpers.h"

#include <algorithm>

#include "worker_pool.h"

namespace estuary::ge {

namespace {

// Work (in cheap element-wise operations) below which a parallel region costs more than it
// saves: waking the workers takes about 1 us when they spin and 10 us when they sleep.
constexpr double kWorkPerThread = 32768;
constexpr int64_t kShardsPerThread = 4;

}  // namespace

int threadsFor(int64_t count, double cost_per_item, int max_threads) {
  if (count <= 0 || max_threads <= 1) return 1;
  const double work = static_cast<double>(count) * cost_per_item;
  const double wanted = std::floor(work / kWorkPerThread);
  return static_cast<int>(std::clamp<double>(wanted, 1, std::min<int64_t>(max_threads, count)));
}

void parallelFor(int64_t count, double cost_per_item, int max_threads,
                 const std::function<void(int64_t begin, int64_t end)>& body) {
  const int threads = threadsFor(count, cost_per_item, max_threads);
  if (threads == 1) {
    if (count > 0) body(0, count);
    return;
  }
  // A few shards per thread, taken by whichever thread is free: a thread the OS holds up
  // hands the rest of its share to the others (worker_pool.h).
  const int64_t shards = std::min<int64_t>(count, int64_t{threads} * kShardsPerThread);
  runShards(shards, threads - 1, [&](int64_t shard) {
    const int64_t begin = count * shard / shards, end = count * (shard + 1) / shards;
    if (begin < end) body(begin, end);
  });
}

}  // namespace estuary::ge
