// Attention and RotaryEmbedding (ONNX opset 23 and later).
#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

// Q, K or V seen as [batch, heads, sequence, head_size], whether given 4-D or as 3-D
// [batch, sequence, heads * head_size] with the head count from an attribute.
struct Heads {
  Dim batch;
  Dim heads;
  Dim sequence;
  Dim head_size;
};

Heads readHeads(InferenceContext& context, size_t input, const char* heads_attr) {
  checkRank(context, input, 3, 4);
  const Shape& shape = context.inputShape(input);
  if (!shape.isRanked()) return {};
  if (shape.rank() == 4) return {shape[0], shape[1], shape[2], shape[3]};
  const Attribute* attribute = context.attr(heads_attr);
  if (!attribute) {
    context.fail("input ", input, " '", context.schema().inputs()[input].name, "' is 3-D ",
                 shape.str(), ", which needs attribute '", heads_attr, "'");
  }
  int64_t heads = attribute->asInt();
  if (heads < 1) context.fail("attribute '", heads_attr, "' is ", heads, ", must be >= 1");
  const Dim& hidden = shape[2];
  if (hidden.isStatic() && hidden.value() % heads != 0) {
    context.fail("input ", input, " '", context.schema().inputs()[input].name, "' ", shape.str(),
                 " has hidden size ", hidden.value(), ", not divisible by ", heads_attr, "=", heads);
  }
  return {shape[0], Dim(heads), shape[1], hidden.divideExactly(Dim(heads))};
}

void inferAttention(InferenceContext& context) {
  Heads q = readHeads(context, 0, "q_num_heads");
  Heads k = readHeads(context, 1, "kv_num_heads");
  Heads v = readHeads(context, 2, "kv_num_heads");
  Dim batch = unifyDims(context, unifyDims(context, q.batch, k.batch, "batch sizes of Q and K"),
                        v.batch, "batch sizes of Q and V");
  unifyDims(context, q.head_size, k.head_size, "head sizes of Q and K");
  Dim kv_heads = unifyDims(context, k.heads, v.heads, "head counts of K and V");
  Dim kv_sequence = unifyDims(context, k.sequence, v.sequence, "sequence lengths of K and V");
  if (q.heads.isStatic() && kv_heads.isStatic() && kv_heads.value() > 0 &&
      q.heads.value() % kv_heads.value() != 0) {
    context.fail("q_num_heads ", q.heads.value(), " is not a multiple of kv_num_heads ",
                 kv_heads.value());
  }
  if (context.hasInput(4) != context.hasInput(5)) {
    context.fail("past_key and past_value must be given together");
  }
  Dim total = kv_sequence;
  if (context.hasInput(4)) {
    checkRank(context, 4, 4, 4);
    checkRank(context, 5, 4, 4);
    const Shape& past_key = context.inputShape(4);
    const Shape& past_value = context.inputShape(5);
    Dim past;
    if (past_key.isRanked()) {
      past = past_key[2];
      unifyDims(context, past_key[1], kv_heads, "head counts of past_key and K");
      unifyDims(context, past_key[3], k.head_size, "head sizes of past_key and K");
    }
    if (past_value.isRanked()) {
      past = unifyDims(context, past, past_value[2], "sequence lengths of past_key and past_value");
      unifyDims(context, past_value[3], v.head_size, "head sizes of past_value and V");
    }
    total = past + kv_sequence;
  }
  const Shape& query = context.inputShape(0);
  if (query.isRanked() && query.rank() == 3) {
    context.setOutputShape(0, Shape({batch, q.sequence, q.heads * v.head_size}));
  } else if (query.isRanked()) {
    context.setOutputShape(0, Shape({batch, q.heads, q.sequence, v.head_size}));
  }
  context.setOutputShape(1, Shape({batch, kv_heads, total, k.head_size}));
  context.setOutputShape(2, Shape({batch, kv_heads, total, v.head_size}));
  context.setOutputShape(3, Shape({batch, q.heads, q.sequence, total}));
}

// The caches hold rotary_embedding_dim / 2 values per position (ONNX's), or with
// full_tables = 1 (Estuary's, not in ONNX) all rotary_embedding_dim of PyTorch's tables,
// cat(cos(f), cos(f)) written out: the second half of x then rotates with the second half of
// the tables, so that x * cos + rotate_half(x) * sin needs no proof that the halves are equal.
void inferRotaryEmbedding(InferenceContext& context) {
  checkRank(context, 0, 3, 4);
  checkRank(context, 1, 2, 3);
  checkRank(context, 2, 2, 3);
  checkRank(context, 3, 2, 2);
  const Shape& x = context.inputShape(0);
  if (x.isRanked() && x.rank() == 3 && !context.attr("num_heads")) {
    context.fail("input 0 'X' is 3-D ", x.str(), ", which needs attribute 'num_heads'");
  }
  sameShapeAsFirstInput(context);
}

}  // namespace

void registerAttentionOps(OpRegistry& registry) {
  std::vector<DType> floats = floatTypes();
  registry.add(OpSchema("Attention")
                   .input("Q", "T1")
                   .input("K", "T1")
                   .input("V", "T2")
                   .input("attn_mask", "U", Arity::Optional)
                   .input("past_key", "T1", Arity::Optional)
                   .input("past_value", "T2", Arity::Optional)
                   .input("nonpad_kv_seqlen", "i64", Arity::Optional)
                   .output("Y", "T1")
                   .output("present_key", "T1", Arity::Optional)
                   .output("present_value", "T2", Arity::Optional)
                   .output("qk_matmul_output", "T1", Arity::Optional)
                   .attr("is_causal", AttrKind::Int, 0)
                   .attr("kv_num_heads", AttrKind::Int)
                   .attr("left_window_size", AttrKind::Int, -1)
                   .attr("q_num_heads", AttrKind::Int)
                   .attr("qk_matmul_output_mode", AttrKind::Int, 0)
                   .attr("right_window_size", AttrKind::Int, -1)
                   .attr("scale", AttrKind::Float)
                   .attr("softcap", AttrKind::Float, 0.0)
                   .attr("softmax_precision", AttrKind::Type)
                   .typeConstraint("T1", floats)
                   .typeConstraint("T2", floats)
                   .typeConstraint("U", allTypes())
                   .inference(inferAttention));
  registry.add(OpSchema("RotaryEmbedding")
                   .input("X", "T")
                   .input("cos_cache", "T")
                   .input("sin_cache", "T")
                   .input("position_ids", "M", Arity::Optional)
                   .output("Y", "T")
                   .attr("full_tables", AttrKind::Int, 0)  // Estuary's, see inferRotaryEmbedding
                   .attr("interleaved", AttrKind::Int, 0)
                   .attr("num_heads", AttrKind::Int)
                   .attr("rotary_embedding_dim", AttrKind::Int, 0)
                   .typeConstraint("T", {DType::F32, DType::F16, DType::BF16})
                   .typeConstraint("M", {DType::I64})
                   .inference(inferRotaryEmbedding));
}

}  // namespace estuary
