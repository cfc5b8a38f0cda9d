// The reference Resize (opset 19), written from the ONNX specification's formulas: each
// resized axis maps an output coordinate to x_original (coordinate_transformation_mode), then
// reads the input around it (nearest, linear or cubic; antialiased downscaling stretches the
// filter). Interpolation is separable, so linear and cubic run one 1-D pass per axis in
// double, rounding once when storing; nearest copies the one element it picks.
#include <algorithm>
#include <cmath>

#include "reference/reference_kernels.h"

namespace estuary::ge::reference {

namespace {

enum class Mode { Nearest, Linear, Cubic };

struct ResizeAttrs {
  Mode mode = Mode::Nearest;
  std::string coordinates;  // coordinate_transformation_mode
  std::string rounding;     // nearest_mode
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
};

// One resized axis as a run sees it.
struct AxisResize {
  int axis = 0;
  int64_t in = 0;
  int64_t out = 0;
  double scale = 1;      // from 'scales', or from 'sizes' and keep_aspect_ratio_policy
  double roi_start = 0;  // tf_crop_and_resize's region, normalized to the input
  double roi_end = 1;
};

// x_original for output coordinate j: the spec's coordinate_transformation_mode formulas.
// align_corners divides by scale * in, the output length before flooring, as ONNX's
// reference and its conformance data (test_resize_downsample_scales_linear_align_corners)
// do; with 'sizes' that is the output length itself.
double sourceCoordinate(const ResizeAttrs& attrs, const AxisResize& a, int64_t j) {
  const double x = static_cast<double>(j), in = static_cast<double>(a.in), out = static_cast<double>(a.out);
  const std::string& mode = attrs.coordinates;
  if (mode == "half_pixel") return (x + 0.5) / a.scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    const double adjustment = out / (a.scale * in);
    const double offset = in / 2 * (1 - adjustment);
    return offset + (x + 0.5) / a.scale - 0.5;
  }
  if (mode == "pytorch_half_pixel") return a.out > 1 ? (x + 0.5) / a.scale - 0.5 : 0;
  if (mode == "align_corners") return a.out > 1 ? x * (in - 1) / (a.scale * in - 1) : 0;
  if (mode == "asymmetric") return x / a.scale;
  // tf_crop_and_resize
  return a.out > 1 ? a.roi_start * (in - 1) + x * (a.roi_end - a.roi_start) * (in - 1) / (out - 1)
                   : 0.5 * (a.roi_start + a.roi_end) * (in - 1);
}

// An input position read by an output coordinate, with its weight.
struct Tap {
  int64_t index;
  double weight;
};

int64_t clampIndex(int64_t i, int64_t in) { return std::clamp<int64_t>(i, 0, in - 1); }

// The input position nearest_mode picks for x_original.
int64_t nearestIndex(const std::string& rounding, double x, int64_t in) {
  const double below = std::floor(x);
  const double fraction = x - below;
  double picked;
  if (rounding == "round_prefer_floor") {
    picked = fraction <= 0.5 ? below : below + 1;
  } else if (rounding == "round_prefer_ceil") {
    picked = fraction < 0.5 ? below : below + 1;
  } else if (rounding == "floor") {
    picked = below;
  } else {
    picked = std::ceil(x);
  }
  return clampIndex(static_cast<int64_t>(picked), in);
}

// The cubic convolution kernel of Keys (1981) with a = cubic_coeff_a, zero from |t| = 2.
double cubicKernel(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// The taps linear or cubic interpolation reads at x_original: every input position within
// the filter's support (1 or 2) around x, weighted by the filter at its distance. Antialiased
// downscaling stretches the filter by 1 / scale. Positions past the edges read the edge
// element, or drop out with exclude_outside. The weights are normalized to sum to 1 (they do
// already unless antialias or exclude_outside changed them).
std::vector<Tap> interpolationTaps(const ResizeAttrs& attrs, double x, int64_t in, double scale) {
  const bool linear = attrs.mode == Mode::Linear;
  const double stretch = attrs.antialias && scale < 1 ? scale : 1.0;
  const double reach = (linear ? 1.0 : 2.0) / stretch;
  std::vector<Tap> taps;
  double sum = 0;
  for (auto i = static_cast<int64_t>(std::floor(x - reach)); i <= static_cast<int64_t>(std::ceil(x + reach)); ++i) {
    const double t = (static_cast<double>(i) - x) * stretch;
    double weight = linear ? std::max(0.0, 1 - std::fabs(t)) : cubicKernel(t, attrs.cubic_a);
    if (attrs.exclude_outside && (i < 0 || i >= in)) weight = 0;
    taps.push_back({clampIndex(i, in), weight});
    sum += weight;
  }
  if (sum != 0) {
    for (Tap& tap : taps) tap.weight /= sum;
  }
  return taps;
}

// For each output coordinate along an axis, the taps it reads; none where tf_crop_and_resize
// puts x_original outside the input (the output is extrapolation_value there).
std::vector<std::vector<Tap>> axisTaps(const ResizeAttrs& attrs, const AxisResize& a) {
  std::vector<std::vector<Tap>> table(static_cast<size_t>(a.out));
  for (int64_t j = 0; j < a.out; ++j) {
    const double x = sourceCoordinate(attrs, a, j);
    if (attrs.coordinates == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(a.in - 1))) continue;
    if (attrs.mode == Mode::Nearest) {
      table[j] = {{nearestIndex(attrs.rounding, x, a.in), 1.0}};
    } else {
      table[j] = interpolationTaps(attrs, x, a.in, a.scale);
    }
  }
  return table;
}

// A computed value stored as an element: integers round to nearest (ties to even) and
// saturate, as ONNX's reference (numpy_helper.saturate_cast) does; bool the same within [0, 1].
template <typename S>
S storeResized(double value, DType dtype) {
  if (dtype == DType::Bool) return std::nearbyint(value) >= 1 ? 1 : 0;
  return storeRounded<S>(value);
}

// What a build knows of the operands the run reads: which of scales and sizes is given
// (an empty tensor counts as absent, as exporters fill unused inputs so), their dtypes and
// the resized axes.
struct Operands {
  std::vector<int> axes;
  bool has_scales = false;
  DType scales_dtype = DType::F32;
  DType sizes_dtype = DType::I64;
  bool has_roi = false;
  DType roi_dtype = DType::F32;
  std::string policy;  // keep_aspect_ratio_policy
};

// The resized axes with their scales, sizes and roi read from the run's inputs.
std::vector<AxisResize> resizedAxes(const Operands& operands, const TensorDesc& input, const TensorDesc& output,
                                    const KernelArgs& args) {
  const auto count = static_cast<int64_t>(operands.axes.size());
  std::vector<AxisResize> axes;
  for (int k = 0; k < count; ++k) {
    const int axis = operands.axes[k];
    axes.push_back({axis, input.dims[axis], output.dims[axis]});
  }
  if (operands.has_scales) {
    for (int k = 0; k < count; ++k) axes[k].scale = loadDouble(operands.scales_dtype, args.inputs[2], k);
  } else {
    // stretch: each axis to its size; not_larger / not_smaller: one scale for every axis, the
    // smallest / largest of the size ratios.
    for (int k = 0; k < count; ++k) {
      axes[k].scale = static_cast<double>(loadInt(operands.sizes_dtype, args.inputs[3], k)) / static_cast<double>(axes[k].in);
    }
    if (operands.policy != "stretch") {
      double common = axes.empty() ? 1.0 : axes[0].scale;
      for (const AxisResize& a : axes) {
        common = operands.policy == "not_larger" ? std::min(common, a.scale) : std::max(common, a.scale);
      }
      for (AxisResize& a : axes) a.scale = common;
    }
  }
  if (operands.has_roi) {
    for (int k = 0; k < count; ++k) {
      axes[k].roi_start = loadDouble(operands.roi_dtype, args.inputs[1], k);
      axes[k].roi_end = loadDouble(operands.roi_dtype, args.inputs[1], k + count);
    }
  }
  return axes;
}

// Nearest: each output element is the input element its coordinates pick (or
// extrapolation_value), copied without arithmetic so every integer stays exact.
template <typename S>
void resizeNearest(const ResizeAttrs& attrs, const std::vector<AxisResize>& axes, const TensorDesc& input,
                   const TensorDesc& output, const S* x, S* y) {
  std::vector<std::vector<std::vector<Tap>>> tables(static_cast<size_t>(output.rank));
  for (const AxisResize& a : axes) tables[a.axis] = axisTaps(attrs, a);
  const std::vector<int64_t> input_strides = stridesOf(input);
  const std::vector<int64_t> output_dims = output.dimVector();
  for (int64_t o = 0; o < output.numElements(); ++o) {
    const std::vector<int64_t> index = unravel(o, output_dims);
    int64_t offset = 0;
    bool extrapolated = false;
    for (int d = 0; d < output.rank; ++d) {
      if (tables[d].empty()) {
        offset += index[d] * input_strides[d];  // an axis not resized
      } else if (tables[d][index[d]].empty()) {
        extrapolated = true;
      } else {
        offset += tables[d][index[d]][0].index * input_strides[d];
      }
    }
    y[o] = extrapolated ? storeResized<S>(attrs.extrapolation, output.dtype) : x[offset];
  }
}

// One 1-D pass: `values` (dims `dims`) resized along a.axis.
std::vector<double> resizeAxis(const ResizeAttrs& attrs, const AxisResize& a, const std::vector<double>& values,
                               std::vector<int64_t>& dims) {
  const std::vector<std::vector<Tap>> table = axisTaps(attrs, a);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < a.axis; ++d) outer *= dims[d];
  for (size_t d = a.axis + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<double> result(static_cast<size_t>(outer * a.out * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < a.out; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        double value = table[j].empty() ? attrs.extrapolation : 0.0;
        for (const Tap& tap : table[j]) value += tap.weight * values[(o * a.in + tap.index) * inner + i];
        result[(o * a.out + j) * inner + i] = value;
      }
    }
  }
  dims[a.axis] = a.out;
  return result;
}

template <typename S>
std::unique_ptr<Kernel> makeResize(const KernelBuildContext& context, const ResizeAttrs& attrs,
                                   const Operands& operands) {
  const TensorDesc input = context.input(0), output = context.output(0);
  return makeKernel(context, [=](const KernelArgs& args) {
    if (output.numElements() == 0) return;
    const std::vector<AxisResize> axes = resizedAxes(operands, input, output, args);
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* y = static_cast<S*>(args.outputs[0]);
    if (attrs.mode == Mode::Nearest) {
      resizeNearest(attrs, axes, input, output, x, y);
      return;
    }
    std::vector<double> values(static_cast<size_t>(input.numElements()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = loadDouble(input.dtype, x, static_cast<int64_t>(i));
    std::vector<int64_t> dims = input.dimVector();
    for (const AxisResize& a : axes) values = resizeAxis(attrs, a, values, dims);
    for (size_t i = 0; i < values.size(); ++i) y[i] = storeResized<S>(values[i], output.dtype);
  });
}

// The count of a 1-D operand, 0 when absent.
int64_t operandCount(const KernelBuildContext& context, size_t input) {
  return context.hasInput(input) ? context.input(input).numElements() : 0;
}

std::unique_ptr<Kernel> resizeFactory(const KernelBuildContext& context) {
  const DType dtype = context.input(0).dtype;
  if (!takesDType(dtype)) return nullptr;
  ResizeAttrs attrs;
  const std::string mode = context.stringAttr("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic") context.fail("unknown mode '", mode, "'");
  attrs.mode = mode == "nearest" ? Mode::Nearest : mode == "linear" ? Mode::Linear : Mode::Cubic;
  attrs.coordinates = context.stringAttr("coordinate_transformation_mode");
  const std::vector<std::string> coordinate_modes = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                                     "align_corners", "asymmetric",           "tf_crop_and_resize"};
  if (std::find(coordinate_modes.begin(), coordinate_modes.end(), attrs.coordinates) == coordinate_modes.end()) {
    context.fail("unknown coordinate_transformation_mode '", attrs.coordinates, "'");
  }
  attrs.rounding = context.stringAttr("nearest_mode");
  const std::vector<std::string> roundings = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(roundings.begin(), roundings.end(), attrs.rounding) == roundings.end()) {
    context.fail("unknown nearest_mode '", attrs.rounding, "'");
  }
  attrs.cubic_a = context.floatAttr("cubic_coeff_a");
  attrs.exclude_outside = context.intAttr("exclude_outside") != 0;
  attrs.extrapolation = context.floatAttr("extrapolation_value");
  attrs.antialias = context.intAttr("antialias") != 0;  // linear and cubic only, as the spec says

  const TensorDesc input = context.input(0), output = context.output(0);
  Operands operands;
  if (context.attr("axes")) {
    for (int64_t axis : context.intsAttr("axes")) operands.axes.push_back(static_cast<int>(normalizeAxis(context, axis, input.rank)));
  } else {
    for (int d = 0; d < input.rank; ++d) operands.axes.push_back(d);
  }
  const auto count = static_cast<int64_t>(operands.axes.size());
  operands.has_scales = operandCount(context, 2) > 0;
  const int64_t given = operands.has_scales ? operandCount(context, 2) : operandCount(context, 3);
  if (operands.has_scales == (operandCount(context, 3) > 0)) context.fail("needs exactly one of 'scales' and 'sizes'");
  if (given != count) context.fail(operands.has_scales ? "'scales'" : "'sizes'", " has ", given, " values for ", count, " axes");
  if (operands.has_scales) operands.scales_dtype = context.input(2).dtype;
  if (!operands.has_scales) operands.sizes_dtype = context.input(3).dtype;
  operands.has_roi = attrs.coordinates == "tf_crop_and_resize" && operandCount(context, 1) > 0;
  if (operands.has_roi) {
    operands.roi_dtype = context.input(1).dtype;
    if (operandCount(context, 1) != 2 * count) context.fail("'roi' has ", operandCount(context, 1), " values for ", count, " axes");
  }
  operands.policy = context.stringAttr("keep_aspect_ratio_policy");
  if (operands.policy != "stretch" && operands.policy != "not_larger" && operands.policy != "not_smaller") {
    context.fail("unknown keep_aspect_ratio_policy '", operands.policy, "'");
  }
  if (input.numElements() == 0 && output.numElements() > 0) context.fail("cannot resize an empty tensor to a non-empty one");

  return dispatch(ReferenceDTypes{}, dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    using S = StorageOf<decltype(type)>;
    return makeResize<S>(context, attrs, operands);
  });
}

}  // namespace

void registerResizeKernels(KernelRegistry& registry) { registry.add("Resize", "", resizeFactory); }

}  // namespace estuary::ge::reference
