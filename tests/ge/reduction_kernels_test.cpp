// The ten reductions over every axis pattern (rows, columns, scattered axes, all axes,
// none), keepdims, noop_with_empty_axes, empty reductions; ArgMax / ArgMin with ties.
#include <cmath>
#include <limits>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

const char* const kReduceOps[] = {"ReduceSum", "ReduceMean",   "ReduceMax",       "ReduceMin",      "ReduceProd",
                                  "ReduceL1",  "ReduceL2",     "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare"};

std::vector<DType> typesOf(const std::string& op) {
  if (op == "ReduceLogSum" || op == "ReduceLogSumExp") return {DType::F32, DType::F16, DType::BF16, DType::F64};
  std::vector<DType> types = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64};
  if (op == "ReduceMax" || op == "ReduceMin") {
    for (DType extra : {DType::I8, DType::U8, DType::Bool}) types.push_back(extra);
  }
  return types;
}

// Inputs in each op's domain: positive for LogSum, near 1 for Prod (small integers there).
TestTensor inputFor(const std::string& op, DType dtype, const std::vector<int64_t>& dims, uint32_t seed) {
  if (!isFloatingPoint(dtype)) {
    TestTensor x = sampleTensor(dtype, dims, seed);
    if (op == "ReduceProd") {
      // Factors +-1 and +-2: products stay exact in doubles and i64 (i32 results wrap).
      static const double kFactors[] = {-2, -1, 1, 2};
      for (double& v : x.values) v = kFactors[(static_cast<int64_t>(v) + 60) % 4];
    }
    return x;
  }
  if (op == "ReduceLogSum") return randomTensor(dtype, dims, seed, 0.1, 2.0);
  if (op == "ReduceProd") return randomTensor(dtype, dims, seed, 0.8, 1.25);
  if (op == "ReduceLogSumExp") return randomTensor(dtype, dims, seed, -3.0, 3.0);
  return randomTensor(dtype, dims, seed, -2.0, 2.0);
}

struct Reference {
  double value;
  double scale;  // magnitude of the terms, for an accumulation tolerance
};

Reference reduceRef(const std::string& op, DType dtype, const std::vector<double>& xs) {
  const double n = static_cast<double>(xs.size());
  const bool integer = !isFloatingPoint(dtype);
  double sum = 0, abs_sum = 0, squares = 0, product = 1;
  double high = -INFINITY, low = INFINITY;
  for (double x : xs) {
    sum += x;
    abs_sum += std::fabs(x);
    squares += x * x;
    product *= x;
    high = std::max(high, x);
    low = std::min(low, x);
  }
  if (op == "ReduceSum") return {sum, abs_sum};
  if (op == "ReduceMean") return {integer ? std::trunc(sum / n) : sum / n, abs_sum / std::max(n, 1.0)};
  if (op == "ReduceMax" || op == "ReduceMin") {
    bool is_max = op == "ReduceMax";
    if (xs.empty() && integer) {
      double limit = dtype == DType::I32 ? (is_max ? INT32_MIN : INT32_MAX)
                                         : is_max ? static_cast<double>(std::numeric_limits<int64_t>::min())
                                                  : static_cast<double>(std::numeric_limits<int64_t>::max());
      return {limit, 0};
    }
    return {is_max ? high : low, 0};
  }
  if (op == "ReduceProd") return {product, std::fabs(product)};
  if (op == "ReduceL1") return {abs_sum, abs_sum};
  if (op == "ReduceL2") return {integer ? std::floor(std::sqrt(squares)) : std::sqrt(squares), std::sqrt(squares)};
  if (op == "ReduceSumSquare") return {squares, squares};
  if (op == "ReduceLogSum") return {std::log(sum), 1};
  // ReduceLogSumExp
  double shifted = 0;
  for (double x : xs) shifted += std::exp(x - high);
  return {xs.empty() ? -INFINITY : high + std::log(shifted), std::fabs(high) + 1};
}

struct Expected {
  TestTensor values;
  std::vector<double> tolerance;
};

Expected reduceExpected(const std::string& op, const TestTensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  const size_t rank = x.dims.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes) reduced[axis < 0 ? axis + static_cast<int64_t>(rank) : axis] = true;
  std::vector<int64_t> out_dims, kept_dims;
  for (size_t d = 0; d < rank; ++d) {
    if (!reduced[d]) kept_dims.push_back(x.dims[d]);
    if (!reduced[d] || keepdims) out_dims.push_back(reduced[d] ? 1 : x.dims[d]);
  }
  TestTensor kept{x.dtype, kept_dims, {}};
  std::vector<std::vector<double>> groups(static_cast<size_t>(kept.count()));
  for (int64_t i = 0; i < x.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, x.dims), kept_coords;
    for (size_t d = 0; d < rank; ++d) {
      if (!reduced[d]) kept_coords.push_back(coords[d]);
    }
    groups[ravel(kept_coords, kept_dims)].push_back(x.values[i]);
  }
  Expected expected{TestTensor{x.dtype, out_dims, {}}, {}};
  const double tolerance = dtypeTolerance(x.dtype);
  for (const std::vector<double>& group : groups) {
    Reference ref = reduceRef(op, x.dtype, group);
    expected.values.values.push_back(std::isinf(ref.value) ? ref.value : roundTo(x.dtype, ref.value));
    expected.tolerance.push_back(tolerance * (ref.scale + std::fabs(ref.value)) + (tolerance > 0 ? 1e-6 : 0.0));
  }
  return expected;
}

void checkReduction(const std::string& op, const TestTensor& x, const std::vector<int64_t>& axes, bool keepdims,
                    const std::string& strategy = "") {
  std::string body, operands = "%x";
  if (!axes.empty()) {
    std::vector<double> values(axes.begin(), axes.end());
    body += constantLine("axes", tensorOf(DType::I64, {static_cast<int64_t>(axes.size())}, values));
    operands += ", %axes";
  }
  body += "  %y = " + op + "(" + operands + ") {keepdims = " + std::to_string(keepdims ? 1 : 0) + "}\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  Expected expected = reduceExpected(op, x, axes, keepdims);
  std::string what = op + " " + x.type() + " axes [";
  for (int64_t axis : axes) what += std::to_string(axis) + " ";
  what += keepdims ? "] keepdims" : "]";
  const TestTensor& actual = result.outputs[0];
  ASSERT_EQ(actual.dims, expected.values.dims) << what;
  int misses = 0;
  for (size_t i = 0; i < expected.tolerance.size(); ++i) {
    double want = expected.values.values[i], got = actual.values[i];
    bool same = (std::isnan(want) && std::isnan(got)) || got == want || std::fabs(got - want) <= expected.tolerance[i];
    if (!same && ++misses <= 3) ADD_FAILURE() << what << ": element " << i << " is " << got << ", expected " << want;
  }
  EXPECT_EQ(misses, 0) << what;
  if (!strategy.empty()) {
    EXPECT_TRUE(usesKernel(result, strategy)) << what << ": " << result.kernels.back();
  }
}

TEST(ReduceKernels, EveryOpTypeAndAxisPattern) {
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {1}, {-1}, {0, 2}, {0, 1}, {1, 2}, {0, 1, 2}};
  for (const char* op : kReduceOps) {
    for (DType dtype : typesOf(op)) {
      TestTensor x = inputFor(op, dtype, {3, 4, 5}, 1);
      for (size_t k = 0; k < axis_sets.size(); ++k) checkReduction(op, x, axis_sets[k], k % 2 == 0);
    }
  }
}

TEST(ReduceKernels, StrategiesOnLargerTensors) {
  for (const char* op : kReduceOps) {
    for (DType dtype : {DType::F32, DType::F16}) {
      checkReduction(op, inputFor(op, dtype, {128, 768}, 2), {-1}, true, std::string("cpu:reduce_"));
      checkReduction(op, inputFor(op, dtype, {300, 1000}, 3), {0}, false, "cpu:reduce_");
      checkReduction(op, inputFor(op, dtype, {2, 50, 3, 40}, 4), {1, 3}, true, "cpu:reduce_");
    }
    // One long row: pieces reduced by different threads, then combined.
    checkReduction(op, inputFor(op, DType::F32, {1, 200000}, 5), {1}, false, "cpu:reduce_");
  }
  checkReduction("ReduceMean", inputFor("ReduceMean", DType::F32, {128, 768}, 6), {-1}, true, "cpu:reduce_mean rows");
  checkReduction("ReduceSum", inputFor("ReduceSum", DType::F32, {300, 1000}, 7), {0}, true, "cpu:reduce_sum columns");
  checkReduction("ReduceMax", inputFor("ReduceMax", DType::F32, {4, 5, 6}, 8), {0, 2}, true, "cpu:reduce_max permuted rows");
}

TEST(ReduceKernels, EmptyReductionsGiveTheIdentity) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSum", "ReduceLogSumExp"}) {
    checkReduction(op, TestTensor{DType::F32, {3, 0}, {}}, {1}, true);
  }
}

TEST(ReduceKernels, NoopWithEmptyAxesReturnsTheInput) {
  TestTensor x = randomTensor(DType::F32, {3, 4}, 9);
  RunResult result = runGraph(graphText({{"x", &x}}, "  %y = ReduceSum(%x) {noop_with_empty_axes = 1}\n", "%y"), {x});
  expectEqual(result.outputs[0], x, "noop");
}

// Axes fed as an input rather than a constant: the plan is made for their values (each
// value its own plan, as TensorRT does with shape tensors).
TEST(ReduceKernels, AxesGivenAtRunTimeArePlannedByTheirValues) {
  TestTensor x = randomTensor(DType::F32, {3, 4}, 10);
  for (int64_t axis : {1, 0}) {
    TestTensor axes = tensorOf(DType::I64, {1}, {static_cast<double>(axis)});
    RunResult result = runGraph(graphText({{"x", &x}, {"a", &axes}}, "  %y = ReduceSum(%x, %a)\n", "%y"), {x, axes});
    std::vector<double> expected(axis == 1 ? 3 : 4, 0.0);
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 4; ++j) expected[static_cast<size_t>(axis == 1 ? i : j)] += x.values[static_cast<size_t>(i * 4 + j)];
    }
    EXPECT_EQ(result.outputs[0].dims, (axis == 1 ? std::vector<int64_t>{3, 1} : std::vector<int64_t>{1, 4}));
    expectNear(result.outputs[0], expected, 1e-5, 1e-6, "axis " + std::to_string(axis));
  }
}

// ---- ArgMax / ArgMin ---------------------------------------------------------------------------

TEST(ArgReduceKernels, TiesAxesKeepdimsAndLastIndex) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    const bool is_max = std::string(op) == "ArgMax";
    for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I32, DType::I64, DType::U8}) {
      for (std::vector<int64_t> dims : {std::vector<int64_t>{4, 6, 5}, std::vector<int64_t>{64, 1000}}) {
        TestTensor x = sampleTensor(dtype, dims, 11);  // few distinct values: ties
        for (int axis = 0; axis < static_cast<int>(dims.size()); ++axis) {
          for (int last : {0, 1}) {
            for (int keepdims : {0, 1}) {
              std::string body = std::string("  %y = ") + op + "(%x) {axis = " + std::to_string(axis) +
                                 ", keepdims = " + std::to_string(keepdims) + ", select_last_index = " +
                                 std::to_string(last) + "}\n";
              RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
              std::vector<int64_t> line_dims = dims;
              line_dims[axis] = 1;
              TestTensor expected{DType::I64, {}, {}};
              for (size_t d = 0; d < dims.size(); ++d) {
                if (static_cast<int>(d) != axis || keepdims) expected.dims.push_back(line_dims[d]);
              }
              for (int64_t line = 0; line < x.count() / dims[axis]; ++line) {
                std::vector<int64_t> coords = unravel(line, line_dims);
                int64_t best = 0;
                double best_value = 0;
                for (int64_t j = 0; j < dims[axis]; ++j) {
                  coords[axis] = j;
                  double v = x.values[ravel(coords, dims)];
                  bool better = j == 0 || (is_max ? (last ? v >= best_value : v > best_value)
                                                  : (last ? v <= best_value : v < best_value));
                  if (better) {
                    best = j;
                    best_value = v;
                  }
                }
                expected.values.push_back(static_cast<double>(best));
              }
              expectEqual(result.outputs[0], expected,
                          std::string(op) + " " + x.type() + " axis " + std::to_string(axis) + " last " + std::to_string(last));
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
