// A LLaMA-style decoder block built by hand with the typed op classes (RMSNorm, rotary
// embedding, causal attention, gated SiLU MLP, residual adds), built and run in a session,
// its output checked against plain loops.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "estuary/sdk/ops.h"
#include "estuary/sdk/session.h"
#include "estuary/support/error.h"
#include "example_support.h"

using namespace estuary;

namespace {

constexpr int64_t kSeq = 8, kHidden = 64, kHeads = 4, kHeadDim = kHidden / kHeads, kFfn = 128;
constexpr float kEpsilon = 1e-5f;

struct Weights {
  std::vector<float> norm1, wq, wk, wv, wo, norm2, gate, up, down;
  std::vector<float> cos, sin;  // [1, seq, head_dim / 2]
};

using Matrix = std::vector<float>;  // row-major [rows, columns]

Matrix matmul(const Matrix& a, const Matrix& b, int64_t rows, int64_t inner, int64_t columns) {
  Matrix c(static_cast<size_t>(rows * columns), 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < inner; ++k)
      for (int64_t j = 0; j < columns; ++j) c[i * columns + j] += a[i * inner + k] * b[k * columns + j];
  return c;
}

Matrix rmsNorm(const Matrix& x, const std::vector<float>& scale) {
  Matrix y(x.size());
  for (int64_t s = 0; s < kSeq; ++s) {
    float squares = 0;
    for (int64_t d = 0; d < kHidden; ++d) squares += x[s * kHidden + d] * x[s * kHidden + d];
    float inverse = 1.0f / std::sqrt(squares / kHidden + kEpsilon);
    for (int64_t d = 0; d < kHidden; ++d) y[s * kHidden + d] = x[s * kHidden + d] * inverse * scale[d];
  }
  return y;
}

// Rotates the two halves of each head's vector by the position's angles (ONNX's
// RotaryEmbedding, not interleaved).
Matrix rotate(const Matrix& x, const Weights& w) {
  Matrix y(x.size());
  const int64_t half = kHeadDim / 2;
  for (int64_t s = 0; s < kSeq; ++s)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t first = s * kHidden + h * kHeadDim + i, second = first + half;
        const float c = w.cos[s * half + i], n = w.sin[s * half + i];
        y[first] = x[first] * c - x[second] * n;
        y[second] = x[second] * c + x[first] * n;
      }
  return y;
}

Matrix causalAttention(const Matrix& q, const Matrix& k, const Matrix& v) {
  Matrix y(q.size(), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t s = 0; s < kSeq; ++s) {
      std::vector<float> scores(static_cast<size_t>(s + 1));
      for (int64_t t = 0; t <= s; ++t) {
        float dot = 0;
        for (int64_t d = 0; d < kHeadDim; ++d) dot += q[s * kHidden + h * kHeadDim + d] * k[t * kHidden + h * kHeadDim + d];
        scores[t] = dot * scale;
      }
      float top = *std::max_element(scores.begin(), scores.end()), total = 0;
      for (float& score : scores) total += score = std::exp(score - top);
      for (int64_t t = 0; t <= s; ++t)
        for (int64_t d = 0; d < kHeadDim; ++d)
          y[s * kHidden + h * kHeadDim + d] += scores[t] / total * v[t * kHidden + h * kHeadDim + d];
    }
  return y;
}

Matrix reference(const Matrix& x, const Weights& w) {
  Matrix n1 = rmsNorm(x, w.norm1);
  Matrix q = rotate(matmul(n1, w.wq, kSeq, kHidden, kHidden), w);
  Matrix k = rotate(matmul(n1, w.wk, kSeq, kHidden, kHidden), w);
  Matrix v = matmul(n1, w.wv, kSeq, kHidden, kHidden);
  Matrix attended = matmul(causalAttention(q, k, v), w.wo, kSeq, kHidden, kHidden);
  Matrix h(x.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = x[i] + attended[i];
  Matrix n2 = rmsNorm(h, w.norm2);
  Matrix gate = matmul(n2, w.gate, kSeq, kHidden, kFfn), up = matmul(n2, w.up, kSeq, kHidden, kFfn);
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  Matrix down = matmul(gate, w.down, kSeq, kFfn, kHidden);
  for (size_t i = 0; i < h.size(); ++i) h[i] += down[i];
  return h;
}

std::unique_ptr<Graph> buildBlock(const Weights& w) {
  using namespace sdk::ops;
  sdk::GraphBuilder g("decoder_block");
  auto constant = [&](const std::vector<float>& values, std::vector<int64_t> dims, const char* name) {
    return g.constant(Tensor::fromVector(DType::F32, std::move(dims), values), name);
  };
  auto linear = [&](sdk::Output x, const std::vector<float>& weight, int64_t in, int64_t out, const char* name) {
    return sdk::Output(MatMul(g, name).set_input_A(x).set_input_B(constant(weight, {in, out}, name)));
  };
  sdk::Output cos = constant(w.cos, {1, kSeq, kHeadDim / 2}, "rope.cos");
  sdk::Output sin = constant(w.sin, {1, kSeq, kHeadDim / 2}, "rope.sin");
  auto rope = [&](sdk::Output x, const char* name) {
    return sdk::Output(RotaryEmbedding(g, name).set_input_X(x).set_input_cos_cache(cos).set_input_sin_cache(sin)
                           .set_attr_num_heads(kHeads));
  };

  sdk::Output x = g.input("hidden", DType::F32, {1, kSeq, kHidden});
  sdk::Output n1 = RMSNormalization(g, "attn_norm")
                       .set_input_X(x)
                       .set_input_scale(constant(w.norm1, {kHidden}, "attn_norm.weight"))
                       .set_attr_epsilon(kEpsilon);
  sdk::Output q = rope(linear(n1, w.wq, kHidden, kHidden, "q_proj"), "q_rope");
  sdk::Output k = rope(linear(n1, w.wk, kHidden, kHidden, "k_proj"), "k_rope");
  sdk::Output v = linear(n1, w.wv, kHidden, kHidden, "v_proj");
  sdk::Output attended = Attention(g, "attention")
                             .set_input_Q(q)
                             .set_input_K(k)
                             .set_input_V(v)
                             .set_attr_is_causal(1)
                             .set_attr_q_num_heads(kHeads)
                             .set_attr_kv_num_heads(kHeads);
  sdk::Output h = Add(g, "attn_residual").set_input_A(x).set_input_B(linear(attended, w.wo, kHidden, kHidden, "o_proj"));
  sdk::Output n2 = RMSNormalization(g, "mlp_norm")
                       .set_input_X(h)
                       .set_input_scale(constant(w.norm2, {kHidden}, "mlp_norm.weight"))
                       .set_attr_epsilon(kEpsilon);
  sdk::Output gate = linear(n2, w.gate, kHidden, kFfn, "gate_proj");
  sdk::Output silu = Mul(g, "silu").set_input_A(gate).set_input_B(Sigmoid(g, "gate_sigmoid").set_input_X(gate));
  sdk::Output gated = Mul(g, "gated").set_input_A(silu).set_input_B(linear(n2, w.up, kHidden, kFfn, "up_proj"));
  sdk::Output out = Add(g, "mlp_residual").set_input_A(h).set_input_B(linear(gated, w.down, kFfn, kHidden, "down_proj"));
  g.output(out, "output");
  return g.finish();
}

}  // namespace

int main() {
  try {
    std::mt19937 random(11);
    auto matrix = [&](int64_t rows, int64_t columns) {
      return example::randomValues(static_cast<size_t>(rows * columns), 1.0f / std::sqrt(static_cast<float>(rows)), random);
    };
    Weights w;
    w.norm1 = example::randomValues(kHidden, 0.1f, random);
    for (float& g : w.norm1) g += 1.0f;
    w.norm2 = w.norm1;
    w.wq = matrix(kHidden, kHidden), w.wk = matrix(kHidden, kHidden), w.wv = matrix(kHidden, kHidden);
    w.wo = matrix(kHidden, kHidden), w.gate = matrix(kHidden, kFfn), w.up = matrix(kHidden, kFfn);
    w.down = matrix(kFfn, kHidden);
    for (int64_t s = 0; s < kSeq; ++s)
      for (int64_t i = 0; i < kHeadDim / 2; ++i) {
        double angle = static_cast<double>(s) * std::pow(10000.0, -2.0 * static_cast<double>(i) / kHeadDim);
        w.cos.push_back(static_cast<float>(std::cos(angle)));
        w.sin.push_back(static_cast<float>(std::sin(angle)));
      }
    std::unique_ptr<Graph> graph = buildBlock(w);
    std::printf("built graph '%s' with %zu nodes by hand\n", graph->name().c_str(), graph->numNodes());

    // The O2 pipeline recognizes the block's patterns; the result must not change.
    sdk::Session session({{"threads", "1"}, {"pipeline", "O2"}});
    session.addGraph(1, *graph);
    std::vector<float> hidden = example::randomValues(kSeq * kHidden, 1.0f, random);
    std::vector<sdk::NamedTensor> outputs = session.runGraph(
        1, {{"hidden", ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {1, kSeq, kHidden}), hidden.data()), nullptr}});
    return example::matches("decoder block output", static_cast<const float*>(outputs.at(0).tensor.data),
                            reference(hidden, w), 1e-4f)
               ? 0
               : 1;
  } catch (const Error& error) {
    std::fprintf(stderr, "decoder_block: %s\n", error.what());
    return 1;
  }
}
