#pragma once
// Common-subexpression elimination.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

class OpRegistry;

// Whether two nodes of this op with the same operands and attributes always compute the same
// results: the op has a schema in `ops`, is not random (RandomNormal, Dropout, ...) and has
// no subgraphs. Ops without a schema are assumed to have effects we cannot see.
bool isPure(const Node& node, const OpRegistry& ops);

// Replaces each pure node by an earlier node with the same op, domain, attributes and
// operands (constants with the same tensor content included), and erases it. A node inside a
// subgraph can be replaced by an equal node of an enclosing graph that precedes the
// subgraph's owner, never the other way round. One walk in list order with a hash table,
// linear in the graph. Returns the number of nodes erased.
int64_t eliminateCommonSubexpressions(Graph& graph, const OpRegistry& ops);

// The "cse" pass; no options.
PassInfo commonSubexpressionEliminationPass();

}  // namespace estuary
