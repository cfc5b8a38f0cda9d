// Unary element-wise kernels against closed forms evaluated in double: every op, every dtype
// its schema allows, random values over each op's interesting range plus special values
// (signed zeros, infinities, NaN, halfway cases), in place and on several threads.
#include <functional>

#include "elementwise_test_support.h"

namespace estuary::ge::elementwise_test {
namespace {

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
// NaN propagates, as in ONNX's formula evaluated by NumPy.
double hardSigmoid(double x, double alpha, double beta) {
  double y = alpha * x + beta;
  return std::isnan(y) ? y : std::max(0.0, std::min(1.0, y));
}

struct UnaryCase {
  std::string op;  // with attributes
  std::function<double(double)> reference;
  double lo, hi;       // range of the random inputs
  double f32_ulps = 4;  // tolerance for f32 results (f16/bf16: 1 ulp after rounding)
};

const std::vector<double> kSpecials = {0.0, -0.0, kInf, -kInf, kNaN, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-6, -1e-6, 3.0};

std::vector<UnaryCase> floatCases() {
  return {
      {"Sigmoid", sigmoid, -30, 30},
      {"Reciprocal", [](double x) { return 1 / x; }, -100, 100},
      {"Sqrt", [](double x) { return std::sqrt(x); }, -1, 1000},
      {"Floor", [](double x) { return std::floor(x); }, -50, 50},
      {"Ceil", [](double x) { return std::ceil(x); }, -50, 50},
      {"Round", [](double x) { return std::nearbyint(x); }, -50, 50},
      {"HardSwish", [](double x) { return x * hardSigmoid(x + 3, 1.0 / 6, 0); }, -8, 8},
      {"Softplus", softplus, -30, 30},
      {"Mish", [](double x) { return x * std::tanh(softplus(x)); }, -30, 30},
      {"Tanh", [](double x) { return std::tanh(x); }, -12, 12},
      {"Exp", [](double x) { return std::exp(x); }, -110, 90},
      {"Log", [](double x) { return std::log(x); }, -1, 1e6},
      {"Erf", [](double x) { return std::erf(x); }, -5, 5},
      {"Cos", [](double x) { return std::cos(x); }, -1000, 1000},
      {"Sin", [](double x) { return std::sin(x); }, -1000, 1000},
      {"Tan", [](double x) { return std::tan(x); }, -10, 10},
      {"Acos", [](double x) { return std::acos(x); }, -1.1, 1.1},
      {"Asin", [](double x) { return std::asin(x); }, -1.1, 1.1},
      {"Atan", [](double x) { return std::atan(x); }, -50, 50},
      {"Cosh", [](double x) { return std::cosh(x); }, -95, 95},
      {"Sinh", [](double x) { return std::sinh(x); }, -95, 95},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }, -100, 100},
      // In long double: the tails amplify the rounding of the argument (x/sqrt2, the cubic).
      {"Gelu", [](double x) { return double(0.5L * x * std::erfc(-x / std::sqrt(2.0L))); }, -8, 8},
      {"Gelu {approximate = \"tanh\"}",
       [](double x) {
         long double u = std::sqrt(2 / 3.14159265358979323846264L) * (x + 0.044715L * x * x * x);
         return double(x / (1 + std::exp(-2 * u)));
       },
       -8, 8},
      {"HardSigmoid {alpha = 0.25, beta = 0.375}", [](double x) { return hardSigmoid(x, 0.25, 0.375); }, -8, 8},
      {"LeakyRelu {alpha = 0.125}", [](double x) { return x < 0 ? 0.125 * x : x; }, -10, 10},
      {"Elu {alpha = 1.5}", [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }, -20, 10},
      {"Celu {alpha = 2.0}", [](double x) { return x > 0 ? x : 2 * std::expm1(x / 2); }, -20, 10},
      {"ThresholdedRelu {alpha = 1.5}", [](double x) { return x > 1.5 ? x : 0; }, -5, 5},
      {"Selu",
       [](double x) {
         const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
         return x > 0 ? gamma * x : gamma * alpha * std::expm1(x);
       },
       -20, 10},
      {"Swish {alpha = 1.5}", [](double x) { return double(x / (1 + std::exp(-1.5L * x))); }, -30, 30},
      {"Relu", [](double x) { return x < 0 ? 0 : x; }, -10, 10},
      {"Abs", [](double x) { return std::fabs(x); }, -10, 10},
      {"Neg", [](double x) { return -x; }, -10, 10},
      {"Sign", [](double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }, -10, 10},
  };
}

// Random values in the op's range and the special values, in the dtype.
Data inputsFor(const UnaryCase& test, DType dtype, int64_t count = 301) {
  Data data = randomData(dtype, {count}, test.lo, test.hi, 7);
  for (double special : kSpecials) data.values.push_back(roundTo(dtype, special));
  data.dims[0] = static_cast<int64_t>(data.values.size());
  return data;
}

std::vector<double> reference(const UnaryCase& test, const Data& input) {
  std::vector<double> expected;
  for (double x : input.values) expected.push_back(test.reference(x));
  return expected;
}

double ulpsFor(const UnaryCase& test, DType dtype) {
  if (dtype == DType::F32) return test.f32_ulps;
  // libm composed as the op's formula says: the formula's own conditioning (erfc of a rounded
  // x/sqrt2, say) dominates, in the reference as in the kernel.
  if (dtype == DType::F64) return 64;
  return 1;  // computed in f32, rounded once
}

TEST(ElementwiseUnary, EveryFloatOpMatchesItsClosedFormInEveryFloatDType) {
  for (const UnaryCase& test : floatCases()) {
    for (DType dtype : kFloatDTypes) {
      Data x = inputsFor(test, dtype);
      NodeRun run = runNode(test.op, {x});
      expectClose(run.outputs[0], reference(test, x), ulpsFor(test, dtype), test.op + " (" + run.kernel + ")", {&x});
    }
  }
}

// A few hundred random inputs miss where the roundings of the erf family compound (Gelu's
// negative tail): there the f32 kernels are swept at every 2^-16, plus the worst inputs a
// sweep 8 times as dense found (-3.6624403 was 4.5 ulp from Gelu before erfc's tail kept
// e^-z^2 in double).
TEST(ElementwiseUnary, ErfAndGeluHoldTheirBoundOnADenseSweep) {
  for (const UnaryCase& test : floatCases()) {
    if (test.op != "Gelu" && test.op != "Erf") continue;
    Data x{DType::F32, {}, {}};
    for (double worst : {-3.6624403, -6.19, -0.475832462}) x.values.push_back(roundTo(DType::F32, worst));
    for (double value = test.lo; value < test.hi; value += 1.0 / 65536) x.values.push_back(value);
    x.dims = {static_cast<int64_t>(x.values.size())};
    NodeRun run = runNode(test.op, {x});
    expectClose(run.outputs[0], reference(test, x), test.f32_ulps, test.op + " (" + run.kernel + ")", {&x});
  }
}

TEST(ElementwiseUnary, InPlaceAndMultiThreadedRunsMatch) {
  // Enough elements that four threads each get a share, written over the input.
  for (const UnaryCase& test : floatCases()) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      Data x = inputsFor(test, dtype, 200003);
      RunOptions options;
      options.threads = 4;
      options.in_place = true;
      NodeRun run = runNode(test.op, {x}, options);
      EXPECT_TRUE(run.ran_in_place) << test.op;
      expectClose(run.outputs[0], reference(test, x), ulpsFor(test, dtype), test.op + " (" + run.kernel + ")", {&x});
    }
  }
}

TEST(ElementwiseUnary, LargeTrigonometricArgumentsUseAnExactReduction) {
  Data x = tensorOf(DType::F32, {8}, {1e7, -3e8, 123456.7, 1e30, -2.5e6, 1e6, 3.0, 0.1});
  for (auto [op, reference] : std::vector<std::pair<std::string, double (*)(double)>>{
           {"Sin", std::sin}, {"Cos", std::cos}, {"Tan", std::tan}}) {
    std::vector<double> expected;
    for (double v : x.values) expected.push_back(reference(v));
    expectClose(runNode(op, {x}).outputs[0], expected, 2, op, {&x});
  }
}

TEST(ElementwiseUnary, RoundHalvesToEven) {
  for (DType dtype : kFloatDTypes) {
    Data x = tensorOf(dtype, {9}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 0.49, -0.51});
    expectClose(runNode("Round", {x}).outputs[0], {0, 2, 2, -0, -2, -2, 4, 0, -1}, 0, "Round");
  }
}

TEST(ElementwiseUnary, DefaultAttributesAreTheSchemas) {
  Data x = randomData(DType::F32, {101}, -5, 5, 3);
  const float leaky = 0.01f;
  std::vector<double> expected;
  for (double v : x.values) expected.push_back(v < 0 ? leaky * v : v);
  expectClose(runNode("LeakyRelu", {x}).outputs[0], expected, 1, "LeakyRelu");
  expected.clear();
  for (double v : x.values) expected.push_back(hardSigmoid(v, static_cast<float>(0.2), 0.5));
  expectClose(runNode("HardSigmoid", {x}).outputs[0], expected, 1, "HardSigmoid");
  expected.clear();
  for (double v : x.values) expected.push_back(v > 0 ? v : std::expm1(v));
  expectClose(runNode("Elu", {x}).outputs[0], expected, 4, "Elu");
  expected.clear();
  for (double v : x.values) expected.push_back(v > 1 ? v : 0);
  expectClose(runNode("ThresholdedRelu", {x}).outputs[0], expected, 0, "ThresholdedRelu");
  expected.clear();
  for (double v : x.values) expected.push_back(v * sigmoid(v));
  expectClose(runNode("Swish", {x}).outputs[0], expected, 4, "Swish");
}

TEST(ElementwiseUnary, IntegerOpsWrapAtTheirLimits) {
  for (DType dtype : kIntDTypes) {
    double lo = dtype == DType::U8 ? 0 : -std::ldexp(1.0, static_cast<int>(dtypeSize(dtype)) * 8 - 1);
    double hi = dtype == DType::U8 ? 255 : -lo - 1;
    if (dtype == DType::I64) lo = -9.2e18, hi = 9.2e18;  // exactly representable in double
    Data x = randomData(dtype, {67}, lo, hi, 11);
    for (double v : {lo, hi, 0.0, 1.0, 2.0}) x.values.push_back(v);
    if (dtype != DType::U8) x.values.push_back(-1);
    x.dims[0] = static_cast<int64_t>(x.values.size());
    // The minimum of a signed type is its own negation and absolute value (two's complement).
    double minimum = dtype == DType::I64 ? -9223372036854775808.0 : lo;
    if (dtype != DType::U8) x.values.push_back(minimum), x.dims[0]++;
    auto wrap = [&](double v) { return v == -minimum && dtype != DType::U8 ? minimum : v; };
    std::vector<double> abs, sign, neg, relu;
    for (double v : x.values) {
      abs.push_back(wrap(std::fabs(v)));
      sign.push_back(v > 0 ? 1 : v < 0 ? -1 : 0);
      neg.push_back(wrap(-v));
      relu.push_back(v < 0 ? 0 : v);
    }
    expectClose(runNode("Abs", {x}).outputs[0], abs, 0, "Abs", {&x});
    expectClose(runNode("Sign", {x}).outputs[0], sign, 0, "Sign", {&x});
    if (dtype != DType::U8) {  // Neg and Relu take signed types only
      expectClose(runNode("Neg", {x}).outputs[0], neg, 0, "Neg", {&x});
      expectClose(runNode("Relu", {x}).outputs[0], relu, 0, "Relu", {&x});
    } else {
      EXPECT_THROW(runNode("Neg", {x}), Error);
    }
  }
}

TEST(ElementwiseUnary, ClipBoundsAreOptionalRuntimeScalars) {
  for (DType dtype : kNumericDTypes) {
    Data x = randomData(dtype, {3, 41}, dtype == DType::U8 ? 0 : -100, 100, 5);
    Data lo = tensorOf(dtype, {}, {dtype == DType::U8 ? 10.0 : -20.0});
    Data hi = tensorOf(dtype, {}, {30});
    auto clip = [&](std::optional<double> min, std::optional<double> max) {
      std::vector<double> expected;
      for (double v : x.values) expected.push_back(std::min(std::max(v, min.value_or(-kInf)), max.value_or(kInf)));
      return expected;
    };
    expectClose(runNode("Clip", {x, lo, hi}).outputs[0], clip(lo.values[0], hi.values[0]), 0, "Clip");
    expectClose(runNode("Clip", {x, lo}).outputs[0], clip(lo.values[0], std::nullopt), 0, "Clip min");
    expectClose(runNode("Clip", {x, kAbsent, hi}).outputs[0], clip(std::nullopt, hi.values[0]), 0, "Clip max");
    expectClose(runNode("Clip", {x}).outputs[0], x.values, 0, "Clip unbounded");
    // min above max: every element becomes max.
    expectClose(runNode("Clip", {x, hi, lo}).outputs[0], std::vector<double>(x.values.size(), lo.values[0]), 0,
                "Clip crossed");
  }
  Data x = tensorOf(DType::F32, {3}, {kNaN, -kInf, kInf});
  expectClose(runNode("Clip", {x, tensorOf(DType::F32, {}, {-1}), tensorOf(DType::F32, {}, {1})}).outputs[0],
              {kNaN, -1, 1}, 0, "Clip special");
}

// The cubic of the tanh form overflows f32 for huge x; the result must still be x (or 0).
TEST(ElementwiseUnary, GeluTanhOfHugeInputsIsTheIdentityOrZero) {
  const double big = 3.4028234663852886e38;  // FLT_MAX
  Data x = tensorOf(DType::F32, {4}, {big, -big, 1e30, -1e30});
  expectClose(runNode("Gelu {approximate = \"tanh\"}", {x}).outputs[0], {big, -0.0, 1e30, -0.0}, 0, "Gelu tanh");
}

TEST(ElementwiseUnary, GeluRefusesAnUnknownApproximation) {
  try {
    runNode("Gelu {approximate = \"fast\"}", {randomData(DType::F32, {4}, -1, 1)});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("approximate must be \"none\" or \"tanh\", got \"fast\""),
              std::string::npos)
        << error.what();
  }
}

TEST(ElementwiseUnary, PredicatesOnSpecialValues) {
  for (DType dtype : kFloatDTypes) {
    Data x = tensorOf(dtype, {6}, {0.0, -1.5, kInf, -kInf, kNaN, 7});
    expectClose(runNode("IsNaN", {x}).outputs[0], {0, 0, 0, 0, 1, 0}, 0, "IsNaN");
    expectClose(runNode("IsInf", {x}).outputs[0], {0, 0, 1, 1, 0, 0}, 0, "IsInf");
    expectClose(runNode("IsInf {detect_negative = 0}", {x}).outputs[0], {0, 0, 1, 0, 0, 0}, 0, "IsInf positive");
    expectClose(runNode("IsInf {detect_positive = 0}", {x}).outputs[0], {0, 0, 0, 1, 0, 0}, 0, "IsInf negative");
  }
  Data b = tensorOf(DType::Bool, {4}, {0, 1, 1, 0});
  expectClose(runNode("Not", {b}).outputs[0], {1, 0, 0, 1}, 0, "Not");
}

TEST(ElementwiseUnary, ZeroSizedTensorsRunNothing) {
  for (const char* op : {"Relu", "Exp", "Abs", "IsNaN"}) {
    NodeRun run = runNode(op, {tensorOf(DType::F32, {0, 5}, {})});
    EXPECT_EQ(run.outputs[0].count(), 0);
  }
}

TEST(ElementwiseUnary, F32UsesOneDnnWhereItMatchesOnnx) {
  Data x = randomData(DType::F32, {16}, -1, 1);
  for (const char* op : {"Tanh", "Sigmoid", "Sqrt", "Abs", "HardSwish", "Round", "LeakyRelu"}) {
    EXPECT_EQ(runNode(op, {x}).kernel.rfind("onednn:eltwise", 0), 0u) << op;
  }
  // oneDNN's relu maps NaN to 0, its exp flushes denormals, and its gelu is off in the tail.
  for (const char* op : {"Relu", "Exp", "Gelu", "Erf"}) EXPECT_EQ(runNode(op, {x}).kernel, std::string("cpu:") + op + " f32");
  EXPECT_EQ(runNode("Exp", {randomData(DType::F64, {16}, -1, 1)}).kernel, "cpu:Exp f64");
}

}  // namespace
}  // namespace estuary::ge::elementwise_test
