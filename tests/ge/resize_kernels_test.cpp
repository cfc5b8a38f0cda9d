// Resize against a reference written from the ONNX specification: every mode, every
// coordinate_transformation_mode, every nearest_mode, cubic options, antialiasing,
// tf_crop_and_resize extrapolation, axes, scales or sizes, several dtypes.
#include <algorithm>
#include <cmath>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

struct ResizeSpec {
  std::string mode = "nearest";
  std::string coordinates = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
};

// ONNX's coordinate_transformation_mode formulas.
double originalCoordinate(const ResizeSpec& spec, double x, double scale, int64_t in, int64_t out, double start,
                          double end) {
  const std::string& mode = spec.coordinates;
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  // Over the unrounded output length in * scale, as ONNX's reference (op_resize.py) does.
  if (mode == "align_corners") return out > 1 ? x * (in - 1) / (scale * in - 1) : 0;
  if (mode == "asymmetric") return x / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = out / (scale * in);
    return in / 2.0 * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  return out > 1 ? start * (in - 1) + x * (end - start) * (in - 1) / (out - 1) : 0.5 * (start + end) * (in - 1);
}

// The ONNX reference's 1-D interpolation: the n grid points nearest to x (ties to the lower
// one), edge-padded values, coefficients of the fractional position.
double interpolate1d(const ResizeSpec& spec, const std::vector<double>& data, int64_t j, double scale, int64_t out,
                     double start, double end) {
  const int64_t in = static_cast<int64_t>(data.size());
  double x = originalCoordinate(spec, static_cast<double>(j), scale, in, out, start, end);
  if (spec.coordinates == "tf_crop_and_resize" && (x < 0 || x > in - 1)) return spec.extrapolation;
  double x0 = std::floor(x);
  double ratio = x == x0 ? 1.0 : x - x0;
  std::vector<double> coeffs;
  if (spec.mode == "nearest") {
    if (x == x0) {
      coeffs = {0, 1};
    } else if (spec.nearest_mode == "round_prefer_floor") {
      coeffs = {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    } else if (spec.nearest_mode == "round_prefer_ceil") {
      coeffs = {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    } else if (spec.nearest_mode == "floor") {
      coeffs = {1, 0};
    } else {
      coeffs = {0, 1};
    }
  } else if (spec.antialias && scale < 1) {
    // op_resize.py's _linear_coeffs_antialias / _cubic_coeffs_antialias: the filter over
    // offsets start .. 1 - start from x's left neighbour, scaled by `scale`, normalized.
    const double a = spec.cubic_a;
    auto cubic = [&](double d) {
      d = std::fabs(d);
      return d <= 1 ? (a + 2) * d * d * d - (a + 3) * d * d + 1
                    : d < 2 ? a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a : 0.0;
    };
    const bool linear = spec.mode == "linear";
    const int start = static_cast<int>(std::floor((linear ? -1 : -2) / scale) + 1);
    double sum = 0;
    for (int i = start; i < 2 - start; ++i) {
      double d = (i - ratio) * scale;
      coeffs.push_back(linear ? std::clamp(1 - std::fabs(d), 0.0, 1.0) : cubic(d));
      sum += coeffs.back();
    }
    for (double& c : coeffs) c /= sum;
  } else if (spec.mode == "linear") {
    coeffs = {1 - ratio, ratio};
  } else {
    const double a = spec.cubic_a;
    auto far = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
    auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
    coeffs = {far(ratio + 1), near(ratio), near(1 - ratio), far(2 - ratio)};
  }
  const int64_t n = static_cast<int64_t>(coeffs.size());
  std::vector<int64_t> candidates;
  for (int64_t p = static_cast<int64_t>(x0) - n - 1; p <= static_cast<int64_t>(x0) + n + 1; ++p) candidates.push_back(p);
  std::sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) {
    double da = std::fabs(x - a), db = std::fabs(x - b);
    return da != db ? da < db : a < b;
  });
  std::vector<int64_t> picked(candidates.begin(), candidates.begin() + n);
  std::sort(picked.begin(), picked.end());
  if (spec.exclude_outside) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (picked[k] < 0 || picked[k] >= in) coeffs[k] = 0;
      sum += coeffs[k];
    }
    for (double& c : coeffs) c /= sum;
  }
  double value = 0;
  for (int64_t k = 0; k < n; ++k) value += coeffs[k] * data[std::clamp<int64_t>(picked[k], 0, in - 1)];
  return value;
}

// Applies interpolate1d along each axis in turn (ONNX's n-D interpolation is separable).
// Integer results are saturated, and rounded to nearest unless `exact`.
TestTensor resizeRef(const ResizeSpec& spec, const TestTensor& x, const std::vector<int64_t>& out_dims,
                     const std::vector<double>& scales, const std::vector<double>& roi, bool exact = false) {
  std::vector<double> values = x.values;
  std::vector<int64_t> dims = x.dims;
  const size_t rank = dims.size();
  for (size_t axis = 0; axis < rank; ++axis) {
    bool crop = spec.coordinates == "tf_crop_and_resize";
    if (dims[axis] == out_dims[axis] && scales[axis] == 1.0 && !crop) continue;
    std::vector<int64_t> next = dims;
    next[axis] = out_dims[axis];
    std::vector<double> result(static_cast<size_t>(TestTensor{x.dtype, next, {}}.count()));
    for (size_t i = 0; i < result.size(); ++i) {
      std::vector<int64_t> coords = unravel(static_cast<int64_t>(i), next);
      std::vector<double> line;
      for (int64_t p = 0; p < dims[axis]; ++p) {
        coords[axis] = p;
        line.push_back(values[ravel(coords, dims)]);
      }
      coords = unravel(static_cast<int64_t>(i), next);
      double start = crop ? roi[axis] : 0, end = crop ? roi[axis + rank] : 1;
      result[i] = interpolate1d(spec, line, coords[axis], scales[axis], out_dims[axis], start, end);
    }
    values = std::move(result);
    dims = next;
  }
  TestTensor out{x.dtype, dims, {}};
  for (double v : values) {
    if (!isFloatingPoint(x.dtype)) {
      double low = x.dtype == DType::U8 ? 0 : x.dtype == DType::I8 ? -128 : -2147483648.0;
      double high = x.dtype == DType::U8 ? 255 : x.dtype == DType::I8 ? 127 : 2147483647.0;
      v = std::clamp(exact ? v : std::nearbyint(v), low, high);
    }
    out.values.push_back(exact ? v : roundTo(x.dtype, v));
  }
  return out;
}

std::string attrs(const ResizeSpec& spec) {
  std::ostringstream text;
  text << "{coordinate_transformation_mode = \"" << spec.coordinates << "\", cubic_coeff_a = " << std::to_string(spec.cubic_a)
       << ", antialias = " << (spec.antialias ? 1 : 0) << ", exclude_outside = " << (spec.exclude_outside ? 1 : 0)
       << ", extrapolation_value = " << std::to_string(spec.extrapolation) << ", mode = \"" << spec.mode
       << "\", nearest_mode = \"" << spec.nearest_mode << "\"}";
  return text.str();
}

// Runs Resize with scales (scales non-empty) or sizes and compares with the reference.
void checkResize(const ResizeSpec& spec, const TestTensor& x, const std::vector<double>& scales,
                 const std::vector<int64_t>& sizes, const std::vector<double>& roi = {}) {
  const size_t rank = x.dims.size();
  std::vector<int64_t> out_dims(rank);
  std::vector<double> axis_scales(rank);
  for (size_t d = 0; d < rank; ++d) {
    // The scale the transform uses is the f32 value of the input 'scales'.
    axis_scales[d] = scales.empty() ? static_cast<double>(sizes[d]) / x.dims[d] : static_cast<float>(scales[d]);
    out_dims[d] = scales.empty() ? sizes[d] : static_cast<int64_t>(std::floor(x.dims[d] * axis_scales[d]));
  }
  std::string body;
  std::string roi_operand = "_";
  if (!roi.empty()) {
    body += constantLine("roi", tensorOf(DType::F32, {static_cast<int64_t>(roi.size())}, roi));
    roi_operand = "%roi";
  }
  if (!scales.empty()) {
    body += constantLine("scales", tensorOf(DType::F32, {static_cast<int64_t>(rank)}, scales));
    body += "  %y = Resize(%x, " + roi_operand + ", %scales) " + attrs(spec) + "\n";
  } else {
    std::vector<double> doubles(sizes.begin(), sizes.end());
    body += constantLine("sizes", tensorOf(DType::I64, {static_cast<int64_t>(rank)}, doubles));
    body += "  %y = Resize(%x, " + roi_operand + ", _, %sizes) " + attrs(spec) + "\n";
  }
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  std::vector<double> roi_f32;  // what the kernel reads
  for (double v : roi) roi_f32.push_back(static_cast<float>(v));
  TestTensor expected = resizeRef(spec, x, out_dims, axis_scales, roi_f32);
  std::string what = spec.mode + "/" + spec.coordinates + "/" + spec.nearest_mode + " " + x.type() + " -> " +
                     expected.type() + (spec.exclude_outside ? " exclude_outside" : "");
  ASSERT_EQ(result.outputs[0].dims, expected.dims) << what;
  if (isFloatingPoint(x.dtype)) {
    double tolerance = std::max(dtypeTolerance(x.dtype), 1e-5);
    expectNear(result.outputs[0], expected.values, tolerance, tolerance, what);
  } else if (spec.mode == "nearest") {
    expectEqual(result.outputs[0], expected, what);
  } else {
    // Rounded to nearest: within half a unit of the exact value (a tie may go either way
    // after f32 arithmetic).
    TestTensor exact = resizeRef(spec, x, out_dims, axis_scales, roi_f32, true);
    expectNear(result.outputs[0], exact.values, 0.0, 0.5 + 1e-4, what);
  }
}

const char* const kCoordinateModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                        "align_corners", "asymmetric"};

TEST(ResizeKernels, NearestEveryRoundingAndCoordinateMode) {
  TestTensor x = sampleTensor(DType::F32, {1, 2, 5, 7}, 1);
  for (const char* coordinates : kCoordinateModes) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      ResizeSpec spec;
      spec.coordinates = coordinates;
      spec.nearest_mode = nearest;
      checkResize(spec, x, {1, 1, 2, 1.5}, {});
      checkResize(spec, x, {}, {1, 2, 3, 4});
      checkResize(spec, x, {1, 1, 0.6, 0.5}, {});
    }
  }
}

TEST(ResizeKernels, LinearAndCubicEveryCoordinateMode) {
  TestTensor x = randomTensor(DType::F32, {2, 3, 6, 5}, 2);
  for (const char* mode : {"linear", "cubic"}) {
    for (const char* coordinates : kCoordinateModes) {
      for (bool exclude : {false, true}) {
        ResizeSpec spec;
        spec.mode = mode;
        spec.coordinates = coordinates;
        spec.exclude_outside = exclude;
        checkResize(spec, x, {1, 1, 2, 2}, {});
        checkResize(spec, x, {}, {2, 3, 4, 9});
        checkResize(spec, x, {}, {2, 3, 1, 1});
      }
    }
  }
  ResizeSpec soft;
  soft.mode = "cubic";
  soft.cubic_a = -0.5;
  checkResize(soft, x, {1, 1, 1.5, 2.5}, {});
}

TEST(ResizeKernels, TfCropAndResizeExtrapolates) {
  TestTensor x = randomTensor(DType::F32, {1, 1, 6, 8}, 3);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    ResizeSpec spec;
    spec.mode = mode;
    spec.coordinates = "tf_crop_and_resize";
    spec.extrapolation = -7;
    checkResize(spec, x, {}, {1, 1, 5, 9}, {0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3});
    checkResize(spec, x, {}, {1, 1, 1, 4}, {0, 0, 0.25, 0.0, 1, 1, 0.75, 1.0});
  }
}

TEST(ResizeKernels, DTypesAndIntegerRounding) {
  for (DType dtype : {DType::F16, DType::BF16, DType::F64, DType::U8, DType::I8, DType::I32}) {
    TestTensor x = sampleTensor(dtype, {1, 2, 4, 6}, 4);
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      ResizeSpec spec;
      spec.mode = mode;
      checkResize(spec, x, {1, 1, 1.5, 2}, {});
    }
  }
  ResizeSpec nearest;
  TestTensor flags = sampleTensor(DType::Bool, {2, 3, 4}, 5);
  checkResize(nearest, flags, {1, 2, 0.5}, {});
}

TEST(ResizeKernels, AxesAttributeAndOtherRanks) {
  TestTensor x = randomTensor(DType::F32, {2, 3, 4, 5}, 6);
  ResizeSpec spec;
  spec.mode = "linear";
  std::string body = constantLine("scales", tensorOf(DType::F32, {2}, {2, 0.5})) +
                     "  %y = Resize(%x, _, %scales) {axes = [-2, 1], mode = \"linear\"}\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  TestTensor expected = resizeRef(spec, x, {2, 1, 8, 5}, {1, 0.5, 2, 1}, {});
  expectNear(result.outputs[0], expected.values, 1e-5, 1e-5, "axes [-2, 1]");
  // 1-D and 3-D resizes, and one big enough for threads.
  checkResize(spec, randomTensor(DType::F32, {9}, 7), {2.5}, {});
  checkResize(spec, randomTensor(DType::F32, {3, 4, 5}, 8), {}, {3, 7, 2});
  checkResize(spec, randomTensor(DType::F32, {1, 3, 64, 64}, 9), {1, 1, 2, 2}, {});
}

TEST(ResizeKernels, AntialiasedDownsamplingWidensTheFilter) {
  TestTensor x = randomTensor(DType::F32, {1, 2, 16, 13}, 11);
  for (const char* mode : {"linear", "cubic"}) {
    for (const char* coordinates : {"half_pixel", "align_corners", "asymmetric"}) {
      for (bool exclude : {false, true}) {
        ResizeSpec spec;
        spec.mode = mode;
        spec.coordinates = coordinates;
        spec.exclude_outside = exclude;
        spec.antialias = true;
        checkResize(spec, x, {1, 1, 0.5, 0.3}, {});
        checkResize(spec, x, {}, {1, 2, 5, 20});  // down along one axis, up (no antialias) along the other
      }
    }
  }
}

TEST(ResizeKernels, UnchangedShapeIsACopy) {
  TestTensor x = randomTensor(DType::F32, {1, 2, 3, 4}, 10);
  std::string body = constantLine("scales", tensorOf(DType::F32, {4}, {1, 1, 1, 1})) +
                     "  %y = Resize(%x, _, %scales) {mode = \"linear\"}\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  expectEqual(result.outputs[0], x, "identity resize");
  EXPECT_TRUE(usesKernel(result, "cpu:resize identity"));
}

}  // namespace
}  // namespace estuary::ge::tensor_test
