// Concat and Split along every axis, for every dtype, with empty parts and large pieces.
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor concatRef(const std::vector<TestTensor>& parts, int axis) {
  std::vector<int64_t> dims = parts[0].dims;
  dims[axis] = 0;
  for (const TestTensor& part : parts) dims[axis] += part.dims[axis];
  TestTensor out{parts[0].dtype, dims, {}};
  for (int64_t i = 0; i < out.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, dims);
    for (const TestTensor& part : parts) {
      if (coords[axis] < part.dims[axis]) {
        out.values.push_back(part.values[ravel(coords, part.dims)]);
        break;
      }
      coords[axis] -= part.dims[axis];
    }
  }
  return out;
}

TEST(ConcatKernels, EveryAxisAndDType) {
  for (DType dtype : kEveryDType) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<int64_t> a{2, 3, 4}, b{2, 3, 4}, c{2, 3, 4};
      b[axis] = 1;
      c[axis] = 0;  // an empty part contributes nothing
      std::vector<TestTensor> parts = {sampleTensor(dtype, a, 1), sampleTensor(dtype, b, 2), sampleTensor(dtype, c, 3),
                                       sampleTensor(dtype, a, 4)};
      std::string body = "  %y = Concat(%a, %b, %c, %d) {axis = " + std::to_string(axis - 3) + "}\n";
      RunResult result = runGraph(
          graphText({{"a", &parts[0]}, {"b", &parts[1]}, {"c", &parts[2]}, {"d", &parts[3]}}, body, "%y"), parts);
      expectEqual(result.outputs[0], concatRef(parts, axis), dtypeLabel(dtype) + " axis " + std::to_string(axis));
      EXPECT_TRUE(usesKernel(result, "cpu:concat"));
    }
  }
}

TEST(ConcatKernels, FewLargeRowsAndManySmallRows) {
  // Axis 0 of [2, 40000]: two big pieces split across threads; axis 1 of [4000, 3]: rows.
  for (int axis : {0, 1}) {
    std::vector<int64_t> dims = axis == 0 ? std::vector<int64_t>{1, 40000} : std::vector<int64_t>{4000, 3};
    std::vector<TestTensor> parts = {sampleTensor(DType::F32, dims, 5), sampleTensor(DType::F32, dims, 6)};
    std::string body = "  %y = Concat(%a, %b) {axis = " + std::to_string(axis) + "}\n";
    RunResult result = runGraph(graphText({{"a", &parts[0]}, {"b", &parts[1]}}, body, "%y"), parts);
    expectEqual(result.outputs[0], concatRef(parts, axis), "axis " + std::to_string(axis));
  }
}

std::vector<TestTensor> splitRef(const TestTensor& x, int axis, const std::vector<int64_t>& sizes) {
  std::vector<TestTensor> parts;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> dims = x.dims;
    dims[axis] = size;
    TestTensor part{x.dtype, dims, {}};
    for (int64_t i = 0; i < part.count(); ++i) {
      std::vector<int64_t> coords = unravel(i, dims);
      coords[axis] += offset;
      part.values.push_back(x.values[ravel(coords, x.dims)]);
    }
    offset += size;
    parts.push_back(std::move(part));
  }
  return parts;
}

TEST(SplitKernels, SplitSizesInputForEveryDType) {
  for (DType dtype : kEveryDType) {
    TestTensor x = sampleTensor(dtype, {3, 7, 2}, 8);
    TestTensor split = tensorOf(DType::I64, {3}, {2, 0, 5});
    std::string body = constantLine("split", split) + "  %a, %b, %c = Split(%x, %split) {axis = -2}\n";
    RunResult result = runGraph(graphText({{"x", &x}}, body, "%a, %b, %c"), {x});
    std::vector<TestTensor> expected = splitRef(x, 1, {2, 0, 5});
    for (size_t k = 0; k < 3; ++k) expectEqual(result.outputs[k], expected[k], dtypeLabel(dtype) + " part " + std::to_string(k));
    EXPECT_TRUE(usesKernel(result, "cpu:split"));
  }
}

TEST(SplitKernels, NumOutputsGivesEqualChunksWithASmallerLast) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{10, 3}, std::vector<int64_t>{1, 100000}}) {
    int axis = dims[0] == 10 ? 0 : 1;
    TestTensor x = sampleTensor(DType::F16, dims, 9);
    std::string body = "  %a, %b, %c = Split(%x) {axis = " + std::to_string(axis) + ", num_outputs = 3}\n";
    RunResult result = runGraph(graphText({{"x", &x}}, body, "%a, %b, %c"), {x});
    int64_t chunk = (dims[axis] + 2) / 3;
    std::vector<TestTensor> expected = splitRef(x, axis, {chunk, chunk, dims[axis] - 2 * chunk});
    for (size_t k = 0; k < 3; ++k) expectEqual(result.outputs[k], expected[k], x.type() + " part " + std::to_string(k));
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
