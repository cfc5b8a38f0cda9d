// Softmax, LogSoftmax and Hardmax (opset 13 axis semantics: one axis) against closed forms
// in double, on every axis of several shapes.
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

std::vector<double> reference(const TestTensor& x, int64_t axis, Kind kind) {
  int64_t outer = 1, size = x.dims[axis], inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dims[d];
  for (size_t d = axis + 1; d < x.dims.size(); ++d) inner *= x.dims[d];
  std::vector<double> y(x.values.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + i; };
      double peak = -INFINITY, sum = 0;
      int64_t best = 0;
      for (int64_t a = 0; a < size; ++a) {
        if (x.values[at(a)] > peak) {
          peak = x.values[at(a)];
          best = a;
        }
      }
      for (int64_t a = 0; a < size; ++a) sum += std::exp(x.values[at(a)] - peak);
      for (int64_t a = 0; a < size; ++a) {
        const double shifted = x.values[at(a)] - peak;
        y[at(a)] = kind == Kind::Softmax      ? std::exp(shifted) / sum
                   : kind == Kind::LogSoftmax ? shifted - std::log(sum)
                                              : (a == best ? 1.0 : 0.0);
      }
    }
  }
  return y;
}

TEST(SoftmaxKernels, EveryAxisAgainstReference) {
  const std::pair<const char*, Kind> ops[] = {
      {"Softmax", Kind::Softmax}, {"LogSoftmax", Kind::LogSoftmax}, {"Hardmax", Kind::Hardmax}};
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const std::vector<int64_t>& dims :
         {std::vector<int64_t>{3, 17}, std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{1000},
          std::vector<int64_t>{4, 1, 3}}) {
      TestTensor x = randomTensor(dtype, dims, 3, -6, 6);
      const int64_t rank = static_cast<int64_t>(dims.size());
      for (int64_t axis = -rank; axis < rank; ++axis) {
        for (const auto& [op, kind] : ops) {
          RunResult result = runGraph("graph @g(%x: " + x.type() + ") {\n  %y = " + op + "(%x) {axis = " +
                                          std::to_string(axis) + "} : " + x.type() + "\n  return %y\n}",
                                      {x});
          // Softmax values are in (0, 1]; LogSoftmax values up to ~|12| + log(1000).
          const double atol = kind == Kind::LogSoftmax ? dtypeTolerance(dtype) * 20 : dtypeTolerance(dtype);
          expectNear(result.outputs[0], reference(x, axis < 0 ? axis + rank : axis, kind),
                     kind == Kind::Hardmax ? 0.0 : dtypeTolerance(dtype), kind == Kind::Hardmax ? 0.0 : atol,
                     std::string(op) + " " + x.type() + " axis " + std::to_string(axis) + " via " + result.kernels[0]);
        }
      }
    }
  }
}

TEST(SoftmaxKernels, HardmaxPicksTheFirstMaximum) {
  TestTensor x{DType::F32, {2, 4}, {1, 3, 3, 2, 5, 5, 5, 5}};
  RunResult result = runGraph("graph @g(%x: f32[2,4]) {\n  %y = Hardmax(%x) : f32[2,4]\n  return %y\n}", {x});
  expectNear(result.outputs[0], {0, 1, 0, 0, 1, 0, 0, 0}, 0.0, 0.0, "Hardmax ties");
}

TEST(SoftmaxKernels, FloatSoftmaxUsesOnednn) {
  TestTensor x = randomTensor(DType::F32, {8, 128}, 1);
  RunResult result = runGraph("graph @g(%x: f32[8,128]) {\n  %y = Softmax(%x) : f32[8,128]\n  return %y\n}", {x});
  EXPECT_TRUE(usesKernel(result, "onednn:softmax")) << result.kernels[0];
}

// Empty batches run (and produce empty outputs) through every family.
TEST(NnKernels, ZeroSizedBatches) {
  RunResult result = runGraph(
      "graph @g(%x: f32[0,4,6,6], %w: f32[4,4,3,3], %s: f32[4], %r: f32[0,6], %s6: f32[6]) {\n"
      "  %c = Conv(%x, %w) : f32[0,4,4,4]\n"
      "  %p = MaxPool(%x) {kernel_shape = [2, 2]} : f32[0,4,5,5]\n"
      "  %a = GlobalAveragePool(%x) : f32[0,4,1,1]\n"
      "  %b = BatchNormalization(%x, %s, %s, %s, %s) : f32[0,4,6,6]\n"
      "  %g = GroupNormalization(%x, %s, %s) {num_groups = 2} : f32[0,4,6,6]\n"
      "  %sm = Softmax(%r) : f32[0,6]\n"
      "  %l = LayerNormalization(%r, %s6) : f32[0,6]\n"
      "  return %c, %p, %a, %b, %g, %sm, %l\n}",
      {TestTensor{DType::F32, {0, 4, 6, 6}, {}}, randomTensor(DType::F32, {4, 4, 3, 3}, 1),
       randomTensor(DType::F32, {4}, 2, 0.5, 1.0), TestTensor{DType::F32, {0, 6}, {}},
       randomTensor(DType::F32, {6}, 3)});
  ASSERT_EQ(result.outputs.size(), 7u);
  for (const TestTensor& output : result.outputs) EXPECT_EQ(output.count(), 0);
}

}  // namespace
}  // namespace estuary::ge::tensor_test
