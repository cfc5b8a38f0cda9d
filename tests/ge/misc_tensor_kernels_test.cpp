// Trilu, CumSum, TopK and NonZero.
#include <algorithm>
#include <set>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor i64Scalar(int64_t value) { return tensorOf(DType::I64, {}, {static_cast<double>(value)}); }

// ---- Trilu -----------------------------------------------------------------------------------

TEST(TriluKernels, UpperAndLowerWithEveryDiagonalOffset) {
  for (DType dtype : {DType::F32, DType::I64, DType::Bool, DType::BF16}) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{4, 6}, std::vector<int64_t>{2, 3, 5, 3}, std::vector<int64_t>{300, 300}}) {
      TestTensor x = sampleTensor(dtype, dims, 1);
      for (int upper : {0, 1}) {
        for (int64_t k : {-7, -1, 0, 2, 9}) {
          std::string body = constantLine("k", i64Scalar(k)) + "  %y = Trilu(%x, %k) {upper = " + std::to_string(upper) + "}\n";
          RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
          TestTensor expected = x;
          const int64_t rows = dims[dims.size() - 2], cols = dims.back();
          for (int64_t i = 0; i < x.count(); ++i) {
            int64_t r = (i / cols) % rows, c = i % cols;
            bool keep = upper ? c - r >= k : c - r <= k;
            if (!keep) expected.values[i] = 0;
          }
          expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " " + x.type() + (upper ? " upper k=" : " lower k=") + std::to_string(k));
        }
      }
    }
  }
}

TEST(TriluKernels, WithoutKAndInPlace) {
  // Trilu over a dead intermediate runs in place: only the cleared part is written.
  TestTensor x = sampleTensor(DType::F32, {5, 4}, 2);
  RunResult result = runGraph(graphText({{"x", &x}}, "  %t = Transpose(%x) {perm = [1, 0]}\n  %y = Trilu(%t)\n", "%y"), {x});
  TestTensor expected{DType::F32, {4, 5}, {}};
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 5; ++c) expected.values.push_back(c >= r ? x.values[c * 4 + r] : 0.0);
  }
  expectEqual(result.outputs[0], expected, "upper, k = 0");
}

// ---- CumSum ----------------------------------------------------------------------------------

TestTensor cumsumRef(const TestTensor& x, int axis, bool exclusive, bool reverse) {
  TestTensor out = x;
  const int64_t n = x.dims[axis];
  for (int64_t i = 0; i < x.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, x.dims);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      bool counted = reverse ? (exclusive ? j > coords[axis] : j >= coords[axis])
                             : (exclusive ? j < coords[axis] : j <= coords[axis]);
      if (!counted) continue;
      std::vector<int64_t> from = coords;
      from[axis] = j;
      sum += x.values[ravel(from, x.dims)];
    }
    out.values[i] = roundTo(x.dtype, sum);
  }
  return out;
}

TEST(CumSumKernels, EveryAxisExclusiveAndReverse) {
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64, DType::F16, DType::BF16}) {
    TestTensor x = sampleTensor(dtype, {3, 4, 5}, 3);
    for (int axis = 0; axis < 3; ++axis) {
      for (int exclusive : {0, 1}) {
        for (int reverse : {0, 1}) {
          std::string body = constantLine("axis", i64Scalar(axis - (axis == 1 ? 3 : 0))) +
                             "  %y = CumSum(%x, %axis) {exclusive = " + std::to_string(exclusive) +
                             ", reverse = " + std::to_string(reverse) + "}\n";
          RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
          TestTensor expected = cumsumRef(x, axis, exclusive, reverse);
          // The 16-bit floats accumulate in f32 and round once per output.
          expectNear(result.outputs[0], expected.values, dtypeTolerance(dtype), dtypeTolerance(dtype),
                     dtypeLabel(dtype) + " axis " + std::to_string(axis) + " exclusive " + std::to_string(exclusive) +
                         " reverse " + std::to_string(reverse));
        }
      }
    }
  }
}

TEST(CumSumKernels, AxisReadAtRunTime) {
  TestTensor x = sampleTensor(DType::F32, {64, 700}, 4);
  for (int64_t axis : {0, -1}) {
    TestTensor axis_tensor = tensorOf(DType::I32, {}, {static_cast<double>(axis)});
    RunResult result = runGraph(graphText({{"x", &x}, {"a", &axis_tensor}}, "  %y = CumSum(%x, %a)\n", "%y"), {x, axis_tensor});
    expectNear(result.outputs[0], cumsumRef(x, axis < 0 ? 1 : 0, false, false).values, 1e-5, 1e-4, "axis " + std::to_string(axis));
  }
  TestTensor bad = tensorOf(DType::I32, {}, {2});
  std::string message = errorOf(graphText({{"x", &x}, {"a", &bad}}, "  %y = CumSum(%x, %a)\n", "%y"), {x, bad});
  EXPECT_NE(message.find("(CumSum): input 'axis' is 2, out of range for rank 2"), std::string::npos) << message;
}

// ---- TopK ------------------------------------------------------------------------------------

TEST(TopKKernels, LargestSmallestTiesAndAxes) {
  for (DType dtype : {DType::F32, DType::F16, DType::I32, DType::U8, DType::F64}) {
    for (int axis : {0, 1, 2}) {
      for (int largest : {0, 1}) {
        TestTensor x = sampleTensor(dtype, {7, 17, 6}, 5);  // few distinct values: many ties
        const int64_t k = 5;
        std::string body = constantLine("k", tensorOf(DType::I64, {1}, {k})) + "  %v, %i = TopK(%x, %k) {axis = " +
                           std::to_string(axis) + ", largest = " + std::to_string(largest) + "}\n";
        RunResult result = runGraph(graphText({{"x", &x}}, body, "%v, %i"), {x});
        std::vector<int64_t> dims = x.dims;
        dims[axis] = k;
        TestTensor values{dtype, dims, std::vector<double>(static_cast<size_t>(TestTensor{dtype, dims, {}}.count()))};
        TestTensor indices{DType::I64, dims, values.values};
        for (int64_t line = 0; line < values.count() / k; ++line) {
          // The line's coordinates with the axis coordinate at 0.
          std::vector<int64_t> line_dims = dims;
          line_dims[axis] = 1;
          std::vector<int64_t> coords = unravel(line, line_dims);
          std::vector<std::pair<double, int64_t>> entries;
          for (int64_t j = 0; j < x.dims[axis]; ++j) {
            coords[axis] = j;
            entries.emplace_back(x.values[ravel(coords, x.dims)], j);
          }
          std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) {
            return largest ? a.first > b.first : a.first < b.first;
          });
          for (int64_t j = 0; j < k; ++j) {
            coords[axis] = j;
            values.values[ravel(coords, dims)] = entries[j].first;
            indices.values[ravel(coords, dims)] = static_cast<double>(entries[j].second);
          }
        }
        std::string what = dtypeLabel(dtype) + " axis " + std::to_string(axis) + (largest ? " largest" : " smallest");
        expectEqual(result.outputs[0], values, what + " values");
        expectEqual(result.outputs[1], indices, what + " indices");
      }
    }
  }
}

TEST(TopKKernels, UnsortedGivesTheSameSetAndNaNIsLargest) {
  TestTensor x = randomTensor(DType::F32, {8, 1000}, 6);
  x.values[5] = NAN;
  std::string body = constantLine("k", tensorOf(DType::I64, {1}, {10})) + "  %v, %i = TopK(%x, %k) {sorted = 0}\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%v, %i"), {x});
  for (int64_t row = 0; row < 8; ++row) {
    std::vector<std::pair<double, int64_t>> entries;
    for (int64_t j = 0; j < 1000; ++j) {
      double v = x.values[row * 1000 + j];
      entries.emplace_back(std::isnan(v) ? INFINITY : v, j);
    }
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::set<int64_t> expected, actual;
    for (int j = 0; j < 10; ++j) {
      expected.insert(entries[j].second);
      actual.insert(static_cast<int64_t>(result.outputs[1].values[row * 10 + j]));
    }
    EXPECT_EQ(actual, expected) << "row " << row;
  }
  bool nan_picked = false;
  for (int j = 0; j < 10; ++j) nan_picked |= std::isnan(result.outputs[0].values[j]);
  EXPECT_TRUE(nan_picked) << "NaN is the largest value of row 0";
}

// ---- NonZero ---------------------------------------------------------------------------------

TEST(NonZeroKernels, ConstantInputGivesCoordinates) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {0, 1.5, 0, -2, 0, 3});
  std::vector<TestTensor> out = runKernelDirectly("graph @g(%x: f32[2,3]) {\n  %y = NonZero(%x)\n  return %y\n}", {x},
                                                  {true}, {TestTensor{DType::I64, {2, 3}, {}}});
  expectEqual(out[0], tensorOf(DType::I64, {2, 3}, {0, 1, 1, 1, 0, 2}), "coordinates");
}

TEST(NonZeroKernels, AConstantInputIsFoldedToItsExactShape) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {0, 1.5, 0, -2, -0.0, 3});
  auto model = CompiledModel::build(*parseGraph(graphText({}, constantLine("x", x) + "  %y = NonZero(%x)\n", "%y")));
  auto context = model->createContext();
  const auto& outputs = context->run({});
  ASSERT_EQ(outputs[0].desc(), TensorDesc::of(DType::I64, {2, 3}));
  const auto* y = static_cast<const int64_t*>(outputs[0].data);
  EXPECT_EQ(std::vector<int64_t>(y, y + 6), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
}

// On a graph input, the output is planned at [rank, elements] and each run reports its
// actual length.
TEST(NonZeroKernels, ARuntimeInputGivesARuntimeLengthOutput) {
  auto model = CompiledModel::build(*parseGraph("graph @g(%x: i32[2,3]) {\n  %y = NonZero(%x)\n  return %y\n}"));
  auto context = model->createContext();
  std::vector<int32_t> x{0, 7, 0, 5, 0, 9};
  HostTensor input = HostTensor::of(TensorDesc::of(DType::I32, {2, 3}), x.data());
  EXPECT_EQ(context->outputDescs({input})[0], TensorDesc::of(DType::I64, {2, 6}));  // the upper bound
  for (int round = 0; round < 3; ++round) {
    if (round == 1) x = {1, 0, 0, 0, 0, 0};
    if (round == 2) x = {0, 0, 0, 0, 0, 0};
    const auto& outputs = context->run({input});
    std::vector<int64_t> expected;
    for (int d = 0; d < 2; ++d) {
      for (int i = 0; i < 6; ++i) {
        if (x[i] != 0) expected.push_back(d == 0 ? i / 3 : i % 3);
      }
    }
    const int64_t count = static_cast<int64_t>(expected.size()) / 2;
    ASSERT_EQ(outputs[0].desc(), TensorDesc::of(DType::I64, {2, count})) << "round " << round;
    EXPECT_EQ(context->producedOutputDescs()[0], outputs[0].desc());
    const auto* y = static_cast<const int64_t*>(outputs[0].data);
    EXPECT_EQ(std::vector<int64_t>(y, y + 2 * count), expected) << "round " << round;
  }
  // Into a caller's buffer of the upper bound: the indices sit compactly at its start.
  x = {0, 0, 4, 0, 0, 0};
  std::vector<int64_t> buffer(12, -1);
  context->run({input}, {HostTensor::of(TensorDesc::of(DType::I64, {2, 6}), buffer.data())});
  EXPECT_EQ(context->producedOutputDescs()[0], TensorDesc::of(DType::I64, {2, 1}));
  EXPECT_EQ(buffer[0], 0);
  EXPECT_EQ(buffer[1], 2);
}

TEST(NonZeroKernels, ARuntimeLengthFeedingAnotherNodeIsRefused) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {0, 1.5, 0, -2, 0, 3});
  std::string message = errorOf(graphText({{"x", &x}}, "  %y = NonZero(%x)\n  %t = Transpose(%y)\n", "%t"), {x});
  EXPECT_NE(message.find("node #0 (NonZero): its output length depends on the values computed at run time; the CPU "
                         "backend plans every buffer at build time"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("(Transpose) uses it"), std::string::npos) << message;
}

}  // namespace
}  // namespace estuary::ge::tensor_test
