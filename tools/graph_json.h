#pragma once
#include <ostream>

#include "estuary/ir/graph.h"

namespace estuary::cli {

// Writes a graph as JSON for tools that do not read Estuary's text form (ATC's --mode=1
// writes its graphs as JSON too): inputs, nodes with their operands, attributes and result
// types, outputs and mutable-input updates. Tensor attributes are summarized (dtype, shape,
// bytes), not dumped; subgraphs nest.
void writeGraphJson(std::ostream& out, const Graph& graph);

}  // namespace estuary::cli
