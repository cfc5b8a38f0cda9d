// Element-wise ops that select or move elements: Where (three-way broadcasting), Identity,
// and Dropout (identity at inference; random masking when training_mode is true).
#include <cstring>
#include <random>

#include "cpu/elementwise.h"
#include "cpu/elementwise_kernels.h"
#include "cpu/strided.h"

namespace estuary::ge::cpu {

namespace {

// --- Where ---------------------------------------------------------------------------------

template <bool CVector, bool XVector, bool YVector, typename T>
void whereLoop(const Bool8* c, const T* x, const T* y, T* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = c[CVector ? i : 0].value ? x[XVector ? i : 0] : y[YVector ? i : 0];
}

// Only the element size matters to a selection: T is an unsigned integer of that size.
template <typename T>
class WhereKernel final : public Kernel {
 public:
  WhereKernel(std::string name, BroadcastPlan plan, std::optional<size_t> in_place)
      : name_(std::move(name)), plan_(plan), in_place_(in_place) {}

  std::optional<size_t> inPlaceInput(size_t) const override { return in_place_; }
  void run(const KernelArgs& args, KernelState*) const override {
    const auto* c = static_cast<const Bool8*>(args.inputs[0]);
    const auto* x = static_cast<const T*>(args.inputs[1]);
    const auto* y = static_cast<const T*>(args.inputs[2]);
    auto* out = static_cast<T*>(args.outputs[0]);
    const int pattern = plan_.pattern();
    parallelForElements(plan_.size(), kCheapCost, args.num_threads, [&](int64_t begin, int64_t end) {
      plan_.forEachRun(begin, end, [&](const int64_t* at, int64_t o, int64_t n) {
        const Bool8* cs = c + at[0];
        const T* xs = x + at[1];
        const T* ys = y + at[2];
        switch (pattern) {
          case 1: whereLoop<true, false, false>(cs, xs, ys, out + o, n); break;
          case 2: whereLoop<false, true, false>(cs, xs, ys, out + o, n); break;
          case 3: whereLoop<true, true, false>(cs, xs, ys, out + o, n); break;
          case 4: whereLoop<false, false, true>(cs, xs, ys, out + o, n); break;
          case 5: whereLoop<true, false, true>(cs, xs, ys, out + o, n); break;
          case 6: whereLoop<false, true, true>(cs, xs, ys, out + o, n); break;
          default: whereLoop<true, true, true>(cs, xs, ys, out + o, n); break;
        }
      });
    });
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  BroadcastPlan plan_;
  std::optional<size_t> in_place_;
};

std::unique_ptr<Kernel> whereKernel(const KernelBuildContext& context) {
  if (context.input(0).dtype != DType::Bool) return nullptr;
  BroadcastPlan plan(context, {context.input(0), context.input(1), context.input(2)}, context.output(0));
  return ge::dispatchBySize(dtypeSize(context.output(0).dtype), [&](auto zero) -> std::unique_ptr<Kernel> {
    using T = decltype(zero);
    return std::make_unique<WhereKernel<T>>(kernelName(context, context.output(0).dtype), plan,
                                            sameDescInput(context, {1, 2}));
  });
}

// --- Identity ------------------------------------------------------------------------------

class IdentityKernel final : public Kernel {
 public:
  IdentityKernel(std::string name, size_t bytes) : name_(std::move(name)), bytes_(bytes) {}
  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  void run(const KernelArgs& args, KernelState*) const override {
    copyBytes(args.outputs[0], args.inputs[0], bytes_, args.num_threads);
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  size_t bytes_;
};

// --- Dropout -------------------------------------------------------------------------------

// The random stream of one run context: element i of run r keeps its value when
// hash(seed, r, i) >= ratio, so runs differ and threads need no shared generator.
class DropoutState final : public KernelState {
 public:
  explicit DropoutState(uint64_t seed) : seed(seed) {}
  uint64_t seed;
  uint64_t run = 0;
};

// SplitMix64's finalizer: a well-mixed 64-bit hash of a counter.
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Dropout(data, ratio = 0.5, training_mode = false) -> output, mask. Outside training the
// output is the data and the mask all true; in training each element is zeroed with
// probability `ratio` and the rest scaled by 1 / (1 - ratio). training_mode may be a runtime
// input, so the mode is read at run time.
template <typename T>
class DropoutKernel final : public Kernel {
 public:
  DropoutKernel(std::string name, int64_t size, std::optional<DType> ratio_dtype, bool has_training_mode,
                std::optional<uint64_t> seed, bool has_mask)
      : name_(std::move(name)), size_(size), ratio_dtype_(ratio_dtype), has_training_mode_(has_training_mode),
        seed_(seed), has_mask_(has_mask) {}

  std::optional<size_t> inPlaceInput(size_t output) const override {
    return output == 0 ? std::optional<size_t>(0) : std::nullopt;
  }
  std::unique_ptr<KernelState> createState() const override {
    return std::make_unique<DropoutState>(seed_ ? *seed_ : std::random_device{}());
  }
  void run(const KernelArgs& args, KernelState* raw_state) const override {
    const auto* in = static_cast<const T*>(args.inputs[0]);
    auto* out = static_cast<T*>(args.outputs[0]);
    auto* mask = has_mask_ ? static_cast<Bool8*>(args.outputs[1]) : nullptr;
    bool training = has_training_mode_ && static_cast<const Bool8*>(args.inputs[2])->value != 0;
    double ratio = ratio_dtype_ ? readScalar(args.inputs[1], *ratio_dtype_) : 0.5;
    if (!training || ratio <= 0) {
      copyBytes(out, in, static_cast<size_t>(size_) * sizeof(T), args.num_threads);
      if (mask) std::memset(mask, 1, static_cast<size_t>(size_));
      return;
    }
    auto* state = static_cast<DropoutState*>(raw_state);
    const uint64_t stream = mix(state->seed ^ mix(++state->run));
    // An element survives when the top 24 bits of its hash, as a fraction, reach `ratio`.
    const auto threshold = static_cast<uint64_t>(std::min(ratio, 1.0) * 16777216.0);
    using C = ComputeOf<T>;
    const C scale = ratio < 1 ? static_cast<C>(1 / (1 - ratio)) : C(0);
    parallelForElements(size_, kCostlyCost, args.num_threads, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) {
        bool keep = (mix(stream + static_cast<uint64_t>(i)) >> 40) >= threshold;
        out[i] = Element<T>::store(keep ? Element<T>::load(in[i]) * scale : C(0));
        if (mask) mask[i] = Bool8{static_cast<uint8_t>(keep)};
      }
    });
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  int64_t size_;
  std::optional<DType> ratio_dtype_;  // absent: the default ratio
  bool has_training_mode_;
  std::optional<uint64_t> seed_;
  bool has_mask_;
};

std::unique_ptr<Kernel> dropoutKernel(const KernelBuildContext& context) {
  std::optional<uint64_t> seed;
  if (const Attribute* attribute = context.attr("seed")) seed = static_cast<uint64_t>(attribute->asInt());
  std::optional<DType> ratio_dtype;
  if (context.hasInput(1)) ratio_dtype = context.input(1).dtype;
  bool has_mask = context.numOutputs() > 1;
  return dispatch(FloatDTypes{}, context.input(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    using T = LoopStorage<decltype(type)>;
    return std::make_unique<DropoutKernel<T>>(kernelName(context, context.input(0).dtype),
                                              context.input(0).numElements(), ratio_dtype, context.hasInput(2), seed,
                                              has_mask);
  });
}

}  // namespace

void registerSelectKernels(KernelRegistry& registry) {
  registry.add("Where", "", whereKernel);
  registry.add("Identity", "", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    return std::make_unique<IdentityKernel>(kernelName(context, context.input(0).dtype), context.input(0).byteSize());
  });
  registry.add("Dropout", "", dropoutKernel);
}

}  // namespace estuary::ge::cpu
