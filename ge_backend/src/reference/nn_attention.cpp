// Attention and RotaryEmbedding (ONNX opset 23, with what the schema adds from later ONNX:
// nonpad_kv_seqlen and the sliding windows).
//
// Attention follows the current ONNX reference implementation step by step, one score row
// (batch, query head, query position) at a time, in double:
//   present K/V = past rows then the new ones;
//   raw = scale * Q K^T (scale defaults to 1 / sqrt(head size));
//   capped = softcap * tanh(raw / softcap) when softcap > 0 (before the mask, so that a
//            masked -inf stays -inf);
//   logits = capped + bias, the bias being -inf where the mask (bool false, or beyond its
//            last axis), the causal limit, a window limit or nonpad_kv_seqlen excludes a
//            key, and a float mask's value elsewhere;
//   P = softmax(logits), Y = P V.
// qk_matmul_output is raw, capped, logits or P for qk_matmul_output_mode 0 to 3. Grouped
// query heads share key/value head h / (q_heads / kv_heads). A row whose every key is
// excluded attends to nothing: its P and Y are 0 (the ONNX reference would divide 0 by 0).
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/nn.h"

namespace estuary::ge::reference {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A tensor seen as [batch, heads, sequence, size], given 4-D or 3-D [batch, sequence,
// heads * size].
struct Heads {
  int64_t batch = 0, heads = 0, sequence = 0, size = 0;
  bool three_d = false;

  int64_t offset(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return three_d ? ((b * sequence + s) * heads + h) * size + d : ((b * heads + h) * sequence + s) * size + d;
  }
};

// `heads` is the head count of a 3-D tensor (an attribute); a 4-D tensor has its own.
Heads headsOf(const KernelBuildContext& context, const TensorDesc& desc, const char* heads_attr) {
  if (desc.rank == 4) return {desc.dims[0], desc.dims[1], desc.dims[2], desc.dims[3], false};
  if (desc.rank != 3) context.fail("attention operands are 3-D or 4-D, not ", desc.str());
  const int64_t heads = context.intAttr(heads_attr);
  if (heads < 1 || desc.dims[2] % heads != 0) context.fail(heads_attr, " ", heads, " does not divide ", desc.str());
  return {desc.dims[0], heads, desc.dims[1], desc.dims[2] / heads, true};
}

struct AttentionPlan {
  Heads q, k, v, y;
  int64_t past = 0, total = 0;  // past keys; past plus new keys
  double scale = 1, softcap = 0;
  bool causal = false;
  int64_t left_window = -1, right_window = -1;
  int mode = 0;
  bool has_past = false, has_nonpad = false;
  bool has_mask = false, bool_mask = false;
  std::vector<int64_t> mask_dims;  // the mask's dims with leading 1s to rank 4
  std::vector<DType> in_types, out_types;

  int64_t group() const { return q.heads / k.heads; }
};

AttentionPlan attentionPlan(const KernelBuildContext& context) {
  AttentionPlan plan;
  plan.q = headsOf(context, context.input(0), "q_num_heads");
  plan.k = headsOf(context, context.input(1), "kv_num_heads");
  plan.v = headsOf(context, context.input(2), "kv_num_heads");
  if (plan.k.heads < 1 || plan.q.heads % plan.k.heads != 0) context.fail("query heads are not a multiple of kv heads");
  plan.y = {plan.q.batch, plan.q.heads, plan.q.sequence, plan.v.size, plan.q.three_d};
  plan.has_past = context.hasInput(4);
  plan.past = plan.has_past ? context.input(4).dims[2] : 0;
  plan.total = plan.past + plan.k.sequence;
  const Attribute* scale = context.attr("scale");
  plan.scale = scale ? scale->asFloat() : 1 / std::sqrt(static_cast<double>(plan.q.size));
  plan.softcap = context.floatAttr("softcap");
  plan.causal = context.intAttr("is_causal") != 0;
  plan.left_window = context.intAttr("left_window_size");
  plan.right_window = context.intAttr("right_window_size");
  plan.mode = static_cast<int>(context.intAttr("qk_matmul_output_mode"));
  plan.has_nonpad = context.hasInput(6);
  plan.has_mask = context.hasInput(3);
  if (plan.has_mask) {
    const TensorDesc& mask = context.input(3);
    if (mask.rank < 1 || mask.rank > 4) context.fail("attn_mask must have rank 1 to 4, not ", mask.str());
    plan.bool_mask = mask.dtype == DType::Bool;
    plan.mask_dims.assign(static_cast<size_t>(4 - mask.rank), 1);
    for (int d = 0; d < mask.rank; ++d) plan.mask_dims.push_back(mask.dims[d]);
  }
  for (size_t i = 0; i < context.numInputs(); ++i) plan.in_types.push_back(context.input(i).dtype);
  for (size_t o = 0; o < context.numOutputs(); ++o) plan.out_types.push_back(context.output(o).dtype);
  return plan;
}

// Present keys (or values) [batch, kv_heads, total, size] in double: the past rows, then the
// new ones.
std::vector<double> presentOf(const AttentionPlan& plan, const KernelArgs& args, size_t input, size_t past_input,
                              const Heads& heads) {
  std::vector<double> present;
  for (int64_t b = 0; b < heads.batch; ++b) {
    for (int64_t h = 0; h < heads.heads; ++h) {
      for (int64_t t = 0; t < plan.total; ++t) {
        for (int64_t d = 0; d < heads.size; ++d) {
          present.push_back(t < plan.past ? loadDouble(plan.in_types[past_input], args.inputs[past_input],
                                                       ((b * heads.heads + h) * plan.past + t) * heads.size + d)
                                          : loadDouble(plan.in_types[input], args.inputs[input],
                                                       heads.offset(b, h, t - plan.past, d)));
        }
      }
    }
  }
  return present;
}

// The additive bias of key j for query position i of (batch b, query head h).
double biasOf(const AttentionPlan& plan, const KernelArgs& args, int64_t b, int64_t h, int64_t i, int64_t j) {
  const int64_t nonpad = plan.has_nonpad ? loadInt(DType::I64, args.inputs[6], b) : plan.total;
  if (j >= nonpad) return -kInfinity;
  // The query's absolute position is i + offset: after the past keys, or (padded cache
  // without a past) after the nonpad - q_sequence keys before this block.
  const int64_t offset = plan.has_past ? plan.past : (plan.has_nonpad ? nonpad - plan.q.sequence : 0);
  if (plan.causal && j > i + offset) return -kInfinity;
  if (plan.left_window >= 0 && j < i + offset - plan.left_window) return -kInfinity;
  if (plan.right_window >= 0 && j > i + offset + plan.right_window) return -kInfinity;
  if (!plan.has_mask) return 0;
  const std::vector<int64_t>& dims = plan.mask_dims;
  if (j >= dims[3]) return -kInfinity;  // ONNX pads a short mask with -inf (false)
  const int64_t at = (((dims[0] == 1 ? 0 : b) * dims[1] + (dims[1] == 1 ? 0 : h)) * dims[2] + (dims[2] == 1 ? 0 : i)) * dims[3] + j;
  const double value = loadDouble(plan.in_types[3], args.inputs[3], at);
  if (plan.bool_mask) return value != 0 ? 0 : -kInfinity;
  return value;
}

// Softmax of `logits` into `p`; all zero when every logit is -inf. A NaN propagates.
void softmax(const std::vector<double>& logits, std::vector<double>& p) {
  double peak = -kInfinity;
  for (double logit : logits) {
    if (logit > peak || std::isnan(logit)) peak = logit;
  }
  if (peak == -kInfinity) {
    std::fill(p.begin(), p.end(), 0.0);
    return;
  }
  double sum = 0;
  for (size_t j = 0; j < logits.size(); ++j) sum += p[j] = std::exp(logits[j] - peak);
  for (double& value : p) value /= sum;
}

void attention(const AttentionPlan& plan, const KernelArgs& args) {
  const std::vector<double> keys = presentOf(plan, args, 1, 4, plan.k);
  const std::vector<double> values = presentOf(plan, args, 2, 5, plan.v);
  const size_t outputs = plan.out_types.size();
  for (size_t present = 1; present < std::min<size_t>(outputs, 3); ++present) {
    const std::vector<double>& cache = present == 1 ? keys : values;
    for (size_t e = 0; e < cache.size(); ++e) storeDouble(plan.out_types[present], args.outputs[present], e, cache[e]);
  }
  const int64_t total = plan.total;
  std::vector<double> query(plan.q.size), raw(total), capped(total), logits(total), p(total);
  for (int64_t b = 0; b < plan.q.batch; ++b) {
    for (int64_t h = 0; h < plan.q.heads; ++h) {
      const int64_t kv_head = h / plan.group();
      const double* key_rows = keys.data() + (b * plan.k.heads + kv_head) * total * plan.k.size;
      const double* value_rows = values.data() + (b * plan.v.heads + kv_head) * total * plan.v.size;
      for (int64_t i = 0; i < plan.q.sequence; ++i) {
        for (int64_t d = 0; d < plan.q.size; ++d) query[d] = loadDouble(plan.in_types[0], args.inputs[0], plan.q.offset(b, h, i, d));
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < plan.q.size; ++d) dot += query[d] * key_rows[j * plan.k.size + d];
          raw[j] = plan.scale * dot;
          capped[j] = plan.softcap > 0 ? plan.softcap * std::tanh(raw[j] / plan.softcap) : raw[j];
          logits[j] = capped[j] + biasOf(plan, args, b, h, i, j);
        }
        softmax(logits, p);
        if (outputs > 3) {
          const std::vector<double>& stage = plan.mode == 0 ? raw : plan.mode == 1 ? capped : plan.mode == 2 ? logits : p;
          const int64_t row = ((b * plan.q.heads + h) * plan.q.sequence + i) * total;
          for (int64_t j = 0; j < total; ++j) storeDouble(plan.out_types[3], args.outputs[3], row + j, stage[j]);
        }
        for (int64_t d = 0; d < plan.v.size; ++d) {
          double sum = 0;
          for (int64_t j = 0; j < total; ++j) sum += p[j] * value_rows[j * plan.v.size + d];
          storeDouble(plan.out_types[0], args.outputs[0], plan.y.offset(b, h, i, d), sum);
        }
      }
    }
  }
}

std::unique_ptr<Kernel> makeAttention(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const AttentionPlan plan = attentionPlan(context);
  return makeKernel(context, [plan](const KernelArgs& args) { attention(plan, args); });
}

// -------------------------------------------------------------------------- RotaryEmbedding

// Rotates pairs of each head's first rotary_embedding_dim elements (x[i], x[i + half]), or
// (x[2i], x[2i+1]) when interleaved, by the angle of the token's row of the caches:
//   y1 = cos[i] * x1 - sin[i] * x2,  y2 = sin[i] * x1 + cos[i] * x2;
// the rest of the head passes through. The cache row is position_ids[b, s], or without
// position_ids (b, s) of caches [batch, sequence, ...] (a batch of 1 serves every batch).
// With full_tables (Estuary's, not interleaved) the caches hold rotary_embedding_dim values
// per row and y2 uses the second half: cos[i + half], sin[i + half].
struct RotaryPlan {
  Heads x;
  int64_t half = 0;
  bool interleaved = false, full_tables = false, has_positions = false;
  int64_t width = 0;                // elements per cache row
  bool per_batch_rows = false;      // rows indexed by batch too (positions or caches not shared)
};

template <typename S>
void rotate(const RotaryPlan& plan, const KernelArgs& args) {
  const S* x = static_cast<const S*>(args.inputs[0]);
  const S* cos = static_cast<const S*>(args.inputs[1]);
  const S* sin = static_cast<const S*>(args.inputs[2]);
  S* y = static_cast<S*>(args.outputs[0]);
  const Heads& shape = plan.x;
  const int64_t second_half = plan.full_tables ? plan.half : 0;
  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t s = 0; s < shape.sequence; ++s) {
      const int64_t token = (plan.per_batch_rows ? b * shape.sequence : 0) + s;
      const int64_t row = plan.has_positions ? loadInt(DType::I64, args.inputs[3], token) : token;
      const S* cos_row = cos + row * plan.width;
      const S* sin_row = sin + row * plan.width;
      for (int64_t h = 0; h < shape.heads; ++h) {
        const int64_t base = shape.offset(b, h, s, 0);
        for (int64_t d = 0; d < shape.size; ++d) y[base + d] = x[base + d];
        for (int64_t i = 0; i < plan.half; ++i) {
          const int64_t first = base + (plan.interleaved ? 2 * i : i);
          const int64_t second = base + (plan.interleaved ? 2 * i + 1 : i + plan.half);
          const double x1 = x[first], x2 = x[second];
          y[first] = static_cast<S>(static_cast<double>(cos_row[i]) * x1 - static_cast<double>(sin_row[i]) * x2);
          y[second] = static_cast<S>(static_cast<double>(sin_row[i + second_half]) * x1 +
                                     static_cast<double>(cos_row[i + second_half]) * x2);
        }
      }
    }
  }
}

std::unique_ptr<Kernel> makeRotaryEmbedding(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  RotaryPlan plan;
  plan.x = headsOf(context, context.input(0), "num_heads");
  const int64_t rotary = context.intAttr("rotary_embedding_dim") > 0 ? context.intAttr("rotary_embedding_dim") : plan.x.size;
  if (rotary % 2 != 0 || rotary > plan.x.size) context.fail("rotary_embedding_dim ", rotary, " does not fit the head size");
  plan.half = rotary / 2;
  plan.interleaved = context.intAttr("interleaved") != 0;
  plan.full_tables = context.intAttr("full_tables") != 0;
  if (plan.full_tables && plan.interleaved) context.fail("full_tables applies to the non-interleaved rotation only");
  plan.has_positions = context.hasInput(3);
  const TensorDesc& cache = context.input(1);
  plan.width = cache.dims[cache.rank - 1];
  if (plan.width < (plan.full_tables ? rotary : plan.half)) context.fail("cos_cache ", cache.str(), " is too narrow");
  plan.per_batch_rows = plan.has_positions ? context.input(3).dims[0] != 1 : cache.rank == 3 && cache.dims[0] != 1;
  return dispatch(ReferenceFloatDTypes{}, context.input(0).dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [plan](const KernelArgs& args) { rotate<S>(plan, args); });
  });
}

}  // namespace

void registerAttentionKernels(KernelRegistry& registry) {
  registry.add("Attention", "", makeAttention);
  registry.add("RotaryEmbedding", "", makeRotaryEmbedding);
}

}  // namespace estuary::ge::reference
