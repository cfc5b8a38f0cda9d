// Unary element-wise ops: math, activations (with their attributes), predicates, Not, Clip.
// Estuary's own SIMD kernels for every dtype the schemas allow; f16/bf16 compute in f32.
#include "cpu/elementwise.h"
#include "cpu/elementwise_functors.h"
#include "cpu/elementwise_kernels.h"

namespace estuary::ge::cpu {

namespace {

// A factory for Y = op(X) over the dtypes in Types; maker(context, TypeTag<C>{}) builds the
// functor for compute type C from the node's attributes.
template <typename Types, typename Maker>
KernelFactory unaryFactory(Maker maker, double cost) {
  return [maker, cost](const KernelBuildContext& context) {
    return dispatch(Types{}, context.input(0).dtype, [&](auto type) {
      using T = LoopStorage<decltype(type)>;
      return makeUnary<T, T>(context, maker(context, TypeTag<ComputeOf<T>>{}), cost);
    });
  };
}

// Maker of a functor without attributes.
template <template <typename> class Op>
auto plain() {
  return [](const KernelBuildContext&, auto tag) { return Op<typename decltype(tag)::type>{}; };
}

// Maker of a functor whose fields are the float attributes `names`, in order.
template <template <typename> class Op, typename... Names>
auto withFloats(Names... names) {
  return [names...](const KernelBuildContext& context, auto tag) {
    using C = typename decltype(tag)::type;
    return Op<C>{static_cast<C>(context.floatAttr(names))...};
  };
}

// IsNaN / IsInf: float X, bool Y.
template <typename Maker>
KernelFactory predicateFactory(Maker maker) {
  return [maker](const KernelBuildContext& context) {
    return dispatch(FloatDTypes{}, context.input(0).dtype, [&](auto type) {
      using T = LoopStorage<decltype(type)>;
      return makeUnary<T, Bool8>(context, maker(context, TypeTag<ComputeOf<T>>{}), kCheapCost);
    });
  };
}

// Clip(input, min, max): the bounds are optional scalar inputs read at run time (they need
// not be constants); an absent bound does not bound.
template <typename T>
class ClipKernel final : public Kernel {
 public:
  ClipKernel(std::string name, int64_t size, bool has_min, bool has_max)
      : name_(std::move(name)), size_(size), has_min_(has_min), has_max_(has_max) {}

  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  void run(const KernelArgs& args, KernelState*) const override {
    using C = ComputeOf<T>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::numeric_limits<C>::has_infinity) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    if (has_min_) lo = Element<T>::load(*static_cast<const T*>(args.inputs[1]));
    if (has_max_) hi = Element<T>::load(*static_cast<const T*>(args.inputs[2]));
    const auto* in = static_cast<const T*>(args.inputs[0]);
    auto* out = static_cast<T*>(args.outputs[0]);
    fn::Clip<C> op{lo, hi};
    parallelForElements(size_, kCheapCost, args.num_threads,
                        [&](int64_t begin, int64_t end) { unaryLoop(in + begin, out + begin, end - begin, op); });
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  int64_t size_;
  bool has_min_;
  bool has_max_;
};

// Shape inference made sure the bounds are scalars.
std::unique_ptr<Kernel> clipKernel(const KernelBuildContext& context) {
  return dispatch(NumericDTypes{}, context.input(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    using T = LoopStorage<decltype(type)>;
    return std::make_unique<ClipKernel<T>>(kernelName(context, context.input(0).dtype), context.output(0).numElements(),
                                           context.hasInput(1), context.hasInput(2));
  });
}

std::unique_ptr<Kernel> geluKernel(const KernelBuildContext& context) {
  static const KernelFactory exact = unaryFactory<FloatDTypes>(plain<fn::GeluErf>(), kCostlyCost);
  static const KernelFactory tanh = unaryFactory<FloatDTypes>(plain<fn::GeluTanh>(), kCostlyCost);
  std::string approximate = context.stringAttr("approximate");
  if (approximate == "none") return exact(context);
  if (approximate == "tanh") return tanh(context);
  context.fail("approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
}

}  // namespace

void registerUnaryKernels(KernelRegistry& registry) {
  auto add = [&](const char* op, KernelFactory factory) { registry.add(op, "", std::move(factory)); };

  // Cheap: a few instructions per element, memory-bound.
  add("Abs", unaryFactory<NumericDTypes>(plain<fn::Abs>(), kCheapCost));
  add("Neg", unaryFactory<SignedDTypes>(plain<fn::Neg>(), kCheapCost));
  add("Sign", unaryFactory<NumericDTypes>(plain<fn::Sign>(), kCheapCost));
  add("Relu", unaryFactory<SignedDTypes>(plain<fn::Relu>(), kCheapCost));
  add("Floor", unaryFactory<FloatDTypes>(plain<fn::Floor>(), kCheapCost));
  add("Ceil", unaryFactory<FloatDTypes>(plain<fn::Ceil>(), kCheapCost));
  add("Round", unaryFactory<FloatDTypes>(plain<fn::Round>(), kCheapCost));
  add("Sqrt", unaryFactory<FloatDTypes>(plain<fn::Sqrt>(), kCheapCost));
  add("Reciprocal", unaryFactory<FloatDTypes>(plain<fn::Reciprocal>(), kCheapCost));
  add("Softsign", unaryFactory<FloatDTypes>(plain<fn::Softsign>(), kCheapCost));
  add("HardSwish", unaryFactory<FloatDTypes>(plain<fn::HardSwish>(), kCheapCost));
  add("LeakyRelu", unaryFactory<FloatDTypes>(withFloats<fn::LeakyRelu>("alpha"), kCheapCost));
  add("ThresholdedRelu", unaryFactory<FloatDTypes>(withFloats<fn::ThresholdedRelu>("alpha"), kCheapCost));
  add("HardSigmoid", unaryFactory<FloatDTypes>(withFloats<fn::HardSigmoid>("alpha", "beta"), kCheapCost));

  // Costly: polynomial approximations.
  add("Exp", unaryFactory<FloatDTypes>(plain<fn::Exp>(), kCostlyCost));
  add("Log", unaryFactory<FloatDTypes>(plain<fn::Log>(), kCostlyCost));
  add("Tanh", unaryFactory<FloatDTypes>(plain<fn::Tanh>(), kCostlyCost));
  add("Sigmoid", unaryFactory<FloatDTypes>(plain<fn::Sigmoid>(), kCostlyCost));
  add("Erf", unaryFactory<FloatDTypes>(plain<fn::Erf>(), kCostlyCost));
  add("Sin", unaryFactory<FloatDTypes>(plain<fn::Sin>(), kCostlyCost));
  add("Cos", unaryFactory<FloatDTypes>(plain<fn::Cos>(), kCostlyCost));
  add("Tan", unaryFactory<FloatDTypes>(plain<fn::Tan>(), kCostlyCost));
  add("Asin", unaryFactory<FloatDTypes>(plain<fn::Asin>(), kCostlyCost));
  add("Acos", unaryFactory<FloatDTypes>(plain<fn::Acos>(), kCostlyCost));
  add("Atan", unaryFactory<FloatDTypes>(plain<fn::Atan>(), kCostlyCost));
  add("Sinh", unaryFactory<FloatDTypes>(plain<fn::Sinh>(), kCostlyCost));
  add("Cosh", unaryFactory<FloatDTypes>(plain<fn::Cosh>(), kCostlyCost));
  add("Softplus", unaryFactory<FloatDTypes>(plain<fn::Softplus>(), kCostlyCost));
  add("Mish", unaryFactory<FloatDTypes>(plain<fn::Mish>(), kCostlyCost));
  add("Elu", unaryFactory<FloatDTypes>(withFloats<fn::Elu>("alpha"), kCostlyCost));
  add("Celu", unaryFactory<FloatDTypes>(withFloats<fn::Celu>("alpha"), kCostlyCost));
  add("Selu", unaryFactory<FloatDTypes>(withFloats<fn::Selu>("alpha", "gamma"), kCostlyCost));
  add("Swish", unaryFactory<FloatDTypes>(withFloats<fn::Swish>("alpha"), kCostlyCost));
  add("Gelu", geluKernel);

  add("IsNaN", predicateFactory(plain<fn::IsNaN>()));
  add("IsInf", predicateFactory([](const KernelBuildContext& context, auto tag) {
        return fn::IsInf<typename decltype(tag)::type>{context.intAttr("detect_negative") != 0,
                                                        context.intAttr("detect_positive") != 0};
      }));
  add("Not", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    if (context.input(0).dtype != DType::Bool) return nullptr;
    return makeUnary<Bool8, Bool8>(context, fn::Not{}, kCheapCost);
  });
  add("Clip", clipKernel);
}

}  // namespace estuary::ge::cpu
