#pragma once
// Building blocks for shape-inference functions, shared by the core ops and by plugins
// that register ops of their own. Every failure raises an Error naming the node.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "estuary/ir/shape.h"
#include "estuary/ops/schema.h"

namespace estuary {

// ONNX multidirectional (numpy) broadcasting. Shapes align at their last dimension; per
// dimension a static size above 1 wins, 1 gives way to anything, and of the remaining
// symbolic or unknown sizes a single distinct one survives (batch vs 1 -> batch, batch vs
// batch -> batch) while two distinct ones give unknown (batch vs seq -> ?). Two
// different static sizes above 1 fail, naming the node and all shapes. Any unranked
// shape gives an unranked result.
Shape broadcastShapes(const InferenceContext& context, const std::vector<Shape>& shapes);

// Two sizes that must be equal (a MatMul's inner dimension, Concat's other axes): the
// more precise of the two. Fails, naming `what`, when both are static and differ.
Dim unifyDims(const InferenceContext& context, const Dim& a, const Dim& b, std::string_view what);

// Maps an axis in [-rank, rank) to [0, rank); fails naming `what` (e.g. "attribute
// 'axis'") when it is out of range.
size_t normalizeAxis(const InferenceContext& context, int64_t axis, size_t rank,
                     std::string_view what);

// Fails unless input `input` is absent, unranked, or has a rank in [min_rank, max_rank]
// (SIZE_MAX: no upper bound).
void checkRank(const InferenceContext& context, size_t input, size_t min_rank, size_t max_rank);

// dim + offset for a signed offset; exact for static and symbolic dims.
Dim addOffset(const Dim& dim, int64_t offset);

// The product of dims [begin, end) of a ranked shape.
Dim productOfDims(const Shape& shape, size_t begin, size_t end);

// The value of a one-element floating-point constant input (Range's bounds, OneHot's
// depth), which integer data propagation (InferenceContext::knownValues) does not carry.
std::optional<double> constantScalar(const InferenceContext& context, size_t input);

// Output `output` gets the shape of input `input` (and outputDType(output)).
void propagateShape(InferenceContext& context, size_t input, size_t output);

}  // namespace estuary
