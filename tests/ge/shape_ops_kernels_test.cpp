// Reshape, Flatten, Squeeze, Unsqueeze, Identity (relabelling kernels) and Expand, Tile
// (broadcasting copies), for every dtype.
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor i64s(std::vector<int64_t> values) {
  std::vector<double> doubles(values.begin(), values.end());
  return tensorOf(DType::I64, {static_cast<int64_t>(values.size())}, doubles);
}

TEST(ShapeKernels, RelabellingKeepsEveryElementForEveryDType) {
  for (DType dtype : kEveryDType) {
    TestTensor x = sampleTensor(dtype, {2, 1, 3, 4}, 7);
    std::string body = constantLine("shape", i64s({4, -1})) + constantLine("axes", i64s({1})) +
                       constantLine("new_axes", i64s({0, 3})) +
                       "  %r = Reshape(%x, %shape)\n"
                       "  %f = Flatten(%x) {axis = 2}\n"
                       "  %s = Squeeze(%x, %axes)\n"
                       "  %u = Unsqueeze(%x, %new_axes)\n";
    RunResult result = runGraph(graphText({{"x", &x}}, body, "%r, %f, %s, %u"), {x});
    const std::vector<std::vector<int64_t>> dims = {{4, 6}, {2, 12}, {2, 3, 4}, {1, 2, 1, 1, 3, 4}};
    for (size_t k = 0; k < dims.size(); ++k) {
      TestTensor expected{dtype, dims[k], x.values};
      expectEqual(result.outputs[k], expected, dtypeLabel(dtype) + " output " + std::to_string(k));
    }
    EXPECT_TRUE(usesKernel(result, "cpu:relabel"));
  }
}

TEST(ShapeKernels, RelabellingInPlaceBetweenKernels) {
  // The reshape's input is an intermediate read by nothing else: the planner gives the
  // reshape its buffer and the kernel copies nothing.
  TestTensor x = sampleTensor(DType::F32, {3, 4, 5}, 3);
  std::string body = constantLine("shape", i64s({5, 12})) +
                     "  %t = Transpose(%x) {perm = [2, 0, 1]}\n"
                     "  %r = Reshape(%t, %shape)\n"
                     "  %y = Transpose(%r) {perm = [1, 0]}\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  TestTensor expected{DType::F32, {12, 5}, std::vector<double>(60)};
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t k = 0; k < 5; ++k) expected.values[(i * 4 + j) * 5 + k] = x.values[(i * 4 + j) * 5 + k];
    }
  }
  expectEqual(result.outputs[0], expected, "transpose-reshape-transpose");
}

TEST(ShapeKernels, IdentityCopiesOrRunsInPlace) {
  // The build removes Identity nodes, so the kernel is run directly.
  TestTensor x = sampleTensor(DType::I16, {5, 7}, 1);
  std::vector<TestTensor> out = runKernelDirectly("graph @g(%x: i16[5,7]) {\n  %y = Identity(%x)\n  return %y\n}", {x},
                                                  {false}, {TestTensor{DType::I16, {5, 7}, {}}});
  expectEqual(out[0], x, "identity");
}

// out[i] = in[i with broadcast axes at 0], the NumPy broadcast of `in` to `dims`.
TestTensor broadcastRef(const TestTensor& in, const std::vector<int64_t>& dims) {
  TestTensor out{in.dtype, dims, std::vector<double>(static_cast<size_t>(TestTensor{in.dtype, dims, {}}.count()))};
  const size_t pad = dims.size() - in.dims.size();
  for (int64_t i = 0; i < out.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, dims);
    std::vector<int64_t> from(coords.begin() + static_cast<std::ptrdiff_t>(pad), coords.end());
    for (size_t d = 0; d < from.size(); ++d) {
      if (in.dims[d] == 1) from[d] = 0;
    }
    out.values[i] = in.values[ravel(from, in.dims)];
  }
  return out;
}

TEST(ShapeKernels, ExpandBroadcastsEveryKindOfAxis) {
  struct Case {
    std::vector<int64_t> in, shape, out;
  };
  const Case cases[] = {
      {{3, 1}, {2, 3, 5}, {2, 3, 5}},          // inner broadcast (fill)
      {{1, 5}, {4, 5}, {4, 5}},                // outer broadcast (row copies)
      {{5}, {3, 1, 5}, {3, 1, 5}},             // new leading axes
      {{2, 1, 3}, {1, 4, 1}, {2, 4, 3}},       // shape smaller than the input on some axes
      {{1}, {7}, {7}},                         // scalar-like
      {{3, 1, 2}, {3, 0, 2}, {3, 0, 2}},       // empty result
      {{64, 1}, {64, 2048}, {64, 2048}},       // large enough for threads
  };
  for (DType dtype : {DType::F32, DType::F16, DType::I64, DType::Bool, DType::U8}) {
    for (const Case& c : cases) {
      TestTensor x = sampleTensor(dtype, c.in, 11);
      std::string body = constantLine("shape", i64s(c.shape)) + "  %y = Expand(%x, %shape)\n";
      RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
      expectEqual(result.outputs[0], broadcastRef(x, c.out), dtypeLabel(dtype) + " " + x.type());
    }
  }
}

TEST(ShapeKernels, TileRepeatsAlongEveryAxis) {
  struct Case {
    std::vector<int64_t> in, repeats;
  };
  const Case cases[] = {{{2, 3}, {2, 3}}, {{4}, {5}}, {{2, 1, 3}, {1, 4, 1}}, {{3, 2}, {0, 2}}, {{1, 1}, {1, 1}},
                        {{128, 33}, {4, 3}}};
  for (DType dtype : {DType::F32, DType::BF16, DType::I8, DType::F64, DType::Bool}) {
    for (const Case& c : cases) {
      TestTensor x = sampleTensor(dtype, c.in, 5);
      std::string body = constantLine("repeats", i64s(c.repeats)) + "  %y = Tile(%x, %repeats)\n";
      RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
      std::vector<int64_t> dims;
      for (size_t d = 0; d < c.in.size(); ++d) dims.push_back(c.in[d] * c.repeats[d]);
      TestTensor expected{dtype, dims, {}};
      for (int64_t i = 0; i < expected.count(); ++i) {
        std::vector<int64_t> coords = unravel(i, dims);
        for (size_t d = 0; d < coords.size(); ++d) coords[d] %= c.in[d];
        expected.values.push_back(x.values[ravel(coords, c.in)]);
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " " + x.type());
    }
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
