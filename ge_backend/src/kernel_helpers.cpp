#include "estuary/ge/kernel_helpers.h"

#include <algorithm>

#include "worker_pool.h"

namespace estuary::ge {

namespace {

constexpr int64_t kShardsPerThread = 4;

}  // namespace

int threadsFor(int64_t count, double cost_per_item, int max_threads) {
  if (count <= 0 || max_threads <= 1) return 1;
  const double work = static_cast<double>(count) * cost_per_item;
  const double wanted = std::floor(work / kParallelRegionCost);
  return static_cast<int>(std::clamp<double>(wanted, 1, std::min<int64_t>(max_threads, count)));
}

int64_t maxParallelRanges(int max_threads) { return int64_t{std::max(max_threads, 1)} * kShardsPerThread; }

void parallelForRanges(int64_t count, double cost_per_item, int max_threads,
                       FunctionRef<void(int64_t range, int64_t begin, int64_t end)> body) {
  const int threads = threadsFor(count, cost_per_item, max_threads);
  if (threads == 1) {
    if (count > 0) body(0, 0, count);
    return;
  }
  // A few shards per thread, taken by whichever thread is free: a thread the OS holds up
  // hands the rest of its share to the others (worker_pool.h).
  const int64_t shards = std::min<int64_t>(count, maxParallelRanges(threads));
  runShards(shards, threads - 1, [&](int64_t shard) {
    const int64_t begin = count * shard / shards, end = count * (shard + 1) / shards;
    if (begin < end) body(shard, begin, end);
  });
}

void parallelFor(int64_t count, double cost_per_item, int max_threads,
                 FunctionRef<void(int64_t begin, int64_t end)> body) {
  parallelForRanges(count, cost_per_item, max_threads,
                    [&](int64_t, int64_t begin, int64_t end) { body(begin, end); });
}

}  // namespace estuary::ge
