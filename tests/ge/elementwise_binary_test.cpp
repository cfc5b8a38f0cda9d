// Broadcasting binary, comparison, logic and variadic element-wise kernels against reference
// loops: every dtype the schemas allow, broadcast shapes (scalar, row, column, outer,
// 4-D mixed, rank mismatch, size 0 and 1), integer wrap-around and division semantics, Mod's
// two sign conventions, Pow's exponent types and constant fast paths, NaN handling.
#include <functional>

#include "elementwise_test_support.h"

namespace estuary::ge::elementwise_test {
namespace {

std::vector<int64_t> broadcastDims(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& shape : shapes) rank = std::max(rank, shape.size());
  std::vector<int64_t> dims(rank, 1);
  for (const auto& shape : shapes) {
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t& dim = dims[rank - shape.size() + i];
      if (shape[i] != 1) dim = shape[i];
    }
  }
  return dims;
}

int64_t countOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The reference of an element-wise op over broadcast inputs.
std::vector<double> broadcastReference(const std::vector<const Data*>& inputs,
                                       const std::function<double(const std::vector<double>&)>& op) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Data* input : inputs) shapes.push_back(input->dims);
  std::vector<int64_t> dims = broadcastDims(shapes);
  std::vector<double> result;
  std::vector<double> operands(inputs.size());
  for (int64_t i = 0; i < countOf(dims); ++i) {
    for (size_t k = 0; k < inputs.size(); ++k) operands[k] = inputs[k]->values[broadcastIndex(dims, inputs[k]->dims, i)];
    result.push_back(op(operands));
  }
  return result;
}

// A double holding an integer of `dtype`, wrapped to its range (two's complement).
double wrapTo(DType dtype, __int128 value) {
  auto wide = static_cast<int64_t>(static_cast<uint64_t>(value));
  switch (dtype) {
    case DType::I8: return static_cast<int8_t>(wide);
    case DType::I16: return static_cast<int16_t>(wide);
    case DType::I32: return static_cast<int32_t>(wide);
    case DType::U8: return static_cast<uint8_t>(wide);
    default: return static_cast<double>(wide);
  }
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kShapePairs = {
    {{3, 37}, {3, 37}},       // same shape
    {{3, 37}, {}},            // scalar
    {{}, {3, 37}},            // scalar first
    {{3, 37}, {37}},          // row vector
    {{3, 37}, {3, 1}},        // column
    {{3, 1}, {3, 37}},        // column first
    {{5, 1}, {1, 7}},         // outer: both broadcast
    {{2, 1, 4, 5}, {3, 1, 5}},  // 4-D mixed, rank mismatch
    {{1}, {2, 3}},            // rank mismatch with a size-1 dim
    {{0, 3}, {3}},            // zero elements
    {{1, 1}, {1}},            // one element
    {{2, 1, 1, 3}, {1, 4, 1, 1}},
};

double rangeLo(DType dtype) { return dtype == DType::U8 ? 0 : -100; }

struct ArithmeticCase {
  const char* op;
  std::function<long double(long double, long double)> reference;
};

TEST(ElementwiseBinary, ArithmeticBroadcastsInEveryNumericDType) {
  const ArithmeticCase cases[] = {
      {"Add", [](long double a, long double b) { return a + b; }},
      {"Sub", [](long double a, long double b) { return a - b; }},
      {"Mul", [](long double a, long double b) { return a * b; }},
      {"Div", [](long double a, long double b) { return a / b; }},
  };
  for (const ArithmeticCase& test : cases) {
    for (DType dtype : kNumericDTypes) {
      for (const auto& [a_dims, b_dims] : kShapePairs) {
        Data a = randomData(dtype, a_dims, rangeLo(dtype), 100, 3);
        Data b = randomData(dtype, b_dims, rangeLo(dtype), 100, 4);
        std::vector<double> expected = broadcastReference({&a, &b}, [&](const std::vector<double>& v) -> double {
          long double x = v[0], y = v[1];
          if (isFloat(dtype)) return static_cast<double>(test.reference(x, y));
          if (std::string(test.op) == "Div") return y == 0 ? 0 : wrapTo(dtype, static_cast<__int128>(x / y));
          return wrapTo(dtype, static_cast<__int128>(test.reference(x, y)));
        });
        NodeRun run = runNode(test.op, {a, b});
        EXPECT_EQ(run.outputs[0].dims, broadcastDims({a_dims, b_dims}));
        expectClose(run.outputs[0], expected, 1,
                    std::string(test.op) + " " + a.type() + " " + b.type() + " (" + run.kernel + ")");
      }
    }
  }
}

TEST(ElementwiseBinary, BigBroadcastsSplitOverThreadsAndRunInPlace) {
  for (const auto& [a_dims, b_dims] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{301, 1000}, {1000}}, {{301, 1000}, {301, 1}}, {{7, 1, 30000}, {5, 1}}, {{300001}, {300001}}}) {
    for (DType dtype : {DType::F32, DType::BF16, DType::I32}) {
      Data a = randomData(dtype, a_dims, -50, 50, 5);
      Data b = randomData(dtype, b_dims, -50, 50, 6);
      RunOptions options;
      options.threads = 4;
      options.in_place = true;
      for (const char* op : {"Sub", "Max"}) {
        NodeRun run = runNode(op, {a, b}, options);
        bool same_shape = broadcastDims({a_dims, b_dims}) == a_dims;
        EXPECT_EQ(run.ran_in_place, same_shape) << op << " " << a.type();
        expectClose(run.outputs[0], broadcastReference({&a, &b}, [&](const std::vector<double>& v) {
                      return std::string(op) == "Sub" ? v[0] - v[1] : std::max(v[0], v[1]);
                    }),
                    1, std::string(op) + " " + a.type() + " " + b.type());
      }
    }
  }
}

TEST(ElementwiseBinary, IntegerArithmeticWrapsAndDividesTowardZero) {
  for (DType dtype : {DType::I8, DType::I16, DType::I32, DType::I64}) {
    double min = dtype == DType::I64 ? -9223372036854775808.0 : -std::ldexp(1.0, int(dtypeSize(dtype)) * 8 - 1);
    double max = dtype == DType::I64 ? 9223372036854774784.0 : -min - 1;
    Data a = tensorOf(dtype, {8}, {7, -7, 7, -7, min, min, max, 5});
    Data b = tensorOf(dtype, {8}, {2, 2, -2, -2, -1, 0, 1, 0});
    // Truncated quotients; MIN / -1 wraps to MIN, x / 0 gives 0.
    expectClose(runNode("Div", {a, b}).outputs[0], {3, -3, -3, 3, min, 0, max, 0}, 0, "Div", {&a});
    expectClose(runNode("Add", {a, b}).outputs[0], {9, -5, 5, -9, wrapTo(dtype, static_cast<__int128>(min) - 1), min,
                                                    wrapTo(dtype, static_cast<__int128>(max) + 1), 5},
                0, "Add wraps");
    expectClose(runNode("Mul", {a, a}).outputs[0],
                broadcastReference({&a, &a}, [&](const std::vector<double>& v) {
                  return wrapTo(dtype, static_cast<__int128>(v[0]) * static_cast<__int128>(v[1]));
                }),
                0, "Mul wraps");
  }
  Data a = tensorOf(DType::U8, {4}, {200, 7, 0, 255});
  Data b = tensorOf(DType::U8, {4}, {100, 2, 0, 255});
  expectClose(runNode("Add", {a, b}).outputs[0], {44, 9, 0, 254}, 0, "u8 Add");
  expectClose(runNode("Sub", {b, a}).outputs[0], {156, 251, 0, 0}, 0, "u8 Sub");
  expectClose(runNode("Mul", {a, b}).outputs[0], {32, 14, 0, 1}, 0, "u8 Mul");
  expectClose(runNode("Div", {a, b}).outputs[0], {2, 3, 0, 1}, 0, "u8 Div");
}

TEST(ElementwiseBinary, ModFollowsTheDivisorOrTheDividend) {
  for (DType dtype : {DType::I8, DType::I16, DType::I32, DType::I64}) {
    Data a = tensorOf(dtype, {6}, {7, -7, 7, -7, 6, 5});
    Data b = tensorOf(dtype, {6}, {3, 3, -3, -3, 3, 0});
    // fmod = 0: the sign of the divisor (Python's %); fmod = 1: of the dividend (C's %).
    expectClose(runNode("Mod", {a, b}).outputs[0], {1, 2, -2, -1, 0, 0}, 0, "Mod");
    expectClose(runNode("Mod {fmod = 1}", {a, b}).outputs[0], {1, -1, 1, -1, 0, 0}, 0, "Mod fmod");
  }
  Data u = tensorOf(DType::U8, {3}, {200, 7, 9});
  expectClose(runNode("Mod", {u, tensorOf(DType::U8, {}, {7})}).outputs[0], {4, 0, 2}, 0, "u8 Mod");
  for (DType dtype : kFloatDTypes) {
    Data a = tensorOf(dtype, {7}, {7.5, -7.5, 7.5, -7.5, 6, kInf, 3});
    Data b = tensorOf(dtype, {7}, {2, 2, -2, -2, 3, 2, 0});
    expectClose(runNode("Mod {fmod = 1}", {a, b}).outputs[0], {1.5, -1.5, 1.5, -1.5, 0, kNaN, kNaN}, 0, "fmod");
    // Floats with fmod = 0 (which ONNX leaves to integers) follow NumPy's np.mod.
    Data mod = runNode("Mod", {a, b}).outputs[0];
    expectClose(mod, {1.5, 0.5, -0.5, -1.5, 0, kNaN, kNaN}, 0, "np.mod");
    EXPECT_FALSE(std::signbit(mod.values[4])) << "np.mod(6, 3) is +0";
  }
  Data big = randomData(DType::I32, {1001}, -1e9, 1e9, 8);
  Data divisor = randomData(DType::I32, {1001}, -1e5, 1e5, 9);
  expectClose(runNode("Mod", {big, divisor}).outputs[0], broadcastReference({&big, &divisor}, [](const std::vector<double>& v) {
                if (v[1] == 0) return 0.0;
                double r = std::fmod(v[0], v[1]);
                return r != 0 && ((r < 0) != (v[1] < 0)) ? r + v[1] : r;
              }),
              0, "i32 Mod");
}

TEST(ElementwiseBinary, PowTakesAnyNumericExponent) {
  for (DType base : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    for (DType exponent : kNumericDTypes) {
      Data x = randomData(base, {5, 7}, 0.1, 4, 10);
      Data y = randomData(exponent, {7}, exponent == DType::U8 ? 0 : -3, 3, 11);
      expectClose(runNode("Pow", {x, y}).outputs[0],
                  broadcastReference({&x, &y}, [&](const std::vector<double>& v) {
                    // An f64 exponent is not rounded to f32: the power is taken in f64.
                    return base == DType::F64 || exponent == DType::F64
                               ? std::pow(v[0], v[1])
                               : double(std::pow(float(v[0]), float(roundToF32(v[1]))));
                  }),
                  base == DType::F64 ? 2 : 1, std::string("Pow ") + x.type() + " " + y.type());
    }
  }
  for (DType base : {DType::I32, DType::I64}) {
    Data x = tensorOf(base, {8}, {2, -3, 1, -1, -1, 0, 5, 2});
    Data y = tensorOf(DType::I64, {8}, {10, 3, -4, -3, -4, 3, 0, -1});
    // Negative integer exponents truncate 1/x^n toward zero.
    expectClose(runNode("Pow", {x, y}).outputs[0], {1024, -27, 1, -1, 1, 0, 1, 0}, 0, "integer Pow");
    Data half = tensorOf(DType::F32, {}, {0.5});
    expectClose(runNode("Pow", {tensorOf(base, {3}, {9, 10, 2}), half}).outputs[0], {3, 3, 1}, 0,
                "integer Pow float exponent");
  }
  Data x = tensorOf(DType::I32, {2}, {3, -3});
  expectClose(runNode("Pow", {x, tensorOf(DType::I32, {}, {31})}).outputs[0],
              {wrapTo(DType::I32, static_cast<__int128>(617673396283947)),
               wrapTo(DType::I32, -static_cast<__int128>(617673396283947))},
              0, "Pow wraps");
}

TEST(ElementwiseBinary, PowWithAConstantExponentMatchesCsPow) {
  std::vector<double> values = {0.0, -0.0, 1.5, -1.5, 2.25, -8, kInf, -kInf, kNaN, 1e-3, 1e30, 7};
  for (DType dtype : kFloatDTypes) {
    Data x = tensorOf(dtype, {static_cast<int64_t>(values.size())}, values);
    for (double exponent : {0.0, 1.0, 2.0, 3.0, 0.5, -1.0, 2.5}) {
      Data y = tensorOf(dtype, {}, {exponent});
      RunOptions options;
      options.constants = {1};
      NodeRun run = runNode("Pow", {x, y}, options);
      std::vector<double> expected;
      for (double v : x.values) expected.push_back(std::pow(v, exponent));
      // x * x * x rounds twice: within 2 ulp of pow's correctly rounded cube.
      expectClose(run.outputs[0], expected, 2, "Pow exponent " + std::to_string(exponent) + " (" + run.kernel + ")",
                  {&x});
    }
  }
}

TEST(ElementwiseBinary, ComparisonsGiveBoolsAndNaNComparesFalse) {
  const std::pair<const char*, std::function<bool(double, double)>> cases[] = {
      {"Equal", [](double a, double b) { return a == b; }},
      {"Less", [](double a, double b) { return a < b; }},
      {"LessOrEqual", [](double a, double b) { return a <= b; }},
      {"Greater", [](double a, double b) { return a > b; }},
      {"GreaterOrEqual", [](double a, double b) { return a >= b; }},
  };
  for (const auto& [op, reference] : cases) {
    for (DType dtype : kNumericDTypes) {
      for (const auto& [a_dims, b_dims] : kShapePairs) {
        // Few distinct values, so that equal pairs occur.
        Data a = randomData(dtype, a_dims, 0, 4, 12);
        Data b = randomData(dtype, b_dims, 0, 4, 13);
        NodeRun run = runNode(op, {a, b});
        EXPECT_EQ(run.outputs[0].dtype, DType::Bool);
        expectClose(run.outputs[0],
                    broadcastReference({&a, &b}, [&](const std::vector<double>& v) { return reference(v[0], v[1]) ? 1.0 : 0.0; }),
                    0, std::string(op) + " " + a.type() + " " + b.type());
      }
    }
    Data a = tensorOf(DType::F32, {4}, {kNaN, 1, kNaN, -kInf});
    Data b = tensorOf(DType::F32, {4}, {kNaN, kNaN, 1, -kInf});
    expectClose(runNode(op, {a, b}).outputs[0],
                broadcastReference({&a, &b}, [&](const std::vector<double>& v) { return reference(v[0], v[1]) ? 1.0 : 0.0; }),
                0, std::string(op) + " NaN");
  }
  Data p = tensorOf(DType::Bool, {4}, {0, 0, 1, 1});
  Data q = tensorOf(DType::Bool, {4}, {0, 1, 0, 1});
  expectClose(runNode("Equal", {p, q}).outputs[0], {1, 0, 0, 1}, 0, "bool Equal");
}

TEST(ElementwiseBinary, LogicOnBoolsBroadcasts) {
  Data p = tensorOf(DType::Bool, {2, 1}, {0, 1});
  Data q = tensorOf(DType::Bool, {3}, {0, 1, 1});
  expectClose(runNode("And", {p, q}).outputs[0], {0, 0, 0, 0, 1, 1}, 0, "And");
  expectClose(runNode("Or", {p, q}).outputs[0], {0, 1, 1, 1, 1, 1}, 0, "Or");
  expectClose(runNode("Xor", {p, q}).outputs[0], {0, 1, 1, 1, 0, 0}, 0, "Xor");
}

TEST(ElementwiseBinary, VariadicOpsFoldAnyNumberOfBroadcastInputs) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 1, 5}, {4, 1}, {5}, {}};
  for (DType dtype : kNumericDTypes) {
    std::vector<Data> inputs;
    for (size_t i = 0; i < shapes.size(); ++i) {
      inputs.push_back(randomData(dtype, shapes[i], rangeLo(dtype), 100, 20 + static_cast<uint32_t>(i)));
    }
    for (size_t count = 1; count <= inputs.size(); ++count) {
      std::vector<Data> used(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(count));
      std::vector<const Data*> pointers;
      for (const Data& input : used) pointers.push_back(&input);
      auto fold = [&](auto combine) {
        return broadcastReference(pointers, [&](const std::vector<double>& v) {
          double result = v[0];
          for (size_t k = 1; k < v.size(); ++k) result = roundTo(dtype, combine(result, v[k]));
          return result;
        });
      };
      std::string label = " of " + std::to_string(count) + " " + std::string(dtypeName(dtype));
      expectClose(runNode("Max", used).outputs[0], fold([](double a, double b) { return std::max(a, b); }), 0,
                  "Max" + label);
      expectClose(runNode("Min", used).outputs[0], fold([](double a, double b) { return std::min(a, b); }), 0,
                  "Min" + label);
      if (!isFloat(dtype)) continue;
      expectClose(runNode("Sum", used).outputs[0], fold([](double a, double b) { return a + b; }), 1, "Sum" + label);
      std::vector<double> mean = fold([](double a, double b) { return a + b; });
      for (double& v : mean) v /= static_cast<double>(count);
      expectClose(runNode("Mean", used).outputs[0], mean, 1, "Mean" + label);
    }
  }
}

TEST(ElementwiseBinary, MaxAndMinPropagateNaN) {
  for (DType dtype : kFloatDTypes) {
    Data a = tensorOf(dtype, {4}, {kNaN, 1, 2, -kInf});
    Data b = tensorOf(dtype, {4}, {1, kNaN, 3, -0.0});
    expectClose(runNode("Max", {a, b}).outputs[0], {kNaN, kNaN, 3, 0}, 0, "Max");
    expectClose(runNode("Min", {a, b}).outputs[0], {kNaN, kNaN, 2, -kInf}, 0, "Min");
  }
}

TEST(ElementwiseBinary, PReluBroadcastsTheSlopeToX) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64}) {
    Data x = randomData(dtype, {2, 3, 4}, -10, 10, 30);
    for (const std::vector<int64_t>& slope_dims : std::vector<std::vector<int64_t>>{{3, 1}, {4}, {}, {2, 3, 4}}) {
      Data slope = randomData(dtype, slope_dims, -2, 2, 31);
      RunOptions options;
      options.in_place = true;
      NodeRun run = runNode("PRelu", {x, slope}, options);
      EXPECT_TRUE(run.ran_in_place);
      expectClose(run.outputs[0], broadcastReference({&x, &slope}, [](const std::vector<double>& v) {
                    return v[0] < 0 ? v[0] * v[1] : v[0];
                  }),
                  1, "PRelu " + x.type() + " " + slope.type());
    }
  }
}

TEST(ElementwiseBinary, SwiGluIsSwishOfAGatingB) {
  for (DType dtype : kFloatDTypes) {
    Data a = randomData(dtype, {4, 33}, -8, 8, 40);
    Data b = randomData(dtype, {4, 33}, -3, 3, 41);
    expectClose(runNode("SwiGLU {alpha = 1.5}", {a, b}).outputs[0],
                broadcastReference({&a, &b}, [](const std::vector<double>& v) {
                  return double(v[0] / (1 + std::exp(-1.5L * v[0])) * v[1]);
                }),
                dtype == DType::F64 ? 16 : 4, "SwiGLU");
  }
}

TEST(ElementwiseBinary, F32ArithmeticUsesOneDnnWhereItsBroadcastFits) {
  Data big = randomData(DType::F32, {4, 8}, -1, 1, 50);
  Data row = randomData(DType::F32, {8}, -1, 1, 51);
  EXPECT_EQ(runNode("Add", {big, row}).kernel.rfind("onednn:binary", 0), 0u);
  // The first operand broadcast: commutative ops swap their operands, others run Estuary's.
  NodeRun swapped = runNode("Mul", {row, big});
  EXPECT_EQ(swapped.kernel.rfind("onednn:binary", 0), 0u);
  EXPECT_EQ(swapped.in_place, std::optional<size_t>(1));
  EXPECT_EQ(runNode("Sub", {row, big}).kernel, "cpu:Sub f32");
  EXPECT_EQ(runNode("Add", {randomData(DType::I32, {4}, -1, 1), randomData(DType::I32, {4}, -1, 1)}).kernel,
            "cpu:Add i32");
  // Max/Min: oneDNN's binary max does not propagate NaN.
  EXPECT_EQ(runNode("Max", {big, row}).kernel, "cpu:Max f32");
}

}  // namespace
}  // namespace estuary::ge::elementwise_test
