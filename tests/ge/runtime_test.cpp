#include <gtest/gtest.h>

#include <numeric>
#include <thread>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

HostTensor host(std::vector<float>& data, std::vector<int64_t> dims) {
  return HostTensor::of(TensorDesc::of(DType::F32, dims), data.data());
}

TEST(Runtime, RunsABroadcastingChain) {
  auto graph = parseGraph(R"(graph @g(%x: f32[2,3], %b: f32[3]) {
  %s = Add(%x, %b) : f32[2,3]
  %m = Mul(%s, %s) : f32[2,3]
  %d = Sub(%m, %b) : f32[2,3]
  return %d
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  std::vector<float> x{1, 2, 3, 4, 5, 6}, b{10, 20, 30};
  const auto& outputs = context->run({host(x, {2, 3}), host(b, {3})});
  ASSERT_EQ(outputs.size(), 1u);
  const float* y = static_cast<const float*>(outputs[0].data);
  for (int i = 0; i < 6; ++i) {
    float s = x[i] + b[i % 3];
    EXPECT_FLOAT_EQ(y[i], s * s - b[i % 3]) << i;
  }
}

TEST(Runtime, ProfilingTimesEveryStepOnlyWhileOn) {
  auto graph = parseGraph(R"(graph @g(%x: f32[2,3], %b: f32[3]) {
  %s = Add(%x, %b) : f32[2,3]
  %m = Mul(%s, %s) : f32[2,3]
  return %m
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  std::vector<float> x(6, 1.0f), b(3, 2.0f);
  std::vector<HostTensor> inputs{host(x, {2, 3}), host(b, {3})};
  context->run(inputs);
  EXPECT_TRUE(context->profile().empty());  // off by default
  context->setProfiling(true);
  for (int i = 0; i < 3; ++i) context->run(inputs);
  std::vector<StepProfile> steps = context->profile();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_NE(steps[0].label.find("(Add) -> "), std::string::npos) << steps[0].label;
  EXPECT_NE(steps[1].label.find("(Mul) -> "), std::string::npos) << steps[1].label;
  for (const StepProfile& step : steps) {
    EXPECT_EQ(step.runs, 3u);
    EXPECT_GT(step.seconds, 0.0);
  }
  context->setProfiling(true);  // switching it on again starts over
  EXPECT_EQ(context->profile()[0].runs, 0u);
  context->setProfiling(false);
  context->run(inputs);
  EXPECT_TRUE(context->profile().empty());
}

TEST(Runtime, SymbolicBatchBuildsOnePlanPerShape) {
  auto graph = parseGraph(R"(graph @g(%x: f32[batch,4], %y: f32[batch,4]) {
  %s = Add(%x, %y) : f32[batch,4]
  return %s
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  for (int64_t batch : {1, 3, 1, 5}) {
    std::vector<float> x(batch * 4), y(batch * 4);
    std::iota(x.begin(), x.end(), 0.f);
    std::iota(y.begin(), y.end(), 100.f);
    const auto& outputs = context->run({host(x, {batch, 4}), host(y, {batch, 4})});
    ASSERT_EQ(outputs[0].dims[0], batch);
    const float* s = static_cast<const float*>(outputs[0].data);
    for (int64_t i = 0; i < batch * 4; ++i) EXPECT_EQ(s[i], x[i] + y[i]);
  }
}

TEST(Runtime, WrongInputsAreNamed) {
  auto graph = parseGraph(R"(graph @g(%x: f32[batch,4]) {
  %s = Add(%x, %x) : f32[batch,4]
  return %s
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  std::vector<float> data(12);
  auto message = [&](std::vector<HostTensor> inputs) {
    try {
      context->run(inputs);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({host(data, {3, 3})}), "input 'x' (#0): expected f32[batch,4], got f32[3,3]");
  EXPECT_EQ(message({}), "the model takes 1 inputs, 0 were given");
  HostTensor wrong_type = HostTensor::of(TensorDesc::of(DType::I32, {3, 4}), data.data());
  EXPECT_EQ(message({wrong_type}), "input 'x' (#0): expected f32[batch,4], got i32[3,4]");
}

TEST(Runtime, ASymbolHasOneSizeAcrossInputs) {
  auto graph = parseGraph(R"(graph @g(%x: f32[batch,4], %y: f32[batch,4]) {
  %s = Add(%x, %y) : f32[batch,4]
  return %s
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  std::vector<float> x(8), y(12);
  try {
    context->run({host(x, {2, 4}), host(y, {3, 4})});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "input 'y' (#1): dim 0 'batch' is 3, but input 'x' has batch = 2");
  }
}

TEST(Runtime, ManyThreadsShareOneModel) {
  auto graph = parseGraph(R"(graph @g(%x: f32[64,64], %y: f32[64,64]) {
  %s = Add(%x, %y) : f32[64,64]
  %p = Mul(%s, %x) : f32[64,64]
  return %p
})");
  auto model = CompiledModel::build(*graph);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto context = model->createContext();
      std::vector<float> x(64 * 64), y(64 * 64), out(64 * 64);
      for (int iteration = 0; iteration < 50; ++iteration) {
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = static_cast<float>(t + iteration) + i * 0.001f;
          y[i] = static_cast<float>(t * 7);
        }
        context->run({host(x, {64, 64}), host(y, {64, 64})}, {host(out, {64, 64})});
        for (size_t i = 0; i < x.size(); ++i) failures[t] += out[i] != (x[i] + y[i]) * x[i];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace estuary::ge
