#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "ops_test_support.h"

namespace estuary {
namespace {

using ops_test::Attrs;
using ops_test::ints;
using ops_test::OpsGraph;

std::string matmul(const char* a, const char* b) {
  OpsGraph g;
  return g.run("MatMul", {g.input(a), g.input(b)});
}

TEST(MatMul, NumpyBatchBroadcasting) {
  EXPECT_EQ(matmul("f32[2,3]", "f32[3,4]"), "f32[2,4]");
  EXPECT_EQ(matmul("f32[batch,seq,768]", "f32[768,3072]"), "f32[batch,seq,3072]");
  EXPECT_EQ(matmul("f32[batch,12,seq,64]", "f32[batch,12,64,seq]"), "f32[batch,12,seq,seq]");
  EXPECT_EQ(matmul("f32[5,1,2,3]", "f32[4,3,6]"), "f32[5,4,2,6]");
  EXPECT_EQ(matmul("f32[batch,2,3]", "f32[1,3,6]"), "f32[batch,2,6]");
}

TEST(MatMul, OneDimensionalOperands) {
  EXPECT_EQ(matmul("f32[3]", "f32[3]"), "f32[]");
  EXPECT_EQ(matmul("f32[3]", "f32[7,3,4]"), "f32[7,4]");
  EXPECT_EQ(matmul("f32[7,2,3]", "f32[3]"), "f32[7,2]");
}

TEST(MatMul, Errors) {
  EXPECT_EQ(matmul("f32[2,3]", "f32[4,5]"),
            "node 'n' (MatMul): inner dimensions differ: A [2,3] has K=3, B [4,5] has K=4");
  EXPECT_EQ(matmul("f32[2,2,3]", "f32[3,3,4]"),
            "node 'n' (MatMul): cannot broadcast shapes [2] and [3]: sizes 2 and 3 meet at axis 0 "
            "of the result");
  EXPECT_EQ(matmul("f32[]", "f32[3]"),
            "node 'n' (MatMul): MatMul needs inputs of rank 1 or more, got A [] and B [3]");
  EXPECT_EQ(matmul("f32[*]", "f32[3,4]"), "f32[*]");
}

TEST(Gemm, TransposesAndBias) {
  OpsGraph g;
  EXPECT_EQ(g.run("Gemm", {g.input("f32[batch,512]"), g.input("f32[1000,512]"), g.input("f32[1000]")},
                  {{"transB", 1}}),
            "f32[batch,1000]");
  EXPECT_EQ(g.run("Gemm", {g.input("f32[4,2]"), g.input("f32[4,3]")}, {{"transA", 1}}), "f32[2,3]");
  EXPECT_EQ(g.run("Gemm", {g.input("f32[2,4]"), g.input("f32[5,3]")}),
            "node 'n' (Gemm): inner dimensions differ: A [2,4] has K=4, B [5,3] has K=5");
  EXPECT_EQ(g.run("Gemm", {g.input("f32[2,4]"), g.input("f32[4,3]"), g.input("f32[2,2,3]")}),
            "node 'n' (Gemm): C [2,2,3] does not broadcast to [M,N] [2,3]");
  EXPECT_EQ(g.run("Gemm", {g.input("f32[2,4,1]"), g.input("f32[4,3]")}),
            "node 'n' (Gemm): input 0 'A' must have rank 2, got [2,4,1]");
}

TEST(Einsum, LabelsAndEllipsis) {
  OpsGraph g;
  EXPECT_EQ(g.run("Einsum", {g.input("f32[batch,12,q,64]"), g.input("f32[batch,12,k,64]")},
                  {{"equation", "bhqd,bhkd->bhqk"}}),
            "f32[batch,12,q,k]");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[2,3]"), g.input("f32[3,4]")}, {{"equation", "ij,jk"}}),
            "f32[2,4]");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[5,2,3]"), g.input("f32[7,1,3,4]")},
                  {{"equation", "...ij, ...jk -> ...ik"}}),
            "f32[7,5,2,4]");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[3,3]")}, {{"equation", "ii->i"}}), "f32[3]");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[3,4]")}, {{"equation", "ij->"}}), "f32[]");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[2,3]"), g.input("f32[4,5]")}, {{"equation", "ij,jk->ik"}}),
            "node 'n' (Einsum): sizes of label 'j' differ: 3 vs 4");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[2,3]")}, {{"equation", "ijk->i"}}),
            "node 'n' (Einsum): operand 0 'ijk' does not match the rank of input 0 [2,3]");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[2,3]")}, {{"equation", "ij->iz"}}),
            "node 'n' (Einsum): equation 'ij->iz' outputs label 'z', which no operand has");
  EXPECT_EQ(g.run("Einsum", {g.input("f32[2,3]")}, {{"equation", "ij,jk->ik"}}),
            "node 'n' (Einsum): equation 'ij,jk->ik' has 2 operands but the node has 1 inputs");
}

std::string conv(const char* x, const char* w, Attrs attrs = {}) {
  OpsGraph g;
  return g.run("Conv", {g.input(x), g.input(w)}, std::move(attrs));
}

TEST(Conv, OutputSizes) {
  // ResNet stem: 7x7 stride 2 pad 3 on 224.
  EXPECT_EQ(conv("f32[batch,3,224,224]", "f32[64,3,7,7]",
                 {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}}),
            "f32[batch,64,112,112]");
  EXPECT_EQ(conv("f32[1,4,10,10]", "f32[8,2,3,3]", {{"group", 2}, {"dilations", ints({2, 2})}}),
            "f32[1,8,6,6]");
  EXPECT_EQ(conv("f32[1,3,h,10]", "f32[8,3,3,3]", {{"strides", ints({1, 2})}, {"pads", ints({1, 1, 1, 1})}}),
            "f32[1,8,h,5]");
  EXPECT_EQ(conv("f32[1,3,h,w]", "f32[8,3,3,3]"), "f32[1,8,h-2,w-2]");
  EXPECT_EQ(conv("f32[1,3,h,10]", "f32[8,3,3,3]", {{"strides", ints({2, 2})}}), "f32[1,8,?,4]");
  // 1-D convolution with the kernel given by the attribute.
  EXPECT_EQ(conv("f32[2,4,16]", "f32[4,4,5]", {{"kernel_shape", ints({5})}}), "f32[2,4,12]");
}

TEST(Conv, AutoPad) {
  EXPECT_EQ(conv("f32[1,3,h,10]", "f32[8,3,3,3]", {{"strides", ints({1, 2})}, {"auto_pad", "SAME_UPPER"}}),
            "f32[1,8,h,5]");
  EXPECT_EQ(conv("f32[1,3,11,11]", "f32[8,3,3,3]", {{"strides", ints({2, 2})}, {"auto_pad", "SAME_LOWER"}}),
            "f32[1,8,6,6]");
  EXPECT_EQ(conv("f32[1,3,11,11]", "f32[8,3,3,3]", {{"strides", ints({2, 2})}, {"auto_pad", "VALID"}}),
            "f32[1,8,5,5]");
  EXPECT_EQ(conv("f32[1,3,9,9]", "f32[8,3,3,3]", {{"dilations", ints({2, 2})}, {"auto_pad", "VALID"}}),
            "f32[1,8,5,5]");
}

TEST(Conv, Errors) {
  EXPECT_EQ(conv("f32[1,4,10,10]", "f32[8,3,3,3]", {{"group", 2}}),
            "node 'n' (Conv): X [1,4,10,10] has 4 channels but W [8,3,3,3] with group 2 expects 6");
  EXPECT_EQ(conv("f32[1,3,10,10]", "f32[8,3,3,3]", {{"pads", ints({1, 1})}}),
            "node 'n' (Conv): attribute 'pads' has 2 values [1, 1], expected 4 (one per spatial axis)");
  EXPECT_EQ(conv("f32[1,3,10,10]", "f32[8,3,3,3]", {{"auto_pad", "SAME_UPPER"}, {"pads", ints({1, 1, 1, 1})}}),
            "node 'n' (Conv): attributes 'pads' and 'auto_pad' = 'SAME_UPPER' cannot be used together");
  EXPECT_EQ(conv("f32[1,3,10,10]", "f32[8,3,3,3]", {{"auto_pad", "SAME"}}),
            "node 'n' (Conv): attribute 'auto_pad' is 'SAME', expected NOTSET, SAME_UPPER, SAME_LOWER "
            "or VALID");
  EXPECT_EQ(conv("f32[1,3,10,10]", "f32[8,3,3,3]", {{"strides", ints({0, 1})}}),
            "node 'n' (Conv): attribute 'strides' is [0, 1], values must be >= 1");
  EXPECT_EQ(conv("f32[1,3,2,2]", "f32[8,3,3,3]"),
            "node 'n' (Conv): spatial axis 0 of size 2 with pads 0+0 is smaller than the kernel extent 3");
  EXPECT_EQ(conv("f32[1,3,10,10]", "f32[8,3,3,3]", {{"kernel_shape", ints({5, 5})}}),
            "node 'n' (Conv): attribute 'kernel_shape' is [5, 5] but the weights have kernel [3, 3]");
  EXPECT_EQ(conv("f32[1,3,10,10]", "f32[8,3,3]"),
            "node 'n' (Conv): weights W [8,3,3] must have the rank of X [1,3,10,10]");
  OpsGraph g;
  EXPECT_EQ(g.run("Conv", {g.input("f32[1,3,8,8]"), g.input("f32[8,3,3,3]"), g.input("f32[4]")}),
            "node 'n' (Conv): bias size and output channels differ: 4 vs 8");
}

TEST(ConvTranspose, OutputSizes) {
  OpsGraph g;
  Value* x = g.input("f32[1,4,10,10]");
  Value* w = g.input("f32[4,2,3,3]");
  EXPECT_EQ(g.run("ConvTranspose", {x, w},
                  {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"output_padding", ints({1, 1})}}),
            "f32[1,2,20,20]");
  EXPECT_EQ(g.run("ConvTranspose", {x, w}, {{"strides", ints({2, 2})}, {"auto_pad", "SAME_UPPER"}}),
            "f32[1,2,20,20]");
  EXPECT_EQ(g.run("ConvTranspose", {x, w}, {{"strides", ints({2, 2})}, {"output_shape", ints({21, 21})}}),
            "f32[1,2,21,21]");
  EXPECT_EQ(g.run("ConvTranspose", {g.input("f32[*]"), g.input("f32[4]")}),
            "node 'n' (ConvTranspose): weights W must have a kernel of at least one spatial axis, "
            "got [4]");
  EXPECT_EQ(g.run("Conv", {g.input("f32[*]"), g.input("f32[4,2]")}),
            "node 'n' (Conv): weights W must have a kernel of at least one spatial axis, got [4,2]");
  EXPECT_EQ(g.run("Conv", {g.input("f32[*]"), g.input("f32[4,2,3]")}), "f32[?,4,?]");
  EXPECT_EQ(g.run("ConvTranspose", {x, w}, {{"output_shape", ints({21, -1})}}),
            "node 'n' (ConvTranspose): attribute 'output_shape' is [21, -1], sizes must be >= 0");
  EXPECT_EQ(g.run("ConvTranspose", {g.input("f32[1,4,h,w]"), g.input("f32[4,3,4,4]")},
                  {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"group", 2}}),
            "f32[1,6,2*h,2*w]");
  EXPECT_EQ(g.run("ConvTranspose", {g.input("f32[1,4,1]"), g.input("f32[4,3,1]")},
                  {{"strides", ints({3})}, {"pads", ints({1, 2})}}),
            "node 'n' (ConvTranspose): spatial axis 0 of size 1 gives a negative output size -2 (pads "
            "1+2 exceed the output)");
  EXPECT_EQ(g.run("ConvTranspose", {g.input("f32[1,5,8,8]"), w}),
            "node 'n' (ConvTranspose): input channels of X and W differ: 5 vs 4");
}

std::string pool(const char* op, const char* x, Attrs attrs) {
  OpsGraph g;
  return g.run(op, {g.input(x)}, std::move(attrs));
}

TEST(Pool, OutputSizesMatchOnnx) {
  // Expected values are those of ONNX's own shape inference.
  EXPECT_EQ(pool("MaxPool", "f32[1,64,112,112]",
                 {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}}),
            "f32[1,64,56,56]");
  EXPECT_EQ(pool("MaxPool", "f32[1,1,5]", {{"kernel_shape", ints({2})}, {"strides", ints({2})}, {"ceil_mode", 1}}),
            "f32[1,1,3]");
  // ceil_mode drops a last window that would start inside the end padding.
  EXPECT_EQ(pool("MaxPool", "f32[1,1,6]",
                 {{"kernel_shape", ints({2})}, {"strides", ints({2})}, {"ceil_mode", 1}, {"pads", ints({0, 1})}}),
            "f32[1,1,3]");
  EXPECT_EQ(pool("MaxPool", "f32[1,1,5]",
                 {{"kernel_shape", ints({2})}, {"strides", ints({2})}, {"ceil_mode", 1}, {"auto_pad", "VALID"}}),
            "f32[1,1,3]");
  EXPECT_EQ(pool("MaxPool", "f32[1,1,5]", {{"kernel_shape", ints({2})}, {"strides", ints({2})}, {"auto_pad", "SAME_UPPER"}}),
            "f32[1,1,3]");
  EXPECT_EQ(pool("MaxPool", "f32[1,1,5]", {{"kernel_shape", ints({3})}, {"dilations", ints({2})}, {"auto_pad", "VALID"}}),
            "f32[1,1,1]");
  EXPECT_EQ(pool("AveragePool", "f32[1,1,n]", {{"kernel_shape", ints({3})}, {"pads", ints({1, 1})}}),
            "f32[1,1,n]");
  EXPECT_EQ(pool("AveragePool", "f32[2,8,7,7]", {{"kernel_shape", ints({7, 7})}}), "f32[2,8,1,1]");
}

TEST(Pool, IndicesAndErrors) {
  OpsGraph g;
  EXPECT_EQ(g.run("MaxPool", {g.input("f16[1,2,4,4]")}, {{"kernel_shape", ints({2, 2})}}, 2),
            "f16[1,2,3,3]; i64[1,2,3,3]");
  EXPECT_EQ(pool("MaxPool", "f32[1,2,4,4]", {}),
            "node 'n' (MaxPool): missing required attribute 'kernel_shape' (ints)");
  EXPECT_EQ(pool("MaxPool", "f32[1,2,4,4]", {{"kernel_shape", ints({2})}}),
            "node 'n' (MaxPool): attribute 'kernel_shape' is [2], expected 2 values (one per spatial axis)");
  EXPECT_EQ(pool("AveragePool", "f32[4,4]", {{"kernel_shape", ints({2})}}),
            "node 'n' (AveragePool): input 0 'X' must be [N, C, spatial...], got [4,4]");
}

TEST(Pool, GlobalPooling) {
  OpsGraph g;
  EXPECT_EQ(g.run("GlobalAveragePool", {g.input("f32[batch,2048,7,7]")}), "f32[batch,2048,1,1]");
  EXPECT_EQ(g.run("GlobalMaxPool", {g.input("f32[batch,16,h,w,d]")}), "f32[batch,16,1,1,1]");
}

TEST(Normalization, BatchNormalization) {
  OpsGraph g;
  Value* x = g.input("f32[batch,64,56,56]");
  Value* c = g.input("f32[64]");
  EXPECT_EQ(g.run("BatchNormalization", {x, c, c, c, c}, {}, 3),
            "f32[batch,64,56,56]; f32[64]; f32[64]");
  EXPECT_EQ(g.run("BatchNormalization", {x, c, c, c, g.input("f32[32]")}),
            "node 'n' (BatchNormalization): size of input 4 'input_var' and the channels of X differ: 32 vs 64");
}

TEST(Normalization, LayerNormalizationStatistics) {
  OpsGraph g;
  Value* x = g.input("f16[batch,seq,768]");
  EXPECT_EQ(g.run("LayerNormalization", {x, g.input("f16[768]"), g.input("f16[768]")}, {}, 3),
            "f16[batch,seq,768]; f32[batch,seq,1]; f32[batch,seq,1]");
  EXPECT_EQ(g.run("LayerNormalization", {x, g.input("f16[seq,768]")}, {{"axis", 1}}, 2),
            "f16[batch,seq,768]; f32[batch,1,1]");
  EXPECT_EQ(g.run("LayerNormalization", {x, g.input("f16[768]")}, {{"axis", 3}}),
            "node 'n' (LayerNormalization): attribute 'axis' is 3, out of range for rank 3 (allowed: [-3, 2])");
}

TEST(Normalization, RmsNormalizationTakesTheScaleType) {
  OpsGraph g;
  EXPECT_EQ(g.run("RMSNormalization", {g.input("f32[batch,seq,4096]"), g.input("bf16[4096]")},
                  {{"epsilon", 1e-6}}),
            "bf16[batch,seq,4096]");
  EXPECT_EQ(g.run("RMSNormalization", {g.input("f32[2,8]"), g.input("i32[8]")}),
            "node 'n' (RMSNormalization): input 1 'scale' has dtype i32, allowed: f32, f16, bf16, f64");
}

TEST(Normalization, GroupAndInstance) {
  OpsGraph g;
  Value* x = g.input("f32[2,32,8,8]");
  Value* c = g.input("f32[32]");
  EXPECT_EQ(g.run("GroupNormalization", {x, c, c}, {{"num_groups", 8}}), "f32[2,32,8,8]");
  EXPECT_EQ(g.run("GroupNormalization", {x, c, c}, {{"num_groups", 5}}),
            "node 'n' (GroupNormalization): attribute 'num_groups' is 5, it must divide the 32 channels of X");
  EXPECT_EQ(g.run("InstanceNormalization", {x, c, c}), "f32[2,32,8,8]");
}

TEST(Softmax, AxisIsChecked) {
  OpsGraph g;
  EXPECT_EQ(g.run("Softmax", {g.input("f32[batch,12,seq,seq]")}), "f32[batch,12,seq,seq]");
  EXPECT_EQ(g.run("LogSoftmax", {g.input("f32[2,3]")}, {{"axis", 0}}), "f32[2,3]");
  EXPECT_EQ(g.run("Softmax", {g.input("f32[2,3]")}, {{"axis", -3}}),
            "node 'n' (Softmax): attribute 'axis' is -3, out of range for rank 2 (allowed: [-2, 1])");
}

TEST(Dropout, InferenceIsIdentityWithAMask) {
  OpsGraph g;
  EXPECT_EQ(g.run("Dropout", {g.input("f32[batch,768]")}, {}, 2), "f32[batch,768]; bool[batch,768]");
  EXPECT_EQ(g.run("Dropout", {g.input("f32[4]"), g.input("f32[1]")}),
            "node 'n' (Dropout): input 1 'ratio' must have rank 0, got [1]");
}

TEST(Attention, FourDimensionalWithKvCache) {
  OpsGraph g;
  Value* q = g.input("f16[batch,32,seq,128]");
  Value* k = g.input("f16[batch,8,seq,128]");
  Value* v = g.input("f16[batch,8,seq,128]");
  Value* past_k = g.input("f16[batch,8,past,128]");
  Value* past_v = g.input("f16[batch,8,past,128]");
  EXPECT_EQ(g.run("Attention", {q, k, v, nullptr, past_k, past_v}, {{"is_causal", 1}}, 4),
            "f16[batch,32,seq,128]; f16[batch,8,past+seq,128]; f16[batch,8,past+seq,128]; "
            "f16[batch,32,seq,past+seq]");
  EXPECT_EQ(g.run("Attention", {q, k, v, nullptr, past_k}),
            "node 'n' (Attention): past_key and past_value must be given together");
}

TEST(Attention, ThreeDimensionalWithHeadCounts) {
  OpsGraph g;
  Value* q = g.input("f32[batch,seq,512]");
  Value* k = g.input("f32[batch,kv,128]");
  Value* v = g.input("f32[batch,kv,64]");
  EXPECT_EQ(g.run("Attention", {q, k, v}, {{"q_num_heads", 8}, {"kv_num_heads", 2}}, 3),
            "f32[batch,seq,256]; f32[batch,2,kv,64]; f32[batch,2,kv,32]");
  EXPECT_EQ(g.run("Attention", {q, k, v}, {{"kv_num_heads", 2}}),
            "node 'n' (Attention): input 0 'Q' is 3-D [batch,seq,512], which needs attribute 'q_num_heads'");
  EXPECT_EQ(g.run("Attention", {q, k, v}, {{"q_num_heads", 8}, {"kv_num_heads", 3}}),
            "node 'n' (Attention): input 1 'K' [batch,kv,128] has hidden size 128, not divisible by "
            "kv_num_heads=3");
  EXPECT_EQ(g.run("Attention", {g.input("f32[2,6,4,8]"), g.input("f32[2,4,4,8]"), g.input("f32[2,4,4,8]")}),
            "node 'n' (Attention): q_num_heads 6 is not a multiple of kv_num_heads 4");
  EXPECT_EQ(g.run("Attention", {g.input("f32[2,4,4,8]"), g.input("f32[2,4,4,16]"), g.input("f32[2,4,4,8]")}),
            "node 'n' (Attention): head sizes of Q and K differ: 8 vs 16");
}

TEST(RotaryEmbedding, KeepsTheInputShape) {
  OpsGraph g;
  Value* cache = g.input("f32[4096,64]");
  Value* positions = g.input("i64[batch,seq]");
  EXPECT_EQ(g.run("RotaryEmbedding", {g.input("f32[batch,32,seq,128]"), cache, cache, positions}),
            "f32[batch,32,seq,128]");
  EXPECT_EQ(g.run("RotaryEmbedding", {g.input("f32[batch,seq,4096]"), cache, cache, positions},
                  {{"num_heads", 32}}),
            "f32[batch,seq,4096]");
  EXPECT_EQ(g.run("RotaryEmbedding", {g.input("f32[batch,seq,4096]"), cache, cache, positions}),
            "node 'n' (RotaryEmbedding): input 0 'X' is 3-D [batch,seq,4096], which needs attribute 'num_heads'");
  EXPECT_EQ(g.run("RotaryEmbedding", {g.input("f32[batch,seq,4096]"), cache, cache, g.input("i32[batch,seq]")},
                  {{"num_heads", 32}}),
            "node 'n' (RotaryEmbedding): input 3 'position_ids' has dtype i32, allowed: i64");
}

}  // namespace
}  // namespace estuary
