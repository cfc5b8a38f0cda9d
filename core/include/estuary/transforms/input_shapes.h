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

// The sizes a symbolic dim may take, both ends included (ATC's "1~16").
struct DimRange {
  int64_t min = 0;
  int64_t max = 0;
};
// Ranges by input name and dim index.
using InputDimRanges = std::map<std::string, std::map<size_t, DimRange>>;

// Gives the graph's inputs the dims `shapes` fixes. Raises an Error naming the input for an
// unknown name (listing the inputs), an unranked input, a wrong rank, or a static dim that
// differs from the one given.
void fixInputShapes(Graph& graph, const InputShapes& shapes);

// The ranges of input dims as ranges of the symbols those dims are, for the backend to
// enforce. Raises an Error naming the input when a dim is static or an expression rather
// than a plain symbol, when a range is empty, or when one symbol gets two different ranges.
std::map<std::string, DimRange> symbolRanges(const Graph& graph, const InputDimRanges& ranges);

}  // namespace estuary
