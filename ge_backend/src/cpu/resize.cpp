// Resize (nearest, linear, cubic; every coordinate_transformation_mode; exclude_outside;
// tf_crop_and_resize extrapolation) on tensors of any rank.
//
// ONNX defines n-dimensional interpolation as 1-D interpolation applied axis by axis, so
// the kernel is a chain of 1-D passes, one per resized axis (innermost first). For each
// axis a table built at build time holds, per output coordinate, the input coordinates of
// its 1, 2 or 4 taps (more for antialiased downsampling; clamped to the edge) and their
// weights. A pass over an inner axis blends whole rows (vector code along the row); the pass
// over the innermost axis gathers.
// Intermediate results live in scratch memory in the compute type (f32, or f64 for f64
// and wide integers), and integer outputs are rounded to nearest and saturated.
#include <cmath>

#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

enum class Interpolation { Nearest, Linear, Cubic };

struct ResizeAttrs {
  Interpolation mode = Interpolation::Nearest;
  std::string coordinates;   // coordinate_transformation_mode
  std::string nearest_mode;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
};

// The 1-D interpolation along one axis.
struct AxisTable {
  int axis = 0;
  int64_t in = 0, out = 0;
  int taps = 1;
  std::vector<int64_t> index;   // out * taps input coordinates, clamped into [0, in)
  std::vector<double> weight;   // out * taps
  std::vector<uint8_t> outside; // per output coordinate: tf_crop_and_resize extrapolates
};

// Where output coordinate j of an axis samples the input (ONNX's
// coordinate_transformation_mode); roi_start/roi_end are used by tf_crop_and_resize.
double sourceCoordinate(const std::string& mode, double j, double scale, int64_t in, int64_t out, double roi_start,
                        double roi_end) {
  if (mode == "half_pixel") return (j + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / (scale * static_cast<double>(in));
    double center = static_cast<double>(in) / 2;
    return center * (1 - adjustment) + (j + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel") return out > 1 ? (j + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") {
    // Over the unrounded output length (input * scale), as ONNX's reference computes it:
    // with given scales the output length is rounded down, the corners stay where the
    // scale puts them.
    return out == 1 ? 0.0 : j * static_cast<double>(in - 1) / (scale * static_cast<double>(in) - 1.0);
  }
  if (mode == "asymmetric") return j / scale;
  // tf_crop_and_resize
  double span = static_cast<double>(in - 1);
  if (out > 1) return roi_start * span + j * (roi_end - roi_start) * span / static_cast<double>(out - 1);
  return 0.5 * (roi_start + roi_end) * span;
}

int64_t nearestIndex(const std::string& mode, double x) {
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  return static_cast<int64_t>(std::ceil(x - 0.5));  // round_prefer_floor
}

// The cubic convolution kernel with coefficient a (Keys), at distance x.
double cubicWeight(double a, double x) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Antialiased downsampling (antialias = 1, scale < 1): the linear or cubic filter stretched
// by 1/scale, so that an output averages every input it covers, normalized to sum 1; as in
// ONNX's reference, taps sit at floor(x) + i (or x - 1 + i when x is whole).
void antialiasedTaps(const ResizeAttrs& attrs, double x, double scale, int64_t* first, double* weight, int taps) {
  double base = std::floor(x), ratio = x - base;
  if (ratio == 0) {
    base -= 1;
    ratio = 1;
  }
  const int start = 1 - taps / 2;
  double sum = 0;
  for (int t = 0; t < taps; ++t) {
    double distance = (start + t - ratio) * scale;
    weight[t] = attrs.mode == Interpolation::Linear ? std::max(0.0, 1 - std::abs(distance))
                                                    : cubicWeight(attrs.cubic_a, distance);
    sum += weight[t];
  }
  for (int t = 0; t < taps; ++t) weight[t] /= sum;
  *first = static_cast<int64_t>(base) + start;
}

AxisTable axisTable(const ResizeAttrs& attrs, int axis, int64_t in, int64_t out, double scale, double roi_start,
                    double roi_end) {
  AxisTable table;
  table.axis = axis;
  table.in = in;
  table.out = out;
  table.taps = attrs.mode == Interpolation::Nearest ? 1 : attrs.mode == Interpolation::Linear ? 2 : 4;
  const bool antialiased = attrs.antialias && attrs.mode != Interpolation::Nearest && scale < 1;
  if (antialiased) {
    // The filter's support, 1 (linear) or 2 (cubic) input steps each side, over scale.
    const double support = attrs.mode == Interpolation::Linear ? 1 : 2;
    table.taps = 2 - 2 * static_cast<int>(std::floor(-support / scale) + 1);
  }
  table.index.assign(out * table.taps, 0);
  table.weight.assign(out * table.taps, 0.0);
  table.outside.assign(out, 0);
  const bool crop = attrs.coordinates == "tf_crop_and_resize";
  for (int64_t j = 0; j < out; ++j) {
    double x = sourceCoordinate(attrs.coordinates, static_cast<double>(j), scale, in, out, roi_start, roi_end);
    if (crop && (x < 0 || x > static_cast<double>(in - 1))) {
      table.outside[j] = 1;
      continue;
    }
    int64_t* index = &table.index[j * table.taps];
    double* weight = &table.weight[j * table.taps];
    if (attrs.mode == Interpolation::Nearest) {
      index[0] = std::clamp<int64_t>(nearestIndex(attrs.nearest_mode, x), 0, in - 1);
      weight[0] = 1;
      continue;
    }
    double x0 = std::floor(x), r = x - x0;
    int64_t first = static_cast<int64_t>(x0) - (table.taps == 4 ? 1 : 0);
    if (antialiased) {
      antialiasedTaps(attrs, x, scale, &first, weight, table.taps);
    } else if (table.taps == 2) {
      weight[0] = 1 - r;
      weight[1] = r;
    } else {
      for (int t = 0; t < 4; ++t) weight[t] = cubicWeight(attrs.cubic_a, t - 1 - r);
    }
    double kept = 0;
    for (int t = 0; t < table.taps; ++t) {
      int64_t position = first + t;
      bool inside = position >= 0 && position < in;
      if (attrs.exclude_outside && !inside) weight[t] = 0;
      kept += weight[t];
      index[t] = std::clamp<int64_t>(position, 0, in - 1);
    }
    if (attrs.exclude_outside && kept != 0) {
      for (int t = 0; t < table.taps; ++t) weight[t] /= kept;
    }
  }
  return table;
}

// One 1-D pass: [outer, in, inner] -> [outer, out, inner] along the table's axis.
struct Pass {
  int64_t outer = 0, inner = 0;
  size_t table = 0;
};

template <typename S>
using ResizeCompute = std::conditional_t<std::is_same_v<S, double> || std::is_same_v<S, int32_t> ||
                                             std::is_same_v<S, int64_t>,
                                         double, float>;

template <typename S>
class ResizeKernel final : public Kernel {
  using C = ResizeCompute<S>;

 public:
  ResizeKernel(const ResizeAttrs& attrs, const TensorDesc& in, std::vector<AxisTable> tables)
      : attrs_(attrs), tables_(std::move(tables)) {
    TensorDesc shape = in;
    int64_t largest = 0;
    for (size_t p = 0; p < tables_.size(); ++p) {
      const AxisTable& table = tables_[p];
      passes_.push_back(Pass{outerSize(shape, table.axis), innerSize(shape, table.axis), p});
      shape.dims[table.axis] = table.out;
      if (p + 1 < tables_.size()) largest = std::max(largest, shape.numElements());
      weights_.emplace_back(table.weight.begin(), table.weight.end());
    }
    size_t element = attrs_.mode == Interpolation::Nearest ? sizeof(S) : sizeof(C);
    buffer_bytes_ = (static_cast<size_t>(largest) * element + 63) / 64 * 64;
  }

  size_t scratchBytes() const override {
    return tables_.size() <= 1 ? 0 : tables_.size() == 2 ? buffer_bytes_ : 2 * buffer_bytes_;
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const void* src = args.inputs[0];
    for (size_t p = 0; p < passes_.size(); ++p) {
      const bool first = p == 0, last = p + 1 == passes_.size();
      void* dst = last ? args.outputs[0] : static_cast<std::byte*>(args.scratch) + (p % 2) * buffer_bytes_;
      const Pass& pass = passes_[p];
      if (attrs_.mode == Interpolation::Nearest) {
        nearest(static_cast<const S*>(src), static_cast<S*>(dst), pass, args.num_threads);
      } else if (first && last) {
        interpolate(static_cast<const S*>(src), static_cast<S*>(dst), pass, args.num_threads);
      } else if (first) {
        interpolate(static_cast<const S*>(src), static_cast<C*>(dst), pass, args.num_threads);
      } else if (last) {
        interpolate(static_cast<const C*>(src), static_cast<S*>(dst), pass, args.num_threads);
      } else {
        interpolate(static_cast<const C*>(src), static_cast<C*>(dst), pass, args.num_threads);
      }
      src = dst;
    }
  }

  std::string name() const override {
    const char* mode = attrs_.mode == Interpolation::Nearest ? "nearest" : attrs_.mode == Interpolation::Linear ? "linear" : "cubic";
    return std::string("cpu:resize ") + mode + " " + std::to_string(tables_.size()) + " axes";
  }

 private:
  template <typename In>
  static C toCompute(In value) {
    if constexpr (std::is_same_v<In, C>) return value;
    return static_cast<C>(loadAs(value));
  }
  template <typename Out>
  static Out fromCompute(C value) {
    if constexpr (std::is_same_v<Out, C>) return value;
    return storeRounded<Out>(value);
  }

  void nearest(const S* src, S* dst, const Pass& pass, int threads) const {
    const AxisTable& t = tables_[pass.table];
    const S extrapolation = storeRounded<S>(attrs_.extrapolation);
    if (pass.inner == 1) {
      parallelRanges(pass.outer, t.out * static_cast<int64_t>(sizeof(S)) * 2, threads, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const S* row = src + o * t.in;
          S* out = dst + o * t.out;
          for (int64_t j = 0; j < t.out; ++j) out[j] = t.outside[j] ? extrapolation : row[t.index[j]];
        }
      });
      return;
    }
    parallelRanges(pass.outer * t.out, pass.inner * static_cast<int64_t>(sizeof(S)), threads, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / t.out, j = item % t.out;
        S* out = dst + item * pass.inner;
        if (t.outside[j]) {
          std::fill(out, out + pass.inner, extrapolation);
        } else {
          std::memcpy(out, src + (o * t.in + t.index[j]) * pass.inner, static_cast<size_t>(pass.inner) * sizeof(S));
        }
      }
    });
  }

  template <typename In, typename Out>
  void interpolate(const In* src, Out* dst, const Pass& pass, int threads) const {
    const AxisTable& t = tables_[pass.table];
    const C* w = weights_[pass.table].data();
    const int taps = t.taps;
    const Out extrapolation = fromCompute<Out>(static_cast<C>(attrs_.extrapolation));
    if (pass.inner == 1) {
      parallelRanges(pass.outer, t.out * taps * static_cast<int64_t>(sizeof(In)), threads, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const In* row = src + o * t.in;
          Out* out = dst + o * t.out;
          for (int64_t j = 0; j < t.out; ++j) {
            C acc = 0;
            for (int k = 0; k < taps; ++k) acc += w[j * taps + k] * toCompute(row[t.index[j * taps + k]]);
            out[j] = t.outside[j] ? extrapolation : fromCompute<Out>(acc);
          }
        }
      });
      return;
    }
    parallelRanges(pass.outer * t.out, pass.inner * taps * static_cast<int64_t>(sizeof(In)), threads,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t item = begin; item < end; ++item) {
                       const int64_t o = item / t.out, j = item % t.out;
                       Out* out = dst + item * pass.inner;
                       if (t.outside[j]) {
                         std::fill(out, out + pass.inner, extrapolation);
                         continue;
                       }
                       const int64_t* index = &t.index[j * taps];
                       const C* weight = w + j * taps;
                       const In* r0 = src + (o * t.in + index[0]) * pass.inner;
                       const In* r1 = src + (o * t.in + index[1]) * pass.inner;
                       if (taps == 2) {
                         const C w0 = weight[0], w1 = weight[1];
                         for (int64_t b = 0; b < pass.inner; ++b) {
                           out[b] = fromCompute<Out>(w0 * toCompute(r0[b]) + w1 * toCompute(r1[b]));
                         }
                       } else if (taps != 4) {
                         // Antialiased downsampling: a filter as wide as the scale needs.
                         for (int64_t b = 0; b < pass.inner; ++b) {
                           C acc = 0;
                           for (int k = 0; k < taps; ++k) {
                             acc += weight[k] * toCompute(src[(o * t.in + index[k]) * pass.inner + b]);
                           }
                           out[b] = fromCompute<Out>(acc);
                         }
                       } else {
                         const In* r2 = src + (o * t.in + index[2]) * pass.inner;
                         const In* r3 = src + (o * t.in + index[3]) * pass.inner;
                         const C w0 = weight[0], w1 = weight[1], w2 = weight[2], w3 = weight[3];
                         for (int64_t b = 0; b < pass.inner; ++b) {
                           out[b] = fromCompute<Out>(w0 * toCompute(r0[b]) + w1 * toCompute(r1[b]) +
                                                     w2 * toCompute(r2[b]) + w3 * toCompute(r3[b]));
                         }
                       }
                     }
                   });
  }

  ResizeAttrs attrs_;
  std::vector<AxisTable> tables_;   // innermost axis first
  std::vector<std::vector<C>> weights_;
  std::vector<Pass> passes_;
  size_t buffer_bytes_ = 0;
};

class ResizeCopyKernel final : public Kernel {
 public:
  explicit ResizeCopyKernel(size_t bytes) : bytes_(bytes) {}
  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  void run(const KernelArgs& args, KernelState*) const override {
    copyBytes(args.outputs[0], args.inputs[0], bytes_, args.num_threads);
  }
  std::string name() const override { return "cpu:resize identity"; }

 private:
  size_t bytes_;
};

// The float values of a constant input, or an empty vector when the input is absent or
// empty (exporters pass empty tensors for unused inputs).
std::vector<double> constantValues(const KernelBuildContext& context, size_t input, const char* what) {
  if (!context.hasInput(input) || context.input(input).numElements() == 0) return {};
  const Tensor* constant = context.constantInput(input);
  if (!constant) {
    context.fail("input '", what, "' is computed at run time; the CPU backend needs it when it builds the plan");
  }
  std::vector<double> values;
  for (int64_t i = 0; i < constant->numElements(); ++i) {
    values.push_back(elementAsDouble(constant->dtype(), constant->data(), i));
  }
  return values;
}

std::unique_ptr<Kernel> resize(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  const TensorDesc& out = context.output(0);
  ResizeAttrs attrs;
  std::string mode = context.stringAttr("mode");
  if (mode == "nearest") {
    attrs.mode = Interpolation::Nearest;
  } else if (mode == "linear") {
    attrs.mode = Interpolation::Linear;
  } else if (mode == "cubic") {
    attrs.mode = Interpolation::Cubic;
  } else {
    context.fail("attribute 'mode' is '", mode, "', expected nearest, linear or cubic");
  }
  attrs.coordinates = context.stringAttr("coordinate_transformation_mode");
  static const char* const kCoordinateModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                                 "align_corners", "asymmetric", "tf_crop_and_resize"};
  if (std::find(std::begin(kCoordinateModes), std::end(kCoordinateModes), attrs.coordinates) == std::end(kCoordinateModes)) {
    context.fail("attribute 'coordinate_transformation_mode' is '", attrs.coordinates, "', which ONNX does not define");
  }
  attrs.nearest_mode = context.stringAttr("nearest_mode");
  static const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(kNearestModes), std::end(kNearestModes), attrs.nearest_mode) == std::end(kNearestModes)) {
    context.fail("attribute 'nearest_mode' is '", attrs.nearest_mode, "', which ONNX does not define");
  }
  attrs.cubic_a = context.floatAttr("cubic_coeff_a");
  attrs.exclude_outside = context.intAttr("exclude_outside") != 0;
  attrs.extrapolation = context.floatAttr("extrapolation_value");
  attrs.antialias = context.intAttr("antialias") != 0;
  if (attrs.mode != Interpolation::Nearest && in.dtype == DType::Bool) {
    context.fail("linear and cubic resizing need numbers, the input is bool");
  }

  std::vector<int> axes;
  if (context.attr("axes")) {
    for (int64_t axis : context.intsAttr("axes")) axes.push_back(normalizedAxis(context, axis, in.rank, "an axis in 'axes'"));
  } else {
    for (int d = 0; d < in.rank; ++d) axes.push_back(d);
  }
  const size_t count = axes.size();
  std::vector<double> roi = constantValues(context, 1, "roi");
  std::vector<double> scales = constantValues(context, 2, "scales");
  std::vector<double> sizes = constantValues(context, 3, "sizes");
  const bool crop = attrs.coordinates == "tf_crop_and_resize";
  if (crop && roi.size() != 2 * count) context.fail("tf_crop_and_resize needs 'roi' with ", 2 * count, " values");
  if (!scales.empty() && scales.size() != count) context.fail("input 'scales' has ", scales.size(), " values for ", count, " axes");
  if (!sizes.empty() && sizes.size() != count) context.fail("input 'sizes' has ", sizes.size(), " values for ", count, " axes");

  // The scale the coordinate transform uses per axis: given, or output / input size; with
  // keep_aspect_ratio_policy the one scale that keeps the aspect ratio.
  std::vector<double> axis_scales(count);
  std::string policy = context.stringAttr("keep_aspect_ratio_policy");
  for (size_t k = 0; k < count; ++k) {
    int64_t n = in.dims[axes[k]];
    axis_scales[k] = !scales.empty() ? scales[k] : static_cast<double>(out.dims[axes[k]]) / static_cast<double>(std::max<int64_t>(n, 1));
  }
  if (scales.empty() && policy != "stretch") {
    if (sizes.empty()) context.fail("keep_aspect_ratio_policy '", policy, "' needs input 'sizes'");
    double chosen = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (size_t k = 0; k < count; ++k) {
      double ratio = sizes[k] / static_cast<double>(in.dims[axes[k]]);
      chosen = policy == "not_larger" ? std::min(chosen, ratio) : std::max(chosen, ratio);
    }
    std::fill(axis_scales.begin(), axis_scales.end(), chosen);
  }

  std::vector<AxisTable> tables;  // innermost axis first
  for (size_t k = count; k-- > 0;) {
    int axis = axes[k];
    int64_t n = in.dims[axis], m = out.dims[axis];
    if (n == m && axis_scales[k] == 1.0 && !crop) continue;
    if (n == 0 && m > 0) context.fail("cannot resize the empty axis ", axis, " of ", in.str(), " to ", m);
    double roi_start = crop ? roi[k] : 0.0, roi_end = crop ? roi[k + count] : 1.0;
    tables.push_back(axisTable(attrs, axis, n, m, axis_scales[k], roi_start, roi_end));
  }
  std::sort(tables.begin(), tables.end(), [](const AxisTable& a, const AxisTable& b) { return a.axis > b.axis; });
  if (tables.empty()) return std::make_unique<ResizeCopyKernel>(in.byteSize());
  std::unique_ptr<Kernel> kernel;
  dispatch(AllDTypes{}, in.dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    kernel = std::make_unique<ResizeKernel<S>>(attrs, in, std::move(tables));
  });
  return kernel;
}

}  // namespace

void registerResizeKernels(KernelRegistry& registry) { registry.add("Resize", "", resize); }

}  // namespace estuary::ge::cpu
