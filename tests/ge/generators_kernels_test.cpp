// ConstantOfShape, Range, EyeLike, Shape and Size. With static shapes the build folds most
// of them with these same kernels; the kernels are also run directly on run-time operands.
#include <cmath>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TEST(GeneratorKernels, ConstantOfShapeFillsWithTheValue) {
  TestTensor x = sampleTensor(DType::F32, {2, 3, 4}, 1);
  std::string body = "  %s = Shape(%x)\n"
                     "  %zeros = ConstantOfShape(%s)\n"
                     "  %halves = ConstantOfShape(%s) {value = tensor<f16[1]> [0.5]}\n"
                     "  %sevens = ConstantOfShape(%s) {value = tensor<i32[1]> [7]}\n"
                     "  %trues = ConstantOfShape(%s) {value = tensor<bool[1]> [true]}\n";
  RunResult result = runGraph(graphText({{"x", &x}}, body, "%zeros, %halves, %sevens, %trues"), {x});
  expectEqual(result.outputs[0], TestTensor{DType::F32, {2, 3, 4}, std::vector<double>(24, 0.0)}, "default");
  expectEqual(result.outputs[1], TestTensor{DType::F16, {2, 3, 4}, std::vector<double>(24, 0.5)}, "f16");
  expectEqual(result.outputs[2], TestTensor{DType::I32, {2, 3, 4}, std::vector<double>(24, 7.0)}, "i32");
  expectEqual(result.outputs[3], TestTensor{DType::Bool, {2, 3, 4}, std::vector<double>(24, 1.0)}, "bool");

  // Run directly with the shape as a run-time operand, large enough for threads.
  TestTensor shape = tensorOf(DType::I64, {2}, {300, 500});
  std::vector<TestTensor> out = runKernelDirectly(
      "graph @g(%s: i64[2]) {\n  %y = ConstantOfShape(%s) {value = tensor<f64[1]> [-2.25]}\n  return %y\n}", {shape},
      {false}, {TestTensor{DType::F64, {300, 500}, {}}});
  expectEqual(out[0], TestTensor{DType::F64, {300, 500}, std::vector<double>(150000, -2.25)}, "run time");
}

TEST(GeneratorKernels, RangeForEveryType) {
  struct Case {
    DType dtype;
    double start, limit, delta;
  };
  const Case cases[] = {
      {DType::F32, 0.5, 3.0, 0.25}, {DType::F64, 10, -3, -1.5}, {DType::I64, -4, 9, 3},
      {DType::I32, 5, 5, 1},  // empty
      {DType::I16, 20, 0, -7}, {DType::F16, 1, 2, 0.125}, {DType::BF16, -1, 1, 0.5},
  };
  for (const Case& c : cases) {
    int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((c.limit - c.start) / c.delta)));
    TestTensor expected{c.dtype, {count}, {}};
    for (int64_t i = 0; i < count; ++i) expected.values.push_back(roundTo(c.dtype, c.start + i * c.delta));
    TestTensor start = tensorOf(c.dtype, {}, {c.start}), limit = tensorOf(c.dtype, {}, {c.limit});
    TestTensor delta = tensorOf(c.dtype, {}, {c.delta});
    std::vector<TestTensor> out = runKernelDirectly("graph @g(%a: " + start.type() + ", %b: " + start.type() + ", %c: " +
                                                        start.type() + ") {\n  %y = Range(%a, %b, %c)\n  return %y\n}",
                                                    {start, limit, delta}, {false, false, false}, {TestTensor{c.dtype, {count}, {}}});
    expectEqual(out[0], expected, dtypeLabel(c.dtype) + " run time");
    // Constant operands fold at build time through the same kernel (where shape inference
    // can size the result: it reads f16/bf16 scalars as unknown).
    if (c.dtype == DType::F16 || c.dtype == DType::BF16) continue;
    std::string body = constantLine("a", start) + constantLine("b", limit) + constantLine("c", delta) +
                       "  %y = Range(%a, %b, %c)\n";
    TestTensor unused = sampleTensor(DType::F32, {1}, 1);
    RunResult result = runGraph(graphText({{"unused", &unused}}, body, "%y"), {unused});
    expectEqual(result.outputs[0], expected, dtypeLabel(c.dtype) + " folded");
  }
}

TEST(GeneratorKernels, RangeWhoseLengthDisagreesWithThePlanIsRefused) {
  TestTensor start = tensorOf(DType::I64, {}, {0}), limit = tensorOf(DType::I64, {}, {10}), delta = tensorOf(DType::I64, {}, {2});
  try {
    runKernelDirectly("graph @g(%a: i64[], %b: i64[], %c: i64[]) {\n  %y = Range(%a, %b, %c)\n  return %y\n}",
                      {start, limit, delta}, {false, false, false}, {TestTensor{DType::I64, {4}, {}}});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "node #0 (Range): start 0, limit 10 and delta 2 give 5 elements, the output was planned with 4");
  }
}

TEST(GeneratorKernels, EyeLikeWithOffsetsAndTypes) {
  for (int64_t k : {-2, 0, 1, 5}) {
    for (DType dtype : {DType::F32, DType::I8, DType::Bool, DType::BF16}) {
      TestTensor x = sampleTensor(DType::F32, {3, 5}, 2);
      std::string body = "  %y = EyeLike(%x) {dtype = " + dtypeLabel(dtype) + ", k = " + std::to_string(k) + "}\n";
      RunResult result = runGraph(graphText({{"x", &x}}, body, "%y"), {x});
      TestTensor expected{dtype, {3, 5}, {}};
      for (int64_t r = 0; r < 3; ++r) {
        for (int64_t c = 0; c < 5; ++c) expected.values.push_back(c - r == k ? 1.0 : 0.0);
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " k=" + std::to_string(k));
    }
  }
  TestTensor x = sampleTensor(DType::I32, {4, 2}, 3);
  RunResult result = runGraph(graphText({{"x", &x}}, "  %y = EyeLike(%x)\n", "%y"), {x});
  expectEqual(result.outputs[0], tensorOf(DType::I32, {4, 2}, {1, 0, 0, 1, 0, 0, 0, 0}), "input's dtype");
}

TEST(GeneratorKernels, ShapeAndSize) {
  TestTensor x = sampleTensor(DType::U8, {2, 3, 5, 7}, 4);
  const std::string text = "graph @g(%x: u8[2,3,5,7]) {\n  %y = Shape(%x) {start = 1, end = -1}\n  return %y\n}";
  std::vector<TestTensor> out = runKernelDirectly(text, {x}, {false}, {TestTensor{DType::I64, {2}, {}}});
  expectEqual(out[0], tensorOf(DType::I64, {2}, {3, 5}), "shape slice");
  out = runKernelDirectly("graph @g(%x: u8[2,3,5,7]) {\n  %y = Size(%x)\n  return %y\n}", {x}, {false},
                          {TestTensor{DType::I64, {}, {}}});
  expectEqual(out[0], tensorOf(DType::I64, {}, {210}), "size");
  // In a graph both fold into constants.
  RunResult result = runGraph(graphText({{"x", &x}}, "  %s = Shape(%x)\n  %n = Size(%x)\n", "%s, %n"), {x});
  expectEqual(result.outputs[0], tensorOf(DType::I64, {4}, {2, 3, 5, 7}), "folded shape");
  expectEqual(result.outputs[1], tensorOf(DType::I64, {}, {210}), "folded size");
}

}  // namespace
}  // namespace estuary::ge::tensor_test
