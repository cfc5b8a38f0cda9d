// The reference device's shape, indexing and generator kernels: cases worked out by hand
// from the ONNX specification, and the same graphs on the CPU device for seeded random
// inputs (these ops only move elements or compute exactly, so the two must agree exactly).
#include "estuary/ge/device.h"
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

const Device& reference() { return deviceNamed("reference"); }
const Device& cpu() { return deviceNamed("cpu"); }

// The element types the reference takes (every one but the 16-bit floats).
constexpr DType kReferenceDTypes[] = {DType::F32, DType::F64, DType::I8, DType::I16,
                                      DType::I32, DType::I64, DType::U8, DType::Bool};

TestTensor i64s(std::vector<int64_t> values) {
  std::vector<double> doubles(values.begin(), values.end());
  return tensorOf(DType::I64, {static_cast<int64_t>(values.size())}, doubles);
}

TestTensor i64Scalar(int64_t value) { return tensorOf(DType::I64, {}, {static_cast<double>(value)}); }

// Seeded data of any dtype: uniform in [-10, 10] for floats, small whole numbers otherwise.
TestTensor dataOf(DType dtype, std::vector<int64_t> dims, uint32_t seed) {
  if (isFloatingPoint(dtype)) return randomTensor(dtype, std::move(dims), seed, -10.0, 10.0);
  return sampleTensor(dtype, std::move(dims), seed);
}

// Runs on the reference device and checks that its kernels ran (the node was not folded).
RunResult runReference(const std::string& text, const std::vector<TestTensor>& inputs, const std::string& op) {
  RunResult result = runGraph(text, inputs, 1, reference());
  EXPECT_TRUE(usesKernel(result, "reference:" + op)) << op << " did not run on a reference kernel:\n" << text;
  return result;
}

// The same graph on both devices gives the same outputs, element for element.
void expectSameAsCpu(const std::string& text, const std::vector<TestTensor>& inputs, const std::string& op,
                     const std::string& what) {
  RunResult expected = runGraph(text, inputs, 2, cpu());
  RunResult actual = runReference(text, inputs, op);
  ASSERT_EQ(actual.outputs.size(), expected.outputs.size()) << what;
  for (size_t k = 0; k < expected.outputs.size(); ++k) {
    expectEqual(actual.outputs[k], expected.outputs[k], what + " output " + std::to_string(k));
  }
}

// `device`'s kernel for the first node of `graph_text`, every input a run-time operand, run
// on one thread (runKernelDirectly): for ops the build always folds (Shape, Size) and for
// operands that are otherwise constants.
std::vector<TestTensor> runDirectly(const Device& device, const std::string& graph_text,
                                    const std::vector<TestTensor>& inputs, const std::vector<TestTensor>& output_shapes) {
  return runKernelDirectly(graph_text, inputs, {}, output_shapes, 1, 0, device);
}

// runDirectly on both devices agrees.
void expectDirectSameAsCpu(const std::string& text, const std::vector<TestTensor>& inputs,
                           const std::vector<TestTensor>& output_shapes, const std::string& what) {
  std::vector<TestTensor> expected = runDirectly(cpu(), text, inputs, output_shapes);
  std::vector<TestTensor> actual = runDirectly(reference(), text, inputs, output_shapes);
  for (size_t k = 0; k < expected.size(); ++k) expectEqual(actual[k], expected[k], what + " output " + std::to_string(k));
}

// The message of the Error a reference build or run raises, or "no error".
std::string referenceErrorOf(const std::string& text, const std::vector<TestTensor>& inputs) {
  try {
    runGraph(text, inputs, 1, reference());
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

std::string typesLabel(DType dtype, const std::string& rest = "") { return dtypeLabel(dtype) + (rest.empty() ? "" : " " + rest); }

// ---- Coverage ----------------------------------------------------------------------------

TEST(ReferenceTensorCoverage, EveryShapeIndexingAndGeneratorOpHasAKernel) {
  const char* ops[] = {"Concat",  "ConstantOfShape", "DepthToSpace", "Expand",    "EyeLike",      "Flatten",
                       "Gather",  "GatherElements",  "GatherND",     "NonZero",   "OneHot",       "Pad",
                       "Range",   "Reshape",         "ScatterElements", "ScatterND", "Shape",     "Size",
                       "Slice",   "SpaceToDepth",    "Split",        "Squeeze",   "Tile",         "Transpose",
                       "Trilu",   "Unsqueeze"};
  for (const char* op : ops) EXPECT_TRUE(reference().kernels().has(op)) << op;
}

TEST(ReferenceTensorCoverage, SixteenBitFloatsAreNotTaken) {
  TestTensor x = sampleTensor(DType::F16, {2, 3}, 1);
  std::string message = referenceErrorOf(graphText({{"x", &x}}, "  %y = Transpose(%x)\n", "%y"), {x});
  EXPECT_NE(message.find("Transpose"), std::string::npos) << message;
  EXPECT_NE(message.find("f16"), std::string::npos) << message;
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------------------

TEST(ReferenceTensorRelabel, HandWorked) {
  TestTensor x = tensorOf(DType::I32, {2, 1, 3}, {0, 1, 2, 3, 4, 5});
  std::string body = constantLine("shape", i64s({3, -1})) + constantLine("axes", i64s({1})) +
                     constantLine("new_axes", i64s({0, -1})) +
                     "  %r = Reshape(%x, %shape)\n"
                     "  %f = Flatten(%x) {axis = -1}\n"
                     "  %s = Squeeze(%x, %axes)\n"
                     "  %u = Unsqueeze(%x, %new_axes)\n";
  std::string text = graphText({{"x", &x}}, body, "%r, %f, %s, %u");
  RunResult result = runReference(text, {x}, "Reshape");
  expectEqual(result.outputs[0], tensorOf(DType::I32, {3, 2}, x.values), "reshape");
  expectEqual(result.outputs[1], tensorOf(DType::I32, {2, 3}, x.values), "flatten");
  expectEqual(result.outputs[2], tensorOf(DType::I32, {2, 3}, x.values), "squeeze");
  expectEqual(result.outputs[3], tensorOf(DType::I32, {1, 2, 1, 3, 1}, x.values), "unsqueeze");
  EXPECT_TRUE(usesKernel(result, "reference:Flatten"));
  EXPECT_TRUE(usesKernel(result, "reference:Squeeze"));
  EXPECT_TRUE(usesKernel(result, "reference:Unsqueeze"));
}

TEST(ReferenceTensorRelabel, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {2, 1, 3, 4}, 7);
    std::string body = constantLine("shape", i64s({0, -1, 4})) + constantLine("axes", i64s({1})) +
                       constantLine("new_axes", i64s({0, 3})) + "  %r = Reshape(%x, %shape)\n  %f = Flatten(%x) {axis = 2}\n"
                       "  %s = Squeeze(%x, %axes)\n  %u = Unsqueeze(%x, %new_axes)\n";
    expectSameAsCpu(graphText({{"x", &x}}, body, "%r, %f, %s, %u"), {x}, "Reshape", typesLabel(dtype));
  }
  TestTensor empty = dataOf(DType::F32, {0, 3}, 1);
  expectSameAsCpu(graphText({{"x", &empty}}, constantLine("shape", i64s({3, 0})) + "  %r = Reshape(%x, %shape) {allowzero = 1}\n", "%r"),
                  {empty}, "Reshape", "empty");
}

// ---- Transpose, Expand, Tile, DepthToSpace, SpaceToDepth ---------------------------------

TEST(ReferenceTensorTranspose, HandWorked) {
  TestTensor x = tensorOf(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  RunResult result = runReference(graphText({{"x", &x}}, "  %y = Transpose(%x)\n", "%y"), {x}, "Transpose");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {3, 2}, {0, 3, 1, 4, 2, 5}), "default perm reverses");
  // [1, 2, 2] with perm [2, 0, 1]: y[k, i, j] = x[i, j, k].
  TestTensor z = tensorOf(DType::I64, {1, 2, 2}, {1, 2, 3, 4});
  result = runReference(graphText({{"z", &z}}, "  %y = Transpose(%z) {perm = [2, 0, 1]}\n", "%y"), {z}, "Transpose");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {2, 1, 2}, {1, 3, 2, 4}), "perm [2, 0, 1]");
}

TEST(ReferenceTensorTranspose, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {3, 4, 5, 2}, 3);
    for (const char* perm : {"[0, 2, 1, 3]", "[3, 2, 1, 0]", "[1, 3, 0, 2]", "[0, 2, -3, 3]"}) {
      std::string body = std::string("  %y = Transpose(%x) {perm = ") + perm + "}\n";
      expectSameAsCpu(graphText({{"x", &x}}, body, "%y"), {x}, "Transpose", typesLabel(dtype, perm));
    }
  }
}

TEST(ReferenceTensorExpandTile, HandWorked) {
  TestTensor x = tensorOf(DType::U8, {3, 1}, {1, 2, 3});
  RunResult result =
      runReference(graphText({{"x", &x}}, constantLine("s", i64s({2, 1, 2})) + "  %y = Expand(%x, %s)\n", "%y"), {x}, "Expand");
  expectEqual(result.outputs[0], tensorOf(DType::U8, {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}), "expand");
  TestTensor row = tensorOf(DType::Bool, {1, 2}, {1, 0});
  result = runReference(graphText({{"x", &row}}, constantLine("r", i64s({2, 2})) + "  %y = Tile(%x, %r)\n", "%y"), {row}, "Tile");
  expectEqual(result.outputs[0], tensorOf(DType::Bool, {2, 4}, {1, 0, 1, 0, 1, 0, 1, 0}), "tile");
}

TEST(ReferenceTensorExpandTile, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {3, 1, 4}, 5);
    std::string body = constantLine("s", i64s({2, 1, 5, 1})) + constantLine("r", i64s({2, 3, 1})) +
                       constantLine("none", i64s({0, 1, 1})) +
                       "  %e = Expand(%x, %s)\n  %t = Tile(%x, %r)\n  %z = Tile(%x, %none)\n";
    expectSameAsCpu(graphText({{"x", &x}}, body, "%e, %t, %z"), {x}, "Tile", typesLabel(dtype));
  }
}

TEST(ReferenceTensorDepthSpace, HandWorked) {
  // [1, 8, 1, 1] holding 0..7, blocksize 2: DCR reads channel (i * 2 + j) * 2 + c, CRD reads
  // channel c * 4 + i * 2 + j for output [0, c, i, j].
  TestTensor x = tensorOf(DType::F64, {1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  RunResult result = runReference(
      graphText({{"x", &x}}, "  %d = DepthToSpace(%x) {blocksize = 2}\n  %c = DepthToSpace(%x) {blocksize = 2, mode = \"CRD\"}\n",
                "%d, %c"),
      {x}, "DepthToSpace");
  expectEqual(result.outputs[0], tensorOf(DType::F64, {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}), "DCR");
  expectEqual(result.outputs[1], tensorOf(DType::F64, {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), "CRD");
  // SpaceToDepth of [1, 2, 2, 2] [[0, 1], [2, 3]], [[4, 5], [6, 7]]: DCR puts block (i, j) of
  // channel c at channel (i * 2 + j) * 2 + c.
  TestTensor s = tensorOf(DType::I8, {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  result = runReference(
      graphText({{"s", &s}}, "  %d = SpaceToDepth(%s) {blocksize = 2}\n  %c = SpaceToDepth(%s) {blocksize = 2, mode = \"CRD\"}\n",
                "%d, %c"),
      {s}, "SpaceToDepth");
  expectEqual(result.outputs[0], tensorOf(DType::I8, {1, 8, 1, 1}, {0, 4, 1, 5, 2, 6, 3, 7}), "SpaceToDepth DCR");
  expectEqual(result.outputs[1], tensorOf(DType::I8, {1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7}), "SpaceToDepth CRD");
}

TEST(ReferenceTensorDepthSpace, SameAsCpuAndRoundTrips) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {2, 18, 2, 3}, 9);
    for (const char* mode : {"DCR", "CRD"}) {
      std::string attrs = std::string(" {blocksize = 3, mode = \"") + mode + "\"}\n";
      std::string body = "  %d = DepthToSpace(%x)" + attrs + "  %s = SpaceToDepth(%d)" + attrs;
      std::string text = graphText({{"x", &x}}, body, "%d, %s");
      expectSameAsCpu(text, {x}, "SpaceToDepth", typesLabel(dtype, mode));
      expectEqual(runGraph(text, {x}, 1, reference()).outputs[1], x, typesLabel(dtype, mode) + " round trip");
    }
  }
}

// ---- Concat and Split ----------------------------------------------------------------------

TEST(ReferenceTensorConcatSplit, HandWorked) {
  TestTensor a = tensorOf(DType::F32, {2, 1}, {1, 2});
  TestTensor b = tensorOf(DType::F32, {2, 2}, {3, 4, 5, 6});
  RunResult result = runReference(graphText({{"a", &a}, {"b", &b}}, "  %y = Concat(%a, %b) {axis = -1}\n", "%y"), {a, b}, "Concat");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {2, 3}, {1, 3, 4, 2, 5, 6}), "concat");

  TestTensor x = tensorOf(DType::I16, {5}, {1, 2, 3, 4, 5});
  result = runReference(graphText({{"x", &x}}, constantLine("sizes", i64s({1, 0, 4})) + "  %p, %q, %r = Split(%x, %sizes)\n",
                                  "%p, %q, %r"),
                        {x}, "Split");
  expectEqual(result.outputs[0], tensorOf(DType::I16, {1}, {1}), "split 0");
  expectEqual(result.outputs[1], tensorOf(DType::I16, {0}, {}), "split 1 (empty)");
  expectEqual(result.outputs[2], tensorOf(DType::I16, {4}, {2, 3, 4, 5}), "split 2");
  // num_outputs = 2 on 5 elements: chunks of ceil(5 / 2) = 3, the rest last.
  result = runReference(graphText({{"x", &x}}, "  %p, %q = Split(%x) {num_outputs = 2}\n", "%p, %q"), {x}, "Split");
  expectEqual(result.outputs[0], tensorOf(DType::I16, {3}, {1, 2, 3}), "num_outputs 0");
  expectEqual(result.outputs[1], tensorOf(DType::I16, {2}, {4, 5}), "num_outputs 1");
}

TEST(ReferenceTensorConcatSplit, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<int64_t> a{2, 3, 4}, b{2, 3, 4}, c{2, 3, 4};
      b[axis] = 1;
      c[axis] = 0;
      std::vector<TestTensor> parts = {dataOf(dtype, a, 1), dataOf(dtype, b, 2), dataOf(dtype, c, 3)};
      std::string body = "  %y = Concat(%a, %b, %c) {axis = " + std::to_string(axis - 3) + "}\n" +
                         constantLine("sizes", i64s({1, a[axis]})) + "  %p, %q = Split(%y, %sizes) {axis = " +
                         std::to_string(axis) + "}\n  %r, %s, %t = Split(%y) {axis = " + std::to_string(axis) +
                         ", num_outputs = 3}\n";
      std::string text = graphText({{"a", &parts[0]}, {"b", &parts[1]}, {"c", &parts[2]}}, body, "%y, %p, %q, %r, %s, %t");
      expectSameAsCpu(text, parts, "Split", typesLabel(dtype, "axis " + std::to_string(axis)));
      EXPECT_TRUE(usesKernel(runGraph(text, parts, 1, reference()), "reference:Concat"));
    }
  }
}

// ---- Slice ---------------------------------------------------------------------------------

std::string sliceBody(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                      const std::vector<int64_t>& steps) {
  return constantLine("s", i64s(starts)) + constantLine("e", i64s(ends)) + constantLine("a", i64s(axes)) +
         constantLine("t", i64s(steps)) + "  %y = Slice(%x, %s, %e, %a, %t)\n";
}

TEST(ReferenceTensorSlice, HandWorkedClampingAndNegativeSteps) {
  TestTensor x = tensorOf(DType::F32, {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  struct Case {
    int64_t start, end, step;
    std::vector<double> expected;
  };
  const Case cases[] = {
      {-3, int64_t{1} << 62, 1, {7, 8, 9}},  // a negative start counts from the end
      {8, 1, -2, {8, 6, 4, 2}},        // negative step
      {100, -100, -3, {9, 6, 3, 0}},   // a negative step clamps start to n - 1, end to -1
      {-100, 3, 2, {0, 2}},            // start clamps to 0
      {5, 2, 1, {}},                   // empty
      {-1, -(int64_t{1} << 62), -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
  };
  for (const Case& c : cases) {
    std::string text = graphText({{"x", &x}}, sliceBody({c.start}, {c.end}, {0}, {c.step}), "%y");
    RunResult result = runReference(text, {x}, "Slice");
    std::string what = std::to_string(c.start) + ":" + std::to_string(c.end) + ":" + std::to_string(c.step);
    expectEqual(result.outputs[0], tensorOf(DType::F32, {static_cast<int64_t>(c.expected.size())}, c.expected), what);
  }
  // 2-D, the last axis named as -1, the first one untouched.
  TestTensor m = tensorOf(DType::I64, {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  RunResult result = runReference(graphText({{"x", &m}}, sliceBody({3}, {0}, {-1}, {-2}), "%y"), {m}, "Slice");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {2, 2}, {3, 1, 7, 5}), "2-D");
}

TEST(ReferenceTensorSlice, RunTimeOperands) {
  // i32 operands read when the kernel runs; axes and steps absent.
  TestTensor x = tensorOf(DType::I8, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  TestTensor starts = tensorOf(DType::I32, {2}, {1, -3}), ends = tensorOf(DType::I32, {2}, {3, 100});
  std::vector<TestTensor> out = runDirectly(reference(), "graph @g(%x: i8[3,4], %s: i32[2], %e: i32[2]) {\n  %y = Slice(%x, %s, %e)\n  return %y\n}",
                                            {x, starts, ends}, {TestTensor{DType::I8, {2, 3}, {}}});
  expectEqual(out[0], tensorOf(DType::I8, {2, 3}, {5, 6, 7, 9, 10, 11}), "run time");
  // A slice other than the planned output is refused naming the node.
  try {
    runDirectly(reference(), "graph @g(%x: i8[3,4], %s: i32[2], %e: i32[2]) {\n  %y = Slice(%x, %s, %e)\n  return %y\n}",
                {x, starts, ends}, {TestTensor{DType::I8, {2, 2}, {}}});
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("(Slice): the slice takes 3 elements along axis 1"), std::string::npos)
        << error.what();
  }
}

TEST(ReferenceTensorSlice, SameAsCpu) {
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const Case cases[] = {
      {{1, 0}, {3, 5}, {0, 2}, {1, 2}},
      {{-1, -2}, {-100, 0}, {1, -1}, {-1, -2}},
      {{4, 2, 1}, {0, 100, 2}, {2, 0, 1}, {-3, 1, 1}},
      {{2}, {2}, {0}, {1}},  // empty
  };
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {4, 3, 6}, 11);
    for (const Case& c : cases) {
      expectSameAsCpu(graphText({{"x", &x}}, sliceBody(c.starts, c.ends, c.axes, c.steps), "%y"), {x}, "Slice",
                      typesLabel(dtype));
    }
  }
  // Run-time operands on both devices.
  TestTensor x = dataOf(DType::F64, {4, 3, 6}, 12);
  expectDirectSameAsCpu(
      "graph @g(%x: f64[4,3,6], %s: i64[2], %e: i64[2], %a: i64[2], %t: i64[2]) {\n  %y = Slice(%x, %s, %e, %a, %t)\n  return %y\n}",
      {x, i64s({-1, 1}), i64s({0, 6}), i64s({0, 2}), i64s({-2, 2})}, {TestTensor{DType::F64, {2, 3, 3}, {}}}, "run time");
}

// ---- Pad -----------------------------------------------------------------------------------

TEST(ReferenceTensorPad, HandWorkedEveryMode) {
  TestTensor x = tensorOf(DType::F32, {3}, {1, 2, 3});
  TestTensor nine = tensorOf(DType::F32, {}, {9});
  const std::pair<const char*, std::vector<double>> cases[] = {
      {"constant", {9, 9, 1, 2, 3, 9, 9, 9}},
      {"reflect", {3, 2, 1, 2, 3, 2, 1, 2}},  // numpy's reflect, repeating past the edges
      {"edge", {1, 1, 1, 2, 3, 3, 3, 3}},
      {"wrap", {2, 3, 1, 2, 3, 1, 2, 3}},
  };
  for (const auto& [mode, expected] : cases) {
    std::string body = constantLine("pads", i64s({2, 3})) + "  %y = Pad(%x, %pads, %v) {mode = \"" + mode + "\"}\n";
    RunResult result = runReference(graphText({{"x", &x}, {"v", &nine}}, body, "%y"), {x, nine}, "Pad");
    expectEqual(result.outputs[0], tensorOf(DType::F32, {8}, expected), mode);
  }
  // Negative pads crop; no constant_value means 0.
  RunResult result = runReference(graphText({{"x", &x}}, constantLine("pads", i64s({-1, 1})) + "  %y = Pad(%x, %pads)\n", "%y"),
                                  {x}, "Pad");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {3}, {2, 3, 0}), "crop");
  // 'axes' names the padded axes; pads are [begins..., ends...] for them.
  TestTensor m = tensorOf(DType::I32, {2, 2}, {1, 2, 3, 4});
  result = runReference(graphText({{"x", &m}}, constantLine("pads", i64s({1, 2})) + constantLine("axes", i64s({-1})) +
                                                  "  %y = Pad(%x, %pads, _, %axes) {mode = \"edge\"}\n",
                                  "%y"),
                        {m}, "Pad");
  expectEqual(result.outputs[0], tensorOf(DType::I32, {2, 5}, {1, 1, 2, 2, 2, 3, 3, 4, 4, 4}), "axes");
}

TEST(ReferenceTensorPad, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {3, 2, 4}, 13);
    TestTensor value = dataOf(dtype, {}, 14);
    for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
      std::string body = constantLine("pads", i64s({1, 3, 0, 2, 5, -1})) + "  %y = Pad(%x, %pads, %v) {mode = \"" + mode +
                         "\"}\n" + constantLine("pads2", i64s({2, 0, 0, 1})) + constantLine("axes", i64s({1, -1})) +
                         "  %z = Pad(%x, %pads2, _, %axes) {mode = \"" + mode + "\"}\n";
      expectSameAsCpu(graphText({{"x", &x}, {"v", &value}}, body, "%y, %z"), {x, value}, "Pad", typesLabel(dtype, mode));
    }
  }
  TestTensor x = dataOf(DType::F64, {3, 4}, 15);
  expectDirectSameAsCpu("graph @g(%x: f64[3,4], %p: i64[4]) {\n  %y = Pad(%x, %p) {mode = \"reflect\"}\n  return %y\n}",
                        {x, i64s({2, 1, 0, 3})}, {TestTensor{DType::F64, {5, 8}, {}}}, "run time");
}

// ---- Gather, GatherElements, GatherND ------------------------------------------------------

TEST(ReferenceTensorGather, HandWorked) {
  TestTensor data = tensorOf(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  TestTensor rows = tensorOf(DType::I64, {1, 2}, {0, -1});
  RunResult result = runReference(graphText({{"d", &data}, {"i", &rows}}, "  %y = Gather(%d, %i)\n", "%y"), {data, rows}, "Gather");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {1, 2, 2}, {1, 2, 5, 6}), "axis 0");
  TestTensor column = tensorOf(DType::I32, {}, {1});
  result = runReference(graphText({{"d", &data}, {"i", &column}}, "  %y = Gather(%d, %i) {axis = -1}\n", "%y"), {data, column},
                        "Gather");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {3}, {2, 4, 6}), "scalar index on axis 1");

  // ONNX's GatherElements example, with a negative index.
  TestTensor square = tensorOf(DType::I64, {2, 2}, {1, 2, 3, 4});
  TestTensor picks = tensorOf(DType::I64, {2, 2}, {0, 0, -1, 0});
  result = runReference(graphText({{"d", &square}, {"i", &picks}}, "  %y = GatherElements(%d, %i) {axis = 1}\n", "%y"),
                        {square, picks}, "GatherElements");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {2, 2}, {1, 1, 4, 3}), "GatherElements");

  // ONNX's GatherND examples.
  TestTensor d2 = tensorOf(DType::I32, {2, 2}, {0, 1, 2, 3});
  TestTensor pairs = tensorOf(DType::I64, {2, 2}, {0, 0, 1, 1});
  TestTensor singles = tensorOf(DType::I64, {2, 1}, {1, -2});
  result = runReference(graphText({{"d", &d2}, {"p", &pairs}, {"s", &singles}},
                                  "  %y = GatherND(%d, %p)\n  %z = GatherND(%d, %s)\n", "%y, %z"),
                        {d2, pairs, singles}, "GatherND");
  expectEqual(result.outputs[0], tensorOf(DType::I32, {2}, {0, 3}), "element tuples");
  expectEqual(result.outputs[1], tensorOf(DType::I32, {2, 2}, {2, 3, 0, 1}), "row tuples");
  TestTensor d3 = tensorOf(DType::I32, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  TestTensor batched = tensorOf(DType::I64, {2, 1}, {1, 0});
  result = runReference(graphText({{"d", &d3}, {"i", &batched}}, "  %y = GatherND(%d, %i) {batch_dims = 1}\n", "%y"),
                        {d3, batched}, "GatherND");
  expectEqual(result.outputs[0], tensorOf(DType::I32, {2, 2}, {2, 3, 4, 5}), "batch_dims 1");
}

// Indices in [-n, n) for the axes a gather reads.
TestTensor indicesFor(DType dtype, std::vector<int64_t> dims, int64_t n, uint32_t seed) {
  TestTensor indices{dtype, std::move(dims), {}};
  std::mt19937 random(seed);
  std::uniform_int_distribution<int64_t> pick(-n, n - 1);
  for (int64_t i = 0; i < indices.count(); ++i) indices.values.push_back(static_cast<double>(pick(random)));
  return indices;
}

TEST(ReferenceTensorGather, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor data = dataOf(dtype, {4, 5, 3}, 21);
    for (DType index_type : {DType::I64, DType::I32}) {
      for (int axis = 0; axis < 3; ++axis) {
        TestTensor indices = indicesFor(index_type, {2, 3}, data.dims[axis], 22 + axis);
        std::string label = typesLabel(dtype, dtypeLabel(index_type) + " axis " + std::to_string(axis));
        expectSameAsCpu(graphText({{"d", &data}, {"i", &indices}}, "  %y = Gather(%d, %i) {axis = " + std::to_string(axis) + "}\n", "%y"),
                        {data, indices}, "Gather", label);
        std::vector<int64_t> dims = {2, 3, 3};
        dims[axis] = 6;
        TestTensor elements = indicesFor(index_type, dims, data.dims[axis], 23 + axis);
        expectSameAsCpu(graphText({{"d", &data}, {"i", &elements}},
                                  "  %y = GatherElements(%d, %i) {axis = " + std::to_string(axis - 3) + "}\n", "%y"),
                        {data, elements}, "GatherElements", label);
      }
    }
    struct NdCase {
      std::vector<int64_t> indices;
      int batch_dims;
    };
    for (const NdCase& c : {NdCase{{3, 2}, 0}, NdCase{{2, 2, 3}, 0}, NdCase{{4, 1}, 1}, NdCase{{4, 2, 2}, 1}}) {
      TestTensor indices{DType::I64, c.indices, {}};
      const int64_t depth = c.indices.back();
      std::mt19937 random(24);
      for (int64_t i = 0; i < indices.count(); ++i) {
        const int64_t n = data.dims[c.batch_dims + i % depth];
        indices.values.push_back(static_cast<double>(std::uniform_int_distribution<int64_t>(-n, n - 1)(random)));
      }
      std::string body = "  %y = GatherND(%d, %i) {batch_dims = " + std::to_string(c.batch_dims) + "}\n";
      expectSameAsCpu(graphText({{"d", &data}, {"i", &indices}}, body, "%y"), {data, indices}, "GatherND",
                      typesLabel(dtype, indices.type()));
    }
  }
}

TEST(ReferenceTensorGather, OutOfRangeIndicesRaiseNamingTheNode) {
  TestTensor data = sampleTensor(DType::F32, {5, 2}, 4);
  struct Case {
    std::string body, message;
    TestTensor indices;
  };
  const Case cases[] = {
      {"  %y = Gather(%d, %i)\n", "(Gather): index 5 is out of range for the gathered axis of size 5 (valid: [-5, 4])",
       tensorOf(DType::I64, {3}, {0, 5, 1})},
      {"  %y = Gather(%d, %i)\n", "(Gather): index -6 is out of range", tensorOf(DType::I32, {1}, {-6})},
      {"  %y = GatherElements(%d, %i) {axis = 1}\n", "(GatherElements): index 2 is out of range for the indexed axis of size 2",
       tensorOf(DType::I64, {1, 2}, {0, 2})},
      {"  %y = GatherND(%d, %i)\n", "(GatherND): index -3 is out of range for an indexed axis of size 2",
       tensorOf(DType::I64, {1, 2}, {0, -3})},
  };
  for (const Case& c : cases) {
    std::string message = referenceErrorOf(graphText({{"d", &data}, {"i", &c.indices}}, c.body, "%y"), {data, c.indices});
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

// ---- ScatterElements, ScatterND ------------------------------------------------------------

std::string scatterBody(const std::string& op, const std::string& reduction, int axis = 0) {
  std::string attrs = "reduction = \"" + reduction + "\"";
  if (op == "ScatterElements") attrs += ", axis = " + std::to_string(axis);
  return "  %y = " + op + "(%d, %i, %u) {" + attrs + "}\n";
}

TEST(ReferenceTensorScatter, HandWorked) {
  // ONNX's ScatterElements example (axis 0).
  TestTensor zeros = tensorOf(DType::F32, {3, 3}, std::vector<double>(9, 0.0));
  TestTensor indices = tensorOf(DType::I64, {2, 3}, {1, 0, 2, 0, 2, 1});
  TestTensor updates = tensorOf(DType::F32, {2, 3}, {1.0, 1.1, 1.2, 2.0, 2.1, 2.2});
  RunResult result = runReference(graphText({{"d", &zeros}, {"i", &indices}, {"u", &updates}}, scatterBody("ScatterElements", "none"), "%y"),
                                  {zeros, indices, updates}, "ScatterElements");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {3, 3}, {2.0, 1.1, 0, 1.0, 0, 2.2, 0, 2.1, 1.2}), "example");

  // Repeated indices combine in order with each reduction; a negative index counts from the end.
  TestTensor row = tensorOf(DType::I32, {1, 5}, {1, 2, 3, 4, 5});
  TestTensor twice = tensorOf(DType::I32, {1, 3}, {1, -4, 3});
  TestTensor values = tensorOf(DType::I32, {1, 3}, {10, -20, 7});
  const std::pair<const char*, std::vector<double>> reductions[] = {
      {"none", {1, -20, 3, 7, 5}}, {"add", {1, -8, 3, 11, 5}}, {"mul", {1, -400, 3, 28, 5}},
      {"max", {1, 10, 3, 7, 5}},   {"min", {1, -20, 3, 4, 5}},
  };
  for (const auto& [reduction, expected] : reductions) {
    result = runReference(graphText({{"d", &row}, {"i", &twice}, {"u", &values}}, scatterBody("ScatterElements", reduction, -1), "%y"),
                          {row, twice, values}, "ScatterElements");
    expectEqual(result.outputs[0], tensorOf(DType::I32, {1, 5}, expected), std::string("elements ") + reduction);
  }

  // ONNX's ScatterND example, then repeated tuples with add, and slices of rows.
  TestTensor data = tensorOf(DType::I64, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  TestTensor tuples = tensorOf(DType::I64, {4, 1}, {4, 3, 1, 7});
  TestTensor nd_updates = tensorOf(DType::I64, {4}, {9, 10, 11, 12});
  result = runReference(graphText({{"d", &data}, {"i", &tuples}, {"u", &nd_updates}}, scatterBody("ScatterND", "none"), "%y"),
                        {data, tuples, nd_updates}, "ScatterND");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {8}, {1, 11, 3, 10, 9, 6, 7, 12}), "ScatterND example");
  TestTensor repeated = tensorOf(DType::I64, {3, 1}, {2, -6, 0});
  TestTensor repeated_updates = tensorOf(DType::I64, {3}, {100, 1000, 10});
  result = runReference(graphText({{"d", &data}, {"i", &repeated}, {"u", &repeated_updates}}, scatterBody("ScatterND", "add"), "%y"),
                        {data, repeated, repeated_updates}, "ScatterND");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {8}, {11, 2, 1103, 4, 5, 6, 7, 8}), "ScatterND add");
  TestTensor m = tensorOf(DType::F64, {3, 2}, {1, 2, 3, 4, 5, 6});
  TestTensor row_tuple = tensorOf(DType::I64, {1, 1}, {-1});
  TestTensor row_update = tensorOf(DType::F64, {1, 2}, {0.5, 10});
  result = runReference(graphText({{"d", &m}, {"i", &row_tuple}, {"u", &row_update}}, scatterBody("ScatterND", "mul"), "%y"),
                        {m, row_tuple, row_update}, "ScatterND");
  expectEqual(result.outputs[0], tensorOf(DType::F64, {3, 2}, {1, 2, 3, 4, 2.5, 60}), "ScatterND rows mul");

  // Booleans stay booleans: add is "or", mul is "and".
  TestTensor flags = tensorOf(DType::Bool, {4}, {1, 0, 1, 0});
  TestTensor all = tensorOf(DType::I64, {4, 1}, {0, 1, 2, 3});
  TestTensor bits = tensorOf(DType::Bool, {4}, {1, 1, 0, 0});
  for (const auto& [reduction, expected] :
       {std::pair<const char*, std::vector<double>>{"add", {1, 1, 1, 0}}, {"mul", {1, 0, 0, 0}}}) {
    result = runReference(graphText({{"d", &flags}, {"i", &all}, {"u", &bits}}, scatterBody("ScatterND", reduction), "%y"),
                          {flags, all, bits}, "ScatterND");
    expectEqual(result.outputs[0], tensorOf(DType::Bool, {4}, expected), std::string("bool ") + reduction);
  }
}

// Max and min propagate NaN (np.maximum / np.minimum in ONNX's reference implementation).
TEST(ReferenceTensorScatter, MaxAndMinPropagateNaN) {
  TestTensor data = tensorOf(DType::F32, {3}, {NAN, 1, 2});
  TestTensor indices = tensorOf(DType::I64, {3, 1}, {0, 1, 2});
  TestTensor updates = tensorOf(DType::F32, {3}, {5, NAN, 1});
  for (const auto& [reduction, last] : {std::pair<const char*, double>{"max", 2}, {"min", 1}}) {
    RunResult result = runReference(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, scatterBody("ScatterND", reduction), "%y"),
                                    {data, indices, updates}, "ScatterND");
    expectEqual(result.outputs[0], tensorOf(DType::F32, {3}, {NAN, NAN, last}), reduction);
    expectSameAsCpu(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, scatterBody("ScatterND", reduction), "%y"),
                    {data, indices, updates}, "ScatterND", std::string("NaN ScatterND ") + reduction);
    TestTensor flat_indices = tensorOf(DType::I64, {3}, {0, 1, 2});
    expectSameAsCpu(
        graphText({{"d", &data}, {"i", &flat_indices}, {"u", &updates}}, scatterBody("ScatterElements", reduction), "%y"),
        {data, flat_indices, updates}, "ScatterElements", std::string("NaN ScatterElements ") + reduction);
  }
}

// Updates for a reduction; integer products stay small enough not to overflow.
TestTensor updatesFor(DType dtype, const std::string& reduction, std::vector<int64_t> dims, uint32_t seed) {
  TestTensor updates = dataOf(dtype, std::move(dims), seed);
  if (reduction == "mul" && !isFloatingPoint(dtype)) {
    for (double& v : updates.values) v = std::fmod(v, 3);
  }
  return updates;
}

TEST(ReferenceTensorScatter, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor data = dataOf(dtype, {4, 5, 3}, 31);
    for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
      for (int axis = 0; axis < 3; ++axis) {
        std::vector<int64_t> dims = {3, 4, 2};
        dims[axis] = 6;  // more updates than the axis holds: indices repeat
        TestTensor indices = indicesFor(DType::I32, dims, data.dims[axis], 32 + axis);
        TestTensor updates = updatesFor(dtype, reduction, dims, 33 + axis);
        expectSameAsCpu(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, scatterBody("ScatterElements", reduction, axis), "%y"),
                        {data, indices, updates}, "ScatterElements", typesLabel(dtype, std::string(reduction) + " axis " + std::to_string(axis)));
      }
      TestTensor tuples{DType::I64, {7, 2}, {}};
      std::mt19937 random(34);
      for (int64_t i = 0; i < tuples.count(); ++i) {
        const int64_t n = data.dims[i % 2];
        tuples.values.push_back(static_cast<double>(std::uniform_int_distribution<int64_t>(-n, n - 1)(random)));
      }
      TestTensor updates = updatesFor(dtype, reduction, {7, 3}, 35);
      expectSameAsCpu(graphText({{"d", &data}, {"i", &tuples}, {"u", &updates}}, scatterBody("ScatterND", reduction), "%y"),
                      {data, tuples, updates}, "ScatterND", typesLabel(dtype, reduction));
    }
  }
}

TEST(ReferenceTensorScatter, OutOfRangeIndicesRaiseNamingTheNode) {
  TestTensor data = sampleTensor(DType::F32, {3, 2}, 4);
  TestTensor bad_element = tensorOf(DType::I64, {1, 2}, {0, 3});
  TestTensor element_updates = sampleTensor(DType::F32, {1, 2}, 5);
  std::string message = referenceErrorOf(graphText({{"d", &data}, {"i", &bad_element}, {"u", &element_updates}},
                                                   scatterBody("ScatterElements", "none"), "%y"),
                                         {data, bad_element, element_updates});
  EXPECT_NE(message.find("(ScatterElements): index 3 is out of range for the indexed axis of size 3"), std::string::npos) << message;
  TestTensor bad_tuple = tensorOf(DType::I64, {1, 2}, {0, -3});
  TestTensor nd_updates = sampleTensor(DType::F32, {1}, 6);
  message = referenceErrorOf(graphText({{"d", &data}, {"i", &bad_tuple}, {"u", &nd_updates}}, scatterBody("ScatterND", "add"), "%y"),
                             {data, bad_tuple, nd_updates});
  EXPECT_NE(message.find("(ScatterND): index -3 is out of range for an indexed axis of size 2"), std::string::npos) << message;
}

// ---- OneHot, NonZero, Trilu ----------------------------------------------------------------

TEST(ReferenceTensorOneHot, HandWorked) {
  TestTensor indices = tensorOf(DType::I64, {4}, {0, -1, 3, 1});
  TestTensor values = tensorOf(DType::F32, {2}, {0, 5});
  std::string body = constantLine("depth", i64Scalar(3)) + "  %y = OneHot(%i, %depth, %v)\n  %z = OneHot(%i, %depth, %v) {axis = 0}\n";
  RunResult result = runReference(graphText({{"i", &indices}, {"v", &values}}, body, "%y, %z"), {indices, values}, "OneHot");
  // -1 is the last class; 3 is outside [-3, 3): a line of off values.
  expectEqual(result.outputs[0], tensorOf(DType::F32, {4, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0}), "axis -1");
  expectEqual(result.outputs[1], tensorOf(DType::F32, {3, 4}, {5, 0, 0, 0, 0, 0, 0, 5, 0, 5, 0, 0}), "axis 0");
  // Float indices and depth are truncated to integers.
  TestTensor float_indices = tensorOf(DType::F32, {2}, {1.75, -0.5});
  TestTensor labels = tensorOf(DType::Bool, {2}, {0, 1});
  body = constantLine("depth", tensorOf(DType::F64, {}, {2.5})) + "  %y = OneHot(%i, %depth, %v)\n";
  result = runReference(graphText({{"i", &float_indices}, {"v", &labels}}, body, "%y"), {float_indices, labels}, "OneHot");
  expectEqual(result.outputs[0], tensorOf(DType::Bool, {2, 2}, {0, 1, 1, 0}), "float indices");
}

TEST(ReferenceTensorOneHot, SameAsCpu) {
  for (DType value_type : kReferenceDTypes) {
    for (DType index_type : {DType::I64, DType::I32, DType::F32, DType::U8}) {
      TestTensor indices = indicesFor(index_type, {3, 4}, 5, 41);
      if (index_type == DType::U8) {
        for (double& v : indices.values) v = std::fabs(v);
      }
      TestTensor values = dataOf(value_type, {2}, 42);
      for (int axis : {-1, 0, 1}) {
        std::string body = constantLine("depth", i64s({4})) + "  %y = OneHot(%i, %depth, %v) {axis = " + std::to_string(axis) + "}\n";
        expectSameAsCpu(graphText({{"i", &indices}, {"v", &values}}, body, "%y"), {indices, values}, "OneHot",
                        typesLabel(value_type, dtypeLabel(index_type) + " axis " + std::to_string(axis)));
      }
    }
  }
}

TEST(ReferenceTensorNonZero, HandWorkedRunTimeAndFolded) {
  // NaN is non-zero, -0.0 is zero.
  TestTensor x = tensorOf(DType::F32, {2, 3}, {0, 1.5, 0, -2, -0.0, NAN});
  RunResult result = runReference(graphText({{"x", &x}}, "  %y = NonZero(%x)\n", "%y"), {x}, "NonZero");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {2, 3}, {0, 1, 1, 1, 0, 2}), "run-time count");
  TestTensor none = tensorOf(DType::I32, {2, 2}, {0, 0, 0, 0});
  result = runReference(graphText({{"x", &none}}, "  %y = NonZero(%x)\n", "%y"), {none}, "NonZero");
  expectEqual(result.outputs[0], tensorOf(DType::I64, {2, 0}, {}), "no non-zero");
  // A constant input folds through the reference kernel to its exact [rank, count].
  TestTensor unused = sampleTensor(DType::F32, {1}, 1);
  result = runGraph(graphText({{"unused", &unused}}, constantLine("x", x) + "  %y = NonZero(%x)\n", "%y"), {unused}, 1, reference());
  expectEqual(result.outputs[0], tensorOf(DType::I64, {2, 3}, {0, 1, 1, 1, 0, 2}), "folded");
  // A planned count the input does not have is refused.
  try {
    runDirectly(reference(), "graph @g(%x: f32[2,3]) {\n  %y = NonZero(%x)\n  return %y\n}", {x}, {TestTensor{DType::I64, {2, 2}, {}}});
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("(NonZero): the input has 3 non-zero elements, the output was planned for 2"),
              std::string::npos)
        << error.what();
  }
}

TEST(ReferenceTensorNonZero, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 4, 5}, {7}, {}, {2, 0}}) {
      TestTensor x = dataOf(dtype, dims, 51);
      for (size_t i = 0; i < x.values.size(); i += 2) x.values[i] = 0;  // zeros too
      expectSameAsCpu(graphText({{"x", &x}}, "  %y = NonZero(%x)\n", "%y"), {x}, "NonZero", typesLabel(dtype, x.type()));
    }
  }
}

TEST(ReferenceTensorTrilu, HandWorked) {
  TestTensor x = tensorOf(DType::I16, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  TestTensor k = i64Scalar(-1);
  std::string body = "  %u = Trilu(%x)\n  %l = Trilu(%x, %k) {upper = 0}\n  %v = Trilu(%x, %k)\n";
  RunResult result = runReference(graphText({{"x", &x}, {"k", &k}}, body, "%u, %l, %v"), {x, k}, "Trilu");
  expectEqual(result.outputs[0], tensorOf(DType::I16, {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9}), "upper k=0");
  expectEqual(result.outputs[1], tensorOf(DType::I16, {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0}), "lower k=-1");
  expectEqual(result.outputs[2], tensorOf(DType::I16, {3, 3}, {1, 2, 3, 4, 5, 6, 0, 8, 9}), "upper k=-1");
}

TEST(ReferenceTensorTrilu, SameAsCpu) {
  for (DType dtype : kReferenceDTypes) {
    TestTensor x = dataOf(dtype, {2, 4, 6}, 61);
    for (int64_t k : {-5, -1, 0, 2, 7}) {
      TestTensor kk = i64Scalar(k);
      std::string body = "  %u = Trilu(%x, %k)\n  %l = Trilu(%x, %k) {upper = 0}\n";
      expectSameAsCpu(graphText({{"x", &x}, {"k", &kk}}, body, "%u, %l"), {x, kk}, "Trilu",
                      typesLabel(dtype, "k=" + std::to_string(k)));
    }
  }
}

// ---- Generators ------------------------------------------------------------------------------

TEST(ReferenceTensorGenerators, ConstantOfShape) {
  const std::string text = "graph @g(%s: i64[2]) {\n  %y = ConstantOfShape(%s) {value = tensor<i32[1]> [-7]}\n  return %y\n}";
  std::vector<TestTensor> out = runDirectly(reference(), text, {i64s({2, 3})}, {TestTensor{DType::I32, {2, 3}, {}}});
  expectEqual(out[0], tensorOf(DType::I32, {2, 3}, std::vector<double>(6, -7)), "i32");
  out = runDirectly(reference(), "graph @g(%s: i64[1]) {\n  %y = ConstantOfShape(%s)\n  return %y\n}", {i64s({4})},
                    {TestTensor{DType::F32, {4}, {}}});
  expectEqual(out[0], tensorOf(DType::F32, {4}, {0, 0, 0, 0}), "default f32 zeros");
  // Folded at build (through the reference kernel) from a statically known shape; and run
  // directly on both devices.
  TestTensor x = sampleTensor(DType::F32, {2, 1, 3}, 1);
  for (const char* value : {"tensor<f64[1]> [2.5]", "tensor<bool[1]> [true]", "tensor<u8[1]> [200]", "tensor<i64[1]> [-3]"}) {
    std::string body = std::string("  %s = Shape(%x)\n  %y = ConstantOfShape(%s) {value = ") + value + "}\n";
    std::string text = graphText({{"x", &x}}, body, "%y");
    TestTensor expected = runGraph(text, {x}, 1, cpu()).outputs[0];
    expectEqual(runGraph(text, {x}, 1, reference()).outputs[0], expected, std::string(value) + " folded");
    expectDirectSameAsCpu("graph @g(%s: i64[3]) {\n  %y = ConstantOfShape(%s) {value = " + std::string(value) + "}\n  return %y\n}",
                          {i64s({2, 1, 3})}, {expected}, value);
  }
}

TEST(ReferenceTensorGenerators, EyeLike) {
  TestTensor x = sampleTensor(DType::F32, {3, 4}, 2);
  RunResult result = runReference(graphText({{"x", &x}}, "  %y = EyeLike(%x) {k = 1}\n  %z = EyeLike(%x) {dtype = bool, k = -2}\n", "%y, %z"),
                                  {x}, "EyeLike");
  expectEqual(result.outputs[0], tensorOf(DType::F32, {3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}), "k=1");
  expectEqual(result.outputs[1], tensorOf(DType::Bool, {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}), "bool k=-2");
  for (DType dtype : kReferenceDTypes) {
    for (int64_t k : {-3, 0, 2, 9}) {
      TestTensor in = dataOf(dtype, {4, 6}, 3);
      std::string body = "  %y = EyeLike(%x) {k = " + std::to_string(k) + "}\n  %z = EyeLike(%x) {dtype = i64, k = " +
                         std::to_string(k) + "}\n";
      expectSameAsCpu(graphText({{"x", &in}}, body, "%y, %z"), {in}, "EyeLike", typesLabel(dtype, "k=" + std::to_string(k)));
    }
  }
}

TEST(ReferenceTensorGenerators, Range) {
  struct Case {
    DType dtype;
    double start, limit, delta;
    std::vector<double> expected;
  };
  const Case cases[] = {
      {DType::F32, 0.5, 1.75, 0.25, {0.5, 0.75, 1.0, 1.25, 1.5}},
      {DType::F64, 10, 5.5, -1.5, {10, 8.5, 7}},
      {DType::I64, -4, 9, 3, {-4, -1, 2, 5, 8}},
      {DType::I32, 5, 5, 1, {}},
      {DType::I16, 20, 0, -7, {20, 13, 6}},
      {DType::I32, 0, 10, -1, {}},  // the wrong direction gives nothing
  };
  for (const Case& c : cases) {
    TestTensor start = tensorOf(c.dtype, {}, {c.start}), limit = tensorOf(c.dtype, {}, {c.limit}), delta = tensorOf(c.dtype, {}, {c.delta});
    const std::string type = start.type();
    const std::string text = "graph @g(%a: " + type + ", %b: " + type + ", %c: " + type + ") {\n  %y = Range(%a, %b, %c)\n  return %y\n}";
    const TestTensor shape{c.dtype, {static_cast<int64_t>(c.expected.size())}, {}};
    std::vector<TestTensor> out = runDirectly(reference(), text, {start, limit, delta}, {shape});
    const std::string what = dtypeLabel(c.dtype) + " " + std::to_string(c.start) + ":" + std::to_string(c.limit);
    expectEqual(out[0], tensorOf(c.dtype, shape.dims, c.expected), what);
    expectDirectSameAsCpu(text, {start, limit, delta}, {shape}, what);
    // Constant operands fold through the same kernel.
    std::string body = constantLine("a", start) + constantLine("b", limit) + constantLine("c", delta) + "  %y = Range(%a, %b, %c)\n";
    TestTensor unused = sampleTensor(DType::F32, {1}, 1);
    expectEqual(runGraph(graphText({{"unused", &unused}}, body, "%y"), {unused}, 1, reference()).outputs[0],
                tensorOf(c.dtype, shape.dims, c.expected), what + " folded");
  }
  // Random f32/f64 ranges against the CPU device.
  std::mt19937 random(71);
  std::uniform_real_distribution<double> uniform(-50, 50);
  for (DType dtype : {DType::F32, DType::F64}) {
    for (int round = 0; round < 20; ++round) {
      TestTensor start = tensorOf(dtype, {}, {uniform(random)}), limit = tensorOf(dtype, {}, {uniform(random)});
      TestTensor delta = tensorOf(dtype, {}, {(limit.values[0] >= start.values[0] ? 1 : -1) * std::fabs(uniform(random)) / 7 + 0.01});
      const int64_t count = static_cast<int64_t>(std::ceil((limit.values[0] - start.values[0]) / delta.values[0]));
      const std::string type = start.type();
      expectDirectSameAsCpu("graph @g(%a: " + type + ", %b: " + type + ", %c: " + type + ") {\n  %y = Range(%a, %b, %c)\n  return %y\n}",
                            {start, limit, delta}, {TestTensor{dtype, {std::max<int64_t>(count, 0)}, {}}},
                            dtypeLabel(dtype) + " round " + std::to_string(round));
    }
  }
}

TEST(ReferenceTensorGenerators, RangeWhoseLengthDisagreesWithThePlanIsRefused) {
  try {
    runDirectly(reference(), "graph @g(%a: i64[], %b: i64[], %c: i64[]) {\n  %y = Range(%a, %b, %c)\n  return %y\n}",
                {i64Scalar(0), i64Scalar(10), i64Scalar(2)}, {TestTensor{DType::I64, {4}, {}}});
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("(Range): start 0, limit 10 and delta 2 give 5 elements, the output was planned with 4"),
              std::string::npos)
        << error.what();
  }
}

// The build folds Shape and Size of statically shaped values, so the kernels run directly.
TEST(ReferenceTensorGenerators, ShapeAndSize) {
  TestTensor x = sampleTensor(DType::Bool, {2, 3, 5, 7}, 4);
  const std::string type = x.type();
  struct Case {
    std::string attrs;
    std::vector<double> expected;
  };
  const Case cases[] = {
      {"", {2, 3, 5, 7}},
      {" {start = 1, end = -1}", {3, 5}},
      {" {start = -10}", {2, 3, 5, 7}},  // clamped to [0, rank]
      {" {start = 3, end = 100}", {7}},
      {" {start = 3, end = 1}", {}},
  };
  for (const Case& c : cases) {
    const std::string text = "graph @g(%x: " + type + ") {\n  %y = Shape(%x)" + c.attrs + "\n  return %y\n}";
    const TestTensor shape{DType::I64, {static_cast<int64_t>(c.expected.size())}, {}};
    std::vector<TestTensor> out = runDirectly(reference(), text, {x}, {shape});
    expectEqual(out[0], tensorOf(DType::I64, shape.dims, c.expected), "Shape" + c.attrs);
    expectDirectSameAsCpu(text, {x}, {shape}, "Shape" + c.attrs);
  }
  for (const TestTensor& in : {x, sampleTensor(DType::F64, {}, 1), sampleTensor(DType::I8, {4, 0}, 1)}) {
    const std::string text = "graph @g(%x: " + in.type() + ") {\n  %y = Size(%x)\n  return %y\n}";
    std::vector<TestTensor> out = runDirectly(reference(), text, {in}, {TestTensor{DType::I64, {}, {}}});
    expectEqual(out[0], tensorOf(DType::I64, {}, {static_cast<double>(in.count())}), "Size " + in.type());
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
