#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "ops_test_support.h"

namespace estuary {
namespace {

using ops_test::OpsGraph;

std::string add(const char* a, const char* b) {
  OpsGraph g;
  return g.run("Add", {g.input(a), g.input(b)});
}

TEST(Broadcasting, StaticAndSymbolicDims) {
  EXPECT_EQ(add("f32[2,3]", "f32[2,3]"), "f32[2,3]");
  EXPECT_EQ(add("f32[2,1,4]", "f32[3,1]"), "f32[2,3,4]");
  EXPECT_EQ(add("f32[]", "f32[5,6]"), "f32[5,6]");
  EXPECT_EQ(add("f32[batch,16]", "f32[1,16]"), "f32[batch,16]");
  EXPECT_EQ(add("f32[batch,16]", "f32[16]"), "f32[batch,16]");
  EXPECT_EQ(add("f32[batch,16]", "f32[batch,1]"), "f32[batch,16]");
  EXPECT_EQ(add("f32[batch*seq]", "f32[batch*seq]"), "f32[batch*seq]");
}

TEST(Broadcasting, DistinctSymbolsGiveUnknown) {
  EXPECT_EQ(add("f32[batch,4]", "f32[seq,4]"), "f32[?,4]");
  EXPECT_EQ(add("f32[?,4]", "f32[?,4]"), "f32[?,4]");
  EXPECT_EQ(add("f32[?,4]", "f32[1,4]"), "f32[?,4]");
}

TEST(Broadcasting, StaticSizeWinsOverSymbolic) {
  // A symbolic size meeting a static size above 1 must equal it (or be 1).
  EXPECT_EQ(add("f32[batch,4]", "f32[3,4]"), "f32[3,4]");
  EXPECT_EQ(add("f32[?]", "f32[7]"), "f32[7]");
}

TEST(Broadcasting, UnrankedGivesUnranked) {
  EXPECT_EQ(add("f32[*]", "f32[3]"), "f32[*]");
}

TEST(Broadcasting, MismatchNamesTheNodeAndBothShapes) {
  EXPECT_EQ(add("f32[2,3]", "f32[2,4]"),
            "node 'n' (Add): cannot broadcast shapes [2,3] and [2,4]: sizes 3 and 4 meet at axis "
            "1 of the result");
  EXPECT_EQ(add("f32[batch,3]", "f32[4]"),
            "node 'n' (Add): cannot broadcast shapes [batch,3] and [4]: sizes 3 and 4 meet at "
            "axis 1 of the result");
}

TEST(Broadcasting, WhereBroadcastsThreeWays) {
  OpsGraph g;
  EXPECT_EQ(g.run("Where", {g.input("bool[seq,1]"), g.input("f16[batch,1,1]"), g.input("f16[seq]")}),
            "f16[batch,seq,seq]");
  EXPECT_EQ(g.run("Where", {g.input("f32[2]"), g.input("f16[2]"), g.input("f16[2]")}),
            "node 'n' (Where): input 0 'condition' has dtype f32, allowed: bool");
}

TEST(Broadcasting, VariadicMaxAndSum) {
  OpsGraph g;
  EXPECT_EQ(g.run("Max", {g.input("f32[3,1]"), g.input("f32[1,4]"), g.input("f32[4]")}), "f32[3,4]");
  EXPECT_EQ(g.run("Sum", {g.input("f32[2]")}), "f32[2]");
  EXPECT_EQ(g.run("Mean", {g.input("f32[2]"), g.input("f32[3]")}),
            "node 'n' (Mean): cannot broadcast shapes [2] and [3]: sizes 2 and 3 meet at axis 0 of "
            "the result");
}

TEST(Elementwise, ComparisonsAndLogicGiveBool) {
  OpsGraph g;
  EXPECT_EQ(g.run("Less", {g.input("i32[4]"), g.input("i32[]")}), "bool[4]");
  EXPECT_EQ(g.run("Equal", {g.input("bool[4]"), g.input("bool[4]")}), "bool[4]");
  EXPECT_EQ(g.run("And", {g.input("bool[2,1]"), g.input("bool[3]")}), "bool[2,3]");
  EXPECT_EQ(g.run("Or", {g.input("i64[2]"), g.input("i64[2]")}),
            "node 'n' (Or): input 0 'A' has dtype i64, allowed: bool");
  EXPECT_EQ(g.run("Not", {g.input("bool[batch]")}), "bool[batch]");
  EXPECT_EQ(g.run("IsNaN", {g.input("f16[3]")}), "bool[3]");
}

TEST(Elementwise, UnaryOpsKeepShapeAndType) {
  OpsGraph g;
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs",
                         "Erf", "Gelu", "HardSigmoid", "HardSwish", "LeakyRelu", "Softplus", "Cos",
                         "Sin", "Floor", "Ceil", "Identity", "Swish", "Elu", "Round", "Mish"}) {
    EXPECT_EQ(g.run(op, {g.input("bf16[batch,seq,64]")}), "bf16[batch,seq,64]") << op;
  }
  EXPECT_EQ(g.run("Relu", {g.input("i8[3]")}), "i8[3]");
  EXPECT_EQ(g.run("Sqrt", {g.input("i32[3]")}),
            "node 'n' (Sqrt): input 0 'X' has dtype i32, allowed: f32, f16, bf16, f64");
  EXPECT_EQ(g.run("Neg", {g.input("u8[3]")}),
            "node 'n' (Neg): input 0 'X' has dtype u8, allowed: f32, f16, bf16, f64, i8, i16, i32, i64");
}

TEST(Elementwise, ActivationAttributes) {
  OpsGraph g;
  EXPECT_EQ(g.run("Gelu", {g.input("f32[2]")}, {{"approximate", "tanh"}}), "f32[2]");
  EXPECT_EQ(g.run("LeakyRelu", {g.input("f32[2]")}, {{"alpha", int64_t{1}}}),
            "node 'n' (LeakyRelu): attribute 'alpha' must be float, got int");
  EXPECT_EQ(g.run("HardSigmoid", {g.input("f32[2]")}, {{"alpha", 0.1}, {"beta", 0.6}}), "f32[2]");
}

TEST(Elementwise, ClipWithOptionalBounds) {
  OpsGraph g;
  Value* x = g.input("f16[batch,8]");
  EXPECT_EQ(g.run("Clip", {x}), "f16[batch,8]");
  EXPECT_EQ(g.run("Clip", {x, g.input("f16[]"), g.input("f16[]")}), "f16[batch,8]");
  EXPECT_EQ(g.run("Clip", {x, g.input("f32[]")}),
            "node 'n' (Clip): input 1 'min' has dtype f32 but input 0 'input' has f16; both are "
            "of type T and must agree");
}

TEST(Elementwise, PReluBroadcastsSlopeToX) {
  OpsGraph g;
  EXPECT_EQ(g.run("PRelu", {g.input("f32[1,8,4,4]"), g.input("f32[8,1,1]")}), "f32[1,8,4,4]");
  EXPECT_EQ(g.run("PRelu", {g.input("f32[4]"), g.input("f32[2,4]")}),
            "node 'n' (PRelu): slope [2,4] does not broadcast to X [4]");
  // X's dims never grow: a slope that broadcasts with X, but not to it, is refused.
  EXPECT_EQ(g.run("PRelu", {g.input("f32[3,1]"), g.input("f32[1,5]")}),
            "node 'n' (PRelu): slope [1,5] does not broadcast to X [3,1]");
  EXPECT_EQ(g.run("PRelu", {g.input("f32[batch,8]"), g.input("f32[8]")}), "f32[batch,8]");
}

TEST(Elementwise, SwiGluNeedsEqualShapes) {
  OpsGraph g;
  EXPECT_EQ(g.run("SwiGLU", {g.input("f32[batch,128]"), g.input("f32[batch,?]")}), "f32[batch,128]");
  EXPECT_EQ(g.run("SwiGLU", {g.input("f32[2,128]"), g.input("f32[2,64]")}),
            "node 'n' (SwiGLU): A and B sizes at axis 1 differ: 128 vs 64");
}

TEST(Elementwise, CastTakesItsTypeFromTheAttribute) {
  OpsGraph g;
  EXPECT_EQ(g.run("Cast", {g.input("f32[batch,3]")}, {{"to", DType::F16}}), "f16[batch,3]");
  EXPECT_EQ(g.run("Cast", {g.input("f32[3]")}),
            "node 'n' (Cast): missing required attribute 'to' (type)");
  EXPECT_EQ(g.run("Cast", {g.input("f32[3]")}, {{"to", DType::Undefined}}),
            "node 'n' (Cast): attribute 'to' must be a defined type");
  EXPECT_EQ(g.run("CastLike", {g.input("i64[3]"), g.input("bf16[]")}), "bf16[3]");
}

TEST(Elementwise, PowAllowsADifferentExponentType) {
  OpsGraph g;
  EXPECT_EQ(g.run("Pow", {g.input("f32[2,3]"), g.input("f16[3]")}), "f32[2,3]");
  EXPECT_EQ(g.run("Pow", {g.input("bool[2]"), g.input("f32[]")}),
            "node 'n' (Pow): input 0 'X' has dtype bool, allowed: f32, f16, bf16, f64, i32, i64");
}

}  // namespace
}  // namespace estuary
