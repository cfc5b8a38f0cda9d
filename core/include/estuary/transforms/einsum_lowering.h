#pragma once
// Einsum lowering: a two-operand Einsum that is a (batched) matrix product made Transposes,
// Reshapes and one MatMul, as OpenVINO's EinsumDecomposition does. Keras writes its
// EinsumDense and attention layers as Einsums ("abc,cde->abde", "aecd,abcd->acbe"); lowered,
// they reach the backend's MatMul path (constant weights packed once, bias and activation
// fused, transposes of the last two axes read through strides) instead of a generic einsum.
//
// Labels split into batch (both operands and the output), contracted (both operands only) and
// free (one operand and the output). The operands are permuted to [batch, free, contracted]
// and [batch, contracted, free], groups of several labels merged by Reshape, multiplied, and
// the product reshaped and permuted to the output's order. Left as it is: other operand
// counts, an ellipsis, a label repeated in one operand or summed away, and merges that need a
// size unknown before run time (more than one contracted label of unknown size, say).
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// Lowers every Einsum it can in `graph` and its subgraphs; returns how many.
int64_t lowerEinsums(Graph& graph);

// The "lower_einsum" pass; no options.
PassInfo einsumLoweringPass();

}  // namespace estuary
