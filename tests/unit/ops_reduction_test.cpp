#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "ops_test_support.h"

namespace estuary {
namespace {

using ops_test::OpsGraph;

TEST(Reduce, AxesAsInputWithKeepDims) {
  OpsGraph g;
  Value* x = g.input("f32[batch,seq,768]");
  EXPECT_EQ(g.run("ReduceMean", {x, g.ints({-1})}), "f32[batch,seq,1]");
  EXPECT_EQ(g.run("ReduceMean", {x, g.ints({-1})}, {{"keepdims", 0}}), "f32[batch,seq]");
  EXPECT_EQ(g.run("ReduceSum", {x, g.ints({0, 2})}, {{"keepdims", 0}}), "f32[seq]");
  EXPECT_EQ(g.run("ReduceL2", {x, g.ints({1})}), "f32[batch,1,768]");
  EXPECT_EQ(g.run("ReduceMax", {g.input("bool[3,4]"), g.ints({1})}), "bool[3,1]");
}

TEST(Reduce, NoAxesReducesAllUnlessNoop) {
  OpsGraph g;
  Value* x = g.input("f32[batch,4]");
  EXPECT_EQ(g.run("ReduceProd", {x}), "f32[1,1]");
  EXPECT_EQ(g.run("ReduceMin", {x}, {{"keepdims", 0}}), "f32[]");
  EXPECT_EQ(g.run("ReduceSum", {x, g.ints({})}, {{"noop_with_empty_axes", 1}}), "f32[batch,4]");
  EXPECT_EQ(g.run("ReduceSum", {x}, {{"noop_with_empty_axes", 1}}), "f32[batch,4]");
}

TEST(Reduce, UnknownAxes) {
  OpsGraph g;
  Value* x = g.input("f32[batch,4]");
  Value* axes = g.input("i64[1]");
  EXPECT_EQ(g.run("ReduceMean", {x, axes}), "f32[?,?]");
  EXPECT_EQ(g.run("ReduceMean", {x, axes}, {{"keepdims", 0}}), "f32[*]");
}

TEST(Reduce, Errors) {
  OpsGraph g;
  Value* x = g.input("f32[2,3]");
  EXPECT_EQ(g.run("ReduceMean", {x, g.ints({2})}),
            "node 'n' (ReduceMean): input 'axes' is 2, out of range for rank 2 (allowed: [-2, 1])");
  EXPECT_EQ(g.run("ReduceMean", {x}, {{"axes", ops_test::ints({1})}}),
            "node 'n' (ReduceMean): unknown attribute 'axes'; ReduceMean takes: keepdims, "
            "noop_with_empty_axes");
  EXPECT_EQ(g.run("ReduceSum", {g.input("u8[3]")}),
            "node 'n' (ReduceSum): input 0 'data' has dtype u8, allowed: f32, f16, bf16, f64, i32, i64");
}

TEST(ArgReduce, AxisAndKeepDims) {
  OpsGraph g;
  Value* logits = g.input("f16[batch,seq,32000]");
  EXPECT_EQ(g.run("ArgMax", {logits}, {{"axis", -1}}), "i64[batch,seq,1]");
  EXPECT_EQ(g.run("ArgMax", {logits}, {{"axis", -1}, {"keepdims", 0}}), "i64[batch,seq]");
  EXPECT_EQ(g.run("ArgMin", {logits}), "i64[1,seq,32000]");
  EXPECT_EQ(g.run("ArgMax", {logits}, {{"axis", 3}}),
            "node 'n' (ArgMax): attribute 'axis' is 3, out of range for rank 3 (allowed: [-3, 2])");
}

}  // namespace
}  // namespace estuary
