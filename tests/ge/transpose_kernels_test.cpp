// Transpose (row, tile and copy strategies), DepthToSpace and SpaceToDepth.
#include <algorithm>
#include <numeric>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor transposeRef(const TestTensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> dims;
  for (int64_t axis : perm) dims.push_back(x.dims[axis]);
  TestTensor out{x.dtype, dims, std::vector<double>(static_cast<size_t>(x.count()))};
  for (int64_t i = 0; i < out.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, dims), from(x.dims.size());
    for (size_t k = 0; k < perm.size(); ++k) from[perm[k]] = coords[k];
    out.values[i] = x.values[ravel(from, x.dims)];
  }
  return out;
}

std::string permText(const std::vector<int64_t>& perm) {
  std::string text = "[";
  for (size_t k = 0; k < perm.size(); ++k) text += (k ? ", " : "") + std::to_string(perm[k]);
  return text + "]";
}

RunResult runTranspose(const TestTensor& x, const std::vector<int64_t>& perm) {
  std::string body = "  %y = Transpose(%x) {perm = " + permText(perm) + "}\n";
  return runGraph(graphText({{"x", &x}}, body, "%y"), {x});
}

TEST(TransposeKernels, EveryPermutationOf4D) {
  TestTensor x = sampleTensor(DType::F32, {2, 3, 4, 5}, 1);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    RunResult result = runTranspose(x, perm);
    expectEqual(result.outputs[0], transposeRef(x, perm), "perm " + permText(perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(TransposeKernels, EveryDTypeAndElementSize) {
  for (DType dtype : kEveryDType) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 67, 129}, std::vector<int64_t>{5, 16, 64}}) {
      TestTensor x = sampleTensor(dtype, dims, 2);
      for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 2, 1}, std::vector<int64_t>{2, 0, 1},
                                               std::vector<int64_t>{1, 0, 2}}) {
        RunResult result = runTranspose(x, perm);
        expectEqual(result.outputs[0], transposeRef(x, perm), dtypeLabel(dtype) + " " + x.type() + " " + permText(perm));
      }
    }
  }
}

TEST(TransposeKernels, CommonModelLayouts) {
  struct Case {
    std::vector<int64_t> dims, perm;
    const char* kernel;
  };
  const Case cases[] = {
      {{1, 12, 128, 64}, {0, 2, 1, 3}, "cpu:transpose rows"},   // attention heads
      {{2, 32, 17, 19}, {0, 2, 3, 1}, "cpu:transpose tiles"},   // NCHW -> NHWC
      {{2, 17, 19, 32}, {0, 3, 1, 2}, "cpu:transpose tiles"},   // NHWC -> NCHW
      {{300, 257}, {1, 0}, "cpu:transpose tiles"},              // 2-D
      {{4, 1, 6, 1}, {1, 3, 0, 2}, "cpu:relabel"},  // only size-1 axes move: canonicalized to a Reshape
      {{3, 0, 4}, {2, 1, 0}, "cpu:transpose copy"},             // empty
  };
  for (DType dtype : {DType::F32, DType::F16}) {
    for (const Case& c : cases) {
      TestTensor x = sampleTensor(dtype, c.dims, 3);
      RunResult result = runTranspose(x, c.perm);
      expectEqual(result.outputs[0], transposeRef(x, c.perm), x.type() + " " + permText(c.perm));
      EXPECT_TRUE(usesKernel(result, c.kernel)) << result.kernels.back();
    }
  }
}

TEST(TransposeKernels, DefaultPermReversesTheAxes) {
  TestTensor x = sampleTensor(DType::I32, {2, 3, 4}, 4);
  RunResult result = runGraph(graphText({{"x", &x}}, "  %y = Transpose(%x)\n", "%y"), {x});
  expectEqual(result.outputs[0], transposeRef(x, {2, 1, 0}), "reversed");
}

TEST(TransposeKernels, DepthToSpaceBothModes) {
  const int64_t n = 2, c = 8, h = 3, w = 5, b = 2, depth = c / (b * b);
  for (DType dtype : {DType::F32, DType::U8, DType::F64}) {
    TestTensor x = sampleTensor(dtype, {n, c, h, w}, 9);
    for (const char* mode : {"DCR", "CRD"}) {
      std::string body = std::string("  %y = DepthToSpace(%x) {blocksize = 2, mode = \"") + mode + "\"}\n";
      RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
      TestTensor expected{dtype, {n, depth, h * b, w * b}, std::vector<double>(static_cast<size_t>(x.count()))};
      for (int64_t in = 0; in < n; ++in) {
        for (int64_t oc = 0; oc < depth; ++oc) {
          for (int64_t y = 0; y < h * b; ++y) {
            for (int64_t xx = 0; xx < w * b; ++xx) {
              int64_t i = y % b, j = xx % b;
              int64_t channel = std::string(mode) == "DCR" ? (i * b + j) * depth + oc : oc * b * b + i * b + j;
              expected.values[ravel({in, oc, y, xx}, expected.dims)] = x.values[ravel({in, channel, y / b, xx / b}, x.dims)];
            }
          }
        }
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " " + mode);
    }
  }
}

TEST(TransposeKernels, SpaceToDepthBothModes) {
  const int64_t n = 2, c = 3, h = 4, w = 6, b = 2;
  for (DType dtype : {DType::F32, DType::Bool}) {
    TestTensor x = sampleTensor(dtype, {n, c, h, w}, 10);
    for (const char* mode : {"DCR", "CRD"}) {
      std::string body = std::string("  %y = SpaceToDepth(%x) {blocksize = 2, mode = \"") + mode + "\"}\n";
      RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
      TestTensor expected{dtype, {n, c * b * b, h / b, w / b}, std::vector<double>(static_cast<size_t>(x.count()))};
      for (int64_t in = 0; in < n; ++in) {
        for (int64_t ic = 0; ic < c; ++ic) {
          for (int64_t y = 0; y < h; ++y) {
            for (int64_t xx = 0; xx < w; ++xx) {
              int64_t i = y % b, j = xx % b;
              int64_t channel = std::string(mode) == "DCR" ? (i * b + j) * c + ic : ic * b * b + i * b + j;
              expected.values[ravel({in, channel, y / b, xx / b}, expected.dims)] = x.values[ravel({in, ic, y, xx}, x.dims)];
            }
          }
        }
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " " + mode);
    }
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
