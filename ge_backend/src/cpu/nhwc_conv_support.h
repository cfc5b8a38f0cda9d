#pragma once
// What Estuary's own f32 convolutions in channels-last layout share (direct_conv.cpp,
// winograd_conv.cpp): vectors of eight floats, the 6 x 16 multiply-accumulate step of the
// classic GEMM micro-kernel, and the epilogue they apply in registers, checked at build.
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "cpu/post_ops.h"
#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu::nhwc {

// Eight floats: two make the 16 output channels of a tile. GCC splits the vector into two
// SSE halves where -march has no AVX.
using Vec8 = float __attribute__((vector_size(8 * sizeof(float))));

inline Vec8 load8(const float* from) {
  Vec8 v;
  std::memcpy(&v, from, sizeof v);
  return v;
}
inline void store8(float* to, Vec8 v) { std::memcpy(to, &v, sizeof v); }
inline Vec8 broadcast8(float x) { return Vec8{x, x, x, x, x, x, x, x}; }

constexpr int kTileRows = 6;  // 6 x 2 accumulators + 2 weight vectors + 1 broadcast: 15 of AVX2's 16 registers
constexpr int64_t kTileChannels = 16;

// low[r] / high[r] += sum over c of rows[r][c] * weights[c][0..8) / [8..16), for R rows
// of `channels` values and weights packed as [channels][16].
template <int R>
inline void multiplyAccumulate(const float* const* rows, int64_t channels, const float* weights, Vec8* low,
                               Vec8* high) {
  for (int64_t c = 0; c < channels; ++c) {
    const Vec8 w_low = load8(weights + c * kTileChannels), w_high = load8(weights + c * kTileChannels + 8);
    for (int r = 0; r < R; ++r) {
      const Vec8 value = broadcast8(rows[r][c]);
      low[r] += value * w_low;
      high[r] += value * w_high;
    }
  }
}

// An epilogue step with what it reads resolved at build.
struct Step {
  EpilogueStep::Kind kind;
  enum class Activation : uint8_t { None, Relu, Clip } activation = Activation::None;
  float alpha = 0.f, beta = 0.f;
  size_t input = 0;
};

// A Conv or FusedConv that the own kernels can run, checked at build.
struct ConvOperands {
  const Tensor* weights = nullptr;  // constant, f32, [O, C, kh, kw]
  bool own_bias = false;            // input 2 is a bias that no epilogue step adds
  std::vector<Step> steps;
  std::optional<size_t> residual;   // the first Residual step's input, which may share the output's buffer
};

// `context`'s operands when the own kernels apply: X and Y f32 in channels-last layout,
// constant f32 weights, and epilogue steps among a per-channel bias, a residual of the
// output's own type, a scale, and relu / leaky relu / clip; else nullopt.
std::optional<ConvOperands> nhwcConvOperands(const KernelBuildContext& context, int64_t out_channels,
                                             const Epilogue& epilogue);

inline Vec8 applyActivation(const Step& step, Vec8 v) {
  const Vec8 alpha = broadcast8(step.alpha);
  if (step.activation == Step::Activation::Relu) return v > Vec8{} ? v : v * alpha;
  const Vec8 beta = broadcast8(step.beta);
  v = v < alpha ? alpha : v;
  return v > beta ? beta : v;
}

// The epilogue on output channels [channel, channel + 8) of output pixel `pixel` (its
// index over the whole batch, which locates a residual of the output's layout).
inline Vec8 applyEpilogue(const std::vector<Step>& steps, const void* const* inputs, int64_t pixel, int64_t channel,
                          int64_t out_channels, Vec8 v) {
  for (const Step& step : steps) {
    switch (step.kind) {
      case EpilogueStep::Kind::Bias: v += load8(static_cast<const float*>(inputs[step.input]) + channel); break;
      case EpilogueStep::Kind::Residual:
        v += load8(static_cast<const float*>(inputs[step.input]) + pixel * out_channels + channel);
        break;
      case EpilogueStep::Kind::Scale: v *= broadcast8(step.alpha); break;
      case EpilogueStep::Kind::Activation: v = applyActivation(step, v); break;
      case EpilogueStep::Kind::Product: break;  // declined at build
    }
  }
  return v;
}

}  // namespace estuary::ge::cpu::nhwc
