#pragma once
// Control flow on the backend: If and Loop run their subgraphs as plans of their own, built
// once with the kernel (at plan build time) for the concrete types the node sees, with
// their arenas inside the kernel's scratch memory, so a run allocates nothing.
//
// The plan builder prepares a graph for this in two steps:
//   - inferWithControlFlow() fixes what generic shape inference leaves open: a Loop's
//     carried values keep the types they enter with (the backend checks the body keeps
//     them), and its scan outputs are [trip count, ...] when the trip count is a constant
//     and the loop cannot stop early. Other loops with scan outputs have a data-dependent
//     output shape and are refused with a message saying so;
//   - makeCapturesExplicit() turns the outer values a subgraph uses (implicit capture) into
//     extra operands of the If/Loop node and extra inputs of the subgraph, so the memory
//     planner keeps them alive and each subgraph is a standalone graph. Their number is
//     recorded in the node's attribute kCapturedInputsAttr. Captured constants are copied
//     into the subgraph instead, so its kernels still see them as constants.
#include "estuary/ge/kernel.h"
#include "estuary/ir/graph.h"

namespace estuary::ge {

inline constexpr char kCapturedInputsAttr[] = "captured_inputs";

// Strict shape inference plus the Loop output types above, repeated until nothing changes.
void inferWithControlFlow(Graph& graph);
void makeCapturesExplicit(Graph& graph);
void registerControlFlowKernels(KernelRegistry& registry);

}  // namespace estuary::ge
