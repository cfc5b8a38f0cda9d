#pragma once
// Epilogue fusion: element-wise work that follows a Conv, ConvTranspose, MatMul or Gemm
// (a bias or residual Add, a scale, activations) moves into the producing op, whose oneDNN
// kernel applies it as post-ops while the result is still in registers.
//
// The fused op is estuary::Fused<Op>, which the core registers (estuary/ops/backend_ops.h): the
// base op's inputs and attributes, then the epilogue's operands, and an `epilogue` subgraph
// holding the absorbed nodes themselves. Keeping real nodes (rather than an encoding) means
// dumps show exactly what was fused and the kernel reads each step's attributes with the op's
// own schema.
#include <cstddef>
#include <functional>

#include "estuary/ir/graph.h"
#include "estuary/ge/kernel.h"
#include "estuary/ops/schema.h"

namespace estuary::ge::cpu {

// Whether activation `node` may be fused: its oneDNN post-op (post_ops.h, activationSteps())
// agrees with the unfused kernel on every number, infinities, denormals and tails included,
// as tests/ge/epilogue_accuracy_test.cpp measures. A NaN input may come out as the
// activation's lower bound.
bool fusesAccurately(const Node& node);
// Fuses every chain for which `kernel_accepts` (asked with the fused node in place, before
// anything is rewired) says a kernel exists; returns the number of nodes absorbed.
size_t fuseEpilogues(Graph& graph, const std::function<bool(const Node&)>& kernel_accepts);
// Replaces every MatMul (or FusedMatMul) whose right operand is a Transpose swapping its
// last two axes by a FusedMatMul with transB = 1 reading the Transpose's input through
// swapped strides, when `kernel_accepts` it: no transposed copy is made, neither of a
// weight too large to fold at build time (GPT-2's tied LM head) nor of an activation
// (attention's K^T) at run time. Returns the number folded; Transposes left without
// users are for dead-code elimination.
size_t foldTransposesIntoMatMuls(Graph& graph, const std::function<bool(const Node&)>& kernel_accepts);
// The CPU kernels of the estuary::Fused* ops.
void registerFusedKernels(KernelRegistry& registry);

}  // namespace estuary::ge::cpu
