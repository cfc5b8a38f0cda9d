// Reference kernels of the element-wise ops: unary math and activations, binary arithmetic,
// comparison and logic with ONNX multidirectional broadcasting, the variadic
// Max/Min/Sum/Mean, Where, Clip, Cast/CastLike, Identity and Dropout.
//
// Three loops do the work: unaryKernel (y[i] = f(x[i])), binaryKernel (c[i] = f(a, b), the
// operands read with broadcasting) and Broadcast::forEach for the ops with more operands.
// Each op is a line in a table: its name, the dtypes its schema allows and its formula.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "reference/reference_kernels.h"

namespace estuary::ge::reference {

namespace {

// --- Element types ------------------------------------------------------------------------

// The dtypes an op's schema allows, less f16/bf16.
using Floats = ReferenceFloatDTypes;
using FloatsAndWideInts = DTypeSet<DType::F32, DType::F64, DType::I32, DType::I64>;
using Signed = DTypeSet<DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64>;
using Numeric = DTypeSet<DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8>;
using Bools = DTypeSet<DType::Bool>;
using All = ReferenceDTypes;

template <typename T>
bool isNaN(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

// A float truncated toward zero into integer type To. ONNX leaves NaN and out-of-range values
// undefined; they give 0 and saturate here, which keeps the C++ defined.
template <typename To>
To truncateToInteger(double value) {
  constexpr double low = static_cast<double>(std::numeric_limits<To>::lowest());
  constexpr double high = static_cast<double>(std::numeric_limits<To>::max());  // 2^63 for int64
  if (std::isnan(value)) return 0;
  if (value <= low) return std::numeric_limits<To>::lowest();
  if (value >= high) return std::numeric_limits<To>::max();
  return static_cast<To>(value);
}

// --- The loops ----------------------------------------------------------------------------

// y[i] = fn(x[i]) with x widened to Wide<X>; the result is converted to Y once.
template <typename X, typename Y, typename Fn>
std::unique_ptr<Kernel> unaryKernel(const KernelBuildContext& context, Fn fn) {
  const int64_t count = context.output(0).numElements();
  return makeKernel(context, [count, fn](const KernelArgs& args) {
    const auto* x = static_cast<const X*>(args.inputs[0]);
    auto* y = static_cast<Y*>(args.outputs[0]);
    for (int64_t i = 0; i < count; ++i) y[i] = static_cast<Y>(fn(static_cast<Wide<X>>(x[i])));
  });
}

// Output element i of a node and, for each of its inputs, the flat offset of the element it
// reads (ONNX multidirectional broadcasting; an absent optional input's offset is not to be used).
class Broadcast {
 public:
  explicit Broadcast(const KernelBuildContext& context) : dims_(context.output(0).dimVector()) {
    for (size_t k = 0; k < context.numInputs(); ++k) {
      inputs_.push_back(context.hasInput(k) ? context.input(k) : TensorDesc{});
      // A shortcut, not a different rule: an input of the output's shape reads element i.
      if (context.hasInput(k) && inputs_.back().dimVector() != dims_) all_of_output_shape_ = false;
    }
  }

  // Calls body(i, offsets) for every output element i in row-major order.
  template <typename Body>
  void forEach(Body&& body) const {
    int64_t count = 1;
    for (int64_t d : dims_) count *= d;
    std::vector<int64_t> offsets(inputs_.size(), 0);
    for (int64_t i = 0; i < count; ++i) {
      if (all_of_output_shape_) {
        std::fill(offsets.begin(), offsets.end(), i);
      } else {
        const std::vector<int64_t> index = unravel(i, dims_);
        for (size_t k = 0; k < inputs_.size(); ++k) offsets[k] = broadcastOffset(index, inputs_[k]);
      }
      body(i, offsets);
    }
  }

 private:
  std::vector<int64_t> dims_;
  std::vector<TensorDesc> inputs_;
  bool all_of_output_shape_ = true;
};

// c[i] = fn(a, b) with a and b read with broadcasting and widened to Wide<A>, Wide<B>; the
// result is converted to C once.
template <typename A, typename B, typename C, typename Fn>
std::unique_ptr<Kernel> binaryKernel(const KernelBuildContext& context, Fn fn) {
  const Broadcast broadcast(context);
  return makeKernel(context, [broadcast, fn](const KernelArgs& args) {
    const auto* a = static_cast<const A*>(args.inputs[0]);
    const auto* b = static_cast<const B*>(args.inputs[1]);
    auto* c = static_cast<C*>(args.outputs[0]);
    broadcast.forEach([&](int64_t i, const std::vector<int64_t>& at) {
      c[i] = static_cast<C>(fn(static_cast<Wide<A>>(a[at[0]]), static_cast<Wide<B>>(b[at[1]])));
    });
  });
}

// --- Registration helpers -----------------------------------------------------------------

// An op whose output has its input's dtype: y = fn(x).
template <typename Types, typename Fn>
void addUnary(KernelRegistry& registry, const char* op, Types types, Fn fn) {
  registry.add(op, "", [types, fn](const KernelBuildContext& context) {
    return dispatch(types, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      return unaryKernel<S, S>(context, fn);
    });
  });
}

// A float op whose formula is made for each node from its attributes.
using FloatFormula = std::function<double(double)>;
using MakeFloatFormula = std::function<FloatFormula(const KernelBuildContext&)>;

void addFloatUnary(KernelRegistry& registry, const char* op, MakeFloatFormula make) {
  registry.add(op, "", [make](const KernelBuildContext& context) {
    return dispatch(Floats{}, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      return unaryKernel<S, S>(context, make(context));
    });
  });
}

// An op whose output has its inputs' dtype: c = fn(a, b).
template <typename Types, typename Fn>
void addBinary(KernelRegistry& registry, const char* op, Types types, Fn fn) {
  registry.add(op, "", [types, fn](const KernelBuildContext& context) {
    return dispatch(types, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      return binaryKernel<S, S, S>(context, fn);
    });
  });
}

// An op with a bool output: c = fn(a, b).
template <typename Types, typename Fn>
void addComparison(KernelRegistry& registry, const char* op, Types types, Fn fn) {
  registry.add(op, "", [types, fn](const KernelBuildContext& context) {
    return dispatch(types, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      return binaryKernel<S, S, uint8_t>(context, fn);
    });
  });
}

// Max, Min, Sum, Mean: the inputs, each read with broadcasting, folded left to right with
// `combine`; Mean divides the sum by the number of inputs.
template <typename Types, typename Combine>
void addVariadic(KernelRegistry& registry, const char* op, Types types, Combine combine, bool mean = false) {
  registry.add(op, "", [types, combine, mean](const KernelBuildContext& context) {
    return dispatch(types, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      const Broadcast broadcast(context);
      const size_t n = context.numInputs();
      return makeKernel(context, [broadcast, combine, mean, n](const KernelArgs& args) {
        auto* out = static_cast<S*>(args.outputs[0]);
        auto input = [&](size_t k, int64_t offset) {
          return static_cast<Wide<S>>(static_cast<const S*>(args.inputs[k])[offset]);
        };
        broadcast.forEach([&](int64_t i, const std::vector<int64_t>& at) {
          Wide<S> value = input(0, at[0]);
          for (size_t k = 1; k < n; ++k) value = combine(value, input(k, at[k]));
          if (mean) value /= static_cast<Wide<S>>(n);
          out[i] = static_cast<S>(value);
        });
      });
    });
  });
}

// --- Formulas -----------------------------------------------------------------------------

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// ln(e^x + 1), written so that e^x cannot overflow for large x.
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// max(0, min(1, x)) with NaN propagating (NumPy's clip).
double clampTo01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

// Max and Min propagate NaN.
template <typename T>
T maxOf(T a, T b) {
  return isNaN(a) ? a : isNaN(b) ? b : a < b ? b : a;
}
template <typename T>
T minOf(T a, T b) {
  return isNaN(a) ? a : isNaN(b) ? b : b < a ? b : a;
}

// Integer division truncates toward zero. A zero divisor (undefined in ONNX) gives 0 as in
// NumPy.
template <typename T>
T divide(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a / b;
  } else {
    return b == 0 ? T(0) : static_cast<T>(a / b);
  }
}

// ONNX Mod: with fmod = 1 the remainder has the dividend's sign (C's fmod), with fmod = 0 the
// divisor's (Python's %). A zero integer divisor gives 0 as in NumPy.
template <typename T>
T remainder(T a, T b, bool c_style) {
  T r;
  if constexpr (std::is_floating_point_v<T>) {
    r = std::fmod(a, b);
  } else {
    if (b == 0) return 0;
    r = static_cast<T>(a % b);
  }
  if (!c_style && r != 0 && (r < 0) != (b < 0)) r = static_cast<T>(r + b);
  return r;
}

// base^exponent for integers, wrapping like two's complement (the product is taken modulo
// 2^64 in unsigned arithmetic, then narrowed). A negative exponent gives 1/base^|exponent|
// truncated toward zero: 0 unless base is 1 or -1.
template <typename T>
T integerPower(T base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  uint64_t result = 1;
  uint64_t square = static_cast<uint64_t>(static_cast<int64_t>(base));
  for (; exponent > 0; exponent /= 2) {
    if (exponent % 2 == 1) result *= square;
    square *= square;
  }
  return static_cast<T>(static_cast<int64_t>(result));
}

// X^Y. A float base computes in double; an integer base is raised exactly by an integer
// exponent, and by a float exponent gets the real power truncated toward zero.
template <typename X, typename Y>
X power(X x, Y y) {
  if constexpr (std::is_floating_point_v<X>) {
    return std::pow(x, static_cast<double>(y));
  } else if constexpr (std::is_floating_point_v<Y>) {
    return truncateToInteger<X>(std::pow(static_cast<double>(x), y));
  } else {
    return integerPower(x, static_cast<int64_t>(y));
  }
}

// Cast between two numeric dtypes (bool read as 0 or 1): float to integer truncates toward
// zero, integer to integer keeps the low bits (as C and NumPy do), to float rounds to nearest.
template <typename To, typename From>
To convert(From value) {
  if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return truncateToInteger<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

// --- Op tables ----------------------------------------------------------------------------

// Float unary ops without attributes.
const std::pair<const char*, double (*)(double)> kFloatFormulas[] = {
    {"Sigmoid", sigmoid},
    {"Reciprocal", [](double x) { return 1 / x; }},
    {"Sqrt", [](double x) { return std::sqrt(x); }},
    {"Floor", [](double x) { return std::floor(x); }},
    {"Ceil", [](double x) { return std::ceil(x); }},
    // nearbyint in the default rounding mode: halves go to the even neighbour.
    {"Round", [](double x) { return std::nearbyint(x); }},
    {"HardSwish", [](double x) { return x * clampTo01(x / 6 + 0.5); }},
    {"Softplus", softplus},
    {"Mish", [](double x) { return x * std::tanh(softplus(x)); }},
    {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }},
    {"Tanh", [](double x) { return std::tanh(x); }},
    {"Exp", [](double x) { return std::exp(x); }},
    {"Log", [](double x) { return std::log(x); }},
    {"Erf", [](double x) { return std::erf(x); }},
    {"Cos", [](double x) { return std::cos(x); }},
    {"Sin", [](double x) { return std::sin(x); }},
    {"Tan", [](double x) { return std::tan(x); }},
    {"Acos", [](double x) { return std::acos(x); }},
    {"Asin", [](double x) { return std::asin(x); }},
    {"Atan", [](double x) { return std::atan(x); }},
    {"Cosh", [](double x) { return std::cosh(x); }},
    {"Sinh", [](double x) { return std::sinh(x); }},
};

// Float unary ops whose formula reads the node's attributes.
const std::pair<const char*, FloatFormula (*)(const KernelBuildContext&)> kFloatFormulasWithAttributes[] = {
    {"Gelu",
     [](const KernelBuildContext& context) -> FloatFormula {
       const std::string approximate = context.stringAttr("approximate");
       // 0.5 x (1 + erf(x / sqrt 2)) as 0.5 x erfc(-x / sqrt 2), and 0.5 x (1 + tanh u) as
       // x sigmoid(2u): the same values without the cancellation in 1 + (near -1) for x < 0.
       if (approximate == "none") return [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
       if (approximate == "tanh") {
         return [](double x) {
           constexpr double kPi = 3.14159265358979323846;
           const double u = std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x);
           return x * sigmoid(2 * u);
         };
       }
       context.fail("attribute 'approximate' is \"", approximate, "\", not \"none\" or \"tanh\"");
     }},
    {"HardSigmoid",
     [](const KernelBuildContext& context) -> FloatFormula {
       const double alpha = context.floatAttr("alpha"), beta = context.floatAttr("beta");
       return [alpha, beta](double x) { return clampTo01(alpha * x + beta); };
     }},
    {"LeakyRelu",
     [](const KernelBuildContext& context) -> FloatFormula {
       const double alpha = context.floatAttr("alpha");
       return [alpha](double x) { return x < 0 ? alpha * x : x; };
     }},
    {"Elu",
     [](const KernelBuildContext& context) -> FloatFormula {
       const double alpha = context.floatAttr("alpha");
       return [alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; };
     }},
    {"Celu",
     [](const KernelBuildContext& context) -> FloatFormula {
       // max(0, x) + min(0, alpha (e^(x/alpha) - 1)), of which one term is 0 for alpha > 0.
       const double alpha = context.floatAttr("alpha");
       return [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x / alpha); };
     }},
    {"ThresholdedRelu",
     [](const KernelBuildContext& context) -> FloatFormula {
       const double alpha = context.floatAttr("alpha");
       return [alpha](double x) { return x > alpha ? x : 0; };
     }},
    {"Selu",
     [](const KernelBuildContext& context) -> FloatFormula {
       const double alpha = context.floatAttr("alpha"), gamma = context.floatAttr("gamma");
       return [alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); };
     }},
    {"Swish",
     [](const KernelBuildContext& context) -> FloatFormula {
       const double alpha = context.floatAttr("alpha");
       return [alpha](double x) { return x * sigmoid(alpha * x); };
     }},
};

void registerUnaryOps(KernelRegistry& registry) {
  for (const auto& [op, formula] : kFloatFormulas) {
    addFloatUnary(registry, op, [formula = formula](const KernelBuildContext&) { return FloatFormula(formula); });
  }
  for (const auto& [op, make] : kFloatFormulasWithAttributes) addFloatUnary(registry, op, make);

  addUnary(registry, "Relu", Signed{}, [](auto x) { return x < 0 ? decltype(x)(0) : x; });
  addUnary(registry, "Neg", Signed{}, [](auto x) { return -x; });
  addUnary(registry, "Abs", Numeric{}, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) {
      return std::fabs(x);
    } else {
      return x < 0 ? -x : x;
    }
  });
  addUnary(registry, "Sign", Numeric{}, [](auto x) {
    using T = decltype(x);
    return x > 0 ? T(1) : x < 0 ? T(-1) : x;  // 0 and NaN are their own sign
  });
  addUnary(registry, "Not", Bools{}, [](auto x) { return x == 0; });
  addUnary(registry, "Identity", All{}, [](auto x) { return x; });

  registry.add("IsNaN", "", [](const KernelBuildContext& context) {
    return dispatch(Floats{}, context.input(0).dtype, [&](auto type) {
      return unaryKernel<StorageOf<decltype(type)>, uint8_t>(context, [](double x) { return std::isnan(x); });
    });
  });
  registry.add("IsInf", "", [](const KernelBuildContext& context) {
    const bool negative = context.intAttr("detect_negative") != 0;
    const bool positive = context.intAttr("detect_positive") != 0;
    return dispatch(Floats{}, context.input(0).dtype, [&](auto type) {
      return unaryKernel<StorageOf<decltype(type)>, uint8_t>(context, [negative, positive](double x) {
        return std::isinf(x) && (x > 0 ? positive : negative);
      });
    });
  });

  // Cast and CastLike: the output dtype is the node's (Cast's `to`, CastLike's second input's).
  // `saturate` and `round_mode` concern the float8 types only.
  const KernelFactory cast = [](const KernelBuildContext& context) {
    return dispatch(All{}, context.input(0).dtype, [&](auto from_type) {
      using From = StorageOf<decltype(from_type)>;
      if (context.output(0).dtype == DType::Bool) {
        return unaryKernel<From, uint8_t>(context, [](auto x) { return x != 0; });  // NaN is true
      }
      return dispatch(Numeric{}, context.output(0).dtype, [&](auto to_type) {
        using To = StorageOf<decltype(to_type)>;
        return unaryKernel<From, To>(context, [](auto x) { return convert<To>(x); });
      });
    });
  };
  registry.add("Cast", "", cast);
  registry.add("CastLike", "", cast);

  registry.add("Clip", "", [](const KernelBuildContext& context) {
    return dispatch(Numeric{}, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      const Broadcast broadcast(context);
      const bool has_min = context.hasInput(1), has_max = context.hasInput(2);
      return makeKernel(context, [broadcast, has_min, has_max](const KernelArgs& args) {
        const auto* x = static_cast<const S*>(args.inputs[0]);
        const auto* min = has_min ? static_cast<const S*>(args.inputs[1]) : nullptr;
        const auto* max = has_max ? static_cast<const S*>(args.inputs[2]) : nullptr;
        auto* y = static_cast<S*>(args.outputs[0]);
        broadcast.forEach([&](int64_t i, const std::vector<int64_t>& at) {
          const S low = min ? min[at[1]] : std::numeric_limits<S>::lowest();
          const S high = max ? max[at[2]] : std::numeric_limits<S>::max();
          // NaN stays NaN; with low > high every value becomes high, as ONNX says.
          S value = x[at[0]] < low ? low : x[at[0]];
          y[i] = value > high ? high : value;
        });
      });
    });
  });

  // Dropout keeps each element with probability 1 - ratio and scales it by 1 / (1 - ratio) when
  // training_mode is true at run time, and copies its input (mask all true) otherwise. Each run
  // draws from its own stream, seeded by the `seed` attribute when there is one.
  registry.add("Dropout", "", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    return dispatch(Floats{}, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      const int64_t count = context.input(0).numElements();
      const bool has_mask = context.numOutputs() > 1;
      const DType ratio_dtype = context.hasInput(1) ? context.input(1).dtype : DType::Undefined;
      const bool has_training_mode = context.hasInput(2);
      const uint64_t seed = context.attr("seed") ? static_cast<uint64_t>(context.intAttr("seed")) : std::random_device{}();
      auto runs = std::make_shared<std::atomic<uint64_t>>(0);
      return makeKernel(context, [=](const KernelArgs& args) {
        const auto* x = static_cast<const S*>(args.inputs[0]);
        auto* y = static_cast<S*>(args.outputs[0]);
        auto* mask = has_mask ? static_cast<uint8_t*>(args.outputs[1]) : nullptr;
        const double ratio = ratio_dtype == DType::Undefined ? 0.5 : loadDouble(ratio_dtype, args.inputs[1], 0);
        const bool training = has_training_mode && loadInt(DType::Bool, args.inputs[2], 0) != 0;
        if (!training || ratio == 0) {
          std::copy(x, x + count, y);
          if (mask) std::fill_n(mask, count, uint8_t{1});
          return;
        }
        std::mt19937_64 generator(seed + runs->fetch_add(1));
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        const double scale = 1.0 / (1.0 - ratio);
        for (int64_t i = 0; i < count; ++i) {
          const bool keep = uniform(generator) >= ratio;
          y[i] = keep ? static_cast<S>(x[i] * scale) : S{0};
          if (mask) mask[i] = keep;
        }
      });
    });
  });
}

void registerBinaryOps(KernelRegistry& registry) {
  addBinary(registry, "Add", Numeric{}, [](auto a, auto b) { return a + b; });
  addBinary(registry, "Sub", Numeric{}, [](auto a, auto b) { return a - b; });
  addBinary(registry, "Mul", Numeric{}, [](auto a, auto b) { return a * b; });
  addBinary(registry, "Div", Numeric{}, [](auto a, auto b) { return divide(a, b); });
  registry.add("Mod", "", [](const KernelBuildContext& context) {
    const bool c_style = context.intAttr("fmod") != 0;
    return dispatch(Numeric{}, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      return binaryKernel<S, S, S>(context, [c_style](auto a, auto b) { return remainder(a, b, c_style); });
    });
  });
  registry.add("Pow", "", [](const KernelBuildContext& context) {
    return dispatch(FloatsAndWideInts{}, context.input(0).dtype, [&](auto x_type) {
      using X = StorageOf<decltype(x_type)>;
      return dispatch(Numeric{}, context.input(1).dtype, [&](auto y_type) {
        using Y = StorageOf<decltype(y_type)>;
        return binaryKernel<X, Y, X>(context, [](auto x, auto y) { return power(x, y); });
      });
    });
  });
  // Unidirectional broadcasting: slope broadcasts to X's shape, the output's.
  addBinary(registry, "PRelu", FloatsAndWideInts{}, [](auto x, auto slope) { return x < 0 ? slope * x : x; });
  // Estuary's SwiGLU: Swish(A) * B = A * sigmoid(alpha * A) * B, A and B of one shape.
  registry.add("SwiGLU", "", [](const KernelBuildContext& context) {
    const double alpha = context.floatAttr("alpha");
    return dispatch(Floats{}, context.input(0).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      return binaryKernel<S, S, S>(context, [alpha](double a, double b) { return a * sigmoid(alpha * a) * b; });
    });
  });

  addComparison(registry, "Equal", All{}, [](auto a, auto b) { return a == b; });
  addComparison(registry, "Less", Numeric{}, [](auto a, auto b) { return a < b; });
  addComparison(registry, "LessOrEqual", Numeric{}, [](auto a, auto b) { return a <= b; });
  addComparison(registry, "Greater", Numeric{}, [](auto a, auto b) { return a > b; });
  addComparison(registry, "GreaterOrEqual", Numeric{}, [](auto a, auto b) { return a >= b; });
  addComparison(registry, "And", Bools{}, [](auto a, auto b) { return a != 0 && b != 0; });
  addComparison(registry, "Or", Bools{}, [](auto a, auto b) { return a != 0 || b != 0; });
  addComparison(registry, "Xor", Bools{}, [](auto a, auto b) { return (a != 0) != (b != 0); });

  addVariadic(registry, "Max", Numeric{}, [](auto a, auto b) { return maxOf(a, b); });
  addVariadic(registry, "Min", Numeric{}, [](auto a, auto b) { return minOf(a, b); });
  addVariadic(registry, "Sum", Floats{}, [](auto a, auto b) { return a + b; });
  addVariadic(registry, "Mean", Floats{}, [](auto a, auto b) { return a + b; }, true);

  registry.add("Where", "", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    if (context.input(0).dtype != DType::Bool) return nullptr;
    return dispatch(All{}, context.input(1).dtype, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      const Broadcast broadcast(context);
      return makeKernel(context, [broadcast](const KernelArgs& args) {
        const auto* condition = static_cast<const uint8_t*>(args.inputs[0]);
        const auto* x = static_cast<const S*>(args.inputs[1]);
        const auto* y = static_cast<const S*>(args.inputs[2]);
        auto* out = static_cast<S*>(args.outputs[0]);
        broadcast.forEach([&](int64_t i, const std::vector<int64_t>& at) {
          out[i] = condition[at[0]] != 0 ? x[at[1]] : y[at[2]];
        });
      });
    });
  });
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& registry) {
  registerUnaryOps(registry);
  registerBinaryOps(registry);
}

}  // namespace estuary::ge::reference
