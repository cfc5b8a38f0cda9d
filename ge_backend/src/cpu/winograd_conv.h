#pragma once
// Estuary's own Winograd convolutions F(4x4, 3x3) and F(2x2, 3x3) for f32 tensors in
// channels-last layout, for 3x3 stride-1 convolutions: the rules' kernels on AVX2 CPUs
// (conv.cpp), tuner tactics elsewhere. oneDNN has Winograd kernels for AVX-512 only; on AVX2
// CPUs a direct 3x3 convolution spends 9 multiply-adds per input channel and output value,
// F(4x4, 3x3) 2.25 and F(2x2, 3x3) 4. Their transforms round more than a direct sum does, but
// little: ResNet-50's logits then differ from ONNX Runtime's by at most 2.2e-4 on a range of
// 830 (bench inputs) and 7.0e-4 on a range of 456 (scripts/demo.sh), against 1.8e-4 with
// direct kernels only.
#include <vector>

#include "cpu/direct_conv.h"

namespace estuary::ge::cpu {

// Whether the Winograd kernels take a convolution of this shape: a 3x3 kernel at stride 1,
// input channels a multiple of 8, output channels a multiple of 16 (each tactic also needs
// what makeDirectConvNhwc requires of the operands).
bool winogradConvNhwcApplies(const DirectConvShape& shape);

// The tactics for `context`'s Conv or FusedConv, as makeDirectConvNhwc takes it, where
// winogradConvNhwcApplies, the one the rules take first: F(4x4, 3x3) where an image's output
// has at least 16 4x4 tiles (14x14 and up), else F(2x2, 3x3), whose transformed weights are
// 16/9 of the kernel's rather than 4x. Not by batch size: the plans for every batch size then
// share one transformed copy (ResNet-50's plans for 1 to 8 images: peak RSS 303 MiB, against
// 391 with F(4x4) wherever a batch has 32 tiles, and 226 with oneDNN's direct kernels; at 8
// images on 2 threads F(2x2) on the 7x7 layers was no slower). `context` and `epilogue` must
// outlive the tactics.
std::vector<KernelTactic> winogradConvNhwcTactics(const KernelBuildContext& context, const DirectConvShape& shape,
                                                  const Epilogue& epilogue);

}  // namespace estuary::ge::cpu
