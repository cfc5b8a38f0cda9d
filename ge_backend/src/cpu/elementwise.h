#pragma once
// The element-wise kernel family: unary math and activations, broadcasting binary
// arithmetic/comparison/logic, variadic Max/Min/Sum/Mean, Where, Cast, Identity, Dropout.
// Its registration is split by file; registerElementwiseKernels (cpu_device.h) calls them all.
#include <dnnl.hpp>

#include <optional>

#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu {

// The oneDNN eltwise algorithm that computes a unary node exactly as its ONNX op defines it
// (special values included), for a standalone eltwise primitive or a post-op of another
// primitive (epilogue fusion); nullopt when oneDNN has none.
struct OnednnEltwise {
  dnnl::algorithm algorithm;
  float alpha = 0.f;
  float beta = 0.f;
};
std::optional<OnednnEltwise> onednnEltwiseOf(const Node& node);

void registerUnaryKernels(KernelRegistry& registry);    // elementwise_unary.cpp
void registerBinaryKernels(KernelRegistry& registry);   // elementwise_binary.cpp
void registerCastKernels(KernelRegistry& registry);     // elementwise_cast.cpp
void registerSelectKernels(KernelRegistry& registry);   // elementwise_select.cpp

}  // namespace estuary::ge::cpu
