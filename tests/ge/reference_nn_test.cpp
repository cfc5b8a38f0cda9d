// The reference device's neural-network kernels (conv, pooling, matrix products,
// normalizations, attention): cases worked out by hand from the ONNX specification, and
// seeded random inputs checked against the CPU device.
#include <cmath>
#include <string>
#include <vector>

#include "estuary/ge/device.h"
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

const Device& reference() { return deviceNamed("reference"); }
const Device& cpu() { return deviceNamed("cpu"); }

// A one-node graph over inputs %x0, %x1, ... whose results %y0, %y1, ... are returned; `call`
// is the node, e.g. "Conv(%x0, %x1) {group = 2}".
std::string graphOf(const std::vector<TestTensor>& inputs, const std::string& call, int outputs = 1) {
  std::string text = "graph @g(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    text += (i ? ", %x" : "%x") + std::to_string(i) + ": " + inputs[i].type();
  }
  std::string results;
  for (int o = 0; o < outputs; ++o) results += (o ? ", %y" : "%y") + std::to_string(o);
  return text + ") {\n  " + results + " = " + call + "\n  return " + results + "\n}";
}

// "Op(%x0, %x1, ...)" with `count` operands, then " {attrs}" unless attrs is empty.
std::string callOf(const std::string& op, size_t count, const std::string& attrs = "") {
  std::string call = op + "(";
  for (size_t i = 0; i < count; ++i) call += (i ? ", %x" : "%x") + std::to_string(i);
  return call + ")" + (attrs.empty() ? "" : " {" + attrs + "}");
}

RunResult runReference(const std::string& text, const std::vector<TestTensor>& inputs) {
  RunResult result = runGraph(text, inputs, 1, reference());
  for (const std::string& line : result.kernels) {
    EXPECT_NE(line.find("reference:"), std::string::npos) << line;
  }
  return result;
}

// Seeded inputs: uniform in [-1, 1] for floats, small whole numbers for integers.
TestTensor inputOf(DType dtype, std::vector<int64_t> dims, uint32_t seed) {
  return isFloatingPoint(dtype) ? randomTensor(dtype, std::move(dims), seed) : sampleTensor(dtype, std::move(dims), seed);
}

// Reference and CPU agree on every output: within a few roundings of the element type for
// f32 (the CPU device accumulates in f32), tightly for f64, exactly for integers.
double toleranceOf(DType dtype) {
  switch (dtype) {
    case DType::F32: return 2e-5;
    case DType::F64: return 1e-11;
    default: return 0;
  }
}

void expectMatchesCpu(const std::string& text, const std::vector<TestTensor>& inputs, const std::string& what,
                      double scale = 1) {
  SCOPED_TRACE(what + "\n" + text);
  RunResult expected = runGraph(text, inputs, 2, cpu());
  RunResult actual = runReference(text, inputs);
  ASSERT_EQ(actual.outputs.size(), expected.outputs.size());
  for (size_t o = 0; o < actual.outputs.size(); ++o) {
    EXPECT_EQ(actual.outputs[o].dims, expected.outputs[o].dims) << "output " << o;
    const double tolerance = toleranceOf(actual.outputs[o].dtype) * scale;
    expectNear(actual.outputs[o], expected.outputs[o].values, tolerance, tolerance,
               what + " output " + std::to_string(o) + " (cpu: " + expected.kernels.at(0) + ")");
  }
}

// ---------------------------------------------------------------------------- Coverage

TEST(ReferenceNnKernels, EveryNnOpHasAReferenceKernel) {
  for (const char* op : {"Attention", "AveragePool", "BatchNormalization", "Conv", "ConvTranspose", "Einsum", "Gemm",
                         "GlobalAveragePool", "GlobalMaxPool", "GroupNormalization", "InstanceNormalization",
                         "LayerNormalization", "MatMul", "MaxPool", "RMSNormalization", "RotaryEmbedding"}) {
    EXPECT_TRUE(reference().kernels().has(op)) << op;
  }
}

// -------------------------------------------------------------------------------- Conv

TEST(ReferenceNnConv, HandWorkedCases) {
  // 3x3 image 1..9, 2x2 kernel of ones: each output sums a 2x2 block; bias 0.5.
  TestTensor x = tensorOf(DType::F32, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  TestTensor w = tensorOf(DType::F32, {1, 1, 2, 2}, {1, 1, 1, 1});
  TestTensor b = tensorOf(DType::F32, {1}, {0.5});
  RunResult run = runReference(graphOf({x, w, b}, callOf("Conv", 3)), {x, w, b});
  expectNear(run.outputs[0], {12.5, 16.5, 24.5, 28.5}, 0, 0, "Conv 2x2");
  // Stride 2 and padding 1: windows start at -1 and 1; taps in the padding read 0.
  run = runReference(graphOf({x, w}, callOf("Conv", 2, "pads = [1, 1, 1, 1], strides = [2, 2]")), {x, w});
  expectNear(run.outputs[0], {1, 5, 11, 28}, 0, 0, "Conv strided, padded");
  // Dilation 2 in 1-D: y[o] = x[o] - x[o + 2] for kernel [1, -1].
  TestTensor x1 = tensorOf(DType::F64, {1, 1, 5}, {1, 4, 9, 16, 25});
  TestTensor w1 = tensorOf(DType::F64, {1, 1, 2}, {1, -1});
  run = runReference(graphOf({x1, w1}, callOf("Conv", 2, "dilations = [2]")), {x1, w1});
  expectNear(run.outputs[0], {-8, -12, -16}, 0, 0, "Conv dilated");
  // Two groups of one channel each: channel 0 scaled by 2, channel 1 by 3.
  TestTensor x2 = tensorOf(DType::F32, {1, 2, 2}, {1, 2, 3, 4});
  TestTensor w2 = tensorOf(DType::F32, {2, 1, 1}, {2, 3});
  run = runReference(graphOf({x2, w2}, callOf("Conv", 2, "group = 2")), {x2, w2});
  expectNear(run.outputs[0], {2, 4, 9, 12}, 0, 0, "Conv grouped");
  // SAME_UPPER, 1-D, 4 inputs, kernel 2, stride 1: total padding 1 goes at the end.
  TestTensor x3 = tensorOf(DType::F32, {1, 1, 4}, {1, 2, 3, 4});
  TestTensor w3 = tensorOf(DType::F32, {1, 1, 2}, {1, 10});
  run = runReference(graphOf({x3, w3}, callOf("Conv", 2, "auto_pad = \"SAME_UPPER\"")), {x3, w3});
  expectNear(run.outputs[0], {21, 32, 43, 4}, 0, 0, "Conv SAME_UPPER");
  run = runReference(graphOf({x3, w3}, callOf("Conv", 2, "auto_pad = \"SAME_LOWER\"")), {x3, w3});
  expectNear(run.outputs[0], {10, 21, 32, 43}, 0, 0, "Conv SAME_LOWER");
}

TEST(ReferenceNnConv, MatchesCpuOnRandomInputs) {
  struct Case {
    std::vector<int64_t> x, w;
    std::string attrs;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 4, 9}, {6, 2, 3}, "group = 2, strides = [2], pads = [1, 2]", true},
      {{1, 3, 7, 8}, {4, 3, 3, 2}, "dilations = [2, 1], pads = [1, 0, 2, 1]", false},
      {{2, 6, 6, 5}, {6, 1, 3, 3}, "group = 6, strides = [2, 2], auto_pad = \"SAME_UPPER\"", true},
      {{1, 4, 6, 5}, {2, 4, 2, 3}, "auto_pad = \"SAME_LOWER\", strides = [2, 1]", true},
      {{1, 2, 5, 6}, {3, 2, 3, 3}, "auto_pad = \"VALID\", strides = [1, 2]", false},
      {{1, 4, 4, 5, 6}, {4, 2, 2, 3, 2}, "group = 2, pads = [1, 0, 1, 0, 1, 1], strides = [1, 2, 1]", true},
      {{1, 3, 5, 5, 4}, {2, 3, 3, 2, 2}, "dilations = [1, 2, 1], auto_pad = \"SAME_UPPER\"", false},
  };
  uint32_t seed = 1;
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Case& c : cases) {
      std::vector<TestTensor> inputs{inputOf(dtype, c.x, seed), inputOf(dtype, c.w, seed + 1)};
      if (c.bias) inputs.push_back(inputOf(dtype, {c.w[0]}, seed + 2));
      seed += 3;
      expectMatchesCpu(graphOf(inputs, callOf("Conv", inputs.size(), c.attrs)), inputs, "Conv " + c.attrs);
    }
  }
}

TEST(ReferenceNnConv, ResNetSizedF64LayerTakesSeconds) {
  // 64 -> 64 channels, 3x3, on 56x56: 115M multiply-adds.
  TestTensor x = inputOf(DType::F64, {1, 64, 56, 56}, 1), w = inputOf(DType::F64, {64, 64, 3, 3}, 2);
  expectMatchesCpu(graphOf({x, w}, callOf("Conv", 2, "pads = [1, 1, 1, 1]")), {x, w}, "Conv ResNet layer");
}

TEST(ReferenceNnConvTranspose, HandWorkedCases) {
  // Each input element scatters its kernel at stride 2: [1, 1, 1] at 0 and [2, 2, 2] at 2.
  TestTensor x = tensorOf(DType::F32, {1, 1, 2}, {1, 2});
  TestTensor w = tensorOf(DType::F32, {1, 1, 3}, {1, 1, 1});
  RunResult run = runReference(graphOf({x, w}, callOf("ConvTranspose", 2, "strides = [2]")), {x, w});
  expectNear(run.outputs[0], {1, 1, 3, 2, 2}, 0, 0, "ConvTranspose stride 2");
  // Pads crop the full output [1, 1, 3, 2, 2] by one at the start; output_padding adds one
  // position (0) at the end.
  run = runReference(graphOf({x, w}, callOf("ConvTranspose", 2, "strides = [2], pads = [1, 0], output_padding = [1]")),
                     {x, w});
  expectNear(run.outputs[0], {1, 3, 2, 2, 0}, 0, 0, "ConvTranspose pads and output_padding");
  // output_shape = [4]: total padding 1, which (not SAME_UPPER) goes at the start.
  run = runReference(graphOf({x, w}, callOf("ConvTranspose", 2, "strides = [2], output_shape = [4]")), {x, w});
  expectNear(run.outputs[0], {1, 3, 2, 2}, 0, 0, "ConvTranspose output_shape");
  // SAME_UPPER: output 2 * 2 = 4, the padding element at the end.
  run = runReference(graphOf({x, w}, callOf("ConvTranspose", 2, "strides = [2], auto_pad = \"SAME_UPPER\"")), {x, w});
  expectNear(run.outputs[0], {1, 1, 3, 2}, 0, 0, "ConvTranspose SAME_UPPER");
  // Two groups, W [C=2, M/group=1, 1]: channel c scaled by W[c] into output channel c; bias.
  TestTensor x2 = tensorOf(DType::F64, {1, 2, 2}, {1, 2, 3, 4});
  TestTensor w2 = tensorOf(DType::F64, {2, 1, 1}, {2, 3});
  TestTensor b2 = tensorOf(DType::F64, {2}, {1, -1});
  run = runReference(graphOf({x2, w2, b2}, callOf("ConvTranspose", 3, "group = 2")), {x2, w2, b2});
  expectNear(run.outputs[0], {3, 5, 8, 11}, 0, 0, "ConvTranspose grouped");
}

TEST(ReferenceNnConvTranspose, MatchesCpuOnRandomInputs) {
  struct Case {
    std::vector<int64_t> x, w;
    std::string attrs;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 2, 4}, {2, 3, 3}, "strides = [2], pads = [1, 0], output_padding = [1]", true},
      {{2, 4, 3, 3}, {4, 1, 3, 2}, "group = 2, strides = [2, 3], dilations = [1, 2]", true},
      {{1, 2, 3, 4}, {2, 2, 3, 3}, "strides = [2, 2], output_shape = [7, 8]", false},
      {{1, 2, 3, 3}, {2, 3, 3, 3}, "strides = [2, 2], auto_pad = \"SAME_UPPER\"", false},
      {{1, 2, 3, 3}, {2, 3, 2, 2}, "strides = [2, 2], auto_pad = \"SAME_LOWER\"", true},
      {{1, 2, 2, 3, 2}, {2, 2, 2, 2, 3}, "strides = [2, 1, 2], pads = [0, 1, 1, 1, 0, 0]", true},
  };
  uint32_t seed = 100;
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Case& c : cases) {
      std::vector<TestTensor> inputs{inputOf(dtype, c.x, seed), inputOf(dtype, c.w, seed + 1)};
      const int64_t group = c.attrs.find("group = 2") != std::string::npos ? 2 : 1;
      if (c.bias) inputs.push_back(inputOf(dtype, {c.w[1] * group}, seed + 2));
      seed += 3;
      expectMatchesCpu(graphOf(inputs, callOf("ConvTranspose", inputs.size(), c.attrs)), inputs,
                       "ConvTranspose " + c.attrs);
    }
  }
}

// ----------------------------------------------------------------------------- Pooling

TEST(ReferenceNnPool, MaxPoolHandWorkedCases) {
  TestTensor x = tensorOf(DType::F32, {1, 1, 4, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  RunResult run = runReference(graphOf({x}, callOf("MaxPool", 1, "kernel_shape = [2, 2], strides = [2, 2]"), 2), {x});
  expectNear(run.outputs[0], {5, 7, 13, 15}, 0, 0, "MaxPool");
  expectNear(run.outputs[1], {5, 7, 13, 15}, 0, 0, "MaxPool Indices");
  // Column-major indices: element (h, w) is h + w * 4.
  run = runReference(graphOf({x}, callOf("MaxPool", 1, "kernel_shape = [2, 2], storage_order = 1, strides = [2, 2]"), 2),
                     {x});
  expectNear(run.outputs[1], {5, 13, 7, 15}, 0, 0, "MaxPool Indices, storage_order 1");
  // ceil_mode keeps the last, partial window [4]; a NaN wins its window; the index counts
  // the batch and channel planes before it.
  TestTensor y = tensorOf(DType::F64, {1, 2, 5}, {1, 3, 2, 5, 4, 1, NAN, 2, 0, -1});
  run = runReference(graphOf({y}, callOf("MaxPool", 1, "ceil_mode = 1, kernel_shape = [2], strides = [2]"), 2), {y});
  expectNear(run.outputs[0], {3, 5, 4, NAN, 2, -1}, 0, 0, "MaxPool ceil_mode");
  expectNear(run.outputs[1], {1, 3, 4, 6, 7, 9}, 0, 0, "MaxPool ceil_mode Indices");
  // Dilation 2 with padding 1: window o covers positions o - 1 and o + 1.
  TestTensor z = tensorOf(DType::I8, {1, 1, 4}, {4, -3, 7, 1});
  run = runReference(graphOf({z}, callOf("MaxPool", 1, "dilations = [2], kernel_shape = [2], pads = [1, 1]")), {z});
  expectNear(run.outputs[0], {-3, 7, 1, 7}, 0, 0, "MaxPool dilated i8");
}

TEST(ReferenceNnPool, AveragePoolHandWorkedCases) {
  TestTensor x = tensorOf(DType::F32, {1, 1, 5}, {1, 2, 3, 4, 5});
  // Windows [-1, 1], [1, 3], [3, 5]: padding excluded from the count, or included.
  RunResult run = runReference(graphOf({x}, callOf("AveragePool", 1, "kernel_shape = [3], pads = [1, 1], strides = [2]")),
                               {x});
  expectNear(run.outputs[0], {1.5, 3, 4.5}, 0, 0, "AveragePool");
  run = runReference(
      graphOf({x}, callOf("AveragePool", 1, "count_include_pad = 1, kernel_shape = [3], pads = [1, 1], strides = [2]")), {x});
  expectNear(run.outputs[0], {1, 3, 3}, 1e-7, 0, "AveragePool count_include_pad");
  // ceil_mode: the last window [4, 5] holds only x[4]; positions past the padded input never
  // count, even with count_include_pad.
  run = runReference(
      graphOf({x}, callOf("AveragePool", 1, "ceil_mode = 1, count_include_pad = 1, kernel_shape = [2], strides = [2]")), {x});
  expectNear(run.outputs[0], {1.5, 3.5, 5}, 0, 0, "AveragePool ceil_mode");
  // 2-D, SAME_UPPER on 3x3 with a 2x2 kernel: one padding row and column at the end.
  TestTensor y = tensorOf(DType::F64, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  run = runReference(graphOf({y}, callOf("AveragePool", 1, "auto_pad = \"SAME_UPPER\", kernel_shape = [2, 2]")), {y});
  expectNear(run.outputs[0], {3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9}, 1e-15, 0, "AveragePool SAME_UPPER");
}

TEST(ReferenceNnPool, GlobalPoolsHandWorked) {
  TestTensor x = tensorOf(DType::F32, {1, 2, 2, 2}, {1, 2, 3, 6, -1, -2, -3, -6});
  RunResult run = runReference(graphOf({x}, callOf("GlobalAveragePool", 1)), {x});
  EXPECT_EQ(run.outputs[0].dims, (std::vector<int64_t>{1, 2, 1, 1}));
  expectNear(run.outputs[0], {3, -3}, 0, 0, "GlobalAveragePool");
  run = runReference(graphOf({x}, callOf("GlobalMaxPool", 1)), {x});
  expectNear(run.outputs[0], {6, -1}, 0, 0, "GlobalMaxPool");
}

TEST(ReferenceNnPool, MatchesCpuOnRandomInputs) {
  struct Case {
    std::vector<int64_t> x;
    std::string attrs;
  };
  const std::vector<Case> max_cases = {
      {{1, 2, 7}, "ceil_mode = 1, kernel_shape = [3], pads = [1, 1], strides = [2]"},
      {{2, 3, 7, 6}, "dilations = [1, 2], kernel_shape = [3, 2], pads = [1, 0, 1, 1], strides = [2, 2]"},
      {{1, 2, 6, 7}, "ceil_mode = 1, kernel_shape = [2, 3], strides = [2, 2]"},
      {{1, 2, 5, 5}, "auto_pad = \"SAME_UPPER\", kernel_shape = [3, 3], strides = [2, 2]"},
      {{1, 2, 5, 6}, "auto_pad = \"SAME_LOWER\", kernel_shape = [2, 3], strides = [2, 2]"},
      {{1, 1, 4, 5, 6}, "kernel_shape = [2, 2, 3], pads = [0, 1, 1, 1, 0, 1], strides = [2, 2, 2]"},
  };
  uint32_t seed = 200;
  for (DType dtype : {DType::F32, DType::F64, DType::I8, DType::U8}) {
    for (const Case& c : max_cases) {
      TestTensor x = inputOf(dtype, c.x, seed++);
      expectMatchesCpu(graphOf({x}, callOf("MaxPool", 1, c.attrs)), {x}, "MaxPool " + c.attrs);
    }
  }
  // Indices where the maximum is unique (random floats), in both storage orders.
  for (const Case& c : max_cases) {
    TestTensor x = inputOf(DType::F32, c.x, seed++);
    expectMatchesCpu(graphOf({x}, callOf("MaxPool", 1, c.attrs), 2), {x}, "MaxPool Indices " + c.attrs);
    expectMatchesCpu(graphOf({x}, callOf("MaxPool", 1, c.attrs + ", storage_order = 1"), 2), {x},
                     "MaxPool Indices column-major " + c.attrs);
  }
  const std::vector<Case> average_cases = {
      {{1, 2, 7}, "ceil_mode = 1, kernel_shape = [3], pads = [1, 1], strides = [2]"},
      {{2, 3, 7, 6}, "kernel_shape = [3, 2], pads = [1, 0, 1, 1], strides = [2, 2]"},
      {{1, 2, 6, 7}, "ceil_mode = 1, kernel_shape = [2, 3], pads = [1, 1, 0, 1], strides = [2, 2]"},
      {{1, 2, 5, 5}, "auto_pad = \"SAME_LOWER\", kernel_shape = [3, 3], strides = [2, 2]"},
      {{1, 2, 8, 8}, "dilations = [2, 2], kernel_shape = [2, 2], pads = [1, 1, 1, 1]"},
      {{1, 1, 4, 5, 6}, "kernel_shape = [2, 2, 3], pads = [0, 1, 1, 1, 0, 1], strides = [2, 2, 2]"},
  };
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const Case& c : average_cases) {
      for (const char* count : {"count_include_pad = 0", "count_include_pad = 1"}) {
        TestTensor x = inputOf(dtype, c.x, seed++);
        const std::string attrs = c.attrs + ", " + count;
        expectMatchesCpu(graphOf({x}, callOf("AveragePool", 1, attrs)), {x}, "AveragePool " + attrs);
      }
    }
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 7}, std::vector<int64_t>{2, 3, 5, 6},
                                               std::vector<int64_t>{1, 2, 3, 4, 5}}) {
        TestTensor x = inputOf(dtype, dims, seed++);
        expectMatchesCpu(graphOf({x}, callOf(op, 1)), {x}, op);
      }
    }
  }
}

// ------------------------------------------------------------------------ Normalization

TEST(ReferenceNnNormalization, HandWorkedCases) {
  // BatchNormalization (inference): (x - mean) / sqrt(var + eps) * scale + B with var + eps = 4.
  TestTensor x = tensorOf(DType::F32, {1, 2, 2}, {1, 3, 5, 9});
  TestTensor scale = tensorOf(DType::F32, {2}, {2, 1}), bias = tensorOf(DType::F32, {2}, {0, 1});
  TestTensor mean = tensorOf(DType::F32, {2}, {1, 5}), var = tensorOf(DType::F32, {2}, {3.5, 3.5});
  RunResult run = runReference(graphOf({x, scale, bias, mean, var}, callOf("BatchNormalization", 5, "epsilon = 0.5")),
                               {x, scale, bias, mean, var});
  expectNear(run.outputs[0], {0, 2, 1, 3}, 1e-7, 0, "BatchNormalization");
  // Training mode: channel 0 holds {1, 3}: mean 2, variance 1; channel 1 {5, 9}: 7, 4.
  // running = input * 0.5 + batch * 0.5.
  run = runReference(graphOf({x, scale, bias, mean, var},
                             callOf("BatchNormalization", 5, "epsilon = 0.0, momentum = 0.5, training_mode = 1"), 3),
                     {x, scale, bias, mean, var});
  expectNear(run.outputs[0], {-2, 2, 0, 2}, 1e-7, 0, "BatchNormalization training Y");
  expectNear(run.outputs[1], {1.5, 6}, 1e-7, 0, "running_mean");
  expectNear(run.outputs[2], {2.25, 3.75}, 1e-7, 0, "running_var");
  // InstanceNormalization: each (n, c) row normalized alone; {1, 3} -> {-1, 1}.
  TestTensor s1 = tensorOf(DType::F64, {2}, {1, 2}), b1 = tensorOf(DType::F64, {2}, {0, 10});
  TestTensor x64 = tensorOf(DType::F64, {1, 2, 2}, {1, 3, 5, 9});
  run = runReference(graphOf({x64, s1, b1}, callOf("InstanceNormalization", 3, "epsilon = 0.0")), {x64, s1, b1});
  expectNear(run.outputs[0], {-1, 1, 8, 12}, 1e-12, 0, "InstanceNormalization");
  // GroupNormalization with one group over both channels: mean 4.5, variance 8.75.
  run = runReference(graphOf({x64, s1, b1}, callOf("GroupNormalization", 3, "epsilon = 0.0, num_groups = 1")),
                     {x64, s1, b1});
  const double sd = std::sqrt(8.75);
  expectNear(run.outputs[0], {-3.5 / sd, -1.5 / sd, 2 * 0.5 / sd + 10, 2 * 4.5 / sd + 10}, 1e-12, 0,
             "GroupNormalization");
  // LayerNormalization over the last axis, with Mean and InvStdDev: rows {1, 3}, {5, 9}.
  TestTensor ls = tensorOf(DType::F64, {2}, {1, 2}), lb = tensorOf(DType::F64, {2}, {0, 1});
  TestTensor rows = tensorOf(DType::F64, {2, 2}, {1, 3, 5, 9});
  run = runReference(graphOf({rows, ls, lb}, callOf("LayerNormalization", 3, "epsilon = 0.0"), 3), {rows, ls, lb});
  expectNear(run.outputs[0], {-1, 3, -1, 3}, 1e-12, 0, "LayerNormalization");
  EXPECT_EQ(run.outputs[1].dtype, DType::F32);  // stash_type's default
  EXPECT_EQ(run.outputs[1].dims, (std::vector<int64_t>{2, 1}));
  expectNear(run.outputs[1], {2, 7}, 0, 0, "LayerNormalization Mean");
  expectNear(run.outputs[2], {1, 0.5}, 0, 0, "LayerNormalization InvStdDev");
  // RMSNormalization: x / sqrt(mean(x^2) + eps); rows {3, 4} (mean square 12.5) and {1, 1}.
  TestTensor rms = tensorOf(DType::F64, {2, 2}, {3, 4, 1, 1});
  TestTensor rs = tensorOf(DType::F64, {2}, {1, 2});
  run = runReference(graphOf({rms, rs}, callOf("RMSNormalization", 2, "epsilon = 0.0")), {rms, rs});
  const double r = std::sqrt(12.5);
  expectNear(run.outputs[0], {3 / r, 8 / r, 1, 2}, 1e-12, 0, "RMSNormalization");
}

TEST(ReferenceNnNormalization, MatchesCpuOnRandomInputs) {
  uint32_t seed = 300;
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const std::vector<int64_t>& dims :
         {std::vector<int64_t>{2, 4, 3, 5}, std::vector<int64_t>{3, 4}, std::vector<int64_t>{1, 4, 2, 3, 2}}) {
      const int64_t channels = dims[1];
      TestTensor x = randomTensor(dtype, dims, seed++, -2, 2);
      TestTensor scale = inputOf(dtype, {channels}, seed++), bias = inputOf(dtype, {channels}, seed++);
      TestTensor mean = inputOf(dtype, {channels}, seed++), var = randomTensor(dtype, {channels}, seed++, 0.1, 2);
      const std::vector<TestTensor> inputs{x, scale, bias, mean, var};
      expectMatchesCpu(graphOf(inputs, callOf("BatchNormalization", 5, "epsilon = 0.001")), inputs,
                       "BatchNormalization " + x.type());
      expectMatchesCpu(graphOf(inputs, callOf("BatchNormalization", 5, "momentum = 0.8, training_mode = 1"), 3), inputs,
                       "BatchNormalization training " + x.type());
      if (dims.size() > 2) {
        expectMatchesCpu(graphOf({x, scale, bias}, callOf("InstanceNormalization", 3)), {x, scale, bias},
                         "InstanceNormalization " + x.type());
      }
      expectMatchesCpu(graphOf({x, scale, bias}, callOf("GroupNormalization", 3, "num_groups = 2")), {x, scale, bias},
                       "GroupNormalization " + x.type());
    }
    TestTensor x = randomTensor(dtype, {2, 3, 4, 6}, seed++, -2, 2);
    for (int64_t axis : {-1, 2, 1}) {
      std::vector<int64_t> normalized(x.dims.begin() + (axis < 0 ? axis + 4 : axis), x.dims.end());
      TestTensor scale = inputOf(dtype, normalized, seed++), bias = inputOf(dtype, normalized, seed++);
      const std::string attrs = "axis = " + std::to_string(axis);
      expectMatchesCpu(graphOf({x, scale, bias}, callOf("LayerNormalization", 3, attrs), 3), {x, scale, bias},
                       "LayerNormalization " + attrs);
      expectMatchesCpu(graphOf({x, scale}, callOf("LayerNormalization", 2, attrs + ", stash_type = f64")), {x, scale},
                       "LayerNormalization without B " + attrs);
      expectMatchesCpu(graphOf({x, scale}, callOf("RMSNormalization", 2, attrs)), {x, scale},
                       "RMSNormalization " + attrs);
    }
    // Scale broadcast along the normalized axes.
    TestTensor scale = inputOf(dtype, {1, 6}, seed++);
    expectMatchesCpu(graphOf({x, scale}, callOf("LayerNormalization", 2, "axis = 2")), {x, scale},
                     "LayerNormalization broadcast scale");
    expectMatchesCpu(graphOf({x, scale}, callOf("RMSNormalization", 2, "axis = 2")), {x, scale},
                     "RMSNormalization broadcast scale");
  }
}

// ------------------------------------------------------------------- MatMul, Gemm, Einsum

TEST(ReferenceNnMatMul, HandWorkedCases) {
  TestTensor a = tensorOf(DType::F32, {2, 2}, {1, 2, 3, 4}), b = tensorOf(DType::F32, {2, 2}, {5, 6, 7, 8});
  RunResult run = runReference(graphOf({a, b}, callOf("MatMul", 2)), {a, b});
  expectNear(run.outputs[0], {19, 22, 43, 50}, 0, 0, "MatMul");
  // 1-D A is a row (the added axis is dropped), 1-D B a column, both 1-D a dot product.
  TestTensor v = tensorOf(DType::I64, {2}, {1, -1}), m = tensorOf(DType::I64, {2, 2}, {1, 2, 3, 4});
  run = runReference(graphOf({v, m}, callOf("MatMul", 2)), {v, m});
  EXPECT_EQ(run.outputs[0].dims, (std::vector<int64_t>{2}));
  expectNear(run.outputs[0], {-2, -2}, 0, 0, "MatMul 1-D A");
  run = runReference(graphOf({m, v}, callOf("MatMul", 2)), {m, v});
  expectNear(run.outputs[0], {-1, -1}, 0, 0, "MatMul 1-D B");
  run = runReference(graphOf({v, v}, callOf("MatMul", 2)), {v, v});
  EXPECT_EQ(run.outputs[0].dims, (std::vector<int64_t>{}));
  expectNear(run.outputs[0], {2}, 0, 0, "MatMul 1-D both");
  // Batch broadcasting: A [2, 1, 2] times B [2, 2]: each batch row times B.
  TestTensor batched = tensorOf(DType::I32, {2, 1, 2}, {1, 0, 0, 1}), square = tensorOf(DType::I32, {2, 2}, {1, 2, 3, 4});
  run = runReference(graphOf({batched, square}, callOf("MatMul", 2)), {batched, square});
  expectNear(run.outputs[0], {1, 2, 3, 4}, 0, 0, "MatMul broadcast");
}

TEST(ReferenceNnMatMul, MatchesCpuOnRandomInputs) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{3, 4}, {4, 5}},          {{4}, {4, 5}},          {{3, 4}, {4}},       {{4}, {4}},
      {{2, 1, 3, 4}, {5, 4, 2}}, {{2, 3, 4}, {4, 5}},    {{7}, {2, 7, 3}},    {{2, 3, 0}, {0, 4}},
      {{1, 3, 17, 33}, {2, 1, 33, 9}},
  };
  uint32_t seed = 400;
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    for (const auto& [a_dims, b_dims] : shapes) {
      TestTensor a = inputOf(dtype, a_dims, seed++), b = inputOf(dtype, b_dims, seed++);
      expectMatchesCpu(graphOf({a, b}, callOf("MatMul", 2)), {a, b}, "MatMul " + a.type() + " x " + b.type());
    }
  }
}

TEST(ReferenceNnGemm, HandWorkedCases) {
  // Y = 2 * A^T B + 0.5 * C with C [2] broadcast along rows.
  TestTensor a = tensorOf(DType::F32, {2, 2}, {1, 3, 2, 4}), b = tensorOf(DType::F32, {2, 2}, {5, 6, 7, 8});
  TestTensor c = tensorOf(DType::F32, {2}, {2, 4});
  RunResult run = runReference(graphOf({a, b, c}, callOf("Gemm", 3, "alpha = 2.0, beta = 0.5, transA = 1")), {a, b, c});
  expectNear(run.outputs[0], {39, 46, 87, 102}, 0, 0, "Gemm transA");
  // transB with C [2, 1] broadcast along columns.
  TestTensor bt = tensorOf(DType::F32, {2, 2}, {5, 7, 6, 8}), column = tensorOf(DType::F32, {2, 1}, {1, -1});
  run = runReference(graphOf({a, bt, column}, callOf("Gemm", 3, "transB = 1")), {a, bt, column});
  expectNear(run.outputs[0], {1 * 5 + 3 * 7 + 1, 1 * 6 + 3 * 8 + 1, 2 * 5 + 4 * 7 - 1, 2 * 6 + 4 * 8 - 1}, 0, 0,
             "Gemm transB");
  // Integers: the product scaled in double and truncated toward zero, as the ONNX reference
  // computes it: 0.5 * [19, 22, 43, 50] + 1 * [0, 0, 0, -1] -> [9.5, 11, 21.5, 24] -> [9, 11, 21, 24].
  TestTensor ia = tensorOf(DType::I32, {2, 2}, {1, 2, 3, 4}), ib = tensorOf(DType::I32, {2, 2}, {5, 6, 7, 8});
  TestTensor ic = tensorOf(DType::I32, {2, 2}, {0, 0, 0, -1});
  run = runReference(graphOf({ia, ib, ic}, callOf("Gemm", 3, "alpha = 0.5")), {ia, ib, ic});
  expectNear(run.outputs[0], {9, 11, 21, 24}, 0, 0, "Gemm i32 alpha 0.5");
}

TEST(ReferenceNnGemm, MatchesCpuOnRandomInputs) {
  struct Case {
    int trans_a, trans_b;
    double alpha, beta;
    std::vector<int64_t> c;  // empty: no C
  };
  const int64_t m = 13, n = 9, k = 21;
  const std::vector<Case> cases = {
      {0, 0, 1.0, 1.0, {}},   {1, 0, 1.0, 1.0, {n}},    {0, 1, 1.0, 1.0, {1, n}}, {1, 1, 0.5, 2.0, {m, n}},
      {0, 0, 2.0, 0.5, {m, 1}}, {0, 1, -1.5, 1.0, {}}, {1, 0, 1.0, 0.0, {m, n}}, {0, 0, 3.0, 3.0, {1}},
  };
  uint32_t seed = 500;
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    for (const Case& c : cases) {
      std::vector<TestTensor> inputs{inputOf(dtype, c.trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, seed),
                                     inputOf(dtype, c.trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, seed + 1)};
      if (!c.c.empty()) inputs.push_back(inputOf(dtype, c.c, seed + 2));
      seed += 3;
      std::ostringstream attrs;
      attrs << std::showpoint << "alpha = " << c.alpha << ", beta = " << c.beta << ", transA = " << c.trans_a
            << ", transB = " << c.trans_b;
      expectMatchesCpu(graphOf(inputs, callOf("Gemm", inputs.size(), attrs.str())), inputs,
                       "Gemm " + std::string(dtypeName(dtype)) + " " + attrs.str(), 3);
    }
  }
}

TEST(ReferenceNnEinsum, HandWorkedCases) {
  TestTensor square = tensorOf(DType::F64, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  RunResult run = runReference(graphOf({square}, "Einsum(%x0) {equation = \"ii->i\"}"), {square});
  expectNear(run.outputs[0], {1, 5, 9}, 0, 0, "Einsum diagonal");
  run = runReference(graphOf({square}, "Einsum(%x0) {equation = \"ii\"}"), {square});
  EXPECT_EQ(run.outputs[0].dims, (std::vector<int64_t>{}));
  expectNear(run.outputs[0], {15}, 0, 0, "Einsum implicit trace");
  run = runReference(graphOf({square}, "Einsum(%x0) {equation = \"ij->ji\"}"), {square});
  expectNear(run.outputs[0], {1, 4, 7, 2, 5, 8, 3, 6, 9}, 0, 0, "Einsum transpose");
  // Implicit output: the letters used once, alphabetically ("kj,ji" -> "ik").
  TestTensor a = tensorOf(DType::I32, {2, 2}, {1, 2, 3, 4}), b = tensorOf(DType::I32, {2, 2}, {5, 6, 7, 8});
  run = runReference(graphOf({a, b}, "Einsum(%x0, %x1) {equation = \"kj,ji\"}"), {a, b});
  // Y[i, k] = sum_j A[k, j] B[j, i] = (A B)^T.
  expectNear(run.outputs[0], {19, 43, 22, 50}, 0, 0, "Einsum implicit output order");
  // Ellipsis broadcasting: A [2, 1, 2] "...j", B [2] "j": batched dot products.
  TestTensor batch = tensorOf(DType::I64, {2, 1, 2}, {1, 2, 3, 4}), vector = tensorOf(DType::I64, {2}, {10, 1});
  run = runReference(graphOf({batch, vector}, "Einsum(%x0, %x1) {equation = \"...j,j->...\"}"), {batch, vector});
  EXPECT_EQ(run.outputs[0].dims, (std::vector<int64_t>{2, 1}));
  expectNear(run.outputs[0], {12, 34}, 0, 0, "Einsum ellipsis");
  // A repeated label across an operand and the output: "iij->ij" takes the diagonal planes.
  TestTensor cube = tensorOf(DType::F32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  run = runReference(graphOf({cube}, "Einsum(%x0) {equation = \"iij->ij\"}"), {cube});
  expectNear(run.outputs[0], {1, 2, 7, 8}, 0, 0, "Einsum diagonal planes");
}

TEST(ReferenceNnEinsum, MatchesCpuOnRandomInputs) {
  struct Case {
    std::string equation;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", {{5, 7}, {7, 3}}},
      {"bij,bjk->bik", {{2, 5, 7}, {2, 7, 3}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 4, 8}, {2, 3, 5, 8}}},
      {"ii->i", {{6, 6}}},
      {"ii", {{6, 6}}},
      {"ij->ji", {{4, 9}}},
      {"ij->", {{4, 9}}},
      {"i,i", {{11}, {11}}},
      {"i,j->ij", {{4}, {5}}},
      {"ijk,jil->kl", {{3, 4, 5}, {4, 3, 2}}},
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {1, 5, 4, 2}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"ij,kj", {{3, 4}, {5, 4}}},
      {"bij,jk->bk", {{2, 3, 4}, {4, 5}}},
      {"ij,ij->ij", {{3, 4}, {3, 4}}},
      {"b i j , b j k -> b k i", {{2, 3, 4}, {2, 4, 5}}},
  };
  uint32_t seed = 600;
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    for (const Case& c : cases) {
      std::vector<TestTensor> inputs;
      std::string operands;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        inputs.push_back(inputOf(dtype, c.shapes[i], seed++));
        operands += (i ? ", %x" : "%x") + std::to_string(i);
      }
      expectMatchesCpu(graphOf(inputs, "Einsum(" + operands + ") {equation = \"" + c.equation + "\"}"), inputs,
                       "Einsum " + std::string(dtypeName(dtype)) + " '" + c.equation + "'");
    }
  }
}

// --------------------------------------------------------------------------- Attention

TEST(ReferenceNnAttention, HandWorkedCases) {
  // One query [1, 0] against keys [1, 0] and [0, 0] with scale 1: logits [1, 0], so
  // P = [e, 1] / (e + 1); values 2 and 4.
  TestTensor q = tensorOf(DType::F64, {1, 1, 1, 2}, {1, 0});
  TestTensor k = tensorOf(DType::F64, {1, 1, 2, 2}, {1, 0, 0, 0});
  TestTensor v = tensorOf(DType::F64, {1, 1, 2, 1}, {2, 4});
  const double e = std::exp(1.0);
  RunResult run = runReference(graphOf({q, k, v}, callOf("Attention", 3, "scale = 1.0")), {q, k, v});
  expectNear(run.outputs[0], {(2 * e + 4) / (e + 1)}, 1e-15, 0, "Attention");
  // The default scale 1 / sqrt(2); qk_matmul_output_mode 0 is the scaled product.
  run = runReference(graphOf({q, k, v}, callOf("Attention", 3, "qk_matmul_output_mode = 0"), 4), {q, k, v});
  const double s = std::exp(1 / std::sqrt(2.0));
  expectNear(run.outputs[0], {(2 * s + 4) / (s + 1)}, 1e-15, 0, "Attention default scale");
  expectNear(run.outputs[1], k.values, 0, 0, "present_key");
  expectNear(run.outputs[2], v.values, 0, 0, "present_value");
  expectNear(run.outputs[3], {1 / std::sqrt(2.0), 0}, 1e-15, 0, "qk_matmul_output");
  // A bool mask excluding the first key: Y = 4; softcap 0.5 caps logit 1 at 0.5 tanh(2).
  TestTensor mask = tensorOf(DType::Bool, {1, 2}, {0, 1});
  run = runReference(graphOf({q, k, v, mask}, callOf("Attention", 4, "scale = 1.0")), {q, k, v, mask});
  expectNear(run.outputs[0], {4}, 1e-15, 0, "Attention bool mask");
  run = runReference(graphOf({q, k, v}, callOf("Attention", 3, "qk_matmul_output_mode = 1, scale = 1.0, softcap = 0.5"), 4),
                     {q, k, v});
  expectNear(run.outputs[3], {0.5 * std::tanh(2.0), 0}, 1e-15, 0, "qk_matmul_output after softcap");
  // Causal with a past key: the query at absolute position 1 sees past key 0 and new key 1
  // but not new key 2 (past [1, 1, 1, 2] = [0, 0], values 8).
  TestTensor past_k = tensorOf(DType::F64, {1, 1, 1, 2}, {0, 0}), past_v = tensorOf(DType::F64, {1, 1, 1, 1}, {8});
  run = runReference(graphOf({q, k, v, past_k, past_v}, "Attention(%x0, %x1, %x2, _, %x3, %x4) {is_causal = 1, scale = 1.0}", 4),
                     {q, k, v, past_k, past_v});
  expectNear(run.outputs[0], {(8 + 2 * e) / (1 + e)}, 1e-15, 0, "Attention causal with past");
  expectNear(run.outputs[1], {0, 0, 1, 0, 0, 0}, 0, 0, "present_key with past");
  expectNear(run.outputs[3], {0, 1, 0}, 0, 0, "qk_matmul_output with past");
}

struct AttentionCase {
  int64_t batch = 2, q_heads = 4, kv_heads = 2, q_seq = 3, kv_seq = 5, head = 8, v_head = 6, past = 0;
  bool three_d = false;
  std::string mask;               // "", "bool" or "float"
  std::vector<int64_t> mask_dims;
  std::vector<int64_t> nonpad;
  std::string attrs;              // more attributes
  int outputs = 1;
};

// The CPU device runs Attention in f32 only: an f64 case runs the reference on f32 values
// widened to f64 and compares with the CPU's f32 run.
void checkAttention(DType dtype, const AttentionCase& c, uint32_t seed) {
  auto dims = [&](int64_t heads, int64_t seq, int64_t size) {
    return c.three_d ? std::vector<int64_t>{c.batch, seq, heads * size} : std::vector<int64_t>{c.batch, heads, seq, size};
  };
  std::vector<TestTensor> inputs{randomTensor(DType::F32, dims(c.q_heads, c.q_seq, c.head), seed, -2, 2),
                                 randomTensor(DType::F32, dims(c.kv_heads, c.kv_seq, c.head), seed + 1, -2, 2),
                                 randomTensor(DType::F32, dims(c.kv_heads, c.kv_seq, c.v_head), seed + 2)};
  std::string operands = "%x0, %x1, %x2";
  auto operand = [&](const TestTensor& tensor) {
    operands += ", %x" + std::to_string(inputs.size());
    inputs.push_back(tensor);
  };
  if (c.mask == "bool") {
    TestTensor mask{DType::Bool, c.mask_dims, {}};
    for (int64_t i = 0; i < mask.count(); ++i) mask.values.push_back(i % 7 == 3 ? 0 : 1);
    operand(mask);
  } else if (c.mask == "float") {
    operand(randomTensor(DType::F32, c.mask_dims, seed + 3));
  } else if (c.past || !c.nonpad.empty()) {
    operands += ", _";
  }
  if (c.past) {
    operand(randomTensor(DType::F32, {c.batch, c.kv_heads, c.past, c.head}, seed + 4, -2, 2));
    operand(randomTensor(DType::F32, {c.batch, c.kv_heads, c.past, c.v_head}, seed + 5));
  } else if (!c.nonpad.empty()) {
    operands += ", _, _";
  }
  if (!c.nonpad.empty()) {
    TestTensor lengths{DType::I64, {c.batch}, {}};
    for (int64_t n : c.nonpad) lengths.values.push_back(static_cast<double>(n));
    operand(lengths);
  }
  std::string attrs = c.attrs;
  if (c.three_d) {
    attrs += std::string(attrs.empty() ? "" : ", ") + "kv_num_heads = " + std::to_string(c.kv_heads) +
             ", q_num_heads = " + std::to_string(c.q_heads);
  }
  const std::string call = "Attention(" + operands + ")" + (attrs.empty() ? "" : " {" + attrs + "}");
  const std::string what = std::string(dtypeName(dtype)) + " " + call;
  if (dtype == DType::F32) {
    expectMatchesCpu(graphOf(inputs, call, c.outputs), inputs, what, 5);
    return;
  }
  SCOPED_TRACE(what);
  std::vector<TestTensor> wide = inputs;
  for (TestTensor& tensor : wide) {
    if (tensor.dtype == DType::F32) tensor.dtype = dtype;
  }
  RunResult expected = runGraph(graphOf(inputs, call, c.outputs), inputs, 2, cpu());
  RunResult actual = runReference(graphOf(wide, call, c.outputs), wide);
  ASSERT_EQ(actual.outputs.size(), expected.outputs.size());
  for (size_t o = 0; o < actual.outputs.size(); ++o) {
    EXPECT_EQ(actual.outputs[o].dtype, dtype);
    expectNear(actual.outputs[o], expected.outputs[o].values, 1e-4, 1e-4, what + " output " + std::to_string(o));
  }
}

TEST(ReferenceNnAttention, MatchesCpuOnRandomInputs) {
  for (DType dtype : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(dtype));
    AttentionCase c;
    checkAttention(dtype, c, 1);  // grouped-query attention
    c.three_d = true;
    c.attrs = "scale = 0.3";
    c.outputs = 3;
    checkAttention(dtype, c, 2);
    c = AttentionCase{};
    c.mask = "float";
    c.mask_dims = {c.q_seq, c.kv_seq};
    checkAttention(dtype, c, 3);
    c.mask_dims = {c.batch, 1, c.q_seq, c.kv_seq - 2};  // a short mask: the last keys are masked
    checkAttention(dtype, c, 4);
    c = AttentionCase{};
    c.past = 4;
    c.mask = "bool";
    c.mask_dims = {c.batch, c.q_heads, c.q_seq, c.past + c.kv_seq};
    c.outputs = 4;
    for (int mode = 0; mode <= 3; ++mode) {
      c.attrs = "is_causal = 1, qk_matmul_output_mode = " + std::to_string(mode);
      checkAttention(dtype, c, 5 + mode);
    }
    c = AttentionCase{};
    c.three_d = true;
    c.outputs = 4;
    for (int mode = 0; mode <= 3; ++mode) {
      c.attrs = "is_causal = 1, qk_matmul_output_mode = " + std::to_string(mode) + ", softcap = 1.5";
      checkAttention(dtype, c, 10 + mode);
    }
    c = AttentionCase{};
    c.q_seq = 4;
    c.kv_seq = 7;
    c.past = 3;
    c.attrs = "left_window_size = 2, right_window_size = 1";
    checkAttention(dtype, c, 20);
    c = AttentionCase{};
    c.q_seq = 2;
    c.kv_seq = 6;
    c.nonpad = {4, 6};
    checkAttention(dtype, c, 21);
    c.attrs = "is_causal = 1";
    c.mask = "float";
    c.mask_dims = {c.q_seq, c.kv_seq};
    checkAttention(dtype, c, 22);
  }
}

TEST(ReferenceNnAttention, AFullyMaskedRowIsZero) {
  TestTensor q = randomTensor(DType::F32, {1, 1, 2, 4}, 1), k = randomTensor(DType::F32, {1, 1, 3, 4}, 2);
  TestTensor v = randomTensor(DType::F32, {1, 1, 3, 2}, 3);
  TestTensor mask = tensorOf(DType::Bool, {2, 3}, {1, 0, 1, 0, 0, 0});
  RunResult run = runReference(graphOf({q, k, v, mask}, callOf("Attention", 4)), {q, k, v, mask});
  EXPECT_EQ(run.outputs[0].values[2], 0.0);
  EXPECT_EQ(run.outputs[0].values[3], 0.0);
  EXPECT_FALSE(std::isnan(run.outputs[0].values[0]));
}

TEST(ReferenceNnRotaryEmbedding, HandWorkedCases) {
  // Position 1's row rotates pairs (x0, x2) by 90 degrees (cos 0, sin 1) and (x1, x3) by 0.
  TestTensor x = tensorOf(DType::F32, {1, 1, 1, 4}, {1, 2, 3, 4});
  TestTensor cos = tensorOf(DType::F32, {2, 2}, {1, 1, 0, 1}), sin = tensorOf(DType::F32, {2, 2}, {0, 0, 1, 0});
  TestTensor positions = tensorOf(DType::I64, {1, 1}, {1});
  RunResult run = runReference(graphOf({x, cos, sin, positions}, callOf("RotaryEmbedding", 4)), {x, cos, sin, positions});
  expectNear(run.outputs[0], {-3, 2, 1, 4}, 0, 0, "RotaryEmbedding");
  // Interleaved pairs (x0, x1) and (x2, x3).
  run = runReference(graphOf({x, cos, sin, positions}, callOf("RotaryEmbedding", 4, "interleaved = 1")),
                     {x, cos, sin, positions});
  expectNear(run.outputs[0], {-2, 1, 3, 4}, 0, 0, "RotaryEmbedding interleaved");
  // rotary_embedding_dim 2 of 4: only (x0, x1) rotates; the rest passes through.
  TestTensor narrow_cos = tensorOf(DType::F32, {2, 1}, {1, 0}), narrow_sin = tensorOf(DType::F32, {2, 1}, {0, 1});
  run = runReference(graphOf({x, narrow_cos, narrow_sin, positions}, callOf("RotaryEmbedding", 4, "rotary_embedding_dim = 2")),
                     {x, narrow_cos, narrow_sin, positions});
  expectNear(run.outputs[0], {-2, 1, 3, 4}, 0, 0, "RotaryEmbedding partial");
}

TEST(ReferenceNnRotaryEmbedding, MatchesCpuOnRandomInputs) {
  const int64_t batch = 2, heads = 3, seq = 4, head = 8, positions_count = 10;
  uint32_t seed = 700;
  for (bool three_d : {false, true}) {
    for (bool interleaved : {false, true}) {
      for (int64_t rotary : {0, 4}) {
        for (bool by_position : {true, false}) {
          for (bool full_tables : {false, true}) {
            if (full_tables && interleaved) continue;  // refused: pairs of the halves only
            const int64_t half = (rotary ? rotary : head) / 2, width = full_tables ? 2 * half : half;
            TestTensor x = randomTensor(DType::F32, three_d ? std::vector<int64_t>{batch, seq, heads * head}
                                                            : std::vector<int64_t>{batch, heads, seq, head},
                                        seed++, -3, 3);
            const std::vector<int64_t> cache_dims = by_position ? std::vector<int64_t>{positions_count, width}
                                                                : std::vector<int64_t>{batch, seq, width};
            std::vector<TestTensor> inputs{x, randomTensor(DType::F32, cache_dims, seed++),
                                           randomTensor(DType::F32, cache_dims, seed++)};
            if (by_position) {
              TestTensor ids{DType::I64, {batch, seq}, {}};
              for (int64_t t = 0; t < batch * seq; ++t) ids.values.push_back(static_cast<double>((t * 7 + 3) % positions_count));
              inputs.push_back(ids);
            }
            std::string attrs = "interleaved = " + std::to_string(interleaved ? 1 : 0);
            if (three_d) attrs += ", num_heads = " + std::to_string(heads);
            if (rotary) attrs += ", rotary_embedding_dim = " + std::to_string(rotary);
            if (full_tables) attrs += ", full_tables = 1";
            expectMatchesCpu(graphOf(inputs, callOf("RotaryEmbedding", inputs.size(), attrs)), inputs,
                             "RotaryEmbedding " + x.type() + " " + attrs);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
