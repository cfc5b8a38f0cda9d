#pragma once
// Estuary's own Winograd convolutions F(4x4, 3x3) and F(2x2, 3x3) for f32 tensors in
// channels-last layout, tuner tactics for 3x3 stride-1 convolutions. oneDNN has Winograd
// kernels for AVX-512 only; on AVX2 CPUs a direct 3x3 convolution spends 9 multiply-adds per
// input channel and output value, F(4x4, 3x3) 2.25 and F(2x2, 3x3) 4. Their transforms round
// more than a direct sum does, but little: ResNet-50's logits (a range of 830) then differ
// from ONNX Runtime's by at most 2.2e-4, against 1.8e-4 with direct kernels only.
#include <vector>

#include "cpu/direct_conv.h"

namespace estuary::ge::cpu {

// The tactics for `context`'s Conv or FusedConv, as makeDirectConvNhwc takes it: F(4x4, 3x3)
// and F(2x2, 3x3), for a 3x3 kernel at stride 1; none for other kernels. Each makes nullptr
// unless the input channels are a multiple of 8, the output channels a multiple of 16, and
// what makeDirectConvNhwc requires holds. `context` and `epilogue` must outlive the tactics.
std::vector<KernelTactic> winogradConvNhwcTactics(const KernelBuildContext& context, const DirectConvShape& shape,
                                                  const Epilogue& epilogue);

}  // namespace estuary::ge::cpu
