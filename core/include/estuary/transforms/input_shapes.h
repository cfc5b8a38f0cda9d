#pragma once
// Fixing a graph's input dims before a build: what `--input-shape "x:1,3,224,224"` and the
// Python `input_shapes={"x": [1, 3, 224, 224]}` do.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "estuary/ir/graph.h"

namespace estuary {

// Dims by input name; -1 leaves a dim as the graph has it.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Gives the graph's inputs the dims `shapes` fixes. Raises an Error naming the input for an
// unknown name (listing the inputs), an unranked input, a wrong rank, or a static dim that
// differs from the one given.
void fixInputShapes(Graph& graph, const InputShapes& shapes);

}  // namespace estuary
