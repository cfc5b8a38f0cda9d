// Cast and CastLike between every pair of Estuary's dtypes.
//
// Float to float rounds once to nearest even (f64 -> f16/bf16 included, see
// vm::toFloatRoundToOdd); overflow gives Inf. Float to integer truncates toward zero, as ONNX
// says; out-of-range values (undefined in ONNX) saturate to the integer type's limits and NaN
// gives 0. Integer to integer keeps the low bits (two's complement wrap, as C and NumPy do).
// Anything to bool is "!= 0" (NaN is true); bool to anything is 0 or 1.
#include <cstring>
#include <limits>

#include "cpu/elementwise.h"
#include "cpu/elementwise_kernels.h"

namespace estuary::ge::cpu {

namespace {

template <typename T>
inline constexpr bool kIsFloatStorage =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// A float (f32 or f64) truncated toward zero into integer type To, saturating; NaN gives 0.
template <typename To, typename F>
To saturatingTruncate(F x) {
  constexpr int kValueBits = std::numeric_limits<To>::digits;  // without the sign bit
  constexpr int kFloatBits = std::numeric_limits<F>::digits;
  constexpr F lo = static_cast<F>(std::numeric_limits<To>::min());  // 0 or -2^n: exact
  // The largest F not above To's maximum: the maximum itself when F holds it exactly, else
  // 2^n - 2^(n - digits), the largest F below 2^n.
  constexpr F hi = kValueBits <= kFloatBits
                       ? static_cast<F>(std::numeric_limits<To>::max())
                       : static_cast<F>(std::numeric_limits<To>::max()) -
                             static_cast<F>(uint64_t{1} << (kValueBits > kFloatBits ? kValueBits - kFloatBits : 0));
  F clamped = x < lo ? lo : x;
  clamped = clamped > hi ? hi : clamped;
  clamped = x != x ? F(0) : clamped;
  using Wide = std::conditional_t<(sizeof(To) < 4), int32_t, To>;
  return static_cast<To>(static_cast<Wide>(clamped));
}

template <typename To, typename From>
To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, Bool8>) {
    return Bool8{static_cast<uint8_t>(Element<From>::load(x) != 0)};
  } else if constexpr (std::is_same_v<From, Bool8>) {
    return convert<To>(static_cast<uint8_t>(x.value != 0));
  } else if constexpr (std::is_same_v<To, Float16> || std::is_same_v<To, BFloat16>) {
    // Through an f32 that holds the value exactly or rounded to odd, then one rounding.
    float value;
    if constexpr (std::is_same_v<From, double>) {
      value = vm::toFloatRoundToOdd(x);
    } else if constexpr (std::is_same_v<From, int64_t>) {
      value = vm::toFloatRoundToOdd(x);
    } else if constexpr (std::is_same_v<From, int32_t>) {
      value = vm::toFloatRoundToOdd(static_cast<double>(x));  // exact in double
    } else {
      value = static_cast<float>(Element<From>::load(x));  // exact
    }
    return Element<To>::store(value);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(Element<From>::load(x));
  } else if constexpr (kIsFloatStorage<From>) {
    return saturatingTruncate<To>(Element<From>::load(x));
  } else {
    return static_cast<To>(x);  // integer to integer: wraps
  }
}

template <typename From, typename To>
class CastKernel final : public Kernel {
 public:
  CastKernel(std::string name, int64_t size) : name_(std::move(name)), size_(size) {}

  std::optional<size_t> inPlaceInput(size_t) const override {
    return sizeof(From) == sizeof(To) ? std::optional<size_t>(0) : std::nullopt;
  }
  void run(const KernelArgs& args, KernelState*) const override {
    const auto* in = static_cast<const From*>(args.inputs[0]);
    auto* out = static_cast<To*>(args.outputs[0]);
    parallelForElements(size_, kCheapCost, args.num_threads, [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<From, To>) {
        if (in != out) std::memcpy(out + begin, in + begin, static_cast<size_t>(end - begin) * sizeof(To));
      } else {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) out[i] = convert<To>(in[i]);
      }
    });
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  int64_t size_;
};

std::unique_ptr<Kernel> castKernel(const KernelBuildContext& context) {
  DType from = context.input(0).dtype, to = context.output(0).dtype;
  return dispatch(AllDTypes{}, from, [&](auto from_type) {
    return dispatch(AllDTypes{}, to, [&](auto to_type) -> std::unique_ptr<Kernel> {
      using From = LoopStorage<decltype(from_type)>;
      using To = LoopStorage<decltype(to_type)>;
      return std::make_unique<CastKernel<From, To>>(
          "cpu:" + context.node().opType() + " " + std::string(dtypeName(from)) + "->" + std::string(dtypeName(to)),
          context.output(0).numElements());
    });
  });
}

}  // namespace

void registerCastKernels(KernelRegistry& registry) {
  registry.add("Cast", "", castKernel);
  registry.add("CastLike", "", castKernel);
}

}  // namespace estuary::ge::cpu
