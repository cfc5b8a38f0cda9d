// One compiled model run from many threads at once through a RunContextPool. Built into a
// binary of its own so that scripts/tsan.sh can build and run it under ThreadSanitizer.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

HostTensor host(std::vector<float>& data, std::vector<int64_t> dims) {
  return HostTensor::of(TensorDesc::of(DType::F32, dims), data.data());
}

// The threads here are the callers': each run computes on one thread, so that a
// ThreadSanitizer build sees no OpenMP workers (libgomp is not instrumented, and its
// barriers look like races to it).
BuildOptions singleThreadedRuns() {
  BuildOptions options;
  options.num_threads = 1;
  return options;
}

// One model, one pool, eight threads, rows changing from run to run (so that the runs in
// flight have different plans): every output equals, bit for bit, that of the same inputs run
// alone on a context of its own.
TEST(Runtime, OnePoolServesEightThreadsWithMixedShapes) {
  auto graph = parseGraph(R"(graph @g(%x: f32[rows,32], %w: f32[32,32]) {
  %m = MatMul(%x, %w) : f32[rows,32]
  %s = Softmax(%m) : f32[rows,32]
  return %s
})");
  auto model = CompiledModel::build(*graph, singleThreadedRuns());
  constexpr int kThreads = 8, kRuns = 150;
  const int64_t row_counts[] = {1, 3, 7, 16, 33};
  std::vector<float> weights(32 * 32);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
  auto inputFor = [&](int thread, int run) {
    int64_t rows = row_counts[(thread + run) % 5];
    std::vector<float> x(rows * 32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((thread * 131 + run * 17 + i * 7) % 97) / 31.0f;
    return x;
  };
  std::vector<std::vector<std::vector<float>>> expected(kThreads, std::vector<std::vector<float>>(kRuns));
  auto alone = model->createContext();
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRuns; ++r) {
      std::vector<float> x = inputFor(t, r);
      int64_t rows = static_cast<int64_t>(x.size() / 32);
      expected[t][r].resize(x.size());
      alone->run({host(x, {rows, 32}), host(weights, {32, 32})}, {host(expected[t][r], {rows, 32})});
    }
  }
  RunContextPool contexts(model);
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        std::vector<float> x = inputFor(t, r), out(x.size());
        int64_t rows = static_cast<int64_t>(x.size() / 32);
        contexts.run({host(x, {rows, 32}), host(weights, {32, 32})}, {host(out, {rows, 32})});
        mismatches[t] += std::memcmp(out.data(), expected[t][r].data(), out.size() * sizeof(float)) != 0;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_GE(contexts.contexts(), 1u);
  EXPECT_LE(contexts.contexts(), static_cast<size_t>(kThreads));
}

TEST(Runtime, APoolLendsEachContextToOneCallerAtATime) {
  auto graph = parseGraph(R"(graph @g(%x: f32[2]) {
  %y = Neg(%x) : f32[2]
  return %y
})");
  RunContextPool contexts(CompiledModel::build(*graph, singleThreadedRuns()));
  {
    RunContextPool::Lease first = contexts.acquire();
    RunContextPool::Lease second = contexts.acquire();
    EXPECT_NE(&*first, &*second);
    EXPECT_EQ(contexts.contexts(), 2u);
  }
  RunContextPool::Lease again = contexts.acquire();  // one given back, none made
  EXPECT_EQ(contexts.contexts(), 2u);
}

}  // namespace
}  // namespace estuary::ge
