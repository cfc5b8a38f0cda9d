#pragma once
// Estuary's own direct convolution for f32 tensors in channels-last layout (nhwc), a tuner
// tactic beside oneDNN's jit kernels. On AVX2 CPUs oneDNN's nhwc jit kernel leaves a tenth of
// the FMA rate unused on ResNet's 3x3 convolutions (where MLAS's kernels reach it); this one
// computes 6 output pixels x 16 output channels per step with every weight vector loaded once
// for the 6 pixels, as the classic 6x16 GEMM micro-kernel does, and its pixel tiles run on
// along the image across output rows, so that narrow images (7x7, 14x14) do not end each row
// with a short, load-bound tile.
#include <cstdint>
#include <memory>

#include "cpu/post_ops.h"
#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu {

// A 2-D convolution with one group and no dilation; pads may be asymmetric.
struct DirectConvShape {
  int64_t batch = 0, in_channels = 0, out_channels = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

// The kernel for `context`'s Conv or FusedConv (inputs: X, W, optional B, then the epilogue's
// operands), or nullptr when it does not apply: X and Y f32 in channels-last layout, constant
// weights, a multiple of 16 output channels, and epilogue steps among a per-channel bias, a
// residual of the output's own type, a scale, and relu / leaky relu / clip.
std::unique_ptr<Kernel> makeDirectConvNhwc(const KernelBuildContext& context, const DirectConvShape& shape,
                                           const Epilogue& epilogue);

}  // namespace estuary::ge::cpu
