#pragma once
// Dead-code elimination.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// Erases every node none of whose results is used, directly or through the nodes that use
// them. Graph outputs and mutable-input updates are uses (of the graph's terminator), so
// they stay, and so does everything they depend on, including values captured by the
// subgraphs of live nodes. Unused constants go like any other node; graph inputs stay (they
// are the graph's signature). Subgraphs of live nodes are cleaned the same way. One pass in
// reverse list order, linear in the graph. Returns the number of nodes erased, subgraph
// nodes included.
int64_t eliminateDeadCode(Graph& graph);

// The "dce" pass; no options.
PassInfo deadCodeEliminationPass();

}  // namespace estuary
