// Softmax, LogSoftmax (oneDNN softmax_v2, accurate or log algorithm, along any axis of a
// plain tensor) and Hardmax. Own kernels cover f64 and Hardmax: the tensor is seen as
// [outer, axis, inner].
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/nn_kernels.h"
#include "cpu/nn_support.h"

namespace estuary::ge::cpu {

namespace {

enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };

struct AxisSplit {
  int64_t outer = 1, axis = 1, inner = 1;
};

AxisSplit splitAt(const TensorDesc& desc, int64_t axis) {
  AxisSplit split;
  for (int d = 0; d < desc.rank; ++d) {
    if (d < axis) split.outer *= desc.dims[d];
    else if (d == axis) split.axis = desc.dims[d];
    else split.inner *= desc.dims[d];
  }
  return split;
}

std::unique_ptr<Kernel> onednnSoftmax(const KernelBuildContext& context, int64_t axis, SoftmaxKind kind) {
  const DType dtype = context.output(0).dtype;
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16) return nullptr;
  const dnnl::engine& engine = cpuOf(context).engine();
  dnnl::memory::desc src = plainDesc(context.input(0)), dst = plainDesc(context.output(0));
  const int dnnl_axis = context.input(0).rank == 0 ? 0 : static_cast<int>(axis);
  try {
    dnnl::softmax_v2_forward::desc desc(
        dnnl::prop_kind::forward_inference,
        kind == SoftmaxKind::LogSoftmax ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, src, dst,
        dnnl_axis);
    dnnl::softmax_v2_forward::primitive_desc pd(desc, scratchpadAttr(), engine);
    return std::make_unique<OnednnKernel>(
        "onednn:softmax " + implName(pd), engine, dnnl::softmax_v2_forward(pd), pd.scratchpad_desc().get_size(),
        std::vector<OnednnArg>{{DNNL_ARG_SRC, OnednnArg::Source::Input, 0, src},
                               {DNNL_ARG_DST, OnednnArg::Source::Output, 0, dst},
                               {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

template <typename Acc>
inline Acc expOf(Acc x) {
  if constexpr (std::is_same_v<Acc, float>) {
    return expF32(x);
  } else {
    return std::exp(x);
  }
}

// Own kernel: for each (outer, inner) line along the axis, two passes (max, then the
// exponentials and their sum) and a normalizing pass; inner positions are the contiguous
// innermost loop so that lines next to each other are processed together.
template <typename T>
class OwnSoftmaxKernel final : public Kernel {
  using Acc = ComputeOf<T>;

 public:
  OwnSoftmaxKernel(AxisSplit split, SoftmaxKind kind, int max_threads)
      : split_(split), kind_(kind), max_threads_(std::max(1, max_threads)) {}

  size_t scratchBytes() const override {
    if (kind_ == SoftmaxKind::Hardmax) return 0;
    return static_cast<size_t>(2 * split_.inner * ge::maxParallelRanges(max_threads_)) * sizeof(Acc);
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const T* x = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.outputs[0]);
    const int64_t axis = split_.axis, inner = split_.inner;
    const int threads = std::min(args.num_threads, max_threads_);
    // Three passes over a slice, one of them with an exp.
    const double cost = 8.0 * static_cast<double>(axis * inner);
    ge::parallelForRanges(split_.outer, cost, threads, [&](int64_t range, int64_t first, int64_t last) {
      for (int64_t o = first; o < last; ++o) {
        const T* in = x + o * axis * inner;
        T* out = y + o * axis * inner;
        if (kind_ == SoftmaxKind::Hardmax) {
          for (int64_t i = 0; i < inner; ++i) {
            int64_t best = 0;
            for (int64_t a = 1; a < axis; ++a) {
              if (loadAs(in[a * inner + i]) > loadAs(in[best * inner + i])) best = a;
            }
            for (int64_t a = 0; a < axis; ++a) out[a * inner + i] = storeAs<T>(Acc(a == best ? 1 : 0));
          }
          continue;
        }
        Acc* peak = static_cast<Acc*>(args.scratch) + 2 * inner * range;
        Acc* sum = peak + inner;
        for (int64_t i = 0; i < inner; ++i) {
          peak[i] = -std::numeric_limits<Acc>::infinity();
          sum[i] = 0;
        }
        for (int64_t a = 0; a < axis; ++a) {
          for (int64_t i = 0; i < inner; ++i) peak[i] = std::max(peak[i], loadAs(in[a * inner + i]));
        }
        for (int64_t a = 0; a < axis; ++a) {
          for (int64_t i = 0; i < inner; ++i) sum[i] += expOf(loadAs(in[a * inner + i]) - peak[i]);
        }
        for (int64_t a = 0; a < axis; ++a) {
          for (int64_t i = 0; i < inner; ++i) {
            const Acc shifted = loadAs(in[a * inner + i]) - peak[i];
            out[a * inner + i] =
                storeAs<T>(kind_ == SoftmaxKind::LogSoftmax ? shifted - std::log(sum[i]) : expOf(shifted) / sum[i]);
          }
        }
      }
    });
  }
  std::string name() const override {
    return kind_ == SoftmaxKind::Hardmax ? "cpu:hardmax" : kind_ == SoftmaxKind::LogSoftmax ? "cpu:log_softmax"
                                                                                           : "cpu:softmax";
  }

 private:
  AxisSplit split_;
  SoftmaxKind kind_;
  int max_threads_;
};

std::unique_ptr<Kernel> makeSoftmax(const KernelBuildContext& context, SoftmaxKind kind) {
  const TensorDesc& x = context.input(0);
  if (x.dtype != context.output(0).dtype) return nullptr;
  int64_t axis = context.intAttr("axis");
  if (axis < 0) axis += x.rank;
  if (x.numElements() == 0) return makeZeroFillKernel(context, "cpu:softmax (empty)");
  if (kind != SoftmaxKind::Hardmax) {
    // oneDNN's JIT softmax covers the innermost axis; for other axes it offers its naive
    // reference code, which the own kernel (contiguous inner loop) beats.
    std::unique_ptr<Kernel> kernel = onednnSoftmax(context, axis, kind);
    if (kernel && kernel->name().find(" ref:") == std::string::npos) return kernel;
  }
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatDTypes{}, x.dtype, [&](auto type) {
    kernel = std::make_unique<OwnSoftmaxKernel<StorageOf<decltype(type)>>>(splitAt(x, axis), kind, context.maxThreads());
  });
  return kernel;
}

}  // namespace

void registerSoftmaxKernels(KernelRegistry& registry) {
  for (const auto& [op, kind] : {std::pair{"Softmax", SoftmaxKind::Softmax}, std::pair{"LogSoftmax", SoftmaxKind::LogSoftmax}}) {
    registry.add(op, "", [kind = kind](const KernelBuildContext& context) {
      return buildPreferringF32(context, [&](const KernelBuildContext& c) { return makeSoftmax(c, kind); });
    });
  }
  registry.add("Hardmax", "", [](const KernelBuildContext& c) { return makeSoftmax(c, SoftmaxKind::Hardmax); });
}

}  // namespace estuary::ge::cpu
