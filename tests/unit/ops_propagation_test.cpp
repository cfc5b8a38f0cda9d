// Data propagation: the values of small integer tensors computed from shapes, which ONNX
// exports of dynamic-batch models use to feed Reshape, Expand, ConstantOfShape and Range.
#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "ops_test_support.h"

namespace estuary {
namespace {

using ops_test::ints;
using ops_test::OpsGraph;

TEST(SymInt, ArithmeticKeepsNegativeIntegersAndSymbols) {
  Dim batch = Dim::symbol("batch");
  Dim seq = Dim::symbol("seq");
  EXPECT_EQ((SymInt(-1) + SymInt(3)).str(), "2");
  EXPECT_EQ((SymInt(batch) + SymInt(-1)).str(), "batch-1");
  EXPECT_EQ((SymInt(seq) - SymInt(-2)).str(), "seq+2");
  EXPECT_EQ((SymInt(batch) * SymInt(seq)).str(), "batch*seq");
  EXPECT_EQ((SymInt(batch * Dim(12)) / SymInt(4)).str(), "3*batch");
  EXPECT_EQ((SymInt(batch) / SymInt(2)).str(), "?");
  EXPECT_EQ((SymInt(7) / SymInt(-2)).str(), "-3");
  EXPECT_EQ((SymInt(7) / SymInt(0)).str(), "?");
  EXPECT_EQ((SymInt(batch) * SymInt(-1)).str(), "?");
  EXPECT_EQ((SymInt(batch) * SymInt(0)).str(), "0");
  EXPECT_EQ((SymInt() + SymInt(1)).str(), "?");
  EXPECT_EQ(SymInt(Dim(5)), SymInt(5));
  EXPECT_TRUE(SymInt(Dim(5)).isInt());
  EXPECT_NE(SymInt(), SymInt());
  EXPECT_EQ(SymInt(-1).toDim().str(), "?");
  EXPECT_EQ(SymInt(batch).toDim().str(), "batch");
}

TEST(DataPropagation, ShapeGatherConcatReshape) {
  // x.view(x.size(0), x.size(1), 12, 64) as torch.onnx exports it.
  OpsGraph g;
  Value* x = g.input("f32[batch,seq,768]", "x");
  Value* shape = g.apply("Shape", {x});
  EXPECT_EQ(g.values(shape), "[batch, seq, 768]");
  Value* dim0 = g.apply("Gather", {shape, g.ints({0}, true)});
  Value* dim1 = g.apply("Gather", {shape, g.ints({1}, true)});
  EXPECT_EQ(dim0->type().str(), "i64[]");
  EXPECT_EQ(g.values(dim0), "[batch]");
  Value* d0 = g.apply("Unsqueeze", {dim0, g.ints({0})});
  Value* d1 = g.apply("Unsqueeze", {dim1, g.ints({0})});
  Value* target = g.apply("Concat", {d0, d1, g.ints({12}), g.ints({64})}, {{"axis", 0}});
  EXPECT_EQ(g.values(target), "[batch, seq, 12, 64]");
  Value* reshaped = g.apply("Reshape", {x, target});
  EXPECT_EQ(reshaped->type().str(), "f32[batch,seq,12,64]");
}

TEST(DataPropagation, MinusOneSurvivesConcat) {
  // x.view(x.size(0), -1)
  OpsGraph g;
  Value* x = g.input("f32[batch,512,7,7]", "x");
  Value* dim0 = g.apply("Gather", {g.apply("Shape", {x}), g.ints({0})});
  Value* target = g.apply("Concat", {dim0, g.ints({-1})}, {{"axis", 0}});
  EXPECT_EQ(g.values(target), "[batch, -1]");
  EXPECT_EQ(g.apply("Reshape", {x, target})->type().str(), "f32[batch,25088]");
}

TEST(DataPropagation, ArithmeticOnShapeValues) {
  // Head split computed in the graph: [batch, seq, hidden / 12].
  OpsGraph g;
  Value* x = g.input("f32[batch,seq,768]", "x");
  Value* shape = g.apply("Shape", {x});
  Value* hidden = g.apply("Slice", {shape, g.ints({2}), g.ints({3})});
  EXPECT_EQ(g.values(hidden), "[768]");
  Value* head = g.apply("Div", {hidden, g.ints({12})});
  EXPECT_EQ(g.values(head), "[64]");
  Value* rows = g.apply("Mul", {g.apply("Slice", {shape, g.ints({0}), g.ints({1})}),
                                g.apply("Slice", {shape, g.ints({1}), g.ints({2})})});
  EXPECT_EQ(g.values(rows), "[batch*seq]");
  Value* next = g.apply("Add", {g.apply("Slice", {shape, g.ints({1}), g.ints({2})}), g.ints({1})});
  EXPECT_EQ(g.values(next), "[seq+1]");
  Value* fewer = g.apply("Sub", {g.apply("Slice", {shape, g.ints({1}), g.ints({2})}), g.ints({1})});
  EXPECT_EQ(g.values(fewer), "[seq-1]");
  Value* target = g.apply("Concat", {rows, g.ints({12}), head}, {{"axis", 0}});
  EXPECT_EQ(g.apply("Reshape", {x, target})->type().str(), "f32[batch*seq,12,64]");
}

TEST(DataPropagation, ComparisonsLogicAndModuloOnKnownIntegers) {
  // The grouped-query test of ONNX's Attention function: the group size is
  // Where(Not(q == kv) And (q % kv == 0), q / kv, 1).
  OpsGraph g;
  Value* q = g.ints({9});
  Value* kv = g.ints({3});
  Value* uneven = g.apply("Not", {g.apply("Equal", {q, kv})});
  EXPECT_EQ(g.values(uneven), "[1]");
  Value* divisible = g.apply("Equal", {g.apply("Mod", {q, kv}), g.ints({0})});
  EXPECT_EQ(g.values(divisible), "[1]");
  Value* group = g.apply("Where", {g.apply("And", {uneven, divisible}), g.apply("Div", {q, kv}), g.ints({1})});
  EXPECT_EQ(g.values(group), "[3]");
  EXPECT_EQ(g.values(g.apply("Mod", {g.ints({-7}), g.ints({3})})), "[2]");                   // Python's sign
  EXPECT_EQ(g.values(g.apply("Mod", {g.ints({-7}), g.ints({3})}, {{"fmod", 1}})), "[-1]");  // C's sign
  EXPECT_EQ(g.values(g.apply("Less", {g.ints({2, 5}), g.ints({3})})), "[1, 0]");
  EXPECT_EQ(g.values(g.apply("Or", {g.apply("Greater", {q, kv}), g.apply("LessOrEqual", {q, kv})})), "[1]");
  EXPECT_EQ(g.values(g.apply("Xor", {uneven, divisible})), "[0]");
}

TEST(DataPropagation, ExpandAndConstantOfShapeKeepSymbols) {
  OpsGraph g;
  Value* ids = g.input("i64[batch,seq]", "ids");
  Value* shape = g.apply("Shape", {ids});
  Value* mask = g.apply("ConstantOfShape", {shape}, {{"value", Tensor::scalar<int64_t>(DType::I64, 1)}});
  EXPECT_EQ(mask->type().str(), "i64[batch,seq]");
  Value* bias = g.input("f32[1,1,1,seq]", "bias");
  Value* batch = g.apply("Slice", {shape, g.ints({0}), g.ints({1})});
  Value* seq = g.apply("Slice", {shape, g.ints({1}), g.ints({2})});
  Value* target = g.apply("Concat", {batch, g.ints({1}), seq, seq}, {{"axis", 0}});
  EXPECT_EQ(g.apply("Expand", {bias, target})->type().str(), "f32[batch,1,seq,seq]");
}

TEST(DataPropagation, RangeFromASequenceLength) {
  OpsGraph g;
  Value* x = g.input("f32[batch,seq,768]", "x");
  Value* seq = g.apply("Gather", {g.apply("Shape", {x}), g.ints({1}, true)});
  Value* positions = g.apply("Range", {g.ints({0}, true), seq, g.ints({1}, true)});
  EXPECT_EQ(positions->type().str(), "i64[seq]");
  Value* past = g.input("f32[batch,8,past,64]", "cache");
  Value* past_len = g.apply("Gather", {g.apply("Shape", {past}), g.ints({2}, true)});
  Value* total = g.apply("Add", {past_len, seq});
  EXPECT_EQ(g.apply("Range", {past_len, total, g.ints({1}, true)})->type().str(), "i64[seq]");
  EXPECT_EQ(g.values(g.apply("Range", {g.ints({2}, true), g.ints({8}, true), g.ints({3}, true)})),
            "[2, 5]");
}

TEST(DataPropagation, CastSqueezeSizeAndReduceProd) {
  OpsGraph g;
  Value* x = g.input("f32[batch,3,4]", "x");
  Value* shape = g.apply("Shape", {x});
  Value* as_i32 = g.apply("Cast", {shape}, {{"to", DType::I32}});
  EXPECT_EQ(g.values(as_i32), "[batch, 3, 4]");
  EXPECT_EQ(g.values(g.apply("Cast", {shape}, {{"to", DType::F32}})), "unknown");
  Value* first = g.apply("Slice", {shape, g.ints({0}), g.ints({1})});
  EXPECT_EQ(g.values(g.apply("Squeeze", {first, g.ints({0})})), "[batch]");
  EXPECT_EQ(g.values(g.apply("Size", {x})), "[12*batch]");
  Value* tail = g.apply("Slice", {shape, g.ints({1}), g.ints({INT64_MAX})});
  Value* features = g.apply("ReduceProd", {tail}, {{"keepdims", 1}});
  EXPECT_EQ(features->type().str(), "i64[1]");
  EXPECT_EQ(g.values(features), "[12]");
  Value* target = g.apply("Concat", {g.ints({-1}), features}, {{"axis", 0}});
  EXPECT_EQ(g.apply("Reshape", {x, target})->type().str(), "f32[batch,12]");
}

// Reduced over no axis (noop_with_empty_axes), each element stays as it is only for the ops
// whose one-element reduction is the element: ReduceL1 of -3 is 3, not -3.
TEST(DataPropagation, NoopReductionsKeepValuesOnlyWhereTheyAreTheIdentity) {
  OpsGraph g;
  Value* values = g.ints({-3, 4});
  for (const char* op : {"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean"}) {
    EXPECT_EQ(g.values(g.apply(op, {values}, {{"noop_with_empty_axes", 1}})), "[-3, 4]") << op;
  }
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare"}) {
    EXPECT_EQ(g.values(g.apply(op, {values}, {{"noop_with_empty_axes", 1}})), "unknown") << op;
  }
}

TEST(DataPropagation, EqualAndWhereSelectKnownSizes) {
  // torch.onnx's expand(-1, ...) pattern: Where(Equal(shape, -1), ones, shape).
  OpsGraph g;
  Value* requested = g.ints({-1, 4});
  Value* is_keep = g.apply("Equal", {requested, g.ints({-1})});
  EXPECT_EQ(g.values(is_keep), "[1, 0]");
  Value* sizes = g.apply("Where", {is_keep, g.ints({1, 1}), requested});
  EXPECT_EQ(g.values(sizes), "[1, 4]");
  EXPECT_EQ(g.apply("Expand", {g.input("f32[batch,1]"), sizes})->type().str(), "f32[batch,4]");
}

TEST(DataPropagation, UnknownValuesStayUnknown) {
  OpsGraph g;
  Value* runtime_shape = g.input("i64[2]", "s");
  EXPECT_EQ(g.values(g.apply("Add", {runtime_shape, g.ints({1})})), "unknown");
  Value* shape = g.apply("Shape", {g.input("f32[*]")});
  EXPECT_EQ(g.values(shape), "unknown");
  EXPECT_EQ(g.apply("Reshape", {g.input("f32[6]"), runtime_shape})->type().str(), "f32[?,?]");
  // Large tensors are not tracked.
  std::vector<int64_t> many(kMaxKnownValues + 1, 1);
  EXPECT_EQ(g.values(g.ints(many)), "unknown");
}

TEST(DataPropagation, GatherIndexOutOfRangeFails) {
  OpsGraph g;
  Value* shape = g.apply("Shape", {g.input("f32[2,3]")});
  EXPECT_EQ(g.run("Gather", {shape, g.ints({2}, true)}),
            "node 'n' (Gather): index 2 is out of range for axis 0 of size 2");
}

TEST(DataPropagation, ValuesOfANodeWithoutSchemaAreForgotten) {
  OpsGraph g;
  Value* shape = g.apply("Shape", {g.input("f32[2,3]")});
  ASSERT_EQ(g.values(shape), "[2, 3]");
  // A rewrite replaced the producer by an op the registry does not know.
  g.known[shape] = {SymInt(2), SymInt(3)};
  Node* custom = g.node("Custom", {}, {}, 1, "custom");
  g.known[custom->output()] = {SymInt(1)};
  EXPECT_EQ(inferNode(*custom, g.known), InferStatus::NoSchema);
  EXPECT_EQ(g.values(custom->output()), "unknown");
}

TEST(DataPropagation, ConstantInputsAreKnownWithoutAMap) {
  OpsGraph g;
  Value* x = g.input("f32[batch,seq,768]");
  Value* target = g.ints({0, -1});
  Node* reshape = g.node("Reshape", {x, target});
  KnownValueMap empty;
  inferNode(*reshape, empty);
  EXPECT_EQ(reshape->output()->type().str(), "f32[batch,768*seq]");
}

}  // namespace
}  // namespace estuary
