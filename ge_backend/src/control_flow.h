#pragma once
// Control flow on the backend: If and Loop run their subgraphs as plans of their own, built
// once with the kernel (at plan build time) for the concrete types the node sees, with
// their arenas inside the kernel's scratch memory, so a run allocates nothing.
//
// The plan builder prepares a graph for this in two steps:
//   - inferWithControlFlow() fixes what generic shape inference leaves open: a Loop's
//     carried values keep the types they enter with (the backend checks the body keeps
//     them), and its scan outputs are [M, ...] for a constant trip count M. When the
//     condition may end the loop early, that is an upper bound and the actual length is a
//     runtime one (data_dependent.h). Scan outputs without a constant M are refused with a
//     message saying why;
//   - makeCapturesExplicit() turns the outer values a subgraph uses (implicit capture) into
//     extra operands of the If/Loop node and extra inputs of the subgraph, so the memory
//     planner keeps them alive and each subgraph is a standalone graph. Their number is
//     recorded in the node's attribute kCapturedInputsAttr. Captured constants are copied
//     into the subgraph instead, so its kernels still see them as constants.
#include "estuary/ge/kernel.h"
#include "estuary/ir/graph.h"

namespace estuary::ge {

inline constexpr char kCapturedInputsAttr[] = "captured_inputs";

// What becomes of a Loop whose output types cannot be set yet (scan outputs with a trip
// count that is not a constant, a body whose types change from one iteration to the next):
// Refuse raises an error saying why; LeaveOpen leaves its types open for constant folding
// (the count may be a computation that folds) or unrolling (unrollLoopsOfChangingTypes) to
// resolve.
enum class OpenLoops { Refuse, LeaveOpen };
// Strict shape inference plus the Loop output types above, repeated until nothing changes.
void inferWithControlFlow(Graph& graph, OpenLoops open_loops = OpenLoops::Refuse);
// A Loop whose body's types change from one iteration to the next (it slices by the
// iteration number) cannot run as one plan for every iteration. If its trip count is a
// constant of at most kMaxUnrolledTrips and nothing ends it early, it is unrolled: the body
// copied in once per iteration with the iteration number a constant, scan outputs stacked
// with Concat. Applies to Loops of `graph` whose output types inference left open; returns
// how many it unrolled.
inline constexpr int64_t kMaxUnrolledTrips = 64;
size_t unrollLoopsOfChangingTypes(Graph& graph);
// Whether a Loop's condition may end it before its trip count: the condition is given and
// not a constant true, or the body computes it rather than passing it through.
bool loopMayEndEarly(const Node& loop);
void makeCapturesExplicit(Graph& graph);
void registerControlFlowKernels(KernelRegistry& registry);

}  // namespace estuary::ge
