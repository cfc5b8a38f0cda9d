// MaxPool (with and without Indices), AveragePool and the global pools against reference
// loops in double: pads, strides, dilations, ceil_mode, auto_pad, count_include_pad.
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

struct PoolCase {
  std::vector<int64_t> x;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // empty: defaults
  bool ceil_mode = false;
  std::string auto_pad = "NOTSET";
  bool count_include_pad = false;
};

std::string ints(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

struct PoolReference {
  std::vector<int64_t> dims;
  std::vector<double> values;
  std::vector<double> indices;  // MaxPool: flat row-major index into X
};

// ONNX pooling in double, windows clipped to the input; the average divides by the cells
// inside the input, or inside input + explicit pads with count_include_pad.
PoolReference referencePool(const PoolCase& c, const TestTensor& x, bool max) {
  const size_t spatial = c.kernel.size();
  std::vector<int64_t> strides = c.strides;
  if (strides.empty()) strides.assign(spatial, 1);
  std::vector<int64_t> dilations = c.dilations;
  if (dilations.empty()) dilations.assign(spatial, 1);
  std::vector<int64_t> pads = c.pads;
  if (pads.empty()) pads.assign(2 * spatial, 0);
  std::vector<int64_t> out(spatial), begin(spatial), end(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = c.x[2 + i], extent = (c.kernel[i] - 1) * dilations[i] + 1;
    begin[i] = pads[i];
    end[i] = pads[i + spatial];
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in + strides[i] - 1) / strides[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * strides[i] + extent - in);
      begin[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    } else {
      int64_t span = in + begin[i] + end[i] - extent;
      out[i] = (c.ceil_mode ? (span + strides[i] - 1) / strides[i] : span / strides[i]) + 1;
      if (c.ceil_mode && (out[i] - 1) * strides[i] >= in + begin[i]) --out[i];
    }
  }
  PoolReference ref;
  ref.dims = {c.x[0], c.x[1]};
  ref.dims.insert(ref.dims.end(), out.begin(), out.end());
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
  for (size_t i = 0; i < spatial; ++i) {
    in_size *= c.x[2 + i];
    out_size *= out[i];
    kernel_size *= c.kernel[i];
  }
  for (int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane) {
    for (int64_t p = 0; p < out_size; ++p) {
      double best = -INFINITY, sum = 0, best_index = -1;
      int64_t cells = 0;
      for (int64_t k = 0; k < kernel_size; ++k) {
        int64_t rest_p = p, rest_k = k, offset = 0, scale = 1;
        bool inside = true, in_padded = true;
        std::vector<int64_t> pos(spatial), off(spatial);
        for (size_t d = spatial; d-- > 0;) {
          pos[d] = rest_p % out[d];
          rest_p /= out[d];
          off[d] = rest_k % c.kernel[d];
          rest_k /= c.kernel[d];
        }
        for (size_t d = spatial; d-- > 0;) {
          int64_t at = pos[d] * strides[d] - begin[d] + off[d] * dilations[d];
          inside &= at >= 0 && at < c.x[2 + d];
          in_padded &= at >= -begin[d] && at < c.x[2 + d] + end[d];
          offset += at * scale;
          scale *= c.x[2 + d];
        }
        if (c.count_include_pad ? in_padded : inside) ++cells;
        if (!inside) continue;
        double v = x.values[plane * in_size + offset];
        sum += v;
        if (v > best) {
          best = v;
          best_index = static_cast<double>(plane * in_size + offset);
        }
      }
      ref.values.push_back(max ? best : sum / static_cast<double>(std::max<int64_t>(cells, 1)));
      ref.indices.push_back(best_index);
    }
  }
  return ref;
}

std::string poolAttributes(const PoolCase& c, bool max) {
  std::string attrs = "auto_pad = \"" + c.auto_pad + "\", ceil_mode = " + std::to_string(c.ceil_mode);
  if (!max) attrs += ", count_include_pad = " + std::to_string(c.count_include_pad);
  if (!c.dilations.empty()) attrs += ", dilations = " + ints(c.dilations);
  attrs += ", kernel_shape = " + ints(c.kernel);
  if (!c.pads.empty()) attrs += ", pads = " + ints(c.pads);
  if (!c.strides.empty()) attrs += ", strides = " + ints(c.strides);
  return attrs;
}

void checkPool(DType dtype, const PoolCase& c, bool max, bool indices) {
  TestTensor x = isInteger(dtype) ? randomTensor(dtype, c.x, 9, dtype == DType::U8 ? 0 : -100, 100)
                                  : randomTensor(dtype, c.x, 9, -4, 4);
  PoolReference ref = referencePool(c, x, max);
  TestTensor y{dtype, ref.dims, {}};
  TestTensor i{DType::I64, ref.dims, {}};
  std::string outputs = indices ? "%y, %i" : "%y";
  std::string types = indices ? y.type() + ", " + i.type() : y.type();
  std::string text = "graph @g(%x: " + x.type() + ") {\n  " + outputs + " = " + (max ? "MaxPool" : "AveragePool") +
                     "(%x) {" + poolAttributes(c, max) + "} : " + types + "\n  return " + outputs + "\n}";
  RunResult result = runGraph(text, {x});
  const std::string what = std::string(max ? "MaxPool " : "AveragePool ") + std::string(dtypeName(dtype)) + " x" +
                           ints(c.x) + " {" + poolAttributes(c, max) + "}" + (indices ? " +Indices" : "") + " via " +
                           result.kernels[0];
  ASSERT_EQ(result.outputs[0].dims, ref.dims) << what;
  // Max is exact; an average adds the dtype's rounding of the result.
  expectNear(result.outputs[0], ref.values, max ? 0.0 : dtypeTolerance(dtype), max ? 0.0 : 1e-6, what);
  if (indices) expectNear(result.outputs[1], ref.indices, 0.0, 0.0, what + " indices");
}

const std::vector<PoolCase> kPoolCases = {
    {{1, 3, 8, 8}, {2, 2}, {2, 2}},
    {{2, 4, 9, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
    {{1, 2, 10, 10}, {3, 3}, {2, 2}, {}, {1, 0, 0, 1}, true},              // ceil_mode reaches past the pads
    {{1, 2, 11, 9}, {3, 2}, {2, 1}, {2, 3}, {2, 1, 2, 1}},                 // dilations
    {{1, 3, 7, 7}, {3, 3}, {2, 2}, {}, {}, false, "SAME_UPPER"},
    {{1, 3, 7, 8}, {2, 3}, {2, 2}, {}, {}, false, "SAME_LOWER"},
    {{1, 2, 13}, {4}, {3}, {}, {1, 2}},                                     // 1-D
    {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 2, 2}, {}, {0, 1, 0, 1, 0, 1}, true},  // 3-D, ceil
    {{1, 2, 4, 4, 4, 4}, {2, 2, 2, 2}, {2, 2, 2, 2}},                       // 4 spatial axes: own kernel
};

TEST(PoolingKernels, MaxPoolAgainstReference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I8, DType::U8}) {
    for (const PoolCase& c : kPoolCases) {
      checkPool(dtype, c, true, false);
      if (dtype == DType::F32 || dtype == DType::F16 || dtype == DType::U8) checkPool(dtype, c, true, true);
    }
  }
}

TEST(PoolingKernels, AveragePoolAgainstReference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (PoolCase c : kPoolCases) {
      checkPool(dtype, c, false, false);
      c.count_include_pad = true;
      if (c.auto_pad == "NOTSET") checkPool(dtype, c, false, false);
    }
  }
}

TEST(PoolingKernels, MaxPoolIndicesInColumnMajorOrder) {
  TestTensor x = randomTensor(DType::F32, {1, 2, 4, 5}, 3);
  RunResult result = runGraph(
      "graph @g(%x: f32[1,2,4,5]) {\n  %y, %i = MaxPool(%x) {kernel_shape = [2, 2], storage_order = 1, strides = "
      "[2, 2]} : f32[1,2,2,2], i64[1,2,2,2]\n  return %y, %i\n}",
      {x});
  PoolReference ref = referencePool({{1, 2, 4, 5}, {2, 2}, {2, 2}}, x, true);
  std::vector<double> expected;
  for (double index : ref.indices) {
    const int64_t flat = static_cast<int64_t>(index), plane = flat / 20, h = (flat % 20) / 5, w = flat % 5;
    expected.push_back(static_cast<double>(plane * 20 + w * 4 + h));
  }
  expectNear(result.outputs[1], expected, 0.0, 0.0, "MaxPool storage_order = 1 indices");
}

TEST(PoolingKernels, GlobalPoolsAgainstReference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 7, 5}, std::vector<int64_t>{1, 4, 9},
                                             std::vector<int64_t>{1, 2, 3, 4, 5}}) {
      TestTensor x = randomTensor(dtype, dims, 5, -3, 3);
      std::vector<int64_t> out_dims(dims.size(), 1);
      out_dims[0] = dims[0];
      out_dims[1] = dims[1];
      TestTensor y{dtype, out_dims, {}};
      RunResult result = runGraph("graph @g(%x: " + x.type() + ") {\n  %a = GlobalAveragePool(%x) : " + y.type() +
                                      "\n  %m = GlobalMaxPool(%x) : " + y.type() + "\n  return %a, %m\n}",
                                  {x});
      const int64_t planes = dims[0] * dims[1], size = x.count() / planes;
      std::vector<double> mean(planes, 0.0), peak(planes, -INFINITY);
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t i = 0; i < size; ++i) {
          mean[p] += x.values[p * size + i] / static_cast<double>(size);
          peak[p] = std::max(peak[p], x.values[p * size + i]);
        }
      }
      expectNear(result.outputs[0], mean, dtypeTolerance(dtype), 1e-6, "GlobalAveragePool " + x.type());
      expectNear(result.outputs[1], peak, 0.0, 0.0, "GlobalMaxPool " + x.type());
    }
  }
}

TEST(PoolingKernels, FloatPoolsUseOnednn) {
  TestTensor x = randomTensor(DType::F32, {1, 16, 8, 8}, 1);
  RunResult result = runGraph(
      "graph @g(%x: f32[1,16,8,8]) {\n  %y = MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2]} : "
      "f32[1,16,4,4]\n  return %y\n}",
      {x});
  EXPECT_TRUE(usesKernel(result, "onednn:pooling")) << result.kernels[0];
}

}  // namespace
}  // namespace estuary::ge::tensor_test
