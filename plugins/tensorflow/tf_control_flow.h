#pragma once
// TensorFlow 1 control flow rebuilt as functional If and While nodes.
//
// TF 1 graphs (tf.compat.v1 cond and while_loop, and any graph frozen with
// convert_variables_to_constants_v2's default lower_control_flow=True) express control flow
// with dataflow primitives: a while loop is an Enter per loop variable, a Merge of it with a
// NextIteration, a Switch on a LoopCond, and an Exit; a cond is Switches on a predicate and
// Merges of the branches' results. The core IR has If and Loop instead, so each construct
// is found and replaced by one node of the functional form TensorFlow 2 writes ("While" with
// "cond" and "body", "If" with "then_branch" and "else_branch"), whose bodies hold the
// construct's nodes: then the functional translators translate them. This is what
// TensorFlow's own functionalize_cond/functionalize_while do for XLA.
//
// The bodies are closed, as function bodies are: a value a body reads from outside becomes an
// input (a loop variable the body passes on unchanged), except a Const, which the body gets a
// copy of so that its weights stay constants. Constructs are rebuilt innermost first; one
// that cannot be rebuilt is an error naming its nodes.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tf_decoder.h"

namespace estuary::tensorflow_frontend {

// Whether `op` is one of TF 1's control-flow primitives (Switch, Merge, Enter, Exit,
// NextIteration, LoopCond and their Ref forms).
bool isControlFlowPrimitive(std::string_view op);

// `nodes` (a graph's nodes) with every TF 1 cond and while loop among them replaced by an If
// or a While node; the nodes made are added to `made`. `graph` names the graph in errors;
// `find` looks up any node of the GraphDef by name (a cond's polarity may only show through
// control inputs to nodes the data does not need).
std::vector<const TfNode*> rebuildControlFlow(const TfModelContext& model, const std::string& graph,
                                              std::vector<const TfNode*> nodes,
                                              const std::function<const NodeDef*(std::string_view)>& find,
                                              std::vector<std::unique_ptr<TfNode>>& made);

}  // namespace estuary::tensorflow_frontend
