#pragma once
// What the neural-network reference kernels share: the files they live in and the sliding
// window geometry of convolutions and pooling.
#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "reference/reference_kernels.h"

namespace estuary::ge::reference {

// The nn family, one file per group; registerNnKernels (nn.cpp) calls them all.
void registerMatMulKernels(KernelRegistry& registry);         // nn_matmul.cpp: MatMul, Gemm, Einsum
void registerConvKernels(KernelRegistry& registry);           // nn_conv.cpp: Conv, ConvTranspose
void registerPoolKernels(KernelRegistry& registry);           // nn_pool.cpp: MaxPool, AveragePool, global pools
void registerNormalizationKernels(KernelRegistry& registry);  // nn_normalization.cpp: Batch/Instance/Group/Layer/RMS
void registerAttentionKernels(KernelRegistry& registry);      // nn_attention.cpp: Attention, RotaryEmbedding

// The type sums of products accumulate in: double for floats, int64 for integers (which
// then wraps to the element type when stored, as arithmetic in that type would).
template <typename S>
using Accumulator = std::conditional_t<std::is_floating_point_v<S>, double, int64_t>;

// Convolutions and pooling run on up to three spatial axes. A 1-D or 2-D window is seen
// as 3-D with leading spatial axes of size 1 (kernel 1, stride 1, no padding), so one loop
// nest serves every rank.
inline constexpr int kSpatialAxes = 3;
using Spatial = std::array<int64_t, kSpatialAxes>;

struct Window {
  Spatial in{1, 1, 1};    // input spatial sizes
  Spatial out{1, 1, 1};   // output spatial sizes
  Spatial kernel{1, 1, 1};
  Spatial strides{1, 1, 1};
  Spatial dilations{1, 1, 1};
  Spatial pad_begin{0, 0, 0};
  Spatial pad_end{0, 0, 0};

  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// The window of a Conv or pooling node whose input 0 is X [N, C, spatial...] and output 0 is
// Y: kernel from kernel_shape (else `kernel`, the weights' spatial dims), strides,
// dilations, and pads with auto_pad resolved against the static output sizes (SAME_UPPER
// puts the odd padding element at the end, SAME_LOWER at the beginning, VALID pads none).
Window forwardWindow(const KernelBuildContext& context, const std::vector<int64_t>& kernel);

// Spatial attribute `name` (one value per spatial axis) moved into the 3-D view, or
// `fallback` on every axis when the attribute is absent.
Spatial spatialAttr(const KernelBuildContext& context, const char* name, int64_t fallback);

// The spatial dims of `desc` (after N and C) in the 3-D view.
Spatial spatialDims(const TensorDesc& desc);

}  // namespace estuary::ge::reference
