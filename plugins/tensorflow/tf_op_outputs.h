#pragma once
// Where a function body's output references point: "node:output_arg:index" names an output
// argument of the node's op, and the flat position of that output among the node's outputs
// depends on the op's output arguments before it. Most ops have one output argument (whose
// elements, one or a list, are the node's outputs in order); the ops with several are listed.
#include <optional>
#include <string_view>

#include "tf_messages.h"

namespace estuary::tensorflow_frontend {

// The flat output index of `arg`:`index` of `node`, or nullopt when the op has no output
// argument of that name (an op not listed has one, of any name).
std::optional<size_t> flatOutputIndex(const NodeDef& node, std::string_view arg, size_t index);

}  // namespace estuary::tensorflow_frontend
