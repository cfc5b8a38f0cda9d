#include <gtest/gtest.h>

#include <random>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

std::vector<float> randomValues(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(random);
  return values;
}

std::vector<float> runOnce(const Graph& graph, bool fuse, std::vector<std::vector<float>>& inputs,
                           size_t* fused_nodes = nullptr) {
  BuildOptions options;
  options.fuse_epilogues = fuse;
  auto model = CompiledModel::build(graph, options);
  auto context = model->createContext();
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    tensors.push_back(HostTensor::of(TensorDesc::of(model->inputs()[i].type), inputs[i].data()));
  }
  const auto& outputs = context->run(tensors);
  if (fused_nodes) *fused_nodes = model->report().fused_epilogues;
  const float* data = static_cast<const float*>(outputs[0].data);
  return std::vector<float>(data, data + outputs[0].desc().numElements());
}

void expectFusedMatchesUnfused(const char* text, size_t expected_absorbed) {
  auto graph = parseGraph(text);
  std::vector<std::vector<float>> inputs;
  for (size_t i = 0; i < graph->inputs().size(); ++i) {
    inputs.push_back(randomValues(TensorDesc::of(graph->input(i)->type()).numElements(), 11 + i));
  }
  size_t absorbed = 0;
  std::vector<float> fused = runOnce(*graph, true, inputs, &absorbed);
  std::vector<float> plain = runOnce(*graph, false, inputs);
  EXPECT_EQ(absorbed, expected_absorbed);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_NEAR(fused[i], plain[i], 1e-4f * (1 + std::abs(plain[i]))) << i;
}

TEST(EpilogueFusion, ConvWithBiasResidualAndRelu) {
  expectFusedMatchesUnfused(R"(graph @g(%x: f32[1,8,10,10], %w: f32[16,8,3,3], %r: f32[1,16,10,10]) {
  %b = Constant() {value = tensor<f32[16,1,1]> [0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, -1.4, 1.5, 1.6]} : f32[16,1,1]
  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,16,10,10]
  %cb = Add(%c, %b) : f32[1,16,10,10]
  %res = Add(%cb, %r) : f32[1,16,10,10]
  %y = Relu(%res) : f32[1,16,10,10]
  return %y
})", 3);
}

TEST(EpilogueFusion, AnInaccurateActivationStaysOutside) {
  expectFusedMatchesUnfused(R"(graph @g(%x: f32[1,8,6,6], %w: f32[8,8,1,1]) {
  %c = Conv(%x, %w) : f32[1,8,6,6]
  %y = Gelu(%c) : f32[1,8,6,6]
  return %y
})", 0);  // oneDNN's gelu post-op is 0 in the negative tail (epilogue_accuracy_test.cpp)
}

TEST(EpilogueFusion, ConvWithClipBetweenConstantBounds) {
  // ReLU6 as MobileNetV2 exports it: the bounds are constants, fused as a clip post-op.
  expectFusedMatchesUnfused(R"(graph @g(%x: f32[1,8,6,6], %w: f32[16,8,3,3]) {
  %lo = Constant() {value = tensor<f32[]> [0.0]} : f32[]
  %hi = Constant() {value = tensor<f32[]> [0.5]} : f32[]
  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,16,6,6]
  %y = Clip(%c, %lo, %hi) : f32[1,16,6,6]
  return %y
})", 1);
}

TEST(EpilogueFusion, MatMulWithResidualScaleAndSigmoid) {
  expectFusedMatchesUnfused(R"(graph @g(%a: f32[4,32], %b: f32[32,24], %r: f32[4,24]) {
  %half = Constant() {value = tensor<f32[]> [0.5]} : f32[]
  %m = MatMul(%a, %b) : f32[4,24]
  %s = Add(%r, %m) : f32[4,24]
  %h = Mul(%s, %half) : f32[4,24]
  %y = Sigmoid(%h) : f32[4,24]
  return %y
})", 3);
}

TEST(EpilogueFusion, GatedMlpSiluTimesUpProjection) {
  // Llama's MLP: silu(x W_gate) * (x W_up); the gate MatMul takes both as post-ops, the
  // product reading the up projection's result.
  expectFusedMatchesUnfused(R"(graph @g(%x: f32[2,5,16], %wg: f32[16,24], %wu: f32[16,24]) {
  %g = MatMul(%x, %wg) : f32[2,5,24]
  %s = Swish(%g) {alpha = 1.0} : f32[2,5,24]
  %u = MatMul(%x, %wu) : f32[2,5,24]
  %y = Mul(%s, %u) : f32[2,5,24]
  return %y
})", 2);
}

TEST(EpilogueFusion, AResultWithOtherUsersIsNotFused) {
  expectFusedMatchesUnfused(R"(graph @g(%a: f32[4,8], %b: f32[8,8]) {
  %m = MatMul(%a, %b) : f32[4,8]
  %y = Relu(%m) : f32[4,8]
  %z = Add(%y, %m) : f32[4,8]
  return %z
})", 0);
}

}  // namespace
}  // namespace estuary::ge
