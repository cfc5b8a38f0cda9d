// Normalizations. BatchNormalization (inference) runs on oneDNN's primitive for
// f32/bf16/f16 when its parameters are f32 or constant (oneDNN takes f32
// scale/shift/statistics; constants are converted at build time). Own kernels cover the
// rest: LayerNormalization and RMSNormalization, GroupNormalization, InstanceNormalization,
// BatchNormalization in training mode, f64. Own kernels accumulate in f32 (f64 for f64) and
// convert the per-channel parameters once per run into scratch.
//
// LayerNormalization left oneDNN's primitive: as fast on one thread (BERT's 25: 1.7 ms
// either way, Zen 1), and on several it woke oneDNN's OpenMP team between products that
// run on Estuary's workers (column_blocks.h), which cost 5 to 12 ms against 1.4 to 1.8.
#include <cmath>

#include "cpu/nn_kernels.h"
#include "cpu/nn_support.h"

namespace estuary::ge::cpu {

namespace {

// dst[i] = src[i] for `count` elements of a float tensor of type `dtype`.
template <typename Acc>
void convertTo(const void* src, DType dtype, int64_t count, Acc* dst) {
  dispatch(FloatDTypes{}, dtype, [&](auto type) {
    using T = StorageOf<decltype(type)>;
    const T* values = static_cast<const T*>(src);
    for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<Acc>(loadAs(values[i]));
  });
}

// A build-time f32 copy of a constant parameter vector.
std::vector<std::byte> f32Copy(const Tensor& tensor) {
  std::vector<std::byte> bytes(static_cast<size_t>(tensor.numElements()) * sizeof(float));
  convertTo(tensor.data(), tensor.dtype(), tensor.numElements(), reinterpret_cast<float*>(bytes.data()));
  return bytes;
}

// A oneDNN argument for a per-channel f32 parameter: the input itself when it is f32,
// else its constant converted at build time. False when neither applies.
bool f32Parameter(const KernelBuildContext& context, size_t input, int dnnl_arg, std::vector<OnednnArg>& args,
                  OwnedConstants& owned) {
  const TensorDesc& desc = context.input(input);
  dnnl::memory::desc md = plainDesc(dnnl::memory::dims{desc.numElements()}, DType::F32);
  if (desc.dtype == DType::F32) {
    args.push_back({dnnl_arg, OnednnArg::Source::Input, input, md});
    return true;
  }
  const Tensor* constant = context.constantInput(input);
  if (!constant) return false;
  const std::vector<std::byte> widened = f32Copy(*constant);
  owned.push_back(std::make_shared<const ConstantBytes>(widened.data(), widened.size()));
  args.push_back({dnnl_arg, OnednnArg::Source::Constant, input, md, owned.back()->data()});
  return true;
}

bool onednnFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16; }

// The sum of term(x[i]) over `count` values in 32 interleaved partial sums: one running sum
// would wait on the latency of each vector add, so a row would cost its length times that
// latency (BERT's 25 LayerNorms: 2.5 ms against 1.7 on oneDNN, one thread, Zen 1).
template <typename Acc, typename Term>
inline Acc interleavedSum(int64_t count, const Term& term) {
  constexpr int64_t kPartials = 32;
  Acc partial[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= count; i += kPartials) {
    for (int64_t lane = 0; lane < kPartials; ++lane) partial[lane] += term(i + lane);
  }
  Acc sum = 0;
  for (; i < count; ++i) sum += term(i);
  for (int64_t lane = 0; lane < kPartials; ++lane) sum += partial[lane];
  return sum;
}

// Sum and sum of squared deviations of `count` values, two passes in Acc.
template <typename T, typename Acc>
inline void meanAndVariance(const T* x, int64_t count, Acc& mean, Acc& variance) {
  const Acc sum = interleavedSum<Acc>(count, [x](int64_t i) { return static_cast<Acc>(loadAs(x[i])); });
  mean = count ? sum / static_cast<Acc>(count) : Acc(0);
  const Acc squares = interleavedSum<Acc>(count, [x, mean](int64_t i) {
    const Acc deviation = loadAs(x[i]) - mean;
    return deviation * deviation;
  });
  variance = count ? squares / static_cast<Acc>(count) : Acc(0);
}

// ---------------------------------------------------------------------------- BatchNormalization

std::unique_ptr<Kernel> onednnBatchNorm(const KernelBuildContext& context) {
  const TensorDesc& x = context.input(0);
  if (!onednnFloat(x.dtype) || x.rank > 5) return nullptr;
  std::vector<OnednnArg> args;
  OwnedConstants owned;
  const std::pair<size_t, int> parameters[] = {
      {1, DNNL_ARG_SCALE}, {2, DNNL_ARG_SHIFT}, {3, DNNL_ARG_MEAN}, {4, DNNL_ARG_VARIANCE}};
  for (const auto& [input, dnnl_arg] : parameters) {
    if (!f32Parameter(context, input, dnnl_arg, args, owned)) return nullptr;
  }
  const dnnl::engine& engine = cpuOf(context).engine();
  dnnl::memory::desc data = layoutDesc(x);
  try {
    dnnl::batch_normalization_forward::desc desc(
        dnnl::prop_kind::forward_inference, data, static_cast<float>(context.floatAttr("epsilon")),
        dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
            dnnl::normalization_flags::use_shift);
    dnnl::batch_normalization_forward::primitive_desc pd(desc, scratchpadAttr(), engine);
    args.push_back({DNNL_ARG_SRC, OnednnArg::Source::Input, 0, data});
    args.push_back({DNNL_ARG_DST, OnednnArg::Source::Output, 0, data});
    args.push_back({DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()});
    return std::make_unique<PackedOnednnKernel>("onednn:batch_norm " + implName(pd), engine,
                                                dnnl::batch_normalization_forward(pd),
                                                pd.scratchpad_desc().get_size(), std::move(args), std::move(owned));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = B - mean * a. In training mode
// the statistics are the batch's, and running_mean/running_var are written.
template <typename T>
class OwnBatchNormKernel final : public Kernel {
  using Acc = ComputeOf<T>;

 public:
  OwnBatchNormKernel(const KernelBuildContext& context, bool training)
      : batch_(context.input(0).dims[0]), channels_(context.input(0).dims[1]),
        epsilon_(context.floatAttr("epsilon")), momentum_(context.floatAttr("momentum")), training_(training) {
    spatial_ = channels_ ? context.input(0).numElements() / std::max<int64_t>(batch_ * channels_, 1) : 0;
    for (size_t i = 1; i < 5; ++i) types_[i - 1] = context.input(i).dtype;
    for (size_t o = 1; o < 3; ++o) {
      outputs_[o - 1] = o < context.numOutputs() ? context.output(o).dtype : DType::Undefined;
    }
  }
  size_t scratchBytes() const override { return static_cast<size_t>(6 * channels_) * sizeof(Acc); }

  void run(const KernelArgs& args, KernelState*) const override {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    Acc* scale = static_cast<Acc*>(args.scratch);
    Acc* shift = scale + channels_;
    Acc* mean = shift + channels_;
    Acc* variance = mean + channels_;
    Acc* a = variance + channels_;
    Acc* b = a + channels_;
    convertTo(args.inputs[1], types_[0], channels_, scale);
    convertTo(args.inputs[2], types_[1], channels_, shift);
    convertTo(args.inputs[3], types_[2], channels_, mean);
    convertTo(args.inputs[4], types_[3], channels_, variance);
    const int64_t plane = spatial_;
    if (training_) {
      // Batch statistics; the running ones blend them with the given ones.
      Acc* batch_mean = a;
      Acc* batch_variance = b;
      // Two passes over a channel's values.
      const double cost = 2.0 * static_cast<double>(batch_ * plane);
      ge::parallelFor(channels_, cost, args.num_threads, [&](int64_t first, int64_t last) {
        for (int64_t c = first; c < last; ++c) {
          Acc sum = 0, squares = 0;
          for (int64_t n = 0; n < batch_; ++n) {
            const T* values = x + (n * channels_ + c) * plane;
#pragma omp simd reduction(+ : sum)
            for (int64_t i = 0; i < plane; ++i) sum += loadAs(values[i]);
          }
          const Acc count = static_cast<Acc>(std::max<int64_t>(batch_ * plane, 1));
          const Acc average = sum / count;
          for (int64_t n = 0; n < batch_; ++n) {
            const T* values = x + (n * channels_ + c) * plane;
#pragma omp simd reduction(+ : squares)
            for (int64_t i = 0; i < plane; ++i) squares += (loadAs(values[i]) - average) * (loadAs(values[i]) - average);
          }
          batch_mean[c] = average;
          batch_variance[c] = squares / count;
        }
      });
      const Acc momentum = static_cast<Acc>(momentum_);
      for (size_t o = 0; o < 2; ++o) {
        if (outputs_[o] == DType::Undefined || !args.outputs[o + 1]) continue;
        const Acc* given = o == 0 ? mean : variance;
        const Acc* current = o == 0 ? batch_mean : batch_variance;
        dispatch(FloatDTypes{}, outputs_[o], [&](auto type) {
          using U = StorageOf<decltype(type)>;
          U* running = static_cast<U*>(args.outputs[o + 1]);
          for (int64_t c = 0; c < channels_; ++c) running[c] = storeAs<U>(given[c] * momentum + current[c] * (1 - momentum));
        });
      }
      for (int64_t c = 0; c < channels_; ++c) {
        mean[c] = batch_mean[c];
        variance[c] = batch_variance[c];
      }
    }
    for (int64_t c = 0; c < channels_; ++c) {
      a[c] = scale[c] / std::sqrt(variance[c] + static_cast<Acc>(epsilon_));
      b[c] = shift[c] - mean[c] * a[c];
    }
    ge::parallelFor(batch_ * channels_, static_cast<double>(plane), args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t row = first; row < last; ++row) {
        const Acc factor = a[row % channels_], offset = b[row % channels_];
        const T* in = x + row * plane;
        T* out = y + row * plane;
#pragma omp simd
        for (int64_t i = 0; i < plane; ++i) out[i] = storeAs<T>(loadAs(in[i]) * factor + offset);
      }
    });
  }
  std::string name() const override { return training_ ? "cpu:batch_norm (training)" : "cpu:batch_norm"; }

 private:
  int64_t batch_, channels_, spatial_ = 0;
  double epsilon_, momentum_;
  bool training_;
  DType types_[4];
  DType outputs_[2];
};

std::unique_ptr<Kernel> makeBatchNorm(const KernelBuildContext& context) {
  const bool training = context.intAttr("training_mode") != 0;
  if (context.input(0).layout != Layout::Plain || context.output(0).layout != Layout::Plain) {
    // Only oneDNN runs other layouts (f32, inference): its desc follows the layout.
    return training || context.output(0).dtype != DType::F32 ? nullptr : onednnBatchNorm(context);
  }
  if (context.output(0).numElements() == 0 && !training) return makeZeroFillKernel(context, "cpu:batch_norm (empty)");
  if (!training) {
    if (std::unique_ptr<Kernel> kernel = onednnBatchNorm(context)) return kernel;
  }
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatDTypes{}, context.input(0).dtype, [&](auto type) {
    kernel = std::make_unique<OwnBatchNormKernel<StorageOf<decltype(type)>>>(context, training);
  });
  return kernel;
}

// ---------------------------------------------------------------------------- Layer and RMS

// Rows of `inner` elements normalized independently. Scale and bias repeat with period
// equal to their element count (their shape is a suffix of the normalized shape).
struct RowGeometry {
  int64_t rows = 0, inner = 0;
  int64_t scale_period = 0, bias_period = 0;
};

std::optional<RowGeometry> rowGeometry(const KernelBuildContext& context, size_t scale_input, size_t bias_input) {
  const TensorDesc& x = context.input(0);
  int64_t axis = context.intAttr("axis");
  if (axis < 0) axis += x.rank;
  RowGeometry geometry;
  geometry.rows = 1;
  geometry.inner = 1;
  for (int d = 0; d < x.rank; ++d) (d < axis ? geometry.rows : geometry.inner) *= x.dims[d];
  auto period = [&](size_t input) -> std::optional<int64_t> {
    const TensorDesc& desc = context.input(input);
    // Broadcasting to X[axis:]: the parameter's trailing dims match, its leading ones are 1.
    bool leading = true;
    int64_t count = 1;
    for (int d = 0; d < desc.rank; ++d) {
      const int x_dim = x.rank - desc.rank + d;
      if (x_dim < axis) {
        if (desc.dims[d] != 1) return std::nullopt;
        continue;
      }
      if (leading && desc.dims[d] == 1 && x.dims[x_dim] != 1) continue;
      leading = false;
      if (desc.dims[d] != x.dims[x_dim]) return std::nullopt;
      count *= desc.dims[d];
    }
    return count;
  };
  std::optional<int64_t> scale = period(scale_input);
  if (!scale) return std::nullopt;
  geometry.scale_period = *scale;
  if (context.hasInput(bias_input)) {
    std::optional<int64_t> bias = period(bias_input);
    if (!bias) return std::nullopt;
    geometry.bias_period = *bias;
  }
  return geometry;
}

// LayerNormalization (rms = false) and RMSNormalization (rms = true) on rows: X of type
// T, Y of type Y. Scale and bias are converted into Acc arrays once per run. Layer norm
// writes Mean and InvStdDev when asked.
template <typename T, typename Y>
class OwnRowNormKernel final : public Kernel {
  using Acc = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<Y, double>, double, float>;

 public:
  OwnRowNormKernel(const KernelBuildContext& context, const RowGeometry& geometry, bool rms)
      : geometry_(geometry), rms_(rms), epsilon_(context.floatAttr("epsilon")),
        scale_type_(context.input(1).dtype),
        bias_type_(!rms && context.hasInput(2) ? context.input(2).dtype : DType::Undefined) {
    for (size_t o = 1; o < 3; ++o) stats_[o - 1] = o < context.numOutputs() ? context.output(o).dtype : DType::Undefined;
  }
  size_t scratchBytes() const override { return static_cast<size_t>(2 * geometry_.inner) * sizeof(Acc); }

  void run(const KernelArgs& args, KernelState*) const override {
    const int64_t inner = geometry_.inner;
    Acc* scale = static_cast<Acc*>(args.scratch);
    Acc* bias = scale + inner;
    // Expand the parameters to a full row so that the row loop is a plain vector loop.
    convertTo(args.inputs[1], scale_type_, geometry_.scale_period, scale);
    for (int64_t i = geometry_.scale_period; i < inner; ++i) scale[i] = scale[i % geometry_.scale_period];
    if (bias_type_ != DType::Undefined) {
      convertTo(args.inputs[2], bias_type_, geometry_.bias_period, bias);
      for (int64_t i = geometry_.bias_period; i < inner; ++i) bias[i] = bias[i % geometry_.bias_period];
    } else {
      for (int64_t i = 0; i < inner; ++i) bias[i] = 0;
    }
    const T* x = static_cast<const T*>(args.inputs[0]);
    Y* y = static_cast<Y*>(args.outputs[0]);
    void* mean_out = stats_[0] != DType::Undefined ? args.outputs[1] : nullptr;
    void* inv_out = stats_[1] != DType::Undefined ? args.outputs[2] : nullptr;
    const Acc epsilon = static_cast<Acc>(epsilon_);
    // A row is read twice and written once.
    const double cost = 2.0 * static_cast<double>(inner);
    ge::parallelFor(geometry_.rows, cost, args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t row = first; row < last; ++row) {
        const T* in = x + row * inner;
        Y* out = y + row * inner;
        Acc mean = 0, inv = 0;
        if (rms_) {
          Acc squares = 0;
#pragma omp simd reduction(+ : squares)
          for (int64_t i = 0; i < inner; ++i) squares += loadAs(in[i]) * loadAs(in[i]);
          inv = Acc(1) / std::sqrt(squares / static_cast<Acc>(std::max<int64_t>(inner, 1)) + epsilon);
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) out[i] = storeAs<Y>(loadAs(in[i]) * inv * scale[i]);
        } else {
          Acc variance = 0;
          meanAndVariance(in, inner, mean, variance);
          inv = Acc(1) / std::sqrt(variance + epsilon);
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) out[i] = storeAs<Y>((loadAs(in[i]) - mean) * inv * scale[i] + bias[i]);
        }
        if (mean_out) storeStat(mean_out, stats_[0], row, mean);
        if (inv_out) storeStat(inv_out, stats_[1], row, inv);
      }
    });
  }
  std::string name() const override { return rms_ ? "cpu:rms_norm" : "cpu:layer_norm"; }

 private:
  static void storeStat(void* out, DType dtype, int64_t row, Acc value) {
    dispatch(FloatDTypes{}, dtype, [&](auto type) {
      using U = StorageOf<decltype(type)>;
      static_cast<U*>(out)[row] = storeAs<U>(value);
    });
  }

  RowGeometry geometry_;
  bool rms_;
  double epsilon_;
  DType scale_type_, bias_type_;
  DType stats_[2] = {DType::Undefined, DType::Undefined};
};

std::unique_ptr<Kernel> makeRowNorm(const KernelBuildContext& context, bool rms) {
  std::optional<RowGeometry> geometry = rowGeometry(context, 1, 2);
  if (!geometry) return nullptr;
  if (!rms && context.input(0).dtype != context.output(0).dtype) return nullptr;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatDTypes{}, context.input(0).dtype, [&](auto x_type) {
    dispatch(FloatDTypes{}, context.output(0).dtype, [&](auto y_type) {
      kernel = std::make_unique<OwnRowNormKernel<StorageOf<decltype(x_type)>, StorageOf<decltype(y_type)>>>(context, *geometry, rms);
    });
  });
  return kernel;
}

// ---------------------------------------------------------------------------- Group and Instance

// Per image and group: mean and variance over the group's channels x spatial (contiguous
// in NC+spatial), then y = (x - mean) * inv * scale[c] + bias[c].
template <typename T>
class OwnGroupNormKernel final : public Kernel {
  using Acc = ComputeOf<T>;

 public:
  OwnGroupNormKernel(const KernelBuildContext& context, int64_t groups, bool instance)
      : batch_(context.input(0).dims[0]), channels_(context.input(0).dims[1]), groups_(groups),
        epsilon_(context.floatAttr("epsilon")), scale_type_(context.input(1).dtype),
        bias_type_(context.input(2).dtype), instance_(instance) {
    spatial_ = batch_ > 0 && channels_ > 0 ? context.input(0).numElements() / (batch_ * channels_) : 0;
  }
  size_t scratchBytes() const override { return static_cast<size_t>(2 * channels_) * sizeof(Acc); }

  void run(const KernelArgs& args, KernelState*) const override {
    Acc* scale = static_cast<Acc*>(args.scratch);
    Acc* bias = scale + channels_;
    convertTo(args.inputs[1], scale_type_, channels_, scale);
    convertTo(args.inputs[2], bias_type_, channels_, bias);
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    const int64_t group_channels = channels_ / groups_, span = group_channels * spatial_;
    const Acc epsilon = static_cast<Acc>(epsilon_);
    const double cost = 2.0 * static_cast<double>(span);
    ge::parallelFor(batch_ * groups_, cost, args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t block = first; block < last; ++block) {
        const T* in = x + block * span;
        T* out = y + block * span;
        Acc mean = 0, variance = 0;
        meanAndVariance(in, span, mean, variance);
        const Acc inv = Acc(1) / std::sqrt(variance + epsilon);
        for (int64_t c = 0; c < group_channels; ++c) {
          const int64_t channel = (block % groups_) * group_channels + c;
          const Acc factor = inv * scale[channel], offset = bias[channel] - mean * factor;
          const T* values = in + c * spatial_;
          T* result = out + c * spatial_;
#pragma omp simd
          for (int64_t i = 0; i < spatial_; ++i) result[i] = storeAs<T>(loadAs(values[i]) * factor + offset);
        }
      }
    });
  }
  std::string name() const override { return instance_ ? "cpu:instance_norm" : "cpu:group_norm"; }

 private:
  int64_t batch_, channels_, groups_, spatial_ = 0;
  double epsilon_;
  DType scale_type_, bias_type_;
  bool instance_;
};

std::unique_ptr<Kernel> makeGroupNorm(const KernelBuildContext& context, bool instance) {
  const TensorDesc& x = context.input(0);
  if (x.dtype != context.output(0).dtype) return nullptr;
  const int64_t groups = instance ? x.dims[1] : context.intAttr("num_groups");
  if (x.numElements() == 0) return makeZeroFillKernel(context, "cpu:group_norm (empty)");
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatDTypes{}, x.dtype, [&](auto type) {
    kernel = std::make_unique<OwnGroupNormKernel<StorageOf<decltype(type)>>>(context, groups, instance);
  });
  return kernel;
}

}  // namespace

void registerNormalizationKernels(KernelRegistry& registry) {
  registry.addLayoutAware("BatchNormalization", "",
                          [](const KernelBuildContext& c) { return buildPreferringF32(c, makeBatchNorm); });
  registry.add("LayerNormalization", "", [](const KernelBuildContext& context) {
    // Mean/InvStdDev outputs come from the own kernel, which handles 16-bit types itself.
    if (context.numOutputs() > 1) return makeRowNorm(context, false);
    return buildPreferringF32(context, [](const KernelBuildContext& c) { return makeRowNorm(c, false); });
  });
  registry.add("RMSNormalization", "", [](const KernelBuildContext& c) { return makeRowNorm(c, true); });
  registry.add("GroupNormalization", "", [](const KernelBuildContext& c) { return makeGroupNorm(c, false); });
  registry.add("InstanceNormalization", "", [](const KernelBuildContext& c) { return makeGroupNorm(c, true); });
}

}  // namespace estuary::ge::cpu
