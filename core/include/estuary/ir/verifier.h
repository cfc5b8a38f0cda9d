#pragma once
// The IR verifier: checks a graph (and its subgraphs) for every broken invariant and
// reports all of them, each naming its graph and node.
//
// Checked:
// - SSA and scoping: every operand is defined in its graph or an enclosing one; values,
//   nodes and subgraphs belong where they claim to.
// - Use lists agree with operands in both directions (no dangling or missing uses).
// - Order: no value is used before the node defining it in list order; cycles are
//   reported with the nodes on them.
// - Types where schemas say so: OpSchema::validate() (operand counts, attributes, input
//   element types), and output element types against the type constraints; optionally
//   declared output types against shape inference.
// - Graph outputs are present; update targets are mutable inputs of the same graph and
//   their new values agree with the input's type.
#include <string>
#include <vector>

#include "estuary/ir/graph.h"

namespace estuary {

class OpRegistry;

struct VerifyOptions {
  // Report nodes whose op has no schema (by default they are only checked structurally).
  bool require_known_ops = false;
  // Also run each op's shape inference and report declared output types that contradict
  // it. Slower; nodes owning subgraphs are skipped (inference would update the subgraphs).
  bool check_inferred_types = false;
  // Where schemas come from; nullptr means OpRegistry::global().
  const OpRegistry* registry = nullptr;
};

struct VerifierDiagnostic {
  const Graph* graph;  // the graph the problem is in
  const Node* node;    // the node concerned, or nullptr for a problem of the graph itself
  std::string message;  // complete, e.g. "graph 'main': node #3 (Add): operand 1 ..."
};

// Every problem found, in graph order; empty when the graph is valid.
std::vector<VerifierDiagnostic> diagnoseGraph(const Graph& graph, const VerifyOptions& options = {});

// Raises an Error listing every problem diagnoseGraph() finds.
void verifyGraph(const Graph& graph, const VerifyOptions& options = {});

}  // namespace estuary
