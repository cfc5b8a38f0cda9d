#pragma once
// Outputs whose shape depends on the values the graph computes: NonZero's [rank, count], and
// the scan outputs [trips, ...] of a Loop whose condition may end it before its trip count M.
//
// Plans are static: every buffer is sized at build time. A NonZero whose input is a
// constant gets its exact type and is folded by the build. Otherwise such an output is
// planned at its upper bound (NonZero: [rank, number of input elements]; Loop: [M, ...] for a
// constant M), and its node gets one more output, an i64 scalar, into which the kernel
// writes the actual length at run time; the data sits compactly at the start of the buffer,
// laid out for the actual shape. The plan records, per graph output, where that length
// lives and along which axis (Plan::runtime_dims); a run reports the actual dims
// (RunContext::producedOutputDescs(), and the views run(inputs) returns).
//
// Only graph outputs can have such a length: a kernel consuming the value would need it at
// build time, and so would an If/Loop subgraph returning it. Other uses are refused with a
// message naming the consumer.
#include "estuary/ir/graph.h"

namespace estuary::ge {

// On a Loop whose scan outputs have a runtime length (along axis 0): the index of its first
// scan output; the trip-count output is its last.
inline constexpr char kRuntimeScansAttr[] = "runtime_length_scans_from";

// Gives NonZero outputs their exact or upper-bound types and adds the length outputs to
// NonZero and to Loops with scan outputs that may end early (after shape inference, before
// makeCapturesExplicit()).
void boundDataDependentOutputs(Graph& graph);

struct RuntimeLength {
  Value* length = nullptr;  // the i64 scalar the kernel writes; nullptr: static length
  int axis = 0;
};
RuntimeLength runtimeLengthOf(const Value* value);

}  // namespace estuary::ge
