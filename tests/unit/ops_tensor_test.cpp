#include <gtest/gtest.h>

#include <limits>

#include "estuary/ops/schema.h"
#include "ops_test_support.h"

namespace estuary {
namespace {

using ops_test::ints;
using ops_test::OpsGraph;

std::string reshape(const char* x, const std::vector<int64_t>& shape, int64_t allow_zero = 0) {
  OpsGraph g;
  return g.run("Reshape", {g.input(x), g.ints(shape)}, {{"allowzero", allow_zero}});
}

TEST(Reshape, KeepsSymbolicDims) {
  EXPECT_EQ(reshape("f32[batch,seq,768]", {0, 0, 12, 64}), "f32[batch,seq,12,64]");
  EXPECT_EQ(reshape("f32[batch,seq,768]", {-1, 768}), "f32[batch*seq,768]");
  EXPECT_EQ(reshape("f32[batch,seq,12,64]", {0, 0, -1}), "f32[batch,seq,768]");
  EXPECT_EQ(reshape("f32[batch,seq,768]", {0, -1, 64}), "f32[batch,12*seq,64]");
  EXPECT_EQ(reshape("f32[2,3,4]", {-1}), "f32[24]");
  EXPECT_EQ(reshape("f32[2,3,4]", {4, -1}), "f32[4,6]");
  EXPECT_EQ(reshape("f32[batch,3]", {-1, 2}), "f32[?,2]");
  EXPECT_EQ(reshape("f32[*]", {0, 5}), "f32[?,5]");
}

TEST(Reshape, AllowZeroMakesZeroASize) {
  EXPECT_EQ(reshape("f32[0,3]", {0, 3}, 1), "f32[0,3]");
  EXPECT_EQ(reshape("f32[2,3]", {0, -1}, 1),
            "node 'n' (Reshape): with allowzero=1 a shape cannot hold both 0 and -1");
}

TEST(Reshape, Errors) {
  EXPECT_EQ(reshape("f32[2,3]", {4, 2}),
            "node 'n' (Reshape): cannot reshape [2,3] (6 elements) to [4,2] (8 elements)");
  EXPECT_EQ(reshape("f32[2,3]", {-1, 4}),
            "node 'n' (Reshape): cannot reshape [2,3] (6 elements) to a shape with -1 and 4 elements "
            "elsewhere");
  EXPECT_EQ(reshape("f32[6]", {-1, -1}),
            "node 'n' (Reshape): input 'shape' has more than one -1 (at indices 0 and 1)");
  EXPECT_EQ(reshape("f32[6]", {2, -3}),
            "node 'n' (Reshape): shape value -3 at index 1 is invalid (sizes are >= -1)");
  EXPECT_EQ(reshape("f32[6]", {3, 0}),
            "node 'n' (Reshape): shape value 0 at index 1 copies a dimension of the input [6], "
            "which has rank 1");
}

TEST(Reshape, UnknownTargetKeepsTheRank) {
  OpsGraph g;
  EXPECT_EQ(g.run("Reshape", {g.input("f32[2,3]"), g.input("i64[3]")}), "f32[?,?,?]");
  EXPECT_EQ(g.run("Reshape", {g.input("f32[2,3]"), g.input("i64[?]")}), "f32[*]");
}

TEST(Concat, SymbolicAxisAddsUp) {
  OpsGraph g;
  EXPECT_EQ(g.run("Concat", {g.input("f16[batch,8,past,64]"), g.input("f16[batch,8,seq,64]")},
                  {{"axis", 2}}),
            "f16[batch,8,past+seq,64]");
  EXPECT_EQ(g.run("Concat", {g.input("f32[2,3]"), g.input("f32[?,3]"), g.input("f32[4,3]")}, {{"axis", 0}}),
            "f32[?,3]");
  EXPECT_EQ(g.run("Concat", {g.input("f32[2,?]"), g.input("f32[2,3]")}, {{"axis", -2}}), "f32[4,3]");
}

TEST(Concat, Errors) {
  OpsGraph g;
  EXPECT_EQ(g.run("Concat", {g.input("f32[2,3]"), g.input("f32[2,4]")}, {{"axis", 0}}),
            "node 'n' (Concat): sizes at axis 1 of input 1 [2,4] and earlier inputs differ: 3 vs 4");
  EXPECT_EQ(g.run("Concat", {g.input("f32[2,3]"), g.input("f32[2]")}, {{"axis", 0}}),
            "node 'n' (Concat): inputs have different ranks: input 1 is [2], input 0 is [2,3]");
  EXPECT_EQ(g.run("Concat", {g.input("f32[2,3]")}, {{"axis", 2}}),
            "node 'n' (Concat): attribute 'axis' is 2, out of range for rank 2 (allowed: [-2, 1])");
  EXPECT_EQ(g.run("Concat", {g.input("f32[]")}, {{"axis", 0}}),
            "node 'n' (Concat): input 0 is a scalar; Concat needs rank >= 1");
}

TEST(Split, PiecesOfAKnownVectorAreKnown) {
  OpsGraph g;
  Node* split = g.node("Split", {g.ints({2, 3, 5, 6})}, {{"num_outputs", int64_t{4}}}, 4);
  inferNode(*split, g.known);
  for (int64_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(g.known.count(split->output(k))) << k;
    EXPECT_EQ(g.known.at(split->output(k)), std::vector<SymInt>{SymInt(std::vector<int64_t>{2, 3, 5, 6}[k])}) << k;
  }
}

TEST(Split, ByNumOutputsAndBySizes) {
  OpsGraph g;
  EXPECT_EQ(g.run("Split", {g.input("f32[2,10]")}, {{"axis", 1}, {"num_outputs", 3}}, 3),
            "f32[2,4]; f32[2,4]; f32[2,2]");
  EXPECT_EQ(g.run("Split", {g.input("f32[batch,seq,3*hidden]")}, {{"axis", -1}, {"num_outputs", 3}}, 3),
            "f32[batch,seq,hidden]; f32[batch,seq,hidden]; f32[batch,seq,hidden]");
  EXPECT_EQ(g.run("Split", {g.input("f32[6,2]"), g.ints({1, 5})}, {}, 2), "f32[1,2]; f32[5,2]");
  EXPECT_EQ(g.run("Split", {g.input("f32[6,2]"), g.ints({1, 4})}, {}, 2),
            "node 'n' (Split): split sizes add up to 5 but axis 0 of [6,2] has 6");
  EXPECT_EQ(g.run("Split", {g.input("f32[6]")}, {{"num_outputs", 3}}, 2),
            "node 'n' (Split): attribute 'num_outputs' is 3 but the node has 2 outputs");
  EXPECT_EQ(g.run("Split", {g.input("f32[6]")}, {}, 2),
            "node 'n' (Split): needs either input 'split' or attribute 'num_outputs'");
}

std::string slice(const char* x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::vector<int64_t> axes = {}, std::vector<int64_t> steps = {}) {
  OpsGraph g;
  std::vector<Value*> inputs{g.input(x), g.ints(starts), g.ints(ends)};
  if (!axes.empty()) inputs.push_back(g.ints(axes));
  if (!steps.empty()) inputs.push_back(g.ints(steps));
  return g.run("Slice", inputs);
}

TEST(Slice, StaticDims) {
  EXPECT_EQ(slice("f32[20,10]", {0, 0}, {3, 10}), "f32[3,10]");
  EXPECT_EQ(slice("f32[20,10]", {1}, {1000}, {1}, {3}), "f32[20,3]");
  EXPECT_EQ(slice("f32[20,10]", {-3}, {-1}, {0}), "f32[2,10]");
  EXPECT_EQ(slice("f32[20,10]", {-1}, {-1000}, {1}, {-1}), "f32[20,10]");
  EXPECT_EQ(slice("f32[20,10]", {8}, {2}, {1}, {-3}), "f32[20,2]");
  EXPECT_EQ(slice("f32[20,10]", {5}, {2}, {0}), "f32[0,10]");
}

TEST(Slice, SymbolicDims) {
  const int64_t kMax = INT64_MAX;
  EXPECT_EQ(slice("f32[batch,seq,768]", {1}, {kMax}, {1}), "f32[batch,seq-1,768]");
  EXPECT_EQ(slice("f32[batch,seq,768]", {0}, {-1}, {1}), "f32[batch,seq-1,768]");
  EXPECT_EQ(slice("f32[batch,seq,768]", {-1}, {kMax}, {1}), "f32[batch,?,768]");
  EXPECT_EQ(slice("f32[batch,seq]", {-1}, {INT64_MIN}, {1}, {-1}), "f32[batch,seq]");
  EXPECT_EQ(slice("f32[batch,seq]", {0}, {8}, {1}), "f32[batch,?]");
}

TEST(Slice, Errors) {
  EXPECT_EQ(slice("f32[4,4]", {0}, {2}, {0}, {0}),
            "node 'n' (Slice): input 'steps' holds a 0 at position 0");
  EXPECT_EQ(slice("f32[4,4]", {0, 0}, {2}),
            "node 'n' (Slice): starts, ends, axes and steps must have the same length, got 2, 1, 2, 2");
  EXPECT_EQ(slice("f32[4,4]", {0, 0}, {2, 2}, {1, -1}),
            "node 'n' (Slice): input 'axes' repeats axis -1");
  EXPECT_EQ(slice("f32[4,4]", {0}, {2}, {2}),
            "node 'n' (Slice): input 'axes' is 2, out of range for rank 2 (allowed: [-2, 1])");
}

TEST(SqueezeUnsqueeze, AxesAsInput) {
  OpsGraph g;
  EXPECT_EQ(g.run("Squeeze", {g.input("f32[1,batch,1,4]"), g.ints({0, -2})}), "f32[batch,4]");
  EXPECT_EQ(g.run("Squeeze", {g.input("f32[1,3,1]")}), "f32[3]");
  EXPECT_EQ(g.run("Squeeze", {g.input("f32[1,batch]")}), "f32[*]");
  EXPECT_EQ(g.run("Squeeze", {g.input("f32[2,3]"), g.ints({0})}),
            "node 'n' (Squeeze): cannot squeeze axis 0 of [2,3]: its size is 2, not 1");
  EXPECT_EQ(g.run("Unsqueeze", {g.input("f32[batch,seq]"), g.ints({1, -1})}), "f32[batch,1,seq,1]");
  EXPECT_EQ(g.run("Unsqueeze", {g.input("f32[]"), g.ints({0})}), "f32[1]");
  EXPECT_EQ(g.run("Unsqueeze", {g.input("f32[3]"), g.ints({0}, true)}), "f32[1,3]");  // scalar axes
  EXPECT_EQ(g.run("Unsqueeze", {g.input("f32[3]"), g.ints({0, 0})}),
            "node 'n' (Unsqueeze): input 'axes' repeats axis 0");
}

TEST(Flatten, MultipliesSymbolicDims) {
  OpsGraph g;
  EXPECT_EQ(g.run("Flatten", {g.input("f32[batch,512,1,1]")}), "f32[batch,512]");
  EXPECT_EQ(g.run("Flatten", {g.input("f32[batch,seq,64]")}, {{"axis", -1}}), "f32[batch*seq,64]");
  EXPECT_EQ(g.run("Flatten", {g.input("f32[2,3]")}, {{"axis", 0}}), "f32[1,6]");
  EXPECT_EQ(g.run("Flatten", {g.input("f32[2,3]")}, {{"axis", 3}}),
            "node 'n' (Flatten): attribute 'axis' is 3, out of range for rank 2 (allowed: [-2, 2])");
}

TEST(Transpose, PermAndDefault) {
  OpsGraph g;
  EXPECT_EQ(g.run("Transpose", {g.input("f32[batch,seq,12,64]")}, {{"perm", ints({0, 2, 1, 3})}}),
            "f32[batch,12,seq,64]");
  EXPECT_EQ(g.run("Transpose", {g.input("f32[2,3,4]")}), "f32[4,3,2]");
  EXPECT_EQ(g.run("Transpose", {g.input("f32[2,3,4]")}, {{"perm", ints({0, 1})}}),
            "node 'n' (Transpose): attribute 'perm' has 2 values for input of rank 3 [2,3,4]");
  EXPECT_EQ(g.run("Transpose", {g.input("f32[2,3]")}, {{"perm", ints({1, 1})}}),
            "node 'n' (Transpose): attribute 'perm' repeats axis 1");
}

TEST(Expand, BroadcastsToTheShapeInput) {
  OpsGraph g;
  EXPECT_EQ(g.run("Expand", {g.input("f32[3,1]"), g.ints({2, 1, 6})}), "f32[2,3,6]");
  EXPECT_EQ(g.run("Expand", {g.input("f32[batch,1,seq]"), g.ints({1, 4, 1})}), "f32[batch,4,seq]");
  EXPECT_EQ(g.run("Expand", {g.input("f32[3]"), g.ints({4})}),
            "node 'n' (Expand): cannot broadcast shapes [3] and [4]: sizes 3 and 4 meet at axis 0 of "
            "the result");
  EXPECT_EQ(g.run("Expand", {g.input("f32[3]"), g.ints({-1})}),
            "node 'n' (Expand): input 'shape' holds a negative size -1");
  EXPECT_EQ(g.run("Expand", {g.input("f32[1,3]"), g.input("i64[3]")}), "f32[?,?,3]");
}

TEST(Tile, MultipliesDims) {
  OpsGraph g;
  EXPECT_EQ(g.run("Tile", {g.input("f32[batch,3]"), g.ints({2, 1})}), "f32[2*batch,3]");
  EXPECT_EQ(g.run("Tile", {g.input("f32[2,3]"), g.ints({2})}),
            "node 'n' (Tile): input 'repeats' has 1 values for input [2,3] of rank 2");
}

TEST(Pad, AddsBeginAndEnd) {
  OpsGraph g;
  EXPECT_EQ(g.run("Pad", {g.input("f32[1,3,h,w]"), g.ints({0, 0, 1, 2, 0, 0, 1, 2})}),
            "f32[1,3,h+2,w+4]");
  EXPECT_EQ(g.run("Pad", {g.input("f32[4,5]"), g.ints({-1, 2}), nullptr, g.ints({1})}), "f32[4,6]");
  EXPECT_EQ(g.run("Pad", {g.input("f32[1,5]"), g.ints({-1, 0, -1, 0})}),
            "node 'n' (Pad): pads -1 and -1 would make axis 0 of [1,5] negative");
  EXPECT_EQ(g.run("Pad", {g.input("f32[4,5]"), g.ints({1, 2})}),
            "node 'n' (Pad): input 'pads' has 2 values, expected 4 (begin and end for each of 2 axes)");
  EXPECT_EQ(g.run("Pad", {g.input("f32[4,5]"), g.ints({1, 2, 1, 2})}, {{"mode", "mirror"}}),
            "node 'n' (Pad): attribute 'mode' is 'mirror', expected constant, reflect, edge or wrap");
}

// Found by fuzzing (fuzz/regressions/onnx): sizes past 64 bits are errors, not overflows.
TEST(Pad, PadsPast64BitsAreRefused) {
  OpsGraph g;
  const int64_t huge = std::numeric_limits<int64_t>::max() - 1;
  EXPECT_EQ(g.run("Pad", {g.input("f32[4]"), g.ints({huge, huge})}),
            "node 'n' (Pad): pads " + std::to_string(huge) + " and " + std::to_string(huge) +
                " on axis 0 of [4] make a size past 64 bits");
  EXPECT_EQ(g.run("Pad", {g.input("f32[4]"), g.ints({huge, 0})}),
            "node 'n' (Pad): pads " + std::to_string(huge) + " and 0 on axis 0 of [4] make a size past 64 bits");
}

TEST(Resize, ScalesPast64BitsAreRefused) {
  OpsGraph g;
  std::string message = g.run("Resize", {g.input("f32[1,1,4,4]"), nullptr, g.floats({1, 1, 1e22f, 1})});
  EXPECT_TRUE(ops_test::contains(message, "node 'n' (Resize): the scales or sizes give an output size of 4e+22, past 64 bits"));
}

TEST(Gather, IndicesReplaceTheAxis) {
  OpsGraph g;
  EXPECT_EQ(g.run("Gather", {g.input("f32[32000,4096]"), g.input("i64[batch,seq]")}),
            "f32[batch,seq,4096]");
  EXPECT_EQ(g.run("Gather", {g.input("f32[batch,seq,768]"), g.input("i64[]")}, {{"axis", 1}}),
            "f32[batch,768]");
  EXPECT_EQ(g.run("Gather", {g.input("f32[4,5]"), g.input("i64[2]")}, {{"axis", 2}}),
            "node 'n' (Gather): attribute 'axis' is 2, out of range for rank 2 (allowed: [-2, 1])");
  EXPECT_EQ(g.run("Gather", {g.input("f32[4,5]"), g.input("f32[2]")}),
            "node 'n' (Gather): input 1 'indices' has dtype f32, allowed: i32, i64");
  EXPECT_EQ(g.run("GatherElements", {g.input("f32[4,5]"), g.input("i64[4,2]")}, {{"axis", 1}}), "f32[4,2]");
  EXPECT_EQ(g.run("GatherElements", {g.input("f32[4,5]"), g.input("i64[4]")}),
            "node 'n' (GatherElements): data [4,5] and indices [4] must have the same rank");
  EXPECT_EQ(g.run("GatherND", {g.input("f32[2,3,4]"), g.input("i64[5,2]")}), "f32[5,4]");
  EXPECT_EQ(g.run("GatherND", {g.input("f32[2,3,4]"), g.input("i64[2,1]")}, {{"batch_dims", 1}}),
            "f32[2,4]");
}

TEST(Scatter, KeepsTheDataShape) {
  OpsGraph g;
  EXPECT_EQ(g.run("ScatterND", {g.input("f16[batch,8,max,64]"), g.input("i64[1,1]"), g.input("f16[1,8,1,64]")}),
            "f16[batch,8,max,64]");
  EXPECT_EQ(g.run("ScatterElements", {g.input("f32[3,3]"), g.input("i64[1,2]"), g.input("f32[1,2]")},
                  {{"reduction", "sum"}}),
            "node 'n' (ScatterElements): attribute 'reduction' is 'sum', expected none, add, mul, max or min");
}

TEST(TopK, ReplacesTheAxisByK) {
  OpsGraph g;
  EXPECT_EQ(g.run("TopK", {g.input("f32[batch,32000]"), g.ints({50})}, {}, 2),
            "f32[batch,50]; i64[batch,50]");
  EXPECT_EQ(g.run("TopK", {g.input("f32[batch,10]"), g.input("i64[1]")}, {{"axis", 0}}, 2),
            "f32[?,10]; i64[?,10]");
  EXPECT_EQ(g.run("TopK", {g.input("f32[4,10]"), g.ints({11})}, {}, 2),
            "node 'n' (TopK): K=11 exceeds the size 10 of axis 1 of [4,10]");
}

TEST(Shape, StartAndEnd) {
  OpsGraph g;
  Value* x = g.input("f32[batch,seq,768]");
  EXPECT_EQ(g.run("Shape", {x}), "i64[3]");
  EXPECT_EQ(g.run("Shape", {x}, {{"start", 1}}), "i64[2]");
  EXPECT_EQ(g.run("Shape", {x}, {{"start", -1}}), "i64[1]");
  EXPECT_EQ(g.run("Shape", {x}, {{"start", 1}, {"end", -1}}), "i64[1]");
  EXPECT_EQ(g.run("Shape", {x}, {{"start", 5}}), "i64[0]");
  EXPECT_EQ(g.run("Shape", {g.input("f32[*]")}), "i64[?]");
  EXPECT_EQ(g.run("Size", {x}), "i64[]");
}

TEST(Range, LengthFromKnownBounds) {
  OpsGraph g;
  EXPECT_EQ(g.run("Range", {g.ints({3}, true), g.ints({9}, true), g.ints({3}, true)}), "i64[2]");
  EXPECT_EQ(g.run("Range", {g.ints({10}, true), g.ints({4}, true), g.ints({-2}, true)}), "i64[3]");
  EXPECT_EQ(g.run("Range", {g.ints({5}, true), g.ints({1}, true), g.ints({1}, true)}), "i64[0]");
  EXPECT_EQ(g.run("Range", {g.ints({0}, true), g.ints({1}, true), g.ints({0}, true)}),
            "node 'n' (Range): input 'delta' is 0");
  EXPECT_EQ(g.run("Range", {g.input("i64[]"), g.input("i64[]"), g.input("i64[]")}), "i64[?]");
  EXPECT_EQ(g.run("Range", {g.input("i64[2]"), g.input("i64[]"), g.input("i64[]")}),
            "node 'n' (Range): input 0 'start' must be a scalar, got [2]");
  // One-element tensors, as ONNX's reference (np.arange) and its function bodies use them.
  EXPECT_EQ(g.run("Range", {g.ints({2}), g.ints({8}), g.ints({3})}), "i64[2]");
  EXPECT_EQ(g.run("Range", {g.input("i64[?]"), g.input("i64[1,1]"), g.input("i64[]")}), "i64[?]");
}

TEST(ConstantOfShape, TypeFromTheValue) {
  OpsGraph g;
  EXPECT_EQ(g.run("ConstantOfShape", {g.ints({2, 3})}), "f32[2,3]");
  EXPECT_EQ(g.run("ConstantOfShape", {g.ints({4})}, {{"value", Tensor::scalar<int64_t>(DType::I64, 1)}}),
            "i64[4]");
  EXPECT_EQ(g.run("ConstantOfShape", {g.input("i64[2]")}), "f32[?,?]");
  EXPECT_EQ(g.run("ConstantOfShape", {g.ints({2, -3})}),
            "node 'n' (ConstantOfShape): input 'input' holds a negative size -3");
}

TEST(Constant, TypeFromTheAttribute) {
  OpsGraph g;
  EXPECT_EQ(g.run("Constant", {}, {{"value", Tensor::fromVector<float>(DType::F32, {2, 2}, {1, 2, 3, 4})}}),
            "f32[2,2]");
  EXPECT_EQ(g.run("Constant", {}, {{"value_float", 1.5}}), "f32[]");
  EXPECT_EQ(g.run("Constant", {}, {{"value_ints", ints({1, 2, 3})}}), "i64[3]");
  EXPECT_EQ(g.run("Constant", {}),
            "node 'n' (Constant): needs exactly one of the attributes value, value_float, value_floats, "
            "value_int, value_ints, got 0");
  EXPECT_EQ(g.run("Constant", {}, {{"value_string", "x"}}),
            "node 'n' (Constant): attribute 'value_string' makes a string tensor; Estuary has no string "
            "element type");
}

TEST(TensorOps, TriluCumSumOneHotNonZero) {
  OpsGraph g;
  EXPECT_EQ(g.run("Trilu", {g.input("bool[seq,seq]"), g.ints({1}, true)}, {{"upper", 0}}), "bool[seq,seq]");
  EXPECT_EQ(g.run("Trilu", {g.input("f32[4]")}),
            "node 'n' (Trilu): input 0 'input' must have rank >= 2, got [4]");
  EXPECT_EQ(g.run("CumSum", {g.input("i64[batch,seq]"), g.ints({1}, true)}), "i64[batch,seq]");
  EXPECT_EQ(g.run("CumSum", {g.input("i64[batch,seq]"), g.ints({2}, true)}),
            "node 'n' (CumSum): input 'axis' is 2, out of range for rank 2 (allowed: [-2, 1])");
  EXPECT_EQ(g.run("OneHot", {g.input("i64[batch]"), g.ints({10}, true), g.input("f32[2]")}),
            "f32[batch,10]");
  EXPECT_EQ(g.run("NonZero", {g.input("f32[3,4]")}), "i64[2,?]");
}

TEST(TensorOps, DepthToSpaceAndResize) {
  OpsGraph g;
  EXPECT_EQ(g.run("DepthToSpace", {g.input("f32[1,16,h,w]")}, {{"blocksize", 2}}), "f32[1,4,2*h,2*w]");
  EXPECT_EQ(g.run("SpaceToDepth", {g.input("f32[1,4,8,8]")}, {{"blocksize", 2}}), "f32[1,16,4,4]");
  EXPECT_EQ(g.run("Resize", {g.input("f32[1,3,h,10]"), nullptr, g.floats({1, 1, 2, 1.5})}),
            "f32[1,3,2*h,15]");
  EXPECT_EQ(g.run("Resize", {g.input("f32[1,3,h,10]"), nullptr, nullptr, g.ints({64, 64})},
                  {{"axes", ints({2, 3})}}),
            "f32[1,3,64,64]");
  EXPECT_EQ(g.run("Resize", {g.input("f32[1,3,8,8]")}),
            "node 'n' (Resize): needs exactly one of inputs 'scales' and 'sizes'");
}

}  // namespace
}  // namespace estuary
