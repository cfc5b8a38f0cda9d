// Attention (ONNX opset 23, plus what the schema adds from later opsets: nonpad_kv_seqlen
// and sliding windows) and RotaryEmbedding (opset 23).
//
// Attention computes in f32; f16/bf16 tensors go through buildPreferringF32's conversion.
// A run is:
//   1. present K/V: past and new keys/values written head-major into present_key /
//      present_value (or into scratch when the node does not output them). Without a past
//      and without present outputs, K and V are read where they are;
//   2. per block of query rows of one head, FlashAttention's loop over tiles of keys: the
//      score tile S = scale * Q K^T (dnnl_sgemm), per score row softcap, the additive bias
//      (float or bool mask, causal and window limits, nonpad_kv_seqlen) and an online
//      softmax (a running maximum and sum; the rows already accumulated are rescaled when
//      the maximum grows), then Y += P V (dnnl_sgemm) into Y itself, normalized by the sum
//      at the end. Memory is one score tile per thread instead of the whole Sq x T matrix
//      per head, and key tiles every query row of a block masks (causal, windows, padding)
//      are skipped. Grouped-query attention reads key/value head h / group for query head
//      h; 3-D Q/K/V ([B, S, H*D]) and Y are read and written through strides.
//
// Order of the row steps: softcap comes before the bias so that a masked -inf stays -inf
// (the ONNX reference fixed this after opset 23, whose text put the mask first and so let
// masked positions leak probability). qk_matmul_output_mode picks what output 3 holds, as
// the ONNX reference (onnx 1.23) does: 0 the scaled Q K^T, 1 that after softcap, 2 that plus
// the bias (the logits the softmax sees), 3 the softmax. Output 3 is written tile by tile
// (every tile is then computed, masked or not); the softmax of mode 3 is the logits
// normalized once a block's maxima and sums are final. A row whose every position is
// masked attends to nothing: its probabilities, and so its Y row, are 0.
#include <atomic>
#include <cmath>
#include <limits>

#include "cpu/nn_kernels.h"
#include "cpu/nn_support.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Query rows per block: the unit of parallel work and the rows of a score tile.
constexpr int64_t kQueryBlock = 64;
// Scores per tile (64 x 256 floats, 64 KiB: in L2 next to its Q rows and K/V tiles). A
// block with fewer query rows (decoding) takes wider key tiles, so that each dnnl_sgemm call
// (about a microsecond of overhead) keeps as much work.
constexpr int64_t kTileScores = 64 * 256;

// A [B, H, S, D] tensor given 4-D, or 3-D as [B, S, H*D] with H from an attribute: its
// sizes and element strides.
struct HeadView {
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  int64_t batch_stride = 0, head_stride = 0, seq_stride = 0;

  // Row s of head h of batch b.
  int64_t offset(int64_t b, int64_t h, int64_t s) const { return b * batch_stride + h * head_stride + s * seq_stride; }
};

HeadView headView(const KernelBuildContext& context, size_t input, const char* heads_attr) {
  const TensorDesc& desc = context.input(input);
  HeadView view;
  view.batch = desc.dims[0];
  if (desc.rank == 4) {
    view.heads = desc.dims[1];
    view.seq = desc.dims[2];
    view.size = desc.dims[3];
    view.seq_stride = view.size;
    view.head_stride = view.seq * view.size;
    view.batch_stride = view.heads * view.head_stride;
    return view;
  }
  view.heads = context.intAttr(heads_attr);
  view.seq = desc.dims[1];
  view.size = desc.dims[2] / view.heads;
  view.head_stride = view.size;
  view.seq_stride = desc.dims[2];
  view.batch_stride = view.seq * view.seq_stride;
  return view;
}

// Row-major [B, H, S, D].
HeadView contiguousView(int64_t batch, int64_t heads, int64_t seq, int64_t size) {
  return HeadView{batch, heads, seq, size, heads * seq * size, seq * size, size};
}

size_t alignedBytes(int64_t floats) { return (static_cast<size_t>(floats) * sizeof(float) + 63) / 64 * 64; }

// C = alpha * A op(B) + beta * C on row-major operands, on the calling thread.
void sgemm(char trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  if (dnnl_sgemm('N', trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) != dnnl_success) {
    raise("dnnl_sgemm failed on a ", m, "x", n, "x", k, " attention tile");
  }
}

// Everything the score rows need, fixed at build time.
struct RowBias {
  enum class Mask : uint8_t { None, Float, Bool };
  Mask mask = Mask::None;
  std::array<int64_t, 3> mask_strides{};  // per batch, query head, query position (0: broadcast)
  int64_t mask_length = 0;                // positions the mask covers; the rest are masked
  bool causal = false;
  int64_t left_window = -1, right_window = -1;
  bool nonpad = false;
  int64_t past = 0;  // keys before the new ones (the causal offset)
};

// The key positions one query row may attend to, [low, high] (empty when high < low), and
// its row of the mask.
struct RowWindow {
  int64_t low = 0, high = -1;
  const float* float_mask = nullptr;
  const uint8_t* bool_mask = nullptr;
};

// A query row's softmax so far: the largest logit and the sum of exp(logit - max).
struct RunningSoftmax {
  float max = kNegInf, sum = 0;
};

// The tensors of one run.
struct AttentionOperands {
  const float* q;
  const float* key;
  const float* value;
  float* y;
  float* qk_output;  // null unless the node has output 3
  const void* mask;
  const int64_t* nonpad;
};

class AttentionKernel final : public Kernel {
 public:
  // Where a key/value operand of the products lives.
  enum class Cache : uint8_t { Input, Present, Scratch };

  AttentionKernel(HeadView q, HeadView k, HeadView v, HeadView key_operand, HeadView value_operand, HeadView y,
                  Cache key_cache, Cache value_cache, RowBias bias, float scale, float softcap, int64_t output_mode,
                  bool has_past, size_t num_outputs)
      : q_(q), k_(k), v_(v), key_(key_operand), value_(value_operand), y_(y), key_cache_(key_cache),
        value_cache_(value_cache), bias_(bias), scale_(scale), softcap_(softcap), output_mode_(output_mode),
        has_past_(has_past), num_outputs_(num_outputs) {
    total_ = key_.seq;
    query_block_ = std::max<int64_t>(1, std::min(kQueryBlock, q_.seq));
    key_tile_ = std::max<int64_t>(1, std::min(total_, kTileScores / query_block_));
    // Scratch: the caches not written to outputs.
    auto cacheBytes = [](Cache cache, const HeadView& view) {
      return cache == Cache::Scratch ? alignedBytes(view.batch * view.batch_stride) : 0;
    };
    value_scratch_ = cacheBytes(key_cache_, key_);
    scratch_ = value_scratch_ + cacheBytes(value_cache_, value_);
  }

  size_t scratchBytes() const override { return scratch_; }
  std::string name() const override { return "cpu:attention (tiled, online softmax, dnnl_sgemm)"; }

  void run(const KernelArgs& args, KernelState*) const override {
    auto* scratch = static_cast<std::byte*>(args.scratch);
    // Optional operands are read only when the node has them (args.inputs has one entry
    // per node input, and a node may stop after V).
    const AttentionOperands operands{
        static_cast<const float*>(args.inputs[0]),
        cacheOf(args, key_cache_, 1, 4, 1, scratch, k_, key_),
        cacheOf(args, value_cache_, 2, 5, 2, scratch + value_scratch_, v_, value_),
        static_cast<float*>(args.outputs[0]),
        num_outputs_ > 3 ? static_cast<float*>(args.outputs[3]) : nullptr,
        bias_.mask != RowBias::Mask::None ? args.inputs[3] : nullptr,
        bias_.nonpad ? static_cast<const int64_t*>(args.inputs[6]) : nullptr};
    const int64_t blocks = (q_.seq + query_block_ - 1) / query_block_;
    // A block's work per score: the two products' multiply-adds (1/16 each) and an exp.
    const double cost = static_cast<double>(query_block_ * total_) * ((q_.size + v_.size) / 16.0 + 8);
    ge::parallelFor(q_.batch * q_.heads * blocks, cost, args.num_threads, [&](int64_t begin, int64_t end) {
      // dnnl_sgemm spreads over OpenMP's thread count when called outside a parallel region;
      // the query blocks are already the parallel unit, so each call runs on its caller alone.
      ScopedOpenMpThreads one_thread(1);
      std::vector<float> tile(static_cast<size_t>(query_block_ * key_tile_));
      for (int64_t task = begin; task < end; ++task) {
        attendBlock(task / blocks, (task % blocks) * query_block_, operands, tile.data());
      }
    });
  }

 private:
  // The K or V operand of the products: the input itself, or the present cache (past rows,
  // then the new ones) written into output `present` or into scratch.
  const float* cacheOf(const KernelArgs& args, Cache cache, size_t input, size_t past_input, size_t present,
                       std::byte* scratch, const HeadView& source, const HeadView& target) const {
    if (cache == Cache::Input) return static_cast<const float*>(args.inputs[input]);
    float* out =
        cache == Cache::Present ? static_cast<float*>(args.outputs[present]) : reinterpret_cast<float*>(scratch);
    const float* past = has_past_ ? static_cast<const float*>(args.inputs[past_input]) : nullptr;
    const float* in = static_cast<const float*>(args.inputs[input]);
    const int64_t past_rows = target.seq - source.seq, size = target.size;
    const size_t row_bytes = static_cast<size_t>(size) * sizeof(float);
    const int64_t pairs = target.batch * target.heads;
    ge::parallelFor(pairs, static_cast<double>(target.seq * size), args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t pair = first; pair < last; ++pair) {
        const int64_t b = pair / target.heads, h = pair % target.heads;
        float* block = out + pair * target.head_stride;
        if (past_rows) std::memcpy(block, past + pair * past_rows * size, static_cast<size_t>(past_rows) * row_bytes);
        const float* rows = in + b * source.batch_stride + h * source.head_stride;
        for (int64_t s = 0; s < source.seq; ++s) {
          std::memcpy(block + (past_rows + s) * size, rows + s * source.seq_stride, row_bytes);
        }
      }
    });
    return out;
  }

  // Query rows [first, first + query_block_) of (batch, query head) `pair` against every
  // key tile, into their rows of Y (and of output 3).
  void attendBlock(int64_t pair, int64_t first, const AttentionOperands& operands, float* tile) const {
    const int64_t b = pair / q_.heads, h = pair % q_.heads, kv = h / (q_.heads / key_.heads);
    const int64_t rows = std::min(query_block_, q_.seq - first);
    const float* q = operands.q + q_.offset(b, h, first);
    const float* keys = operands.key + key_.offset(b, kv, 0);
    const float* values = operands.value + value_.offset(b, kv, 0);
    float* y = operands.y + y_.offset(b, h, first);
    float* qk = operands.qk_output ? operands.qk_output + (pair * q_.seq + first) * total_ : nullptr;

    std::array<RowWindow, kQueryBlock> windows;
    std::array<RunningSoftmax, kQueryBlock> softmax{};
    std::array<float, kQueryBlock> rescale;
    // The key positions any row of the block attends to; output 3 needs every one.
    int64_t low = qk ? 0 : total_, high = qk ? total_ - 1 : -1;
    for (int64_t i = 0; i < rows; ++i) {
      windows[i] = rowWindow(b, h, first + i, operands.mask, operands.nonpad);
      if (windows[i].low <= windows[i].high) {
        low = std::min(low, windows[i].low);
        high = std::max(high, windows[i].high);
      }
      std::fill(y + i * y_.seq_stride, y + i * y_.seq_stride + v_.size, 0.f);
    }
    for (int64_t start = low; start <= high; start += key_tile_) {
      const int64_t width = std::min(key_tile_, high + 1 - start);
      sgemm('T', rows, width, q_.size, scale_, q, q_.seq_stride, keys + start * key_.seq_stride, key_.seq_stride, 0.f,
            tile, width);
      for (int64_t i = 0; i < rows; ++i) {
        rescale[i] = scoreRow(tile + i * width, start, width, windows[i], softmax[i], qk ? qk + i * total_ : nullptr);
      }
      for (int64_t i = 0; i < rows; ++i) {
        float* out = y + i * y_.seq_stride;
        if (rescale[i] != 1.f) {
          for (int64_t d = 0; d < v_.size; ++d) out[d] *= rescale[i];
        }
      }
      sgemm('N', rows, v_.size, width, 1.f, tile, width, values + start * value_.seq_stride, value_.seq_stride, 1.f,
            y, y_.seq_stride);
    }
    for (int64_t i = 0; i < rows; ++i) {
      // A row masked everywhere has summed nothing: its Y row stays 0.
      const float inverse_sum = softmax[i].sum > 0 ? 1.f / softmax[i].sum : 0.f;
      float* out = y + i * y_.seq_stride;
      for (int64_t d = 0; d < v_.size; ++d) out[d] *= inverse_sum;
      if (qk && output_mode_ == 3) normalizeRow(qk + i * total_, softmax[i].max, inverse_sum);
    }
  }

  // The key positions query row i of (b, h) may attend to, from the causal and window
  // limits, the padding and the mask's length.
  RowWindow rowWindow(int64_t b, int64_t h, int64_t i, const void* mask, const int64_t* nonpad) const {
    int64_t offset = bias_.past;
    if (bias_.nonpad && !has_past_) offset = nonpad[b] - q_.seq;
    RowWindow window;
    window.high = total_ - 1;
    if (bias_.causal) window.high = std::min(window.high, i + offset);
    if (bias_.right_window >= 0) window.high = std::min(window.high, i + offset + bias_.right_window);
    if (bias_.left_window >= 0) window.low = std::max(window.low, i + offset - bias_.left_window);
    if (bias_.nonpad) window.high = std::min(window.high, nonpad[b] - 1);
    if (bias_.mask != RowBias::Mask::None) window.high = std::min(window.high, bias_.mask_length - 1);
    const int64_t mask_offset = b * bias_.mask_strides[0] + h * bias_.mask_strides[1] + i * bias_.mask_strides[2];
    if (bias_.mask == RowBias::Mask::Float) window.float_mask = static_cast<const float*>(mask) + mask_offset;
    if (bias_.mask == RowBias::Mask::Bool) window.bool_mask = static_cast<const uint8_t*>(mask) + mask_offset;
    return window;
  }

  // Turns the scores of key positions [start, start + width) of one query row into exp(logit
  // - max) in place, updating the row's running softmax; returns the factor the row's
  // accumulated output is to be rescaled by (the old maximum's exp against the new one).
  // `qk`, when given, is the row of output 3.
  float scoreRow(float* row, int64_t start, int64_t width, const RowWindow& window, RunningSoftmax& softmax,
                 float* qk) const {
    auto copyTo = [&](float* out) { std::memcpy(out + start, row, static_cast<size_t>(width) * sizeof(float)); };
    if (qk && output_mode_ == 0) copyTo(qk);
    if (softcap_ > 0) {
      // softcap * tanh(x / softcap), tanh(t) = 1 - 2 / (exp(2t) + 1): an absolute error of
      // about 1e-7 * softcap, well below what the softmax resolves.
      const float cap = softcap_, inverse = 2.f / softcap_;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) row[j] = cap - 2.f * cap / (expF32(row[j] * inverse) + 1.f);
    }
    if (qk && output_mode_ == 1) copyTo(qk);
    addBias(row, start, width, window);
    if (qk && output_mode_ >= 2) copyTo(qk);  // mode 3: the logits, normalized at the block's end

    float peak = softmax.max;
#pragma omp simd reduction(max : peak)
    for (int64_t j = 0; j < width; ++j) peak = row[j] > peak ? row[j] : peak;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < width; ++j) {
      const float e = row[j] == kNegInf ? 0.f : expF32(row[j] - peak);
      row[j] = e;
      sum += e;
    }
    // Equal maxima (also both -inf: nothing attended yet) need no rescaling. OpenMP starts
    // each lane of a max reduction at the least float, which clang takes to be -FLT_MAX
    // rather than -inf: a tile masked everywhere may so raise the maximum to -FLT_MAX, whose
    // factor against -inf rescales the nothing accumulated so far.
    const float rescale = peak == softmax.max ? 1.f : expF32(softmax.max - peak);
    softmax.max = peak;
    softmax.sum = softmax.sum * rescale + sum;
    return rescale;
  }

  // Adds the mask to key positions [start, start + width) of a score row inside the row's
  // window and sets -inf outside it.
  void addBias(float* row, int64_t start, int64_t width, const RowWindow& window) const {
    const int64_t low = std::clamp<int64_t>(window.low - start, 0, width);
    const int64_t high = std::clamp<int64_t>(window.high + 1 - start, low, width);  // exclusive
    std::fill(row, row + low, kNegInf);
    if (window.float_mask) {
      const float* mask = window.float_mask + start;
#pragma omp simd
      for (int64_t j = low; j < high; ++j) row[j] += mask[j];
    } else if (window.bool_mask) {
      const uint8_t* mask = window.bool_mask + start;
#pragma omp simd
      for (int64_t j = low; j < high; ++j) row[j] = mask[j] ? row[j] : kNegInf;
    }
    std::fill(row + high, row + width, kNegInf);
  }

  // A row of output 3 holding the logits becomes their softmax, given the row's final
  // maximum and 1 / sum (0 for a row masked everywhere, whose probabilities are 0).
  void normalizeRow(float* row, float max, float inverse_sum) const {
#pragma omp simd
    for (int64_t j = 0; j < total_; ++j) row[j] = row[j] == kNegInf ? 0.f : expF32(row[j] - max) * inverse_sum;
  }

  HeadView q_, k_, v_, key_, value_, y_;
  Cache key_cache_, value_cache_;
  RowBias bias_;
  float scale_, softcap_;
  int64_t output_mode_;
  bool has_past_;
  size_t num_outputs_;
  int64_t total_ = 0, query_block_ = 0, key_tile_ = 0;
  size_t value_scratch_ = 0, scratch_ = 0;  // scratch offset of the value cache, total bytes
};

std::unique_ptr<Kernel> makeAttention(const KernelBuildContext& context) {
  if (context.input(0).dtype != DType::F32 || context.input(1).dtype != DType::F32 ||
      context.input(2).dtype != DType::F32) {
    return nullptr;  // 16-bit types come back converted to f32 (buildPreferringF32)
  }
  const int rank = context.input(0).rank;
  if (context.input(1).rank != rank || context.input(2).rank != rank) {
    context.fail("Q, K and V must all be 3-D or all 4-D, got ", context.input(0).str(), ", ",
                 context.input(1).str(), ", ", context.input(2).str());
  }
  HeadView q = headView(context, 0, "q_num_heads");
  HeadView k = headView(context, 1, "kv_num_heads");
  HeadView v = headView(context, 2, "kv_num_heads");
  const bool has_past = context.hasInput(4);
  const int64_t past = has_past ? context.input(4).dims[2] : 0;
  const int64_t total = past + k.seq;
  const size_t outputs = context.numOutputs();
  HeadView key = k, value = v;
  AttentionKernel::Cache key_cache = AttentionKernel::Cache::Input, value_cache = AttentionKernel::Cache::Input;
  if (has_past || outputs > 1) {
    key = contiguousView(k.batch, k.heads, total, k.size);
    key_cache = outputs > 1 ? AttentionKernel::Cache::Present : AttentionKernel::Cache::Scratch;
  }
  if (has_past || outputs > 2) {
    value = contiguousView(v.batch, v.heads, total, v.size);
    value_cache = outputs > 2 ? AttentionKernel::Cache::Present : AttentionKernel::Cache::Scratch;
  }
  // Y is [B, Hq, Sq, Dv], or [B, Sq, Hq * Dv] for 3-D inputs.
  HeadView y = contiguousView(q.batch, q.heads, q.seq, v.size);
  if (rank == 3) {
    y.head_stride = v.size;
    y.seq_stride = q.heads * v.size;
  }

  RowBias bias;
  bias.past = past;
  bias.causal = context.intAttr("is_causal") != 0;
  bias.left_window = context.intAttr("left_window_size");
  bias.right_window = context.intAttr("right_window_size");
  bias.nonpad = context.hasInput(6);
  if (bias.nonpad && (context.input(6).rank != 1 || context.input(6).dims[0] != q.batch)) {
    context.fail("nonpad_kv_seqlen is ", context.input(6).str(), ", expected one length per batch: i64[", q.batch, "]");
  }
  if (context.hasInput(3)) {
    const TensorDesc& mask = context.input(3);
    if (mask.dtype == DType::Bool) bias.mask = RowBias::Mask::Bool;
    else if (mask.dtype == DType::F32) bias.mask = RowBias::Mask::Float;
    else context.fail("attn_mask is ", mask.str(), "; it must be bool or of Q's float type");
    if (mask.rank < 1 || mask.rank > 4) context.fail("attn_mask is ", mask.str(), ", expected rank 1 to 4");
    // Broadcast to [B, Hq, Sq, T]; the last axis may be shorter than T (the rest is masked).
    const int64_t target[] = {q.batch, q.heads, q.seq};
    std::array<int64_t, 4> dims{1, 1, 1, 1};
    for (int d = 0; d < mask.rank; ++d) dims[4 - mask.rank + d] = mask.dims[d];
    int64_t stride = dims[3];
    for (int d = 2; d >= 0; --d) {
      if (dims[d] != 1 && dims[d] != target[d]) {
        context.fail("attn_mask ", mask.str(), " does not broadcast to [", q.batch, ",", q.heads, ",", q.seq, ",",
                     total, "] (batch, query heads, query length, total length)");
      }
      bias.mask_strides[d] = dims[d] == 1 ? 0 : stride;
      stride *= dims[d];
    }
    if (dims[3] > total) {
      context.fail("attn_mask ", mask.str(), " covers ", dims[3], " key positions, there are ", total);
    }
    bias.mask_length = dims[3];
  }
  double scale = 1.0 / std::sqrt(static_cast<double>(q.size));
  if (const Attribute* attribute = context.attr("scale")) scale = attribute->asFloat();
  const int64_t mode = context.intAttr("qk_matmul_output_mode");
  if (mode < 0 || mode > 3) context.fail("qk_matmul_output_mode is ", mode, ", expected 0, 1, 2 or 3");

  return std::make_unique<AttentionKernel>(q, k, v, key, value, y, key_cache, value_cache, bias,
                                           static_cast<float>(scale), static_cast<float>(context.floatAttr("softcap")),
                                           mode, has_past, outputs);
}

// ------------------------------------------------------------------------ RotaryEmbedding

// Rotates pairs of each head's first `rotary` elements by the angle whose cos/sin the caches
// hold for the token's position: pairs are (x[i], x[i + rotary/2]), or (x[2i], x[2i+1])
// when interleaved. The elements past `rotary` pass through.
struct RotaryGeometry {
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0, half = 0;
  int64_t head_stride = 0, seq_stride = 0, batch_stride = 0;  // X's element strides
  int64_t cache_rows = 0, cache_row_stride = 0;
  int64_t second_half_offset = 0;  // where the second half's cos and sin start in a cache row
  bool interleaved = false, by_position = false;
};

template <typename T>
class RotaryEmbeddingKernel final : public Kernel {
 public:
  RotaryEmbeddingKernel(RotaryGeometry geometry, std::string node) : g_(geometry), node_(std::move(node)) {}

  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  std::string name() const override {
    return g_.interleaved ? "cpu:rotary_embedding interleaved" : "cpu:rotary_embedding";
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const T* x = static_cast<const T*>(args.inputs[0]);
    const T* cos_cache = static_cast<const T*>(args.inputs[1]);
    const T* sin_cache = static_cast<const T*>(args.inputs[2]);
    const auto* positions = g_.by_position ? static_cast<const int64_t*>(args.inputs[3]) : nullptr;
    T* y = static_cast<T*>(args.outputs[0]);
    const int64_t tokens = g_.batch * g_.seq;
    std::atomic<int64_t> bad{-1};
    const double cost = static_cast<double>(g_.heads * g_.head_size);
    ge::parallelFor(tokens, cost, args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) {
        const int64_t b = t / g_.seq, s = t % g_.seq;
        const int64_t row = g_.by_position ? positions[t] : g_.cache_rows == g_.seq ? s : t;
        if (row < 0 || row >= g_.cache_rows) {
          bad.store(t);
          continue;
        }
        const T* c = cos_cache + row * g_.cache_row_stride;
        const T* sn = sin_cache + row * g_.cache_row_stride;
        for (int64_t h = 0; h < g_.heads; ++h) {
          const int64_t offset = b * g_.batch_stride + s * g_.seq_stride + h * g_.head_stride;
          rotate(x + offset, c, sn, y + offset);
        }
      }
    });
    if (int64_t t = bad.load(); t >= 0) {
      raise(node_, ": position_ids[", t / g_.seq, ",", t % g_.seq, "] is ", positions[t],
            ", outside the cos/sin caches' ", g_.cache_rows, " rows");
    }
  }

 private:
  void rotate(const T* x, const T* c, const T* s, T* y) const {
    const int64_t half = g_.half;
    if (g_.interleaved) {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = loadAs(x[2 * i]), x2 = loadAs(x[2 * i + 1]), cv = loadAs(c[i]), sv = loadAs(s[i]);
        y[2 * i] = storeAs<T>(cv * x1 - sv * x2);
        y[2 * i + 1] = storeAs<T>(sv * x1 + cv * x2);
      }
    } else {
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = loadAs(x[i]), x2 = loadAs(x[i + half]);
        const int64_t j = i + g_.second_half_offset;
        y[i] = storeAs<T>(loadAs(c[i]) * x1 - loadAs(s[i]) * x2);
        y[i + half] = storeAs<T>(loadAs(s[j]) * x1 + loadAs(c[j]) * x2);
      }
    }
    if (x != y) std::memcpy(y + 2 * half, x + 2 * half, static_cast<size_t>(g_.head_size - 2 * half) * sizeof(T));
  }

  RotaryGeometry g_;
  std::string node_;
};

std::unique_ptr<Kernel> makeRotaryEmbedding(const KernelBuildContext& context) {
  const TensorDesc& x = context.input(0);
  RotaryGeometry g;
  g.batch = x.dims[0];
  if (x.rank == 4) {  // [B, H, S, D]
    g.heads = x.dims[1];
    g.seq = x.dims[2];
    g.head_size = x.dims[3];
    g.seq_stride = g.head_size;
    g.head_stride = g.seq * g.head_size;
  } else {  // [B, S, H*D]
    g.heads = context.intAttr("num_heads");
    g.seq = x.dims[1];
    if (g.heads < 1 || x.dims[2] % g.heads != 0) {
      context.fail("X ", x.str(), " does not split into num_heads=", g.heads, " heads");
    }
    g.head_size = x.dims[2] / g.heads;
    g.head_stride = g.head_size;
    g.seq_stride = x.dims[2];
  }
  g.batch_stride = g.heads * g.seq * g.head_size;
  int64_t rotary = context.intAttr("rotary_embedding_dim");
  if (rotary == 0) rotary = g.head_size;
  if (rotary < 0 || rotary > g.head_size || rotary % 2 != 0) {
    context.fail("rotary_embedding_dim is ", rotary, "; it must be even and at most the head size ", g.head_size);
  }
  g.half = rotary / 2;
  g.interleaved = context.intAttr("interleaved") != 0;
  const bool full_tables = context.intAttr("full_tables") != 0;
  if (full_tables && g.interleaved) context.fail("full_tables applies to the non-interleaved rotation only");
  const int64_t per_position = full_tables ? rotary : g.half;
  g.by_position = context.hasInput(3);
  const TensorDesc& cos = context.input(1);
  const TensorDesc& sin = context.input(2);
  if (cos != sin) context.fail("cos_cache ", cos.str(), " and sin_cache ", sin.str(), " differ");
  if (g.by_position) {
    const TensorDesc& positions = context.input(3);
    if (positions.rank != 2 || positions.dims[0] != g.batch || positions.dims[1] != g.seq) {
      context.fail("position_ids is ", positions.str(), ", expected [", g.batch, ",", g.seq, "]");
    }
    if (cos.rank != 2) {
      context.fail("with position_ids the caches are [max_position + 1, ", per_position, "], got ", cos.str());
    }
    g.cache_rows = cos.dims[0];
  } else {
    // A batch of 1 serves every sequence of the batch (PyTorch models compute them once).
    if (cos.rank != 3 || (cos.dims[0] != g.batch && cos.dims[0] != 1) || cos.dims[1] != g.seq) {
      context.fail("without position_ids the caches are [", g.batch, ",", g.seq, ",", per_position, "] (batch or 1, ",
                   "sequence, rotary_embedding_dim", full_tables ? "" : " / 2", "), got ", cos.str());
    }
    g.cache_rows = cos.dims[0] * g.seq;
  }
  g.cache_row_stride = cos.dims[cos.rank - 1];
  if (g.cache_row_stride < per_position) {
    context.fail("the caches ", cos.str(), " hold ", g.cache_row_stride, " values per position, rotating ", rotary,
                 " elements needs ", per_position);
  }
  g.second_half_offset = full_tables ? g.half : 0;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatDTypes{}, x.dtype, [&](auto type) {
    using T = StorageOf<decltype(type)>;
    if constexpr (!std::is_same_v<T, double>) {  // the schema allows f32, f16, bf16
      kernel = std::make_unique<RotaryEmbeddingKernel<T>>(g, context.node().describe());
    }
  });
  return kernel;
}

}  // namespace

void registerAttentionKernels(KernelRegistry& registry) {
  registry.add("Attention", "", [](const KernelBuildContext& context) {
    return buildPreferringF32(context, makeAttention);
  });
  registry.add("RotaryEmbedding", "", makeRotaryEmbedding);
}

}  // namespace estuary::ge::cpu
