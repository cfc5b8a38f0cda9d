// Slice (constant and run-time bounds, negative and reversed steps, empty results) and Pad
// (constant, reflect, edge, wrap; negative pads; axes; run-time pads).
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor i64s(std::vector<int64_t> values) {
  std::vector<double> doubles(values.begin(), values.end());
  return tensorOf(DType::I64, {static_cast<int64_t>(values.size())}, doubles);
}

// "To the end" bounds as exporters write them (huge values the kernel must clamp); 2^62
// rather than INT64_MAX so that the test's double-valued tensors hold them exactly.
constexpr int64_t kMax = int64_t{1} << 62;
constexpr int64_t kMin = -kMax;

// The indices Python's x[start:end:step] takes along an axis of size n (which is what
// ONNX Slice specifies).
std::vector<int64_t> pythonRange(int64_t n, int64_t start, int64_t end, int64_t step) {
  auto fix = [&](int64_t v) {
    if (v < 0) v = v < -n ? (step > 0 ? 0 : -1) : v + n;
    if (v >= n) v = step > 0 ? n : n - 1;
    return v;
  };
  int64_t from = fix(start), to = fix(end);
  std::vector<int64_t> picked;
  for (int64_t i = from; step > 0 ? i < to : i > to; i += step) picked.push_back(i);
  return picked;
}

struct SliceCase {
  std::vector<int64_t> dims, starts, ends, axes, steps;  // axes/steps empty: left out
};

TestTensor sliceRef(const TestTensor& x, const SliceCase& c) {
  std::vector<std::vector<int64_t>> picks(x.dims.size());
  for (size_t d = 0; d < x.dims.size(); ++d) picks[d] = pythonRange(x.dims[d], 0, kMax, 1);
  for (size_t k = 0; k < c.starts.size(); ++k) {
    int64_t axis = c.axes.empty() ? static_cast<int64_t>(k) : c.axes[k];
    if (axis < 0) axis += static_cast<int64_t>(x.dims.size());
    picks[axis] = pythonRange(x.dims[axis], c.starts[k], c.ends[k], c.steps.empty() ? 1 : c.steps[k]);
  }
  std::vector<int64_t> dims;
  for (const auto& pick : picks) dims.push_back(static_cast<int64_t>(pick.size()));
  TestTensor out{x.dtype, dims, {}};
  for (int64_t i = 0; i < out.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, dims);
    for (size_t d = 0; d < coords.size(); ++d) coords[d] = picks[d][coords[d]];
    out.values.push_back(x.values[ravel(coords, x.dims)]);
  }
  return out;
}

std::string sliceBody(const SliceCase& c) {
  std::string body = constantLine("starts", i64s(c.starts)) + constantLine("ends", i64s(c.ends));
  std::string operands = "%x, %starts, %ends";
  if (!c.axes.empty()) {
    body += constantLine("axes", i64s(c.axes));
    operands += ", %axes";
  } else if (!c.steps.empty()) {
    operands += ", _";
  }
  if (!c.steps.empty()) {
    body += constantLine("steps", i64s(c.steps));
    operands += ", %steps";
  }
  return body + "  %y = Slice(" + operands + ")\n";
}

const std::vector<SliceCase>& sliceCases() {
  static const std::vector<SliceCase> cases = {
      {{5, 6}, {1, 2}, {4, 5}, {}, {}},                          // plain
      {{5, 6}, {-4}, {-1}, {1}, {}},                             // negative bounds, one axis
      {{5, 6}, {kMax}, {kMin}, {0}, {-1}},                       // full reversal
      {{5, 6}, {4, 5}, {0, -7}, {0, 1}, {-2, -3}},               // negative steps
      {{4, 5, 6}, {0, 1}, {kMax, kMax}, {-1, -3}, {2, 2}},       // negative axes, steps
      {{4, 5, 6}, {3}, {1}, {1}, {}},                            // empty (start after end)
      {{4, 5, 6}, {10}, {20}, {2}, {}},                          // empty (beyond the end)
      {{4, 5, 6}, {0, 0, 0}, {4, 5, 6}, {}, {}},                 // everything
      {{2, 3, 64, 48}, {1, 16}, {60, 40}, {2, 3}, {3, 1}},       // rows of a 4-D tensor
      {{64, 1024}, {0, 1}, {64, 1024}, {0, 1}, {1, 2}},          // threads, strided inner
  };
  return cases;
}

TEST(SliceKernels, ConstantBoundsMatchPythonSlicing) {
  for (DType dtype : {DType::F32, DType::F16, DType::I64, DType::Bool, DType::U8, DType::F64}) {
    for (const SliceCase& c : sliceCases()) {
      TestTensor x = sampleTensor(dtype, c.dims, 12);
      RunResult result = runGraph(graphText({{"x", &x}}, sliceBody(c), "%y"), {x});
      TestTensor expected = sliceRef(x, c);
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " " + x.type() + " -> " + expected.type());
    }
  }
}

TEST(SliceKernels, RunTimeBoundsAreReadWhenTheKernelRuns) {
  // Bounds that are not constants are read from their buffers at run time (the kernel is
  // run directly: a planned graph has them folded).
  for (const SliceCase& c : sliceCases()) {
    if (c.axes.empty() || c.steps.empty()) continue;
    TestTensor x = sampleTensor(DType::I32, c.dims, 13);
    TestTensor expected = sliceRef(x, c);
    std::string text = "graph @g(%x: " + x.type() + ", %s: i64[*], %e: i64[*], %a: i64[*], %t: i64[*]) {\n" +
                       "  %y = Slice(%x, %s, %e, %a, %t)\n  return %y\n}";
    std::vector<TestTensor> out = runKernelDirectly(text, {x, i64s(c.starts), i64s(c.ends), i64s(c.axes), i64s(c.steps)},
                                                    {false, false, false, false, false},
                                                    {TestTensor{DType::I32, expected.dims, {}}});
    expectEqual(out[0], expected, x.type() + " -> " + expected.type());
  }
}

TEST(SliceKernels, RunTimeBoundsThatDisagreeWithThePlanAreRefused) {
  TestTensor x = sampleTensor(DType::F32, {4, 5}, 1);
  std::string text = "graph @g(%x: f32[4,5], %s: i64[1], %e: i64[1]) {\n  %y = Slice(%x, %s, %e)\n  return %y\n}";
  try {
    runKernelDirectly(text, {x, i64s({1}), i64s({3})}, {false, false, false}, {TestTensor{DType::F32, {3, 5}, {}}});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "node #0 (Slice): the slice's size differs from the output shape planned at build time");
  }
}

// ---- Pad -------------------------------------------------------------------------------------

// Where output coordinate o (relative to the begin pad) reads in an axis of size n, found by
// walking the mode's definition step by step; -1 for the constant.
int64_t padSourceRef(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "wrap") {
    while (i < 0) i += n;
    return i % n;
  }
  // reflect: bounce off the first and last element (which are not repeated)
  if (n == 1) return 0;
  int64_t position = 0, direction = 1;
  int64_t steps = i < 0 ? -i : i;
  direction = i < 0 ? -1 : 1;
  for (int64_t s = 0; s < steps; ++s) {
    if (position + direction < 0 || position + direction >= n) direction = -direction;
    position += direction;
  }
  return position;
}

TestTensor padRef(const TestTensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                  const std::string& mode, double value) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.dims.size(); ++d) dims.push_back(x.dims[d] + begin[d] + end[d]);
  TestTensor out{x.dtype, dims, {}};
  for (int64_t i = 0; i < out.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, dims);
    bool constant = false;
    for (size_t d = 0; d < coords.size(); ++d) {
      coords[d] = padSourceRef(coords[d] - begin[d], x.dims[d], mode);
      constant |= coords[d] < 0;
    }
    out.values.push_back(constant ? value : x.values[ravel(coords, x.dims)]);
  }
  return out;
}

TEST(PadKernels, EveryModeWithPositiveAndNegativePads) {
  struct Case {
    std::vector<int64_t> dims, begin, end;
  };
  const Case cases[] = {
      {{3, 4}, {1, 2}, {2, 1}},
      {{3, 4}, {0, 7}, {5, 9}},       // pads longer than the axis: reflect bounces, wrap wraps
      {{2, 3, 5}, {0, -1, 1}, {1, 0, -2}},  // negative pads crop
      {{1, 6}, {2, 0}, {1, 0}},       // reflect of a size-1 axis repeats it
      {{64, 300}, {3, 5}, {4, 6}},    // threads
  };
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    for (DType dtype : {DType::F32, DType::I8, DType::F16, DType::I64}) {
      for (const Case& c : cases) {
        TestTensor x = sampleTensor(dtype, c.dims, 21);
        std::vector<int64_t> pads = c.begin;
        pads.insert(pads.end(), c.end.begin(), c.end.end());
        TestTensor value = tensorOf(dtype, {}, {5});
        std::string body = constantLine("pads", i64s(pads)) + constantLine("value", value) +
                           "  %y = Pad(%x, %pads, %value) {mode = \"" + mode + "\"}\n";
        RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
        expectEqual(result.outputs[0], padRef(x, c.begin, c.end, mode, 5), std::string(mode) + " " + dtypeLabel(dtype) + " " + x.type());
        EXPECT_TRUE(usesKernel(result, "cpu:pad"));
      }
    }
  }
}

TEST(PadKernels, AxesInputAndDefaultZero) {
  TestTensor x = sampleTensor(DType::F32, {2, 3, 4}, 22);
  std::string body = constantLine("pads", i64s({1, 2, 0, 1})) + constantLine("axes", i64s({-1, 0})) +
                     "  %y = Pad(%x, %pads, _, %axes)\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  expectEqual(result.outputs[0], padRef(x, {2, 0, 1}, {1, 0, 0}, "constant", 0), "axes");
}

TEST(PadKernels, RunTimePadsAndValue) {
  TestTensor x = sampleTensor(DType::F64, {3, 4}, 23);
  std::string text = "graph @g(%x: f64[3,4], %p: i64[4], %v: f64[]) {\n  %y = Pad(%x, %p, %v) {mode = \"reflect\"}\n  return %y\n}";
  std::vector<TestTensor> out = runKernelDirectly(text, {x, i64s({2, 1, 0, 3}), tensorOf(DType::F64, {}, {9})},
                                                  {false, false, false}, {TestTensor{DType::F64, {5, 8}, {}}});
  expectEqual(out[0], padRef(x, {2, 1}, {0, 3}, "reflect", 0), "run-time pads");
}

TEST(PadKernels, ConstantPaddingOfAnEmptyAxis) {
  TestTensor x = sampleTensor(DType::F32, {0, 3}, 1);
  std::string body = constantLine("pads", i64s({2, 0, 1, 1})) + "  %y = Pad(%x, %pads)\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
  expectEqual(result.outputs[0], TestTensor{DType::F32, {3, 4}, std::vector<double>(12, 0.0)}, "empty axis");
}

}  // namespace
}  // namespace estuary::ge::tensor_test
