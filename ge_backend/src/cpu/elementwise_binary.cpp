// Binary element-wise ops with ONNX multidirectional broadcasting: arithmetic, Pow, Mod,
// comparison, logic, PRelu, SwiGLU, and the variadic Max/Min/Sum/Mean. Estuary's own SIMD
// kernels for every dtype the schemas allow (oneDNN's binary primitive takes over for
// f32/f16/bf16 arithmetic where it applies, see elementwise.cpp).
#include <cstring>

#include "cpu/elementwise.h"
#include "cpu/elementwise_functors.h"
#include "cpu/elementwise_kernels.h"

namespace estuary::ge::cpu {

namespace {

// C = op(A, B) over the dtypes in Types, C of A's dtype.
template <template <typename> class Op, typename Types>
KernelFactory arithmeticFactory(double cost) {
  return [cost](const KernelBuildContext& context) {
    return dispatch(Types{}, context.input(0).dtype, [&](auto type) {
      using T = LoopStorage<decltype(type)>;
      return makeBinary<T, T, T>(context, Op<ComputeOf<T>>{}, cost);
    });
  };
}

// C = op(A, B) with a bool C.
template <template <typename> class Op, typename Types>
KernelFactory comparisonFactory() {
  return [](const KernelBuildContext& context) {
    return dispatch(Types{}, context.input(0).dtype, [&](auto type) {
      using T = LoopStorage<decltype(type)>;
      return makeBinary<T, T, Bool8>(context, Op<ComputeOf<T>>{}, kCheapCost);
    });
  };
}

template <typename Op>
KernelFactory logicFactory() {
  return [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    if (context.input(0).dtype != DType::Bool) return nullptr;
    return makeBinary<Bool8, Bool8, Bool8>(context, Op{}, kCheapCost);
  };
}

std::unique_ptr<Kernel> modKernel(const KernelBuildContext& context) {
  bool truncated = context.intAttr("fmod") != 0;
  return dispatch(NumericDTypes{}, context.input(0).dtype, [&](auto type) {
    using T = LoopStorage<decltype(type)>;
    return makeBinary<T, T, T>(context, fn::Mod<ComputeOf<T>>{truncated}, kCostlyCost);
  });
}

// Pow with a constant scalar exponent that has a cheaper exact form. Each matches C's pow
// for every x, special values included.
template <typename T>
struct PowZero {  // pow(x, 0) = 1, even for NaN
  T operator()(T) const { return T(1); }
};
template <typename T>
struct PowOne {
  T operator()(T x) const { return x; }
};
template <typename T>
struct PowTwo {
  T operator()(T x) const { return x * x; }
};
template <typename T>
struct PowThree {  // two roundings: within 1 ulp of pow
  T operator()(T x) const { return x * x * x; }
};
template <typename T>
struct PowHalf {  // pow(-0, 0.5) = +0 and pow(-Inf, 0.5) = +Inf, where sqrt differs
  T operator()(T x) const {
    T root = std::sqrt(x) + T(0);
    return x == -std::numeric_limits<T>::infinity() ? std::numeric_limits<T>::infinity() : root;
  }
};
template <typename T>
struct PowMinusOne {
  T operator()(T x) const { return T(1) / x; }
};

template <typename T>
std::unique_ptr<Kernel> constantPowKernel(const KernelBuildContext& context, double exponent) {
  using C = ComputeOf<T>;
  if (exponent == 0) return makeUnary<T, T>(context, PowZero<C>{}, kCheapCost);
  if (exponent == 1) return makeUnary<T, T>(context, PowOne<C>{}, kCheapCost);
  if (exponent == 2) return makeUnary<T, T>(context, PowTwo<C>{}, kCheapCost);
  if (exponent == 3) return makeUnary<T, T>(context, PowThree<C>{}, kCheapCost);
  if (exponent == 0.5) return makeUnary<T, T>(context, PowHalf<C>{}, kCheapCost);
  if (exponent == -1) return makeUnary<T, T>(context, PowMinusOne<C>{}, kCheapCost);
  return nullptr;
}

std::unique_ptr<Kernel> powKernel(const KernelBuildContext& context) {
  return dispatch(FloatAndWideIntDTypes{}, context.input(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    using T = LoopStorage<decltype(type)>;
    if constexpr (fn::kIsFloat<ComputeOf<T>>) {
      std::optional<double> exponent = constantScalar(context, 1);
      if (exponent && context.input(0) == context.output(0)) {
        if (auto kernel = constantPowKernel<T>(context, *exponent)) return kernel;
      }
    }
    return dispatch(NumericDTypes{}, context.input(1).dtype, [&](auto exponent_type) {
      using E = LoopStorage<decltype(exponent_type)>;
      return makeBinary<T, E, T>(context, fn::Pow<ComputeOf<T>, ComputeOf<E>>{}, kCostlyCost);
    });
  });
}

std::unique_ptr<Kernel> preluKernel(const KernelBuildContext& context) {
  if (context.input(0) != context.output(0)) {
    context.fail("slope ", context.input(1).str(), " must broadcast to X ", context.input(0).str());
  }
  return dispatch(FloatAndWideIntDTypes{}, context.input(0).dtype, [&](auto type) {
    using T = LoopStorage<decltype(type)>;
    return makeBinary<T, T, T>(context, fn::PRelu<ComputeOf<T>>{}, kCheapCost);
  });
}

std::unique_ptr<Kernel> swigluKernel(const KernelBuildContext& context) {
  return dispatch(FloatDTypes{}, context.input(0).dtype, [&](auto type) {
    using T = LoopStorage<decltype(type)>;
    using C = ComputeOf<T>;
    return makeBinary<T, T, T>(context, fn::SwiGLU<C>{static_cast<C>(context.floatAttr("alpha"))}, kCostlyCost);
  });
}

// Max/Min/Sum/Mean of one or more inputs, all broadcast to the output: the first pass
// combines inputs 0 and 1 into the output, each later pass folds the next input into it
// (for f16/bf16 each pass rounds, as a chain of binary ops would). Mean divides at the end.
template <typename T, typename Op>
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(std::string name, std::vector<BroadcastPlan> passes, int64_t size, Op op, bool mean,
                 std::optional<size_t> in_place)
      : name_(std::move(name)), passes_(std::move(passes)), size_(size), op_(op), mean_(mean), in_place_(in_place) {}

  std::optional<size_t> inPlaceInput(size_t) const override { return in_place_; }
  void run(const KernelArgs& args, KernelState*) const override {
    auto* out = static_cast<T*>(args.outputs[0]);
    if (passes_.empty()) {  // one input, of the output's shape
      if (args.inputs[0] != out) std::memcpy(out, args.inputs[0], static_cast<size_t>(size_) * sizeof(T));
      return;
    }
    for (size_t pass = 0; pass < passes_.size(); ++pass) {
      const T* a = pass == 0 ? static_cast<const T*>(args.inputs[0]) : out;
      const auto* b = static_cast<const T*>(args.inputs[pass + 1]);
      const BroadcastPlan& plan = passes_[pass];
      const int pattern = plan.pattern();
      parallelForElements(size_, kCheapCost, args.num_threads, [&](int64_t begin, int64_t end) {
        plan.forEachRun(begin, end, [&](const int64_t* offsets, int64_t at, int64_t count) {
          binaryRow(a + offsets[0], b + offsets[1], out + at, count, pattern, op_);
        });
      });
    }
    if (mean_) {
      using C = ComputeOf<T>;
      const C count = static_cast<C>(passes_.size() + 1);
      parallelForElements(size_, kCheapCost, args.num_threads, [&](int64_t begin, int64_t end) {
        unaryLoop(out + begin, out + begin, end - begin, [count](C x) { return x / count; });
      });
    }
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::vector<BroadcastPlan> passes_;
  int64_t size_;
  Op op_;
  bool mean_;
  std::optional<size_t> in_place_;
};

template <template <typename> class Op, typename Types>
KernelFactory variadicFactory(bool mean = false) {
  return [mean](const KernelBuildContext& context) {
    return dispatch(Types{}, context.output(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
      using T = LoopStorage<decltype(type)>;
      const TensorDesc& out = context.output(0);
      std::vector<BroadcastPlan> passes;
      for (size_t i = 1; i < context.numInputs(); ++i) {
        passes.emplace_back(context, std::vector<TensorDesc>{i == 1 ? context.input(0) : out, context.input(i)}, out);
      }
      if (passes.empty() && context.input(0) != out) context.fail("the input must have the output's shape");
      // Only inputs the first pass reads may share the output's buffer: later passes read
      // their input after the output was written.
      return std::make_unique<VariadicKernel<T, Op<ComputeOf<T>>>>(
          kernelName(context, out.dtype), std::move(passes), out.numElements(), Op<ComputeOf<T>>{}, mean,
          sameDescInput(context, {0, 1}));
    });
  };
}

}  // namespace

void registerBinaryKernels(KernelRegistry& registry) {
  registry.add("Add", "", arithmeticFactory<fn::Add, NumericDTypes>(kCheapCost));
  registry.add("Sub", "", arithmeticFactory<fn::Sub, NumericDTypes>(kCheapCost));
  registry.add("Mul", "", arithmeticFactory<fn::Mul, NumericDTypes>(kCheapCost));
  registry.add("Div", "", arithmeticFactory<fn::Div, NumericDTypes>(kCheapCost));
  registry.add("Mod", "", modKernel);
  registry.add("Pow", "", powKernel);
  registry.add("PRelu", "", preluKernel);
  registry.add("SwiGLU", "", swigluKernel);

  registry.add("Equal", "", comparisonFactory<fn::Equal, AllDTypes>());
  registry.add("Less", "", comparisonFactory<fn::Less, NumericDTypes>());
  registry.add("LessOrEqual", "", comparisonFactory<fn::LessOrEqual, NumericDTypes>());
  registry.add("Greater", "", comparisonFactory<fn::Greater, NumericDTypes>());
  registry.add("GreaterOrEqual", "", comparisonFactory<fn::GreaterOrEqual, NumericDTypes>());
  registry.add("And", "", logicFactory<fn::And>());
  registry.add("Or", "", logicFactory<fn::Or>());
  registry.add("Xor", "", logicFactory<fn::Xor>());

  registry.add("Max", "", variadicFactory<fn::Max, NumericDTypes>());
  registry.add("Min", "", variadicFactory<fn::Min, NumericDTypes>());
  registry.add("Sum", "", variadicFactory<fn::Add, FloatDTypes>());
  registry.add("Mean", "", variadicFactory<fn::Add, FloatDTypes>(true));
}

}  // namespace estuary::ge::cpu
