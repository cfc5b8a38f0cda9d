#pragma once
// Ops that a backend's lowering makes rather than a frontend: a base op with the element-wise
// nodes after it folded into an `epilogue` subgraph (estuary::FusedConv, FusedConvTranspose,
// FusedMatMul, FusedGemm), and estuary::Reorder, a change of memory layout. The core registers
// them with every other op, so that IR holding them (a dump after lowering, the graph of an
// offline model) parses, verifies and builds in any process, whichever devices it has made.
//
// A fused op takes the base op's inputs and attributes, then the epilogue's operands, and its
// `epilogue` subgraph holds the absorbed nodes themselves: its first input is the base op's
// result, the others are the operands in order. FusedMatMul's transB = 1 reads B with its last
// two axes swapped. Reorder's `layout` names the layout of its result (plain, nhwc, nChw8c,
// nChw16c); which layouts a device has is the device's business.
#include <array>
#include <cstddef>

namespace estuary {

struct EpilogueFusion {
  const char* base;    // "Conv"
  const char* fused;   // "FusedConv", in the "estuary" domain
  size_t base_inputs;  // the base op's own inputs, absent optional ones included
};

// Conv, ConvTranspose, MatMul, Gemm, in this order.
const std::array<EpilogueFusion, 4>& epilogueFusions();

}  // namespace estuary
