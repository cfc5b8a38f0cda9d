// Attention and RotaryEmbedding against straightforward double-precision references that
// follow the ONNX reference implementation step by step.
#include <cmath>
#include <limits>
#include <optional>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------- Attention

struct AttentionCase {
  DType dtype = DType::F32;
  int64_t batch = 2, q_heads = 4, kv_heads = 2, q_seq = 3, kv_seq = 5, head = 8, v_head = 6, past = 0;
  bool three_d = false;
  std::optional<DType> mask;  // bool or the float type
  std::vector<int64_t> mask_dims;
  bool causal = false;
  std::optional<double> scale;
  double softcap = 0;
  int mode = -1;          // -1: no qk_matmul_output
  bool present = false;   // request present_key / present_value
  int64_t left_window = -1, right_window = -1;
  std::vector<int64_t> nonpad;  // nonpad_kv_seqlen per batch, when given
};

struct AttentionInputs {
  TestTensor q, k, v, mask, past_key, past_value;
};

// Element (b, h, s, d) of a [B, H, S, D] tensor given 4-D or 3-D [B, S, H*D].
double at(const TestTensor& t, bool three_d, int64_t heads, int64_t b, int64_t h, int64_t s, int64_t d) {
  if (three_d) {
    const int64_t size = t.dims[2] / heads;
    return t.values[static_cast<size_t>((b * t.dims[1] + s) * t.dims[2] + h * size + d)];
  }
  return t.values[static_cast<size_t>(((b * t.dims[1] + h) * t.dims[2] + s) * t.dims[3] + d)];
}

struct AttentionResult {
  std::vector<double> y, present_key, present_value, qk;
};

AttentionResult referenceAttention(const AttentionCase& c, const AttentionInputs& in) {
  const int64_t total = c.past + c.kv_seq, group = c.q_heads / c.kv_heads;
  auto key = [&](int64_t b, int64_t h, int64_t t, int64_t d) {
    return t < c.past ? in.past_key.values[static_cast<size_t>(((b * c.kv_heads + h) * c.past + t) * c.head + d)]
                      : at(in.k, c.three_d, c.kv_heads, b, h, t - c.past, d);
  };
  auto value = [&](int64_t b, int64_t h, int64_t t, int64_t d) {
    return t < c.past ? in.past_value.values[static_cast<size_t>(((b * c.kv_heads + h) * c.past + t) * c.v_head + d)]
                      : at(in.v, c.three_d, c.kv_heads, b, h, t - c.past, d);
  };
  AttentionResult result;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.kv_heads; ++h)
      for (int64_t t = 0; t < total; ++t) {
        for (int64_t d = 0; d < c.head; ++d) result.present_key.push_back(key(b, h, t, d));
        for (int64_t d = 0; d < c.v_head; ++d) result.present_value.push_back(value(b, h, t, d));
      }
  const double scale = c.scale ? *c.scale : 1.0 / std::sqrt(static_cast<double>(c.head));
  result.y.assign(static_cast<size_t>(c.batch * c.q_heads * c.q_seq * c.v_head), 0.0);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.q_heads; ++h) {
      for (int64_t i = 0; i < c.q_seq; ++i) {
        std::vector<double> raw(total), capped(total), logits(total), bias(total, 0.0);
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.head; ++d) dot += at(in.q, c.three_d, c.q_heads, b, h, i, d) * key(b, h / group, j, d);
          raw[j] = scale * dot;
          if (c.mask) {
            const std::vector<int64_t>& md = c.mask_dims;
            std::vector<int64_t> full(4 - md.size(), 1);
            full.insert(full.end(), md.begin(), md.end());
            if (j >= full[3]) {
              bias[j] = -kInf;
            } else {
              const int64_t index[] = {full[0] == 1 ? 0 : b, full[1] == 1 ? 0 : h, full[2] == 1 ? 0 : i, j};
              const int64_t flat = ((index[0] * full[1] + index[1]) * full[2] + index[2]) * full[3] + index[3];
              const double m = in.mask.values[static_cast<size_t>(flat)];
              bias[j] = *c.mask == DType::Bool ? (m != 0 ? 0.0 : -kInf) : m;
            }
          }
          // Causal and window limits are relative to the query's absolute position: after the
          // past keys, or (with nonpad_kv_seqlen and no past) after nonpad - q_seq keys.
          const int64_t offset = !c.nonpad.empty() && c.past == 0 ? c.nonpad[b] - c.q_seq : c.past;
          if (c.causal && j > i + offset) bias[j] = -kInf;
          if (c.left_window >= 0 && j < i + offset - c.left_window) bias[j] = -kInf;
          if (c.right_window >= 0 && j > i + offset + c.right_window) bias[j] = -kInf;
          if (!c.nonpad.empty() && j >= c.nonpad[b]) bias[j] = -kInf;
          capped[j] = c.softcap > 0 ? c.softcap * std::tanh(raw[j] / c.softcap) : raw[j];
          logits[j] = capped[j] + bias[j];
        }
        double peak = -kInf, sum = 0;
        for (double l : logits) peak = std::max(peak, l);
        std::vector<double> p(total, 0.0);  // a fully masked row attends to nothing
        if (peak != -kInf) {
          for (int64_t j = 0; j < total; ++j) sum += p[j] = std::exp(logits[j] - peak);
          for (double& x : p) x /= sum;
        }
        for (int64_t j = 0; j < total; ++j) {
          if (c.mode == 0) result.qk.push_back(raw[j]);
          if (c.mode == 1) result.qk.push_back(capped[j]);
          if (c.mode == 2) result.qk.push_back(logits[j]);
          if (c.mode == 3) result.qk.push_back(p[j]);
        }
        for (int64_t d = 0; d < c.v_head; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j) acc += p[j] * value(b, h / group, j, d);
          const size_t out = c.three_d ? static_cast<size_t>(((b * c.q_seq + i) * c.q_heads + h) * c.v_head + d)
                                       : static_cast<size_t>(((b * c.q_heads + h) * c.q_seq + i) * c.v_head + d);
          result.y[out] = acc;
        }
      }
    }
  }
  return result;
}

AttentionInputs attentionInputs(const AttentionCase& c, uint32_t seed) {
  AttentionInputs in;
  auto shape = [&](int64_t heads, int64_t seq, int64_t size) {
    return c.three_d ? std::vector<int64_t>{c.batch, seq, heads * size} : std::vector<int64_t>{c.batch, heads, seq, size};
  };
  in.q = randomTensor(c.dtype, shape(c.q_heads, c.q_seq, c.head), seed, -2, 2);
  in.k = randomTensor(c.dtype, shape(c.kv_heads, c.kv_seq, c.head), seed + 1, -2, 2);
  in.v = randomTensor(c.dtype, shape(c.kv_heads, c.kv_seq, c.v_head), seed + 2);
  if (c.past) {
    in.past_key = randomTensor(c.dtype, {c.batch, c.kv_heads, c.past, c.head}, seed + 3, -2, 2);
    in.past_value = randomTensor(c.dtype, {c.batch, c.kv_heads, c.past, c.v_head}, seed + 4);
  }
  if (c.mask) {
    in.mask = randomTensor(*c.mask == DType::Bool ? DType::F32 : *c.mask, c.mask_dims, seed + 5, -1, 1);
    if (*c.mask == DType::Bool) {
      in.mask.dtype = DType::Bool;
      for (size_t i = 0; i < in.mask.values.size(); ++i) in.mask.values[i] = (i % 7 == 3) ? 0 : 1;
    }
  }
  return in;
}

RunResult runAttention(const AttentionCase& c, const AttentionInputs& in) {
  std::string params = "%q: " + in.q.type() + ", %k: " + in.k.type() + ", %v: " + in.v.type();
  std::vector<TestTensor> inputs{in.q, in.k, in.v};
  std::string operands = "%q, %k, %v";
  if (c.mask) {
    params += ", %mask: " + in.mask.type();
    inputs.push_back(in.mask);
  }
  operands += c.mask ? ", %mask" : (c.past ? ", _" : "");
  if (c.past) {
    params += ", %pk: " + in.past_key.type() + ", %pv: " + in.past_value.type();
    inputs.push_back(in.past_key);
    inputs.push_back(in.past_value);
    operands += ", %pk, %pv";
  }
  if (!c.nonpad.empty()) {
    if (!c.mask && !c.past) operands += ", _";  // otherwise already placed
    if (!c.past) operands += ", _, _";
    TestTensor lengths{DType::I64, {c.batch}, {}};
    for (int64_t n : c.nonpad) lengths.values.push_back(static_cast<double>(n));
    params += ", %nonpad: " + lengths.type();
    inputs.push_back(lengths);
    operands += ", %nonpad";
  }
  std::string attrs = "is_causal = " + std::to_string(c.causal ? 1 : 0);
  if (c.left_window >= 0) attrs += ", left_window_size = " + std::to_string(c.left_window);
  if (c.right_window >= 0) attrs += ", right_window_size = " + std::to_string(c.right_window);
  if (c.three_d) attrs += ", kv_num_heads = " + std::to_string(c.kv_heads) + ", q_num_heads = " + std::to_string(c.q_heads);
  if (c.mode >= 0) attrs += ", qk_matmul_output_mode = " + std::to_string(c.mode);
  if (c.scale) attrs += ", scale = " + std::to_string(*c.scale);
  if (c.softcap > 0) attrs += ", softcap = " + std::to_string(c.softcap);
  std::string results = "%y";
  if (c.present || c.mode >= 0) results += ", %present_key, %present_value";
  if (c.mode >= 0) results += ", %qk";
  std::string text = "graph @g(" + params + ") {\n  " + results + " = Attention(" + operands + ") {" + attrs +
                     "}\n  return " + results + "\n}";
  return runGraph(text, inputs);
}

void checkAttention(const AttentionCase& c, const AttentionInputs& in) {
  RunResult run = runAttention(c, in);
  AttentionResult expected = referenceAttention(c, in);
  const double tolerance = c.dtype == DType::F32 ? 2e-5 : dtypeTolerance(c.dtype) * 4;
  expectNear(run.outputs.at(0), expected.y, tolerance, tolerance, "Y");
  if (c.present || c.mode >= 0) {
    expectNear(run.outputs.at(1), expected.present_key, 0, 0, "present_key");
    expectNear(run.outputs.at(2), expected.present_value, 0, 0, "present_value");
  }
  if (c.mode >= 0) expectNear(run.outputs.at(3), expected.qk, tolerance, tolerance, "qk_matmul_output");
  EXPECT_TRUE(usesKernel(run, "cpu:attention")) << run.kernels.at(0);
}

void checkAttention(const AttentionCase& c, uint32_t seed) { checkAttention(c, attentionInputs(c, seed)); }

TEST(AttentionKernel, FourDimensionalMatchesTheReference) {
  AttentionCase c;
  c.q_heads = c.kv_heads = 3;
  checkAttention(c, 1);
}

TEST(AttentionKernel, GroupedQueryAttentionSharesKeyHeads) {
  AttentionCase c;  // 4 query heads over 2 key/value heads, head sizes 8 (QK) and 6 (V)
  checkAttention(c, 2);
}

TEST(AttentionKernel, ThreeDimensionalInputsSplitHeadsFromAttributes) {
  AttentionCase c;
  c.three_d = true;
  c.scale = 0.3;
  checkAttention(c, 3);
}

TEST(AttentionKernel, FloatMaskBroadcastsAndAShortMaskMasksTheRest) {
  AttentionCase c;
  c.mask = DType::F32;
  c.mask_dims = {c.q_seq, c.kv_seq};
  checkAttention(c, 4);
  c.mask_dims = {c.batch, 1, c.q_seq, c.kv_seq - 2};  // the last two key positions are masked
  checkAttention(c, 5);
}

TEST(AttentionKernel, PastKeyValueCausalBoolMaskAndEveryQkOutputMode) {
  AttentionCase c;
  c.past = 4;
  c.causal = true;
  c.mask = DType::Bool;
  c.mask_dims = {c.batch, c.q_heads, c.q_seq, c.past + c.kv_seq};
  for (int mode = 0; mode <= 3; ++mode) {
    SCOPED_TRACE("qk_matmul_output_mode " + std::to_string(mode));
    c.mode = mode;
    checkAttention(c, 6 + mode);
  }
}

TEST(AttentionKernel, SoftcapComesBeforeTheMask) {
  AttentionCase c;
  c.softcap = 1.5;
  c.causal = true;
  c.three_d = true;
  c.present = true;
  for (int mode : {0, 1, 2}) {
    SCOPED_TRACE("qk_matmul_output_mode " + std::to_string(mode));
    c.mode = mode;
    checkAttention(c, 20 + mode);
  }
}

TEST(AttentionKernel, SlidingWindowsAroundTheQueryPosition) {
  AttentionCase c;
  c.q_seq = 4;
  c.kv_seq = 7;
  c.past = 3;
  c.left_window = 2;
  c.right_window = 1;
  checkAttention(c, 25);
  c.causal = true;  // right limit 0
  c.mode = 1;
  checkAttention(c, 26);
}

TEST(AttentionKernel, NonpadKvSeqlenMasksPaddedKeysAndShiftsTheCausalFrontier) {
  AttentionCase c;
  c.q_seq = 2;
  c.kv_seq = 6;
  c.nonpad = {4, 6};
  checkAttention(c, 27);
  c.causal = true;
  c.mask = DType::F32;
  c.mask_dims = {c.q_seq, c.kv_seq};
  checkAttention(c, 28);
}

TEST(AttentionKernel, SixteenBitTypesComputeInF32) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(dtype));
    AttentionCase c;
    c.dtype = dtype;
    c.past = 2;
    c.present = true;
    c.mask = dtype;
    c.mask_dims = {c.q_seq, c.past + c.kv_seq};
    checkAttention(c, 30);
  }
}

TEST(AttentionKernel, AFullyMaskedRowIsZeroAsInTheReference) {
  AttentionCase c;
  c.mask = DType::Bool;
  c.mask_dims = {c.q_seq, c.kv_seq};
  AttentionInputs in = attentionInputs(c, 40);
  for (int64_t j = 0; j < c.kv_seq; ++j) in.mask.values[static_cast<size_t>(c.kv_seq + j)] = 0;  // query row 1
  RunResult run = runAttention(c, in);
  for (int64_t d = 0; d < c.v_head; ++d) {
    EXPECT_EQ(run.outputs[0].values[static_cast<size_t>(c.v_head + d)], 0.0);            // (0, 0, 1, d)
    EXPECT_FALSE(std::isnan(run.outputs[0].values[static_cast<size_t>(d)]));            // (0, 0, 0, d)
  }
}

// A padding mask as transformers builds it: the least float (not -inf) at padded keys. Their
// softmax weights are exactly 0 (expF32 flushes below exp(-87)), not subnormal: subnormal
// weights made the products after them take a microcode assist per multiply-add on Intel.
TEST(AttentionKernel, APaddingMaskOfTheLeastFloatWeighsPaddedKeysZero) {
  AttentionCase c;
  c.mask = DType::F32;
  c.mask_dims = {c.batch, 1, 1, c.kv_seq};
  c.mode = 3;
  AttentionInputs in = attentionInputs(c, 45);
  const double least = -std::numeric_limits<float>::max();
  for (size_t i = 0; i < in.mask.values.size(); ++i) in.mask.values[i] = i % 3 == 1 ? least : 0.0;
  checkAttention(c, in);
  RunResult run = runAttention(c, in);
  const TestTensor& softmax = run.outputs.at(3);
  for (size_t i = 0; i < softmax.values.size(); ++i) {
    const int64_t key = static_cast<int64_t>(i) % c.kv_seq;
    const int64_t batch = static_cast<int64_t>(i / (softmax.values.size() / static_cast<size_t>(c.batch)));
    if (in.mask.values[static_cast<size_t>(batch * c.kv_seq + key)] == least) {
      ASSERT_EQ(softmax.values[i], 0.0) << "softmax element " << i;
    }
  }
}

// The kernel walks blocks of 64 query rows over tiles of 256 keys (attention.cpp). These
// cases have lengths that are multiples of neither, masks and limits that end inside tiles,
// and tiles that some or all rows of a block mask.
AttentionCase tiledCase() {
  AttentionCase c;
  c.batch = 1;
  c.q_seq = 70;
  c.kv_seq = 300;
  return c;
}

TEST(AttentionKernel, TilesWithRaggedEdgesAndMasksAcrossThem) {
  AttentionCase c = tiledCase();
  checkAttention(c, 50);
  c.mask = DType::F32;
  c.mask_dims = {c.q_seq, c.kv_seq - 20};  // a short mask: its end falls inside the second tile
  checkAttention(c, 51);
  c.mask = DType::Bool;
  c.mask_dims = {c.batch, c.q_heads, c.q_seq, c.kv_seq};
  checkAttention(c, 52);
  c.three_d = true;  // strided Q, K, V and Y
  c.softcap = 2;
  checkAttention(c, 53);
}

TEST(AttentionKernel, CausalAndWindowLimitsAcrossTiles) {
  AttentionCase c = tiledCase();
  c.q_seq = c.kv_seq;  // the causal frontier crosses every tile; blocks skip tiles past it
  c.causal = true;
  checkAttention(c, 54);
  c.q_seq = 100;  // after 200 past keys
  c.past = 200;
  c.kv_seq = 100;
  checkAttention(c, 55);
  c.left_window = 70;  // each block attends to a band narrower than a tile
  checkAttention(c, 56);
  c.nonpad = {260};
  c.past = 0;
  c.kv_seq = 300;
  checkAttention(c, 57);
}

TEST(AttentionKernel, QkOutputOverEveryTileInEachMode) {
  AttentionCase c = tiledCase();
  c.causal = true;  // masked tiles are computed too: output 3 holds them
  c.past = 230;
  c.kv_seq = 70;
  for (int mode = 0; mode <= 3; ++mode) {
    SCOPED_TRACE("qk_matmul_output_mode " + std::to_string(mode));
    c.mode = mode;
    checkAttention(c, 60 + mode);
  }
}

TEST(AttentionKernel, RowsMaskedForWholeTilesOrEverywhere) {
  AttentionCase c = tiledCase();
  c.mask = DType::Bool;
  c.mask_dims = {c.q_seq, c.kv_seq};
  AttentionInputs in = attentionInputs(c, 65);
  auto mask = [&](int64_t row, int64_t key) -> double& {
    return in.mask.values[static_cast<size_t>(row * c.kv_seq + key)];
  };
  for (int64_t j = 0; j < 256; ++j) mask(0, j) = 0;       // row 0: the first tile masked
  for (int64_t j = 256; j < c.kv_seq; ++j) mask(1, j) = 0;  // row 1: the last tile masked
  for (int64_t j = 0; j < c.kv_seq; ++j) mask(2, j) = 0;    // row 2: masked everywhere
  checkAttention(c, in);
  c.mode = 3;
  checkAttention(c, in);
}

void expectBuildError(const std::string& text, const std::string& expected) {
  auto graph = parseGraph(text);
  try {
    CompiledModel::build(*graph);
    ADD_FAILURE() << "built, expected an error containing: " << expected;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

TEST(AttentionKernel, BadInputsAreRefusedNamingTheProblem) {
  expectBuildError(R"(graph @g(%q: f32[1,2,3,4], %k: f32[1,2,5,4], %v: f32[1,2,5,4], %m: f32[2,3,6]) {
  %y = Attention(%q, %k, %v, %m)
  return %y
})",
                   "attn_mask f32[2,3,6] covers 6 key positions, there are 5");
  expectBuildError(R"(graph @g(%q: f32[1,2,3,4], %k: f32[1,2,5,4], %v: f32[1,2,5,4], %m: f32[3,3,5]) {
  %y = Attention(%q, %k, %v, %m)
  return %y
})",
                   "does not broadcast to [1,2,3,5]");
  expectBuildError(R"(graph @g(%q: f32[1,2,3,4], %k: f32[1,2,5,4], %v: f32[1,2,5,4], %m: i32[3,5]) {
  %y = Attention(%q, %k, %v, %m)
  return %y
})",
                   "attn_mask is i32[3,5]; it must be bool or of Q's float type");
}

// ---------------------------------------------------------------------- RotaryEmbedding

struct RotaryCase {
  DType dtype = DType::F32;
  int64_t batch = 2, heads = 3, seq = 4, head = 8, rotary = 0, max_position = 10;
  bool three_d = false, interleaved = false, positions = true, full_tables = false;
};

void checkRotary(const RotaryCase& c, uint32_t seed) {
  const int64_t rotary = c.rotary ? c.rotary : c.head, half = rotary / 2;
  TestTensor x = randomTensor(c.dtype, c.three_d ? std::vector<int64_t>{c.batch, c.seq, c.heads * c.head}
                                                 : std::vector<int64_t>{c.batch, c.heads, c.seq, c.head},
                              seed, -3, 3);
  const int64_t per_position = c.full_tables ? rotary : half;
  std::vector<int64_t> cache_dims = c.positions ? std::vector<int64_t>{c.max_position, per_position + 1}
                                                : std::vector<int64_t>{c.batch, c.seq, per_position};
  TestTensor cos = randomTensor(c.dtype, cache_dims, seed + 1), sin = randomTensor(c.dtype, cache_dims, seed + 2);
  TestTensor positions{DType::I64, {c.batch, c.seq}, {}};
  for (int64_t t = 0; t < c.batch * c.seq; ++t) positions.values.push_back(static_cast<double>((t * 7 + 3) % c.max_position));

  std::vector<double> expected(x.values.size());
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < c.seq; ++s)
      for (int64_t h = 0; h < c.heads; ++h) {
        const int64_t base = c.three_d ? ((b * c.seq + s) * c.heads + h) * c.head : ((b * c.heads + h) * c.seq + s) * c.head;
        const int64_t row = c.positions ? static_cast<int64_t>(positions.values[static_cast<size_t>(b * c.seq + s)])
                                        : b * c.seq + s;
        const int64_t width = cache_dims.back();
        for (int64_t d = 0; d < c.head; ++d) expected[static_cast<size_t>(base + d)] = x.values[static_cast<size_t>(base + d)];
        for (int64_t i = 0; i < half; ++i) {
          const int64_t first = c.interleaved ? 2 * i : i, second = c.interleaved ? 2 * i + 1 : i + half;
          const double x1 = x.values[static_cast<size_t>(base + first)], x2 = x.values[static_cast<size_t>(base + second)];
          // Whole tables: the second half rotates with the tables' second half.
          const size_t cache = static_cast<size_t>(row * width + i);
          const size_t second_cache = cache + static_cast<size_t>(c.full_tables ? half : 0);
          expected[static_cast<size_t>(base + first)] = cos.values[cache] * x1 - sin.values[cache] * x2;
          expected[static_cast<size_t>(base + second)] = sin.values[second_cache] * x1 + cos.values[second_cache] * x2;
        }
      }
  std::string attrs = "interleaved = " + std::to_string(c.interleaved ? 1 : 0);
  if (c.three_d) attrs += ", num_heads = " + std::to_string(c.heads);
  if (c.rotary) attrs += ", rotary_embedding_dim = " + std::to_string(c.rotary);
  if (c.full_tables) attrs += ", full_tables = 1";
  std::string params = "%x: " + x.type() + ", %cos: " + cos.type() + ", %sin: " + sin.type();
  std::vector<TestTensor> inputs{x, cos, sin};
  std::string operands = "%x, %cos, %sin";
  if (c.positions) {
    params += ", %p: " + positions.type();
    operands += ", %p";
    inputs.push_back(positions);
  }
  RunResult run = runGraph("graph @g(" + params + ") {\n  %y = RotaryEmbedding(" + operands + ") {" + attrs +
                               "}\n  return %y\n}",
                           inputs);
  const double tolerance = c.dtype == DType::F32 ? 1e-6 : dtypeTolerance(c.dtype) * 4;
  expectNear(run.outputs.at(0), expected, tolerance, tolerance, "RotaryEmbedding");
  EXPECT_TRUE(usesKernel(run, "cpu:rotary_embedding"));
}

TEST(RotaryEmbeddingKernel, HalvesAndInterleavedPairsIn3DAnd4D) {
  for (bool three_d : {false, true}) {
    for (bool interleaved : {false, true}) {
      SCOPED_TRACE(std::string(three_d ? "3-D" : "4-D") + (interleaved ? " interleaved" : ""));
      RotaryCase c;
      c.three_d = three_d;
      c.interleaved = interleaved;
      checkRotary(c, 50);
    }
  }
}

TEST(RotaryEmbeddingKernel, PartialRotationPassesTheRestThrough) {
  RotaryCase c;
  c.rotary = 4;
  checkRotary(c, 60);
  c.interleaved = true;
  checkRotary(c, 61);
}

TEST(RotaryEmbeddingKernel, WholeTablesRotateTheSecondHalfWithTheirSecondHalf) {
  for (bool positions : {false, true}) {
    for (bool three_d : {false, true}) {
      SCOPED_TRACE(std::string(positions ? "position_ids" : "per token") + (three_d ? " 3-D" : " 4-D"));
      RotaryCase c;
      c.full_tables = true;
      c.positions = positions;
      c.three_d = three_d;
      checkRotary(c, 90);
    }
  }
  RotaryCase partial;
  partial.full_tables = true;
  partial.rotary = 4;
  checkRotary(partial, 91);
}

TEST(RotaryEmbeddingKernel, WholeTablesAreRefusedForInterleavedPairs) {
  expectBuildError(R"(graph @g(%x: f32[1,2,3,8], %c: f32[1,3,8], %s: f32[1,3,8]) {
  %y = RotaryEmbedding(%x, %c, %s) {interleaved = 1, full_tables = 1}
  return %y
})",
                   "full_tables applies to the non-interleaved rotation only");
}

TEST(RotaryEmbeddingKernel, CachesPerTokenWithoutPositionIds) {
  RotaryCase c;
  c.positions = false;
  checkRotary(c, 70);
}

TEST(RotaryEmbeddingKernel, SixteenBitTypes) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(dtype));
    RotaryCase c;
    c.dtype = dtype;
    c.three_d = true;
    checkRotary(c, 80);
  }
}

TEST(RotaryEmbeddingKernel, AnOutOfRangePositionIsAnErrorNamingIt) {
  auto graph = parseGraph(R"(graph @g(%x: f32[1,2,4], %cos: f32[3,2], %sin: f32[3,2], %p: i64[1,2]) {
  %y = RotaryEmbedding(%x, %cos, %sin, %p) {num_heads = 1}
  return %y
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  std::vector<float> x(8, 1.f), cos(6, 1.f), sin(6, 0.f);
  std::vector<int64_t> positions{1, 3};
  try {
    context->run({HostTensor::of(TensorDesc::of(DType::F32, {1, 2, 4}), x.data()),
                  HostTensor::of(TensorDesc::of(DType::F32, {3, 2}), cos.data()),
                  HostTensor::of(TensorDesc::of(DType::F32, {3, 2}), sin.data()),
                  HostTensor::of(TensorDesc::of(DType::I64, {1, 2}), positions.data())});
    ADD_FAILURE() << "ran with position 3 of a 3-row cache";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("position_ids[0,1] is 3, outside the cos/sin caches' 3 rows"),
              std::string::npos)
        << error.what();
  }
}

TEST(RotaryEmbeddingKernel, BadShapesAreRefused) {
  expectBuildError(R"(graph @g(%x: f32[1,2,3,8], %cos: f32[5,4], %sin: f32[5,4]) {
  %y = RotaryEmbedding(%x, %cos, %sin)
  return %y
})",
                   "without position_ids the caches are [1,3,4]");
  expectBuildError(R"(graph @g(%x: f32[1,2,3,8], %cos: f32[5,4], %sin: f32[5,4], %p: i64[1,3]) {
  %y = RotaryEmbedding(%x, %cos, %sin, %p) {rotary_embedding_dim = 3}
  return %y
})",
                   "rotary_embedding_dim is 3; it must be even");
}

}  // namespace
}  // namespace estuary::ge::tensor_test
