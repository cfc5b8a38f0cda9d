#pragma once
// The node view of a MindIR model: its graphs as the layer's decoders.
//
// MindIR is MindSpore's own IR written out, not an inference format, so the view first takes
// away what only MindSpore's compiler needs:
// - side-effect ordering: Load(param, U) is the parameter, Depend(x, ...) is x, UpdateState
//   and the monad tokens vanish;
// - tuple plumbing: MakeTuple of tensors and TupleGetItem on it are followed to the elements
//   (an op taking a tuple, like Concat, gets the elements as its inputs), and an op whose
//   result is a tuple of tensors (BatchNorm, Split) gets one output per element. A tuple of
//   scalars (a shape built in the graph) stays a value: a 1-D tensor;
// - constants: `Constant` nodes are nodes of op mindir::Constant, and an op's argument that
//   is a constant is also the op's attribute named by the argument's position ("1");
// - primitives: a node `REF::Conv2D:4` is the primitive Conv2D, whose attributes are the
//   node's (PRIMITIVE ops) or whose arguments all come as inputs (PRIMITIVE_FUNCTION ops).
//
// Control flow is calls of sub-graphs. A call `REF::<graph>` is mindir::Call (inlined); a
// call of the closure a Switch(c, Partial(@then, ...), Partial(@else, ...)) picks is
// mindir::If; and a while loop, which MindSpore writes as tail recursion (a header graph
// whose Switch calls either the body, which ends by calling the header again, or the code
// after the loop), is mindir::While with its condition, body and after-block as subgraphs
// over the header's parameters (the loop variables). Anything else recursive is refused,
// naming the graph.
#include <functional>
#include <memory>
#include <string>

#include "estuary/frontend/decoder.h"
#include "ms_messages.h"

namespace estuary::mindspore_frontend {

// Reads a graph parameter's data; `what` names it in errors.
using ParameterReader = std::function<Tensor(const MsTensor& parameter, const std::string& what)>;

// The main graph of `model` as a decoder (with every sub-graph its calls reach). `path`
// names the model in errors; `read` gives the parameters' data.
std::shared_ptr<GraphDecoder> msMainGraph(const MsModelProto& model, const std::string& path, ParameterReader read);

}  // namespace estuary::mindspore_frontend
