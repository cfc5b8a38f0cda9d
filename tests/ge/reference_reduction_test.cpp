// The reference device's reductions, ArgMax/ArgMin, TopK, CumSum and Softmax/LogSoftmax/
// Hardmax: values worked out by hand from the ONNX specification, then agreement with the
// CPU device on seeded random inputs.
#include <cmath>
#include <limits>

#include "estuary/ge/device.h"
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

const char* const kFamilyOps[] = {"ReduceL1",        "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                                  "ReduceMean",      "ReduceMin", "ReduceProd",   "ReduceSum",       "ReduceSumSquare",
                                  "ArgMax",          "ArgMin",    "CumSum",       "TopK",            "Softmax",
                                  "LogSoftmax",      "Hardmax",   "Resize"};

const char* const kReduceOps[] = {"ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
                                  "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

constexpr double kInf = std::numeric_limits<double>::infinity();

RunResult runReference(const std::string& graph, const std::vector<TestTensor>& inputs) {
  RunResult result = runGraph(graph, inputs, 1, deviceNamed("reference"));
  EXPECT_TRUE(usesKernel(result, "reference:")) << graph;
  return result;
}

// The first output of `body` (over input %x) on the reference device.
TestTensor referenceOf(const TestTensor& x, const std::string& body) {
  return runReference(graphText({{"x", &x}}, body, "%y"), {x}).outputs[0];
}

std::string axesLine(const std::vector<int64_t>& axes) {
  std::vector<double> values(axes.begin(), axes.end());
  return constantLine("axes", tensorOf(DType::I64, {static_cast<int64_t>(axes.size())}, values));
}

// Runs `graph` on the reference and the CPU device: the same dims, and values within
// atol + rtol * |cpu| (exactly equal with zero tolerances).
void expectAgreement(const std::string& graph, const std::vector<TestTensor>& inputs, double rtol, double atol,
                     const std::string& what) {
  RunResult reference = runReference(graph, inputs);
  RunResult cpu = runGraph(graph, inputs, 1, deviceNamed("cpu"));
  ASSERT_EQ(reference.outputs.size(), cpu.outputs.size()) << what;
  for (size_t o = 0; o < cpu.outputs.size(); ++o) {
    ASSERT_EQ(reference.outputs[o].dims, cpu.outputs[o].dims) << what;
    expectNear(reference.outputs[o], cpu.outputs[o].values, rtol, atol, what + " output " + std::to_string(o));
  }
}

// Tolerances between two correct results: the CPU rounds in f32 along the way, the reference
// once at the end.
double rtolOf(DType dtype) { return dtype == DType::F32 ? 1e-5 : dtype == DType::F64 ? 1e-12 : 0.0; }
double atolOf(DType dtype) { return dtype == DType::F32 ? 1e-5 : dtype == DType::F64 ? 1e-12 : 0.0; }

TEST(ReferenceReductionFamily, EveryOpHasAReferenceKernel) {
  const KernelRegistry& kernels = deviceNamed("reference").kernels();
  for (const char* op : kFamilyOps) EXPECT_TRUE(kernels.has(op)) << op;
}

// ---- Reductions by hand --------------------------------------------------------------------

TEST(ReferenceReductionHand, SumMeanProdOverAxesAndAll) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor rows = referenceOf(x, axesLine({1}) + "  %y = ReduceSum(%x, %axes)\n");
  EXPECT_EQ(rows.dims, (std::vector<int64_t>{2, 1}));
  expectNear(rows, {6, 15}, 0, 0, "ReduceSum rows");
  TestTensor all = referenceOf(x, "  %y = ReduceSum(%x) {keepdims = 0}\n");
  EXPECT_TRUE(all.dims.empty());
  expectNear(all, {21}, 0, 0, "ReduceSum all");
  expectNear(referenceOf(x, axesLine({-1}) + "  %y = ReduceMean(%x, %axes) {keepdims = 0}\n"), {2, 5}, 0, 0, "ReduceMean");
  expectNear(referenceOf(x, axesLine({0}) + "  %y = ReduceProd(%x, %axes)\n"), {4, 10, 18}, 0, 0, "ReduceProd");
  // Integer mean truncates toward zero, as numpy's mean cast back to int32 does: -7/2 -> -3.
  TestTensor ints = tensorOf(DType::I32, {2, 2}, {-7, 0, 7, 2});
  expectNear(referenceOf(ints, axesLine({1}) + "  %y = ReduceMean(%x, %axes)\n"), {-3, 4}, 0, 0, "int mean");
}

TEST(ReferenceReductionHand, NormsAndLogSums) {
  TestTensor x = tensorOf(DType::F64, {2, 2}, {3, -4, -6, 8});
  const std::string axes = axesLine({1});
  expectNear(referenceOf(x, axes + "  %y = ReduceL1(%x, %axes)\n"), {7, 14}, 0, 0, "ReduceL1");
  expectNear(referenceOf(x, axes + "  %y = ReduceL2(%x, %axes)\n"), {5, 10}, 0, 0, "ReduceL2");
  expectNear(referenceOf(x, axes + "  %y = ReduceSumSquare(%x, %axes)\n"), {25, 100}, 0, 0, "ReduceSumSquare");
  // Integer L2 is sqrt cast back to the integer type: sqrt(2) -> 1.
  TestTensor ones = tensorOf(DType::I64, {1, 2}, {1, -1});
  expectNear(referenceOf(ones, axes + "  %y = ReduceL2(%x, %axes)\n"), {1}, 0, 0, "int L2");
  TestTensor positive = tensorOf(DType::F64, {2, 2}, {1, 2, 3, 4});
  expectNear(referenceOf(positive, axes + "  %y = ReduceLogSum(%x, %axes)\n"), {std::log(3.0), std::log(7.0)}, 1e-15, 0,
             "ReduceLogSum");
  // Stable: exp(1000) overflows, the max-shifted form does not.
  TestTensor large = tensorOf(DType::F32, {1, 2}, {1000, 1000});
  expectNear(referenceOf(large, axes + "  %y = ReduceLogSumExp(%x, %axes)\n"), {1000 + std::log(2.0)}, 1e-7, 0,
             "ReduceLogSumExp large");
  TestTensor infinities = tensorOf(DType::F32, {2, 2}, {-kInf, -kInf, kInf, 1});
  expectNear(referenceOf(infinities, axes + "  %y = ReduceLogSumExp(%x, %axes)\n"), {-kInf, kInf}, 0, 0,
             "ReduceLogSumExp infinities");
}

TEST(ReferenceReductionHand, MaxMinPropagateNaNAndTakeBool) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {1, NAN, 3, -1, -5, 2});
  const std::string axes = axesLine({1});
  expectNear(referenceOf(x, axes + "  %y = ReduceMax(%x, %axes)\n"), {NAN, 2}, 0, 0, "ReduceMax");
  expectNear(referenceOf(x, axes + "  %y = ReduceMin(%x, %axes)\n"), {NAN, -5}, 0, 0, "ReduceMin");
  TestTensor flags = tensorOf(DType::Bool, {2, 2}, {0, 1, 0, 0});
  expectNear(referenceOf(flags, axes + "  %y = ReduceMax(%x, %axes)\n"), {1, 0}, 0, 0, "bool max");
  expectNear(referenceOf(flags, axes + "  %y = ReduceMin(%x, %axes)\n"), {0, 0}, 0, 0, "bool min");
}

// Reducing an empty axis gives each op's identity (ONNX's "reduction over an empty set").
TEST(ReferenceReductionHand, EmptyAxesGiveTheIdentity) {
  TestTensor x{DType::F32, {2, 0}, {}};
  const std::string axes = axesLine({1});
  const std::pair<const char*, double> identities[] = {
      {"ReduceSum", 0},         {"ReduceProd", 1},         {"ReduceMax", -kInf},   {"ReduceMin", kInf},
      {"ReduceL1", 0},          {"ReduceL2", 0},           {"ReduceSumSquare", 0}, {"ReduceLogSum", -kInf},
      {"ReduceLogSumExp", -kInf}, {"ReduceMean", NAN}};
  for (const auto& [op, identity] : identities) {
    TestTensor y = referenceOf(x, axes + "  %y = " + op + "(%x, %axes)\n");
    EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 1})) << op;
    expectNear(y, {identity, identity}, 0, 0, op);
  }
  TestTensor ints{DType::I32, {1, 0}, {}};
  expectNear(referenceOf(ints, axes + "  %y = ReduceMax(%x, %axes)\n"), {-2147483648.0}, 0, 0, "int max");
  expectNear(referenceOf(ints, axes + "  %y = ReduceMin(%x, %axes)\n"), {2147483647.0}, 0, 0, "int min");
  TestTensor flags{DType::Bool, {1, 0}, {}};
  expectNear(referenceOf(flags, axes + "  %y = ReduceMin(%x, %axes)\n"), {1}, 0, 0, "bool min");
}

// noop_with_empty_axes reduces over no axes: each element is its own group, so composite
// reductions still apply their elementwise step (ReduceLogSum gives log x, ReduceSumSquare x^2).
TEST(ReferenceReductionHand, NoopWithEmptyAxesKeepsTheElementwiseStep) {
  TestTensor x = tensorOf(DType::F64, {2, 2}, {1, -2, 3, 4});
  expectNear(referenceOf(x, "  %y = ReduceSum(%x) {noop_with_empty_axes = 1}\n"), x.values, 0, 0, "ReduceSum");
  expectNear(referenceOf(x, "  %y = ReduceSumSquare(%x) {noop_with_empty_axes = 1}\n"), {1, 4, 9, 16}, 0, 0,
             "ReduceSumSquare");
  expectNear(referenceOf(x, "  %y = ReduceL1(%x) {noop_with_empty_axes = 1}\n"), {1, 2, 3, 4}, 0, 0, "ReduceL1");
  TestTensor positive = tensorOf(DType::F64, {2}, {1, 2});
  expectNear(referenceOf(positive, "  %y = ReduceLogSum(%x) {noop_with_empty_axes = 1}\n"), {0, std::log(2.0)}, 1e-15, 0,
             "ReduceLogSum");
}

TEST(ReferenceReductionHand, AxesReadAtRunTime) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  TestTensor axes = tensorOf(DType::I64, {1}, {0});
  RunResult result = runReference(graphText({{"x", &x}, {"a", &axes}}, "  %y = ReduceSum(%x, %a)\n", "%y"), {x, axes});
  expectNear(result.outputs[0], {5, 7, 9}, 0, 0, "axes input");
}

// ---- ArgMax / ArgMin / TopK / CumSum / softmax by hand ----------------------------------------

TEST(ReferenceReductionHand, ArgMaxArgMinTiesAndNaN) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {1, 3, 3, 2, 2, 1});
  expectNear(referenceOf(x, "  %y = ArgMax(%x) {axis = 1}\n"), {1, 0}, 0, 0, "ArgMax first");
  expectNear(referenceOf(x, "  %y = ArgMax(%x) {axis = 1, select_last_index = 1}\n"), {2, 1}, 0, 0, "ArgMax last");
  expectNear(referenceOf(x, "  %y = ArgMin(%x) {axis = -1, keepdims = 0}\n"), {0, 2}, 0, 0, "ArgMin");
  expectNear(referenceOf(x, "  %y = ArgMin(%x) {axis = 0}\n"), {0, 1, 1}, 0, 0, "ArgMin axis 0");
  // NaN is picked by both, as numpy's argmax/argmin (ONNX's reference) do.
  TestTensor nan = tensorOf(DType::F64, {1, 4}, {1, NAN, 5, NAN});
  expectNear(referenceOf(nan, "  %y = ArgMax(%x) {axis = 1}\n"), {1}, 0, 0, "ArgMax NaN");
  expectNear(referenceOf(nan, "  %y = ArgMin(%x) {axis = 1, select_last_index = 1}\n"), {3}, 0, 0, "ArgMin NaN last");
}

TEST(ReferenceReductionHand, TopKLargestSmallestAndTies) {
  TestTensor x = tensorOf(DType::F32, {8}, {3, 1, 4, 1, 5, 9, 2, 6});
  const std::string k = constantLine("k", tensorOf(DType::I64, {1}, {3}));
  RunResult largest = runReference(graphText({{"x", &x}}, k + "  %v, %i = TopK(%x, %k)\n", "%v, %i"), {x});
  expectNear(largest.outputs[0], {9, 6, 5}, 0, 0, "largest values");
  expectNear(largest.outputs[1], {5, 7, 4}, 0, 0, "largest indices");
  RunResult smallest = runReference(graphText({{"x", &x}}, k + "  %v, %i = TopK(%x, %k) {largest = 0}\n", "%v, %i"), {x});
  expectNear(smallest.outputs[0], {1, 1, 2}, 0, 0, "smallest values");
  expectNear(smallest.outputs[1], {1, 3, 6}, 0, 0, "smallest indices (ties by the lower index)");
  // Along axis 0, K given at run time.
  TestTensor m = tensorOf(DType::I32, {3, 2}, {1, 7, 5, 7, 3, 0});
  TestTensor two = tensorOf(DType::I64, {1}, {2});
  RunResult column = runReference(graphText({{"x", &m}, {"k", &two}}, "  %v, %i = TopK(%x, %k) {axis = 0}\n", "%v, %i"),
                                  {m, two});
  expectNear(column.outputs[0], {5, 7, 3, 7}, 0, 0, "axis 0 values");
  expectNear(column.outputs[1], {1, 0, 2, 1}, 0, 0, "axis 0 indices");
}

TEST(ReferenceReductionHand, CumSumExclusiveReverse) {
  TestTensor x = tensorOf(DType::I64, {4}, {1, 2, 3, 4});
  auto cumsum = [&](const std::string& attrs) {
    TestTensor axis = tensorOf(DType::I32, {}, {0});
    return runReference(graphText({{"x", &x}, {"a", &axis}}, "  %y = CumSum(%x, %a) " + attrs + "\n", "%y"), {x, axis})
        .outputs[0];
  };
  expectNear(cumsum(""), {1, 3, 6, 10}, 0, 0, "inclusive");
  expectNear(cumsum("{exclusive = 1}"), {0, 1, 3, 6}, 0, 0, "exclusive");
  expectNear(cumsum("{reverse = 1}"), {10, 9, 7, 4}, 0, 0, "reverse");
  expectNear(cumsum("{exclusive = 1, reverse = 1}"), {9, 7, 4, 0}, 0, 0, "exclusive reverse");
  TestTensor m = tensorOf(DType::F32, {2, 2}, {1, 2, 3, 4});
  TestTensor last = tensorOf(DType::I64, {}, {-1});
  RunResult rows = runReference(graphText({{"x", &m}, {"a", &last}}, "  %y = CumSum(%x, %a)\n", "%y"), {m, last});
  expectNear(rows.outputs[0], {1, 3, 3, 7}, 0, 0, "axis -1");
}

TEST(ReferenceReductionHand, SoftmaxLogSoftmaxHardmax) {
  // exp of 0, ln 2, ln 5 is 1, 2, 5: softmax 1/8, 2/8, 5/8.
  TestTensor x = tensorOf(DType::F64, {3}, {0, std::log(2.0), std::log(5.0)});
  expectNear(referenceOf(x, "  %y = Softmax(%x)\n"), {0.125, 0.25, 0.625}, 1e-15, 0, "Softmax");
  expectNear(referenceOf(x, "  %y = LogSoftmax(%x)\n"), {std::log(0.125), std::log(0.25), std::log(0.625)}, 1e-15, 0,
             "LogSoftmax");
  // Stable for large values; along axis 0.
  TestTensor large = tensorOf(DType::F32, {2, 2}, {1000, 0, 1000, 0});
  expectNear(referenceOf(large, "  %y = Softmax(%x) {axis = 0}\n"), {0.5, 0.5, 0.5, 0.5}, 0, 0, "Softmax axis 0");
  TestTensor ties = tensorOf(DType::F32, {2, 3}, {1, 3, 3, 2, 2, 1});
  expectNear(referenceOf(ties, "  %y = Hardmax(%x)\n"), {0, 1, 0, 1, 0, 0}, 0, 0, "Hardmax first max");
  expectNear(referenceOf(ties, "  %y = Hardmax(%x) {axis = 0}\n"), {0, 1, 1, 1, 0, 0}, 0, 0, "Hardmax axis 0");
}

// ---- Against the CPU device ------------------------------------------------------------------

std::vector<DType> reduceTypes(const std::string& op) {
  if (op == "ReduceLogSum" || op == "ReduceLogSumExp") return {DType::F32, DType::F64};
  std::vector<DType> types = {DType::F32, DType::F64, DType::I32, DType::I64};
  if (op == "ReduceMax" || op == "ReduceMin") {
    for (DType extra : {DType::I8, DType::U8, DType::Bool}) types.push_back(extra);
  }
  return types;
}

// Seeded inputs in each op's domain: positive for LogSum, near 1 for Prod (factors +-1, +-2
// for integers, so products stay exact).
TestTensor reduceInput(const std::string& op, DType dtype, const std::vector<int64_t>& dims, uint32_t seed) {
  if (!isFloatingPoint(dtype)) {
    TestTensor x = sampleTensor(dtype, dims, seed);
    if (op == "ReduceProd") {
      for (double& v : x.values) v = std::vector<double>{-2, -1, 1, 2}[static_cast<size_t>(static_cast<int64_t>(v) + 60) % 4];
    }
    return x;
  }
  if (op == "ReduceLogSum") return randomTensor(dtype, dims, seed, 0.1, 2.0);
  if (op == "ReduceProd") return randomTensor(dtype, dims, seed, 0.8, 1.25);
  return randomTensor(dtype, dims, seed, -3.0, 3.0);
}

TEST(ReferenceReductionVsCpu, EveryReductionAxisPatternAndType) {
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {1}, {-1}, {0, 2}, {1, 2}, {0, 1, 2}};
  for (const char* op : kReduceOps) {
    for (DType dtype : reduceTypes(op)) {
      TestTensor x = reduceInput(op, dtype, {3, 4, 5}, 21);
      for (size_t k = 0; k < axis_sets.size(); ++k) {
        const std::string keepdims = k % 2 ? "1" : "0";
        std::string body = axis_sets[k].empty() ? std::string() : axesLine(axis_sets[k]);
        body += std::string("  %y = ") + op + (axis_sets[k].empty() ? "(%x)" : "(%x, %axes)") + " {keepdims = " + keepdims + "}\n";
        expectAgreement(graphText({{"x", &x}}, body, "%y"), {x}, rtolOf(dtype), atolOf(dtype),
                        std::string(op) + " " + x.type() + " axis set " + std::to_string(k));
      }
    }
  }
}

TEST(ReferenceReductionVsCpu, EmptyReductions) {
  for (const char* op : kReduceOps) {
    TestTensor x{DType::F32, {3, 0}, {}};
    std::string body = axesLine({1}) + "  %y = " + op + "(%x, %axes)\n";
    expectAgreement(graphText({{"x", &x}}, body, "%y"), {x}, 0, 0, std::string(op) + " over an empty axis");
  }
}

// Every reduction, ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSum taking |x|, |x|, x^2
// and log x of each element (the spec's noop_with_empty_axes; see
// NoopWithEmptyAxesKeepsTheElementwiseStep).
TEST(ReferenceReductionVsCpu, NoopWithEmptyAxes) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp", "ReduceL1",
                         "ReduceL2", "ReduceSumSquare", "ReduceLogSum"}) {
    TestTensor x = reduceInput(op, DType::F32, {3, 4}, 26);
    std::string body = std::string("  %y = ") + op + "(%x) {noop_with_empty_axes = 1}\n";
    expectAgreement(graphText({{"x", &x}}, body, "%y"), {x}, 1e-6, 1e-6, std::string(op) + " noop_with_empty_axes");
  }
}

TEST(ReferenceReductionVsCpu, ArgMaxArgMin) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DType dtype : {DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8}) {
      TestTensor x = sampleTensor(dtype, {4, 6, 5}, 22);  // few distinct values: ties
      for (int axis = -1; axis < 3; ++axis) {
        for (int last : {0, 1}) {
          std::string body = std::string("  %y = ") + op + "(%x) {axis = " + std::to_string(axis) + ", keepdims = " +
                             std::to_string(axis == 1 ? 0 : 1) + ", select_last_index = " + std::to_string(last) + "}\n";
          expectAgreement(graphText({{"x", &x}}, body, "%y"), {x}, 0, 0,
                          std::string(op) + " " + x.type() + " axis " + std::to_string(axis) + " last " + std::to_string(last));
        }
      }
    }
  }
}

TEST(ReferenceReductionVsCpu, TopK) {
  for (DType dtype : {DType::F32, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8}) {
    TestTensor x = sampleTensor(dtype, {5, 9, 4}, 23);  // ties
    for (int axis : {0, 1, -1}) {
      for (int largest : {0, 1}) {
        for (int64_t k : {1, 3}) {
          std::string body = constantLine("k", tensorOf(DType::I64, {1}, {static_cast<double>(k)})) +
                             "  %v, %i = TopK(%x, %k) {axis = " + std::to_string(axis) + ", largest = " +
                             std::to_string(largest) + "}\n";
          expectAgreement(graphText({{"x", &x}}, body, "%v, %i"), {x}, 0, 0,
                          "TopK " + x.type() + " axis " + std::to_string(axis) + " largest " + std::to_string(largest) +
                              " k " + std::to_string(k));
        }
      }
    }
  }
}

TEST(ReferenceReductionVsCpu, CumSum) {
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64}) {
    TestTensor x = isFloatingPoint(dtype) ? randomTensor(dtype, {3, 4, 5}, 24, -2, 2) : sampleTensor(dtype, {3, 4, 5}, 24);
    for (int axis : {0, 1, 2, -2}) {
      for (int exclusive : {0, 1}) {
        for (int reverse : {0, 1}) {
          std::string body = constantLine("axis", tensorOf(DType::I64, {}, {static_cast<double>(axis)})) +
                             "  %y = CumSum(%x, %axis) {exclusive = " + std::to_string(exclusive) +
                             ", reverse = " + std::to_string(reverse) + "}\n";
          expectAgreement(graphText({{"x", &x}}, body, "%y"), {x}, rtolOf(dtype), atolOf(dtype),
                          "CumSum " + x.type() + " axis " + std::to_string(axis) + " exclusive " +
                              std::to_string(exclusive) + " reverse " + std::to_string(reverse));
        }
      }
    }
  }
}

TEST(ReferenceReductionVsCpu, SoftmaxLogSoftmaxHardmax) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (DType dtype : {DType::F32, DType::F64}) {
      TestTensor x = randomTensor(dtype, {3, 4, 7}, 25, -6, 6);
      for (int axis : {0, 1, 2, -1}) {
        std::string body = std::string("  %y = ") + op + "(%x) {axis = " + std::to_string(axis) + "}\n";
        expectAgreement(graphText({{"x", &x}}, body, "%y"), {x}, rtolOf(dtype), atolOf(dtype),
                        std::string(op) + " " + x.type() + " axis " + std::to_string(axis));
      }
    }
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
