// One SDK session shared by many threads: graphs added, built on first use by whichever thread
// asks first, run by name and in graph order, and run asynchronously, all at once. Under
// ThreadSanitizer (scripts/tsan.sh) this is the check that the session's locking is right.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "estuary/sdk/session.h"
#include "estuary/text/parser.h"

namespace estuary::sdk {
namespace {

constexpr const char* kScale = R"(graph @scale(%x: f32[batch,8]) {
  %two = Constant() {value = tensor<f32[1]> [2.0]} : f32[1]
  %y = Mul(%x, %two) : f32[batch,8]
  return %y
})";

constexpr const char* kShift = R"(graph @shift(%x: f32[batch,8]) {
  %one = Constant() {value = tensor<f32[1]> [1.0]} : f32[1]
  %y = Add(%x, %one) : f32[batch,8]
  %r = Relu(%y) : f32[batch,8]
  return %r
})";

float expected(GraphId id, float x) { return id == 1 ? 2 * x : std::max(x + 1, 0.0f); }

TEST(Session, FourThreadsRunTwoGraphsSyncAndAsyncWhileTheyAreBuilt) {
  std::atomic<int> wrong{0};
  std::mutex mutex;
  std::condition_variable done;
  int async_done = 0;
  bool failed = false;
  // Declared after what its callbacks use, so that it is destroyed (and drains its queue) first.
  // A pipeline of core passes: the TSan build has no plugins (O2 names the fusion plugin).
  Session session({{"threads", "1"}, {"async_workers", "2"}, {"pipeline", "cse,dce"}});
  session.addGraph(1, *parseGraph(kScale));
  session.addGraph(2, *parseGraph(kShift));

  auto work = [&](int t) {
    for (int i = 0; i < 40; ++i) {
      const GraphId id = (t + i) % 2 + 1;
      const int64_t batch = 1 + (t * 7 + i) % 5;
      auto x = std::make_shared<std::vector<float>>(static_cast<size_t>(batch * 8));
      for (size_t k = 0; k < x->size(); ++k) (*x)[k] = static_cast<float>(k % 11) - 5 + t;
      const ge::HostTensor input = ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {batch, 8}), x->data());
      if (i % 3 == 0) {  // in graph order, into the caller's buffer
        std::vector<float> y(x->size());
        session.runGraph(id, {input}, {ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {batch, 8}), y.data())});
        for (size_t k = 0; k < y.size(); ++k) wrong += y[k] != expected(id, (*x)[k]);
      } else if (i % 3 == 1) {  // by name, into the session's buffers
        std::vector<NamedTensor> outputs = session.runGraph(id, {{"x", input, nullptr}});
        const float* y = static_cast<const float*>(outputs.at(0).tensor.data);
        for (size_t k = 0; k < x->size(); ++k) wrong += y[k] != expected(id, (*x)[k]);
      } else {  // asynchronously; the callback keeps the input alive
        session.runGraphAsync(id, {{"x", input, nullptr}},
                              [&, id, x](std::exception_ptr error, std::vector<NamedTensor> outputs) {
                                if (error || outputs.size() != 1) {
                                  ++wrong;
                                } else {
                                  const float* y = static_cast<const float*>(outputs[0].tensor.data);
                                  for (size_t k = 0; k < x->size(); ++k) wrong += y[k] != expected(id, (*x)[k]);
                                }
                                std::lock_guard<std::mutex> lock(mutex);
                                ++async_done;
                                done.notify_one();
                              });
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        work(t);
      } catch (const std::exception& error) {
        ADD_FAILURE() << "thread " << t << ": " << error.what();
        std::lock_guard<std::mutex> lock(mutex);
        failed = true;
        done.notify_one();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return async_done == 4 * 13 || failed; });
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace estuary::sdk
