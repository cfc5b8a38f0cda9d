// The worker pool the backend's own kernels share (ge_backend/src/worker_pool.h): every
// shard runs once, callers on several threads and nested calls share the workers, a body's
// exception reaches its caller, and a caller never waits for a worker that took nothing.
// And the parallel-for kernels split their work with (estuary/ge/kernel_helpers.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "estuary/ge/kernel_helpers.h"
#include "worker_pool.h"

namespace estuary::ge {
namespace {

TEST(WorkerPool, EveryShardRunsOnce) {
  for (int helpers : {0, 1, 3}) {
    std::vector<std::atomic<int>> runs(1000);
    runShards(static_cast<int64_t>(runs.size()), helpers, [&](int64_t shard) { runs[shard].fetch_add(1); });
    for (size_t shard = 0; shard < runs.size(); ++shard) {
      ASSERT_EQ(runs[shard].load(), 1) << "shard " << shard << " with " << helpers << " helpers";
    }
  }
}

TEST(WorkerPool, CallersOnManyThreadsAndNestedCallsShareTheWorkers) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int caller = 0; caller < 6; ++caller) {
    callers.emplace_back([&, caller] {
      for (int call = 0; call < 50; ++call) {
        runShards(8, 1 + caller % 3, [&](int64_t shard) {
          runShards(4, 1, [&](int64_t inner) { total.fetch_add(shard * 4 + inner + 1); });
        });
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  // Each call sums 1..32.
  EXPECT_EQ(total.load(), 6 * 50 * (32 * 33 / 2));
}

TEST(WorkerPool, TheFirstExceptionReachesTheCaller) {
  std::atomic<int> after{0};
  try {
    runShards(64, 2, [&](int64_t shard) {
      if (shard == 5) throw std::runtime_error("shard 5 failed");
      after.fetch_add(1);
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "shard 5 failed");
  }
  EXPECT_LT(after.load(), 64);
  // The pool still works.
  std::atomic<int> runs{0};
  runShards(16, 2, [&](int64_t) { runs.fetch_add(1); });
  EXPECT_EQ(runs.load(), 16);
}

// A worker held up elsewhere (here: inside another caller's long shard) does not hold up a
// call: the caller and whichever threads are free run its shards.
TEST(WorkerPool, ACallerDoesNotWaitForWorkersThatTookNothing) {
  std::atomic<bool> release{false};
  std::atomic<int> holding{0};
  std::thread holder([&] {
    runShards(2, 1, [&](int64_t) {
      holding.fetch_add(1);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  while (holding.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // A worker is inside the holder's second shard.
  std::atomic<int> runs{0};
  std::thread caller([&] { runShards(100, 1, [&](int64_t) { runs.fetch_add(1); }); });
  caller.join();
  EXPECT_EQ(runs.load(), 100);
  release = true;
  holder.join();
}

TEST(WorkerPool, ThreadsToUseStaysWithinWhatWasAsked) {
  EXPECT_EQ(threadsToUse(1), 1);
  EXPECT_EQ(threadsToUse(0), 1);
  for (int wanted : {2, 4, 64}) {
    const int threads = threadsToUse(wanted);
    EXPECT_GE(threads, 1);
    EXPECT_LE(threads, wanted);
  }
}

TEST(ParallelFor, SmallWorkRunsOnTheCallerAsOneRange) {
  EXPECT_EQ(threadsFor(1000, 1, 8), 1);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const std::thread::id caller = std::this_thread::get_id();
  bool on_caller = true;
  parallelFor(1000, 1, 8, [&](int64_t begin, int64_t end) {
    ranges.emplace_back(begin, end);
    on_caller = on_caller && std::this_thread::get_id() == caller;
  });
  EXPECT_EQ(ranges, (std::vector<std::pair<int64_t, int64_t>>{{0, 1000}}));
  EXPECT_TRUE(on_caller);
  parallelFor(0, 1e9, 8, [&](int64_t, int64_t) { FAIL() << "a range of nothing"; });
}

TEST(ParallelFor, ThreadsGrowWithTheWorkUpToTheLimit) {
  EXPECT_EQ(threadsFor(1 << 16, 1, 8), 2);
  EXPECT_EQ(threadsFor(1 << 20, 1, 8), 8);
  EXPECT_EQ(threadsFor(1 << 14, 64, 4), 4);
  EXPECT_EQ(threadsFor(3, 1e9, 8), 3);  // never more threads than items
}

// Every item once, and per-range scratch never shared by two ranges running at once.
TEST(ParallelFor, RangesCoverEveryItemOnceAndOwnTheirScratch) {
  constexpr int kThreads = 3;
  const int64_t count = 100000;
  std::vector<std::atomic<int>> visits(count);
  std::vector<std::atomic<int>> in_use(static_cast<size_t>(maxParallelRanges(kThreads)));
  std::atomic<bool> shared{false}, out_of_range{false};
  parallelForRanges(count, 64, kThreads, [&](int64_t range, int64_t begin, int64_t end) {
    if (range < 0 || range >= maxParallelRanges(kThreads)) {
      out_of_range = true;
      return;
    }
    if (in_use[range].fetch_add(1) != 0) shared = true;
    for (int64_t i = begin; i < end; ++i) visits[i].fetch_add(1);
    in_use[range].fetch_sub(1);
  });
  EXPECT_FALSE(out_of_range);
  EXPECT_FALSE(shared);
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(visits[i].load(), 1) << "item " << i;
}

}  // namespace
}  // namespace estuary::ge
