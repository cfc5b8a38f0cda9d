#pragma once
// The neural-network kernel families, one file each; registerNnKernels() (declared in
// cpu_device.h) calls them all.
#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu {

void registerMatMulKernels(KernelRegistry& registry);        // MatMul, Gemm, Einsum
void registerConvKernels(KernelRegistry& registry);          // Conv, ConvTranspose
void registerPoolingKernels(KernelRegistry& registry);       // MaxPool, AveragePool, Global*Pool
void registerNormalizationKernels(KernelRegistry& registry); // Batch/Instance/Group/Layer/RMS
void registerSoftmaxKernels(KernelRegistry& registry);       // Softmax, LogSoftmax, Hardmax
void registerAttentionKernels(KernelRegistry& registry);     // Attention, RotaryEmbedding

}  // namespace estuary::ge::cpu
