#pragma once
// Outputs whose shape depends on the values of an input: NonZero's [rank, count].
//
// Plans are static: every buffer is sized at build time. A NonZero whose input is a
// constant gets its exact type here and is folded by the build. Otherwise its output is
// planned at the upper bound [rank, number of input elements], and the node gets a second
// output, an i64 scalar, into which its kernel writes the count at run time; the indices
// are written compactly as [rank, count] at the start of the buffer. The plan records, per
// graph output, where that count lives (Plan::runtime_dims), and a run reports the actual
// dims (RunContext::producedOutputDescs(), and the views run(inputs) returns).
//
// Only graph outputs can have such a runtime length: a kernel consuming the value would
// need it at build time. A NonZero feeding another node is refused with a message naming
// that node.
#include "estuary/ir/graph.h"

namespace estuary::ge {

void boundDataDependentOutputs(Graph& graph);
// The value holding the runtime length of `value` along its axis 1, or nullptr when
// `value` has a static length.
Value* runtimeLengthOf(const Value* value);

}  // namespace estuary::ge
