// The reference device's element-wise kernels: every op on values worked out by hand from the
// ONNX specification, then against the CPU device on seeded random inputs in every dtype the
// op's schema allows (f16/bf16 aside), broadcast shapes included.
//
// Nodes run directly through each device's kernel registry (elementwise_test_support.h's
// runNode) so that canonicalization cannot remove Identity, Dropout or Cast.
#include "elementwise_test_support.h"

namespace estuary::ge::elementwise_test {
namespace {

const Device& referenceDevice() { return deviceNamed("reference"); }

Data runReference(const std::string& op, const std::vector<Data>& inputs) {
  return runNode(op, inputs, {}, referenceDevice()).outputs[0];
}

constexpr double kPi = 3.14159265358979323846;
const double kE = std::exp(1.0);

// --- Coverage -----------------------------------------------------------------------------

const char* const kElementwiseOps[] = {
    "Abs",         "Acos",        "Add",        "And",       "Asin",           "Atan",      "Cast",
    "CastLike",    "Ceil",        "Celu",       "Clip",      "Cos",            "Cosh",      "Div",
    "Dropout",     "Elu",         "Equal",      "Erf",       "Exp",            "Floor",     "Gelu",
    "Greater",     "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity",   "IsInf",     "IsNaN",
    "LeakyRelu",   "Less",        "LessOrEqual", "Log",      "Max",            "Mean",      "Min",
    "Mish",        "Mod",         "Mul",        "Neg",       "Not",            "Or",        "PRelu",
    "Pow",         "Reciprocal",  "Relu",       "Round",     "Selu",           "Sigmoid",   "Sign",
    "Sin",         "Sinh",        "Softplus",   "Softsign",  "Sqrt",           "Sub",       "Sum",
    "Swish",       "SwiGLU",      "Tan",        "Tanh",      "ThresholdedRelu", "Where",    "Xor",
};

TEST(ReferenceElementwise, EveryOpOfTheFamilyHasAKernel) {
  EXPECT_EQ(std::size(kElementwiseOps), 63u);
  for (const char* op : kElementwiseOps) EXPECT_TRUE(referenceDevice().kernels().has(op)) << op;
}

// --- Values worked out from the specification ----------------------------------------------

struct HandCase {
  std::string op;
  DType dtype;
  std::vector<double> x;
  std::vector<double> expected;
};

TEST(ReferenceElementwise, UnaryOpsOnHandWorkedValues) {
  const double s2 = std::sqrt(2.0);
  const double gamma = 1.05070102214813232421875, alpha = 1.67326319217681884765625;
  const std::vector<HandCase> cases = {
      {"Abs", DType::F64, {-1.5, 0, 2}, {1.5, 0, 2}},
      {"Abs", DType::I32, {-3, 0, 5}, {3, 0, 5}},
      {"Abs", DType::U8, {0, 200}, {0, 200}},
      {"Acos", DType::F64, {1, 0, -1, 2}, {0, kPi / 2, kPi, kNaN}},
      {"Asin", DType::F64, {0, 1, -1}, {0, kPi / 2, -kPi / 2}},
      {"Atan", DType::F64, {1, 0, -1, kInf}, {kPi / 4, 0, -kPi / 4, kPi / 2}},
      {"Ceil", DType::F64, {-1.5, 1.2, 2}, {-1, 2, 2}},
      {"Celu {alpha = 2.0}", DType::F64, {-2, 3}, {2 * (std::exp(-1.0) - 1), 3}},
      {"Cos", DType::F64, {0, kPi}, {1, -1}},
      {"Cosh", DType::F64, {0, 1}, {1, (kE + 1 / kE) / 2}},
      {"Elu {alpha = 1.5}", DType::F64, {-1, 0, 2}, {1.5 * (1 / kE - 1), 0, 2}},
      {"Erf", DType::F64, {0, kInf, -kInf, 0.5}, {0, 1, -1, 0.5204998778130465}},
      {"Exp", DType::F64, {0, 1, -kInf}, {1, kE, 0}},
      {"Floor", DType::F64, {-1.5, 1.7, 3}, {-2, 1, 3}},
      // 0.5 x (1 + erf(x / sqrt 2)): Phi(1) = 0.841344746..., Phi(-1) = 0.158655253...
      {"Gelu", DType::F64, {0, 1, -1}, {0, 0.8413447460685429, -0.15865525393145707}},
      {"Gelu {approximate = \"tanh\"}", DType::F64, {0, 1},
       {0, 0.5 * (1 + std::tanh(std::sqrt(2 / kPi) * (1 + 0.044715)))}},
      {"HardSigmoid", DType::F64, {-5, 0, 1, 5}, {0, 0.5, 0.7, 1}},
      {"HardSigmoid {alpha = 0.5, beta = 0.25}", DType::F64, {-1, 1}, {0, 0.75}},
      {"HardSwish", DType::F64, {-4, 0, 1, 4}, {0, 0, 2.0 / 3, 4}},
      {"LeakyRelu", DType::F64, {-2, 3}, {-0.02, 3}},
      {"Log", DType::F64, {1, kE, 0, -1}, {0, 1, -kInf, kNaN}},
      {"Mish", DType::F64, {0, 1}, {0, std::tanh(std::log(1 + kE))}},
      {"Neg", DType::I8, {-3, 5, -128}, {3, -5, -128}},
      {"Neg", DType::F32, {1.5, -2}, {-1.5, 2}},
      {"Reciprocal", DType::F64, {2, -4, 0}, {0.5, -0.25, kInf}},
      {"Relu", DType::F64, {-1, 2, kNaN}, {0, 2, kNaN}},
      {"Relu", DType::I32, {-7, 0, 9}, {0, 0, 9}},
      {"Round", DType::F64, {0.5, 1.5, 2.5, -2.5, 2.6, -0.4}, {0, 2, 2, -2, 3, 0}},
      {"Round", DType::F32, {0.5, 3.5, -3.5}, {0, 4, -4}},
      {"Selu", DType::F64, {1, -1, 0}, {gamma, gamma * alpha * (1 / kE - 1), 0}},
      {"Sigmoid", DType::F64, {0, 2, -kInf}, {0.5, 1 / (1 + std::exp(-2.0)), 0}},
      {"Sign", DType::F64, {-3.5, 0, 2, kNaN}, {-1, 0, 1, kNaN}},
      {"Sign", DType::I16, {-300, 0, 7}, {-1, 0, 1}},
      {"Sign", DType::U8, {0, 9}, {0, 1}},
      {"Sin", DType::F64, {0, kPi / 2}, {0, 1}},
      {"Sinh", DType::F64, {0, 1}, {0, (kE - 1 / kE) / 2}},
      {"Softplus", DType::F64, {0, 1, 1000}, {std::log(2.0), std::log(1 + kE), 1000}},
      {"Softsign", DType::F64, {1, -3}, {0.5, -0.75}},
      {"Sqrt", DType::F64, {4, 2, -1}, {2, s2, kNaN}},
      {"Swish", DType::F64, {1}, {1 / (1 + 1 / kE)}},
      {"Swish {alpha = 2.0}", DType::F64, {1}, {1 / (1 + std::exp(-2.0))}},
      {"Tan", DType::F64, {0, kPi / 4}, {0, 1}},
      {"Tanh", DType::F64, {0, 0.5, -kInf}, {0, 0.46211715726000974, -1}},
      {"ThresholdedRelu", DType::F64, {0.5, 1, 2}, {0, 0, 2}},
      {"ThresholdedRelu {alpha = 0.25}", DType::F64, {0.5, 0.1}, {0.5, 0}},
      {"Identity", DType::I64, {1, -2, 3}, {1, -2, 3}},
      {"Identity", DType::Bool, {1, 0}, {1, 0}},
      {"Not", DType::Bool, {0, 1}, {1, 0}},
  };
  for (const HandCase& test : cases) {
    Data x = tensorOf(test.dtype, {static_cast<int64_t>(test.x.size())}, test.x);
    Data y = runReference(test.op, {x});
    EXPECT_EQ(y.dtype, test.dtype) << test.op;
    expectClose(y, test.expected, 4, test.op, {&x});
  }
}

TEST(ReferenceElementwise, PredicatesGiveBools) {
  for (DType dtype : {DType::F32, DType::F64}) {
    Data x = tensorOf(dtype, {6}, {0.0, -1.5, kInf, -kInf, kNaN, 7});
    expectClose(runReference("IsNaN", {x}), {0, 0, 0, 0, 1, 0}, 0, "IsNaN");
    expectClose(runReference("IsInf", {x}), {0, 0, 1, 1, 0, 0}, 0, "IsInf");
    expectClose(runReference("IsInf {detect_negative = 0}", {x}), {0, 0, 1, 0, 0, 0}, 0, "IsInf positive");
    expectClose(runReference("IsInf {detect_positive = 0}", {x}), {0, 0, 0, 1, 0, 0}, 0, "IsInf negative");
    EXPECT_EQ(runReference("IsNaN", {x}).dtype, DType::Bool);
  }
}

TEST(ReferenceElementwise, CastTruncatesWrapsAndTestsForNonZero) {
  Data f = tensorOf(DType::F64, {5}, {1.7, -1.7, 0, 2.5, -0.5});
  expectClose(runReference("Cast {to = i32}", {f}), {1, -1, 0, 2, 0}, 0, "f64 -> i32");
  expectClose(runReference("Cast {to = u8}", {tensorOf(DType::F32, {2}, {200.9, 3.2})}), {200, 3}, 0, "f32 -> u8");
  expectClose(runReference("Cast {to = bool}", {tensorOf(DType::F32, {4}, {0, -0.5, kNaN, -0.0})}), {0, 1, 1, 0}, 0,
              "f32 -> bool");
  expectClose(runReference("Cast {to = bool}", {tensorOf(DType::I32, {3}, {256, 0, -1})}), {1, 0, 1}, 0, "i32 -> bool");
  expectClose(runReference("Cast {to = u8}", {tensorOf(DType::I32, {3}, {300, -1, 255})}), {44, 255, 255}, 0,
              "i32 -> u8 keeps the low bits");
  expectClose(runReference("Cast {to = f32}", {tensorOf(DType::Bool, {2}, {1, 0})}), {1, 0}, 0, "bool -> f32");
  expectClose(runReference("Cast {to = f64}", {tensorOf(DType::F32, {1}, {0.1})}), {static_cast<double>(0.1f)}, 0,
              "f32 -> f64 is exact");
  expectClose(runReference("Cast {to = f32}", {tensorOf(DType::F64, {1}, {0.1})}), {static_cast<double>(0.1f)}, 0,
              "f64 -> f32 rounds to nearest");
  Data wide = tensorOf(DType::I64, {2}, {-4294967296.0 - 5, 4294967296.0 + 7});
  expectClose(runReference("Cast {to = i32}", {wide}), {-5, 7}, 0, "i64 -> i32 keeps the low bits");
  expectClose(runReference("Cast {to = i64}", {tensorOf(DType::I8, {2}, {-128, 127})}), {-128, 127}, 0, "i8 -> i64");
  Data like = tensorOf(DType::I8, {1}, {0});
  expectClose(runReference("CastLike", {tensorOf(DType::F32, {2}, {1.9, -7.9}), like}), {1, -7}, 0, "CastLike");
  EXPECT_EQ(runReference("CastLike", {tensorOf(DType::F32, {1}, {1}), like}).dtype, DType::I8);
}

TEST(ReferenceElementwise, ClipBoundsAreOptionalAndMayCross) {
  Data x = tensorOf(DType::F64, {4}, {-5, 0, 5, kNaN});
  Data lo = tensorOf(DType::F64, {}, {-1});
  Data hi = tensorOf(DType::F64, {}, {2});
  expectClose(runReference("Clip", {x, lo, hi}), {-1, 0, 2, kNaN}, 0, "Clip");
  expectClose(runReference("Clip", {x, lo}), {-1, 0, 5, kNaN}, 0, "Clip min");
  expectClose(runReference("Clip", {x, kAbsent, hi}), {-5, 0, 2, kNaN}, 0, "Clip max");
  expectClose(runReference("Clip", {x}), {-5, 0, 5, kNaN}, 0, "Clip unbounded");
  // min above max: ONNX sets every value to max.
  expectClose(runReference("Clip", {tensorOf(DType::I32, {3}, {-5, 0, 5}), tensorOf(DType::I32, {}, {3}),
                                    tensorOf(DType::I32, {}, {1})}),
              {1, 1, 1}, 0, "Clip crossed");
  expectClose(runReference("Clip", {tensorOf(DType::U8, {3}, {0, 100, 250}), tensorOf(DType::U8, {}, {10})}),
              {10, 100, 250}, 0, "u8 Clip");
}

TEST(ReferenceElementwise, DropoutIsTheIdentityInInference) {
  Data x = tensorOf(DType::F32, {2, 3}, {1, -2, 3, -4, 5, -6});
  Data ratio = tensorOf(DType::F32, {}, {0.5});
  Data training = tensorOf(DType::Bool, {}, {0});
  RunOptions two_outputs;
  two_outputs.num_outputs = 2;
  std::vector<Data> out = runNode("Dropout", {x, ratio, training}, two_outputs, referenceDevice()).outputs;
  expectClose(out[0], x.values, 0, "Dropout output");
  EXPECT_EQ(out[1].dtype, DType::Bool);
  expectClose(out[1], std::vector<double>(6, 1), 0, "Dropout mask");
  expectClose(runReference("Dropout", {x}), x.values, 0, "Dropout without mask");
}

// In training mode each element is dropped or scaled by 1 / (1 - ratio), the mask agrees, and
// the share kept is near 1 - ratio.
TEST(ReferenceElementwise, DropoutInTrainingDropsAndScales) {
  const int64_t count = 4000;
  Data x = tensorOf(DType::F64, {count}, std::vector<double>(count, 3.0));
  RunOptions two_outputs;
  two_outputs.num_outputs = 2;
  std::vector<Data> out =
      runNode("Dropout", {x, tensorOf(DType::F64, {}, {0.25}), tensorOf(DType::Bool, {}, {1})}, two_outputs,
              referenceDevice())
          .outputs;
  int64_t kept = 0;
  for (int64_t i = 0; i < count; ++i) {
    const bool keep = out[1].values[i] != 0;
    kept += keep;
    EXPECT_EQ(out[0].values[i], keep ? 4.0 : 0.0) << "element " << i;
  }
  // 1 - ratio = 0.75 of 4000, within five standard deviations (sqrt(4000 * 0.75 * 0.25) = 27).
  EXPECT_NEAR(static_cast<double>(kept), 3000.0, 5 * 27.4);
}

struct BinaryHandCase {
  std::string op;
  Data a, b;
  std::vector<double> expected;
};

TEST(ReferenceElementwise, BinaryOpsOnHandWorkedValues) {
  const Data a_col = tensorOf(DType::I32, {2, 1}, {1, 2});
  const Data b_row = tensorOf(DType::I32, {3}, {10, 20, 30});
  const Data abcd = tensorOf(DType::I32, {4}, {7, -7, 7, -7});
  const Data divisors = tensorOf(DType::I32, {4}, {3, 3, -3, -3});
  const Data f = tensorOf(DType::F64, {3}, {1, 2, 3});
  const Data two = tensorOf(DType::F64, {}, {2});
  const Data p = tensorOf(DType::Bool, {4}, {0, 0, 1, 1});
  const Data q = tensorOf(DType::Bool, {4}, {0, 1, 0, 1});
  const Data nan = tensorOf(DType::F64, {2}, {kNaN, 1});
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  const std::vector<BinaryHandCase> cases = {
      {"Add", a_col, b_row, {11, 21, 31, 12, 22, 32}},
      {"Sub", a_col, b_row, {-9, -19, -29, -8, -18, -28}},
      {"Mul", a_col, b_row, {10, 20, 30, 20, 40, 60}},
      {"Mul", tensorOf(DType::I8, {2}, {100, -100}), tensorOf(DType::I8, {}, {2}), {-56, 56}},  // wraps
      {"Add", tensorOf(DType::U8, {2}, {250, 1}), tensorOf(DType::U8, {}, {10}), {4, 11}},
      {"Div", abcd, divisors, {2, -2, -2, 2}},  // truncates toward zero
      {"Div", tensorOf(DType::I64, {2}, {5, -5}), tensorOf(DType::I64, {}, {0}), {0, 0}},
      {"Div", f, two, {0.5, 1, 1.5}},
      {"Div", tensorOf(DType::F64, {2}, {1, -1}), tensorOf(DType::F64, {}, {0}), {kInf, -kInf}},
      {"Mod", abcd, divisors, {1, 2, -2, -1}},  // the divisor's sign
      {"Mod {fmod = 1}", abcd, divisors, {1, -1, 1, -1}},  // the dividend's sign
      {"Mod", tensorOf(DType::U8, {2}, {200, 9}), tensorOf(DType::U8, {}, {7}), {4, 2}},
      {"Mod {fmod = 1}", tensorOf(DType::F64, {2}, {5.5, -5.5}), two, {1.5, -1.5}},
      {"Pow", tensorOf(DType::F64, {2}, {2, 4}), tensorOf(DType::F64, {2}, {3, 0.5}), {8, 2}},
      {"Pow", tensorOf(DType::I64, {4}, {2, -3, 2, -1}), tensorOf(DType::I64, {4}, {10, 3, -1, -3}),
       {1024, -27, 0, -1}},
      {"Pow", tensorOf(DType::I32, {2}, {9, 10}), tensorOf(DType::F32, {2}, {0.5, -1}), {3, 0}},
      {"Pow", tensorOf(DType::F32, {2}, {3, 0.5}), tensorOf(DType::U8, {}, {2}), {9, 0.25}},
      {"Equal", f, two, {0, 1, 0}},
      {"Equal", nan, nan, {0, 1}},
      {"Equal", p, q, {1, 0, 0, 1}},
      {"Less", f, two, {1, 0, 0}},
      {"LessOrEqual", f, two, {1, 1, 0}},
      {"Greater", f, two, {0, 0, 1}},
      {"GreaterOrEqual", f, two, {0, 1, 1}},
      {"Less", nan, tensorOf(DType::F64, {}, {5}), {0, 1}},
      {"And", p, q, {0, 0, 0, 1}},
      {"Or", p, q, {0, 1, 1, 1}},
      {"Xor", p, q, {0, 1, 1, 0}},
      {"PRelu", tensorOf(DType::F64, {2, 3}, {-1, 2, -3, 4, -5, 6}), tensorOf(DType::F64, {3}, {0.1, 0.2, 0.3}),
       {-0.1, 2, -0.9, 4, -1.0, 6}},
      {"PRelu", tensorOf(DType::I32, {3}, {-4, 0, 4}), tensorOf(DType::I32, {}, {3}), {-12, 0, 4}},
      {"SwiGLU", tensorOf(DType::F64, {2}, {1, -2}), tensorOf(DType::F64, {2}, {2, 3}),
       {1 * sigmoid(1) * 2, -2 * sigmoid(-2) * 3}},
      {"SwiGLU {alpha = 1.702}", tensorOf(DType::F64, {1}, {2}), tensorOf(DType::F64, {1}, {0.5}),
       {2 * sigmoid(1.702 * 2) * 0.5}},
  };
  for (const BinaryHandCase& test : cases) {
    Data c = runReference(test.op, {test.a, test.b});
    expectClose(c, test.expected, 4, test.op + " " + test.a.type() + " " + test.b.type());
    const bool boolean = test.op == "Equal" || test.op.find("Less") == 0 || test.op.find("Greater") == 0 ||
                         test.op == "And" || test.op == "Or" || test.op == "Xor";
    EXPECT_EQ(c.dtype, boolean ? DType::Bool : test.a.dtype) << test.op;
  }
}

TEST(ReferenceElementwise, VariadicOpsBroadcastEveryInput) {
  const Data a = tensorOf(DType::F64, {2, 1}, {1, 5});
  const Data b = tensorOf(DType::F64, {3}, {2, 4, 6});
  const Data c = tensorOf(DType::F64, {}, {3});
  expectClose(runReference("Max", {a, b, c}), {3, 4, 6, 5, 5, 6}, 0, "Max");
  expectClose(runReference("Min", {a, b, c}), {1, 1, 1, 2, 3, 3}, 0, "Min");
  expectClose(runReference("Sum", {a, b, c}), {6, 8, 10, 10, 12, 14}, 0, "Sum");
  expectClose(runReference("Mean", {a, b, c}), {2, 8.0 / 3, 10.0 / 3, 10.0 / 3, 4, 14.0 / 3}, 1, "Mean");
  expectClose(runReference("Max", {b}), b.values, 0, "Max of one");
  expectClose(runReference("Min", {tensorOf(DType::I16, {2}, {-300, 7}), tensorOf(DType::I16, {}, {0})}), {-300, 0},
              0, "i16 Min");
  // NaN wins wherever it appears, as in ONNX's reference (NumPy's maximum/minimum).
  const Data x = tensorOf(DType::F32, {3}, {kNaN, 1, 2});
  const Data y = tensorOf(DType::F32, {3}, {0, kNaN, 1});
  expectClose(runReference("Max", {x, y}), {kNaN, kNaN, 2}, 0, "Max NaN");
  expectClose(runReference("Min", {x, y}), {kNaN, kNaN, 1}, 0, "Min NaN");
}

TEST(ReferenceElementwise, WhereBroadcastsItsThreeInputs) {
  const Data condition = tensorOf(DType::Bool, {2, 1}, {1, 0});
  expectClose(runReference("Where", {condition, tensorOf(DType::I64, {3}, {1, 2, 3}), tensorOf(DType::I64, {}, {-1})}),
              {1, 2, 3, -1, -1, -1}, 0, "Where");
  expectClose(runReference("Where", {condition, tensorOf(DType::Bool, {}, {1}), tensorOf(DType::Bool, {}, {0})}),
              {1, 0}, 0, "Where bool");
}

TEST(ReferenceElementwise, EmptyTensorsWriteNothing) {
  expectClose(runReference("Add", {tensorOf(DType::F32, {0, 3}, {}), tensorOf(DType::F32, {3}, {1, 2, 3})}), {}, 0,
              "Add");
  expectClose(runReference("Exp", {tensorOf(DType::F64, {0}, {})}), {}, 0, "Exp");
  expectClose(runReference("Cast {to = i8}", {tensorOf(DType::F64, {2, 0}, {})}), {}, 0, "Cast");
  expectClose(runReference("Max", {tensorOf(DType::I32, {0}, {}), tensorOf(DType::I32, {1}, {4})}), {}, 0, "Max");
}

TEST(ReferenceElementwise, SixteenBitFloatsHaveNoKernel) {
  EXPECT_THROW(runReference("Relu", {tensorOf(DType::F16, {2}, {1, -1})}), Error);
  EXPECT_THROW(runReference("Add", {tensorOf(DType::BF16, {2}, {1, -1}), tensorOf(DType::BF16, {2}, {1, -1})}),
               Error);
}

TEST(ReferenceElementwise, AGraphBuiltForTheReferenceDeviceRunsOnIt) {
  using tensor_test::TestTensor;
  TestTensor x = tensorOf(DType::F32, {2, 3}, {-1, 2, -3, 4, -5, 6});
  TestTensor bias = tensorOf(DType::F32, {3}, {0.5, 0.5, 0.5});
  std::string text = tensor_test::graphText({{"x", &x}, {"b", &bias}},
                                            "  %s = Add(%x, %b)\n  %r = Relu(%s)\n  %y = Cast(%r) {to = i32}\n", "%y");
  tensor_test::RunResult result = tensor_test::runGraph(text, {x, bias}, 1, referenceDevice());
  expectClose(result.outputs[0], {0, 2, 0, 4, 0, 6}, 0, "Add Relu Cast");
  EXPECT_TRUE(tensor_test::usesKernel(result, "reference:Relu"));
}

// --- Against the CPU device ----------------------------------------------------------------

const std::vector<DType> kFloats = {DType::F32, DType::F64};
const std::vector<DType> kSigned = {DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64};
const std::vector<DType> kNumeric = {DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8};
const std::vector<DType> kWide = {DType::F32, DType::F64, DType::I32, DType::I64};

// Tolerance in units of the dtype's precision: the reference rounds its double result once,
// the CPU computes f32 in f32 (a few ulps); f64 differ by libm and formula arrangement.
double ulpsFor(DType dtype, double f32_ulps) { return dtype == DType::F64 ? 64 : dtype == DType::F32 ? f32_ulps : 0; }

// Random values in [lo, hi]: on a grid of halves when `grid` (so comparisons see equal
// operands), non-negative for u8, 0/1 for bool.
Data randomInput(DType dtype, std::vector<int64_t> dims, double lo, double hi, uint32_t seed, bool grid = false) {
  if (dtype == DType::U8) lo = std::max(lo, 0.0);
  Data data = randomData(dtype, std::move(dims), lo, hi, seed);
  if (grid) {
    for (double& v : data.values) v = std::round(v * 2) / 2;
  }
  return data;
}

void expectSameOnBothDevices(const std::string& op, const std::vector<Data>& inputs, double ulps,
                             const RunOptions& options = {}) {
  std::string label = op;
  for (const Data& input : inputs) label += " " + (input.dtype == DType::Undefined ? "_" : input.type());
  std::vector<Data> cpu = runNode(op, inputs, options).outputs;
  std::vector<Data> reference = runNode(op, inputs, options, referenceDevice()).outputs;
  ASSERT_EQ(cpu.size(), reference.size()) << label;
  std::vector<const Data*> shown;
  for (const Data& input : inputs) shown.push_back(&input);
  for (size_t k = 0; k < cpu.size(); ++k) {
    EXPECT_EQ(reference[k].dtype, cpu[k].dtype) << label;
    EXPECT_EQ(reference[k].dims, cpu[k].dims) << label;
    expectClose(reference[k], cpu[k].values, ulps, label + " (reference vs cpu)", shown);
  }
}

struct UnaryDiff {
  std::string op;
  std::vector<DType> dtypes;
  double lo, hi;
  double f32_ulps = 4;
};

TEST(ReferenceElementwise, UnaryOpsMatchTheCpuDevice) {
  const std::vector<UnaryDiff> cases = {
      {"Sigmoid", kFloats, -30, 30},        {"Reciprocal", kFloats, -100, 100},
      {"Sqrt", kFloats, -1, 1000},          {"Floor", kFloats, -50, 50},
      {"Ceil", kFloats, -50, 50},           {"Round", kFloats, -50, 50},
      {"HardSwish", kFloats, -8, 8},        {"Softplus", kFloats, -30, 30},
      {"Mish", kFloats, -30, 30},           {"Softsign", kFloats, -100, 100},
      {"Tanh", kFloats, -12, 12},           {"Exp", kFloats, -80, 80},
      {"Log", kFloats, -1, 1e6},            {"Erf", kFloats, -5, 5},
      {"Cos", kFloats, -100, 100},          {"Sin", kFloats, -100, 100},
      {"Tan", kFloats, -10, 10},            {"Acos", kFloats, -1.1, 1.1},
      {"Asin", kFloats, -1.1, 1.1},         {"Atan", kFloats, -50, 50},
      {"Cosh", kFloats, -80, 80},           {"Sinh", kFloats, -80, 80},
      {"Gelu", kFloats, -8, 8},             {"Gelu {approximate = \"tanh\"}", kFloats, -8, 8},
      {"HardSigmoid {alpha = 0.25, beta = 0.375}", kFloats, -8, 8},
      {"LeakyRelu {alpha = 0.125}", kFloats, -10, 10},
      {"Elu {alpha = 1.5}", kFloats, -20, 10},
      {"Celu {alpha = 2.0}", kFloats, -20, 10},
      {"ThresholdedRelu {alpha = 1.5}", kFloats, -5, 5},
      {"Selu", kFloats, -20, 10},           {"Swish {alpha = 1.5}", kFloats, -30, 30},
      {"Relu", kSigned, -100, 100},         {"Neg", kSigned, -100, 100},
      {"Abs", kNumeric, -100, 100},         {"Sign", kNumeric, -100, 100},
      {"IsNaN", kFloats, -10, 10},          {"IsInf", kFloats, -10, 10},
      {"Identity", kNumeric, -100, 100},
  };
  const std::vector<double> specials = {0.0, -0.0, kInf, -kInf, kNaN, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-6, 1.0};
  uint32_t seed = 1;
  for (const UnaryDiff& test : cases) {
    for (DType dtype : test.dtypes) {
      Data x = randomInput(dtype, {3, 67}, test.lo, test.hi, seed++);
      if (isFloat(dtype)) {
        for (size_t i = 0; i < specials.size(); ++i) x.values[i] = specials[i];
      }
      expectSameOnBothDevices(test.op, {x}, ulpsFor(dtype, test.f32_ulps));
    }
  }
  for (uint32_t s = 0; s < 2; ++s) {
    expectSameOnBothDevices("Not", {randomInput(DType::Bool, {41}, 0, 1, seed++)}, 0);
    expectSameOnBothDevices("Identity", {randomInput(DType::Bool, {41}, 0, 1, seed++)}, 0);
  }
}

TEST(ReferenceElementwise, DropoutMatchesTheCpuDeviceInInference) {
  for (DType dtype : kFloats) {
    Data x = randomInput(dtype, {4, 9}, -3, 3, 5);
    RunOptions two_outputs;
    two_outputs.num_outputs = 2;
    expectSameOnBothDevices("Dropout", {x}, 0, two_outputs);
    expectSameOnBothDevices("Dropout", {x, tensorOf(dtype, {}, {0.3}), tensorOf(DType::Bool, {}, {0})}, 0, two_outputs);
  }
}

struct BinaryDiff {
  std::string op;
  std::vector<DType> dtypes;
  double lo, hi;
  bool grid = false;  // operands on a grid of halves, so that some are equal
  double f32_ulps = 1;
};

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kBroadcastShapes = {
    {{3, 17}, {3, 17}}, {{2, 3, 5}, {3, 1}}, {{4, 1}, {1, 6}}, {{7}, {}}, {{}, {2, 5}}, {{0, 3}, {3}},
};

TEST(ReferenceElementwise, BinaryOpsMatchTheCpuDevice) {
  const std::vector<BinaryDiff> cases = {
      {"Add", kNumeric, -100, 100},
      {"Sub", kNumeric, -100, 100},
      {"Mul", kNumeric, -60, 60},
      {"Div", kNumeric, -100, 100},
      {"Mod", kNumeric, -100, 100},
      {"Mod {fmod = 1}", kNumeric, -100, 100},
      {"Equal", kNumeric, -4, 4, true},
      {"Less", kNumeric, -4, 4, true},
      {"LessOrEqual", kNumeric, -4, 4, true},
      {"Greater", kNumeric, -4, 4, true},
      {"GreaterOrEqual", kNumeric, -4, 4, true},
      {"Equal", {DType::Bool}, 0, 1},
      {"And", {DType::Bool}, 0, 1},
      {"Or", {DType::Bool}, 0, 1},
      {"Xor", {DType::Bool}, 0, 1},
      {"SwiGLU", kFloats, -10, 10, false, 4},
      {"SwiGLU {alpha = 1.702}", kFloats, -10, 10, false, 4},
  };
  uint32_t seed = 100;
  for (const BinaryDiff& test : cases) {
    for (DType dtype : test.dtypes) {
      for (const auto& [a_dims, b_dims] : kBroadcastShapes) {
        if (test.op.find("SwiGLU") == 0 && a_dims != b_dims) continue;  // A and B of one shape
        Data a = randomInput(dtype, a_dims, test.lo, test.hi, seed++, test.grid);
        Data b = randomInput(dtype, b_dims, test.lo, test.hi, seed++, test.grid);
        expectSameOnBothDevices(test.op, {a, b}, ulpsFor(dtype, test.f32_ulps));
      }
    }
  }
  // PRelu: the slope broadcasts to X's shape only.
  for (DType dtype : kWide) {
    for (const std::vector<int64_t>& slope_dims : std::vector<std::vector<int64_t>>{{2, 3, 5}, {5}, {3, 1}, {}}) {
      Data x = randomInput(dtype, {2, 3, 5}, -50, 50, seed++);
      Data slope = randomInput(dtype, slope_dims, -3, 3, seed++);
      expectSameOnBothDevices("PRelu", {x, slope}, ulpsFor(dtype, 1));
    }
  }
}

TEST(ReferenceElementwise, PowMatchesTheCpuDeviceForEveryExponentType) {
  uint32_t seed = 300;
  for (DType base : kWide) {
    for (DType exponent : kNumeric) {
      // Positive float bases so real powers exist; small integer exponents so integer powers fit.
      Data x = randomInput(base, {3, 11}, isFloat(base) ? 0 : -6, 6, seed++);
      Data y = randomInput(exponent, {11}, isFloat(exponent) ? -3 : 0, 4, seed++);
      if (base == DType::F32 && exponent == DType::F64) {
        // ONNX's reference computes np.power(x, y) in f64 and casts the result to x's type;
        // rounding the exponent to f32 first would be off by up to |ln x| * 2^-24 relative.
        std::vector<double> expected;
        for (size_t i = 0; i < x.values.size(); ++i) expected.push_back(std::pow(x.values[i], y.values[i % 11]));
        expectClose(runReference("Pow", {x, y}), expected, 0, "Pow f32 ** f64", {&x});
        expectSameOnBothDevices("Pow", {x, y}, 0);
        continue;
      }
      expectSameOnBothDevices("Pow", {x, y}, ulpsFor(base, 2));
    }
  }
}

TEST(ReferenceElementwise, VariadicOpsMatchTheCpuDevice) {
  uint32_t seed = 400;
  const std::vector<std::pair<std::string, std::vector<DType>>> ops = {
      {"Max", kNumeric}, {"Min", kNumeric}, {"Sum", kFloats}, {"Mean", kFloats}};
  for (const auto& [op, dtypes] : ops) {
    for (DType dtype : dtypes) {
      // Halves, whose sums f32 holds exactly: the CPU device adds in f32, rounding each
      // partial sum, which cancellation would show as many ulps of the result.
      Data a = randomInput(dtype, {2, 3, 5}, -50, 50, seed++, true);
      Data b = randomInput(dtype, {5}, -50, 50, seed++, true);
      Data c = randomInput(dtype, {3, 1}, -50, 50, seed++, true);
      if (isFloat(dtype)) a.values[4] = kNaN;
      expectSameOnBothDevices(op, {a, b, c}, ulpsFor(dtype, 1));
      expectSameOnBothDevices(op, {c}, 0);
      expectSameOnBothDevices(op, {b, a}, ulpsFor(dtype, 1));
    }
  }
}

TEST(ReferenceElementwise, WhereAndClipMatchTheCpuDevice) {
  uint32_t seed = 500;
  std::vector<DType> every = kNumeric;
  every.push_back(DType::Bool);
  for (DType dtype : every) {
    Data condition = randomInput(DType::Bool, {3, 1}, 0, 1, seed++);
    Data x = randomInput(dtype, {2, 3, 4}, -50, 50, seed++);
    Data y = randomInput(dtype, {4}, -50, 50, seed++);
    expectSameOnBothDevices("Where", {condition, x, y}, 0);
    Data full_condition = randomInput(DType::Bool, {2, 3, 4}, 0, 1, seed++);
    expectSameOnBothDevices("Where", {full_condition, tensorOf(dtype, {}, {1}), y}, 0);
  }
  for (DType dtype : kNumeric) {
    Data x = randomInput(dtype, {5, 13}, -100, 100, seed++);
    Data lo = tensorOf(dtype, {}, {dtype == DType::U8 ? 20.0 : -30.0});
    Data hi = tensorOf(dtype, {}, {40});
    expectSameOnBothDevices("Clip", {x, lo, hi}, 0);
    expectSameOnBothDevices("Clip", {x, lo}, 0);
    expectSameOnBothDevices("Clip", {x, kAbsent, hi}, 0);
    expectSameOnBothDevices("Clip", {x}, 0);
    expectSameOnBothDevices("Clip", {x, hi, lo}, 0);
  }
}

TEST(ReferenceElementwise, CastMatchesTheCpuDeviceForEveryPairOfDTypes) {
  const DType every[] = {DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8, DType::Bool};
  uint32_t seed = 600;
  for (DType from : every) {
    // In range for every signed target type (negative values saturate to 0 in u8 on both
    // devices, undefined in ONNX), fractions for floats.
    Data x = randomInput(from, {4, 25}, -120, 120, seed++);
    if (isFloat(from)) {
      for (double& v : x.values) v = roundTo(from, v + 0.37);
      x.values[0] = 0.5, x.values[1] = -0.5, x.values[2] = -0.0;
    }
    for (DType to : every) {
      expectSameOnBothDevices("Cast {to = " + std::string(dtypeName(to)) + "}", {x}, 0);
      expectSameOnBothDevices("CastLike", {x, tensorOf(to, {1}, {0})}, 0);
    }
  }
}

}  // namespace
}  // namespace estuary::ge::elementwise_test
