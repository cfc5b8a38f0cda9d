#pragma once
// The graph translator: the part of every frontend's translation that is not about one
// framework. Given a GraphDecoder, it makes the graph's inputs (symbolic dims named) and
// weights, puts the nodes in an order where every value is defined before its use (names
// and control inputs, reads inside subgraphs included), translates each node through its
// translator (a conversion extension, the frontend's table, or a model-local function's body
// inlined), binds the results to the node's output names, and returns the graph's outputs.
//
// It also builds what frameworks express in their own ways: subgraphs that see the enclosing
// graph's values (ONNX If branches), If and Loop from function bodies with explicit
// parameters (TensorFlow's If/While functions, Paddle's sub-blocks), and function inlining
// under a name scope. Before translating, TranslationSession::translate() takes the census of
// untranslatable ops across the whole model, so that a user sees every one of them at once.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/frontend/frontend.h"
#include "estuary/frontend/translator_table.h"
#include "estuary/ir/graph.h"
#include "estuary/ops/schema.h"

namespace estuary {

// One model's translation: what every graph of it shares.
class TranslationSession {
 public:
  // `frontend` names the frontend (extensions are registered per frontend), `model` the
  // model in errors. The session reads `table` and `options`, which must outlive it.
  TranslationSession(std::string frontend, std::string model, const TranslatorTable& table,
                     const FrontendOptions& options);

  // A node that calls a model-local function (an ONNX model's functions): the function's
  // body, to be translated in place of the call, or nullptr for a node calling an op.
  using FunctionResolver = std::function<std::shared_ptr<const GraphDecoder>(const NodeDecoder&)>;
  void setFunctionResolver(FunctionResolver resolver) { resolve_function_ = std::move(resolver); }
  // How node versions are named in errors ("opset": "node 'a' (Add, opset 17)").
  void setVersionLabel(std::string label) { version_label_ = std::move(label); }

  // Every op of `graph`, its subgraphs and the functions it calls that has no translation,
  // in order of first appearance, with the nodes using it.
  std::vector<UnsupportedOp> unsupportedOps(const GraphDecoder& graph) const;
  // Translates the model whose main graph `main` is: the census first (raising
  // UnsupportedOpsError when it finds anything), then the graph, its inputs given the
  // options' shapes before any node is translated.
  std::unique_ptr<Graph> translate(const GraphDecoder& main);

  // How a node is translated: an extension's or the table's translator, or a function body.
  struct Translation {
    const TranslateFn* translate = nullptr;
    const ConversionExtension* extension = nullptr;  // set when an extension translates it
    std::shared_ptr<const GraphDecoder> function;
  };
  Translation translationOf(const NodeDecoder& node) const;

  const std::string& frontend() const { return frontend_; }
  const std::string& model() const { return model_; }
  const std::string& versionLabel() const { return version_label_; }
  const FrontendOptions& options() const { return options_; }
  SymbolTable& symbols() { return symbols_; }
  KnownValueMap& knownValues() { return known_values_; }
  // A name scope not given out before: "call", then "call_1", "call_2" ...
  std::string uniqueScope(const std::string& base);

 private:
  void census(const GraphDecoder& graph, int depth, std::vector<UnsupportedOp>& found,
              std::map<std::string, size_t>& index) const;

  std::string frontend_;
  std::string model_;
  const TranslatorTable& table_;
  FrontendOptions options_;  // a copy: callers may pass a temporary
  FunctionResolver resolve_function_;
  std::string version_label_;
  SymbolTable symbols_;
  KnownValueMap known_values_;
  std::map<std::string, int> scopes_;
};

class GraphTranslator {
 public:
  // Functions may call functions; deeper inlining than this is refused (a call cycle).
  static constexpr int kMaxInlineDepth = 32;

  // A translator building `graph`. With a `parent`, the graph is a subgraph (an If branch, a
  // Loop body) that sees the enclosing graphs' values by name. `scope` prefixes the names of
  // nodes and values made here ("call/node"), for inlined function bodies.
  GraphTranslator(TranslationSession& session, Graph& graph, const GraphTranslator* parent = nullptr,
                  std::string scope = {}, int inline_depth = 0);

  // Translates a whole graph: inputs, weights, nodes, outputs. `input_types[i]`, where given
  // (dtype not Undefined), is input i's type in place of what the decoder declares.
  void translate(const GraphDecoder& decoder, const std::vector<TensorType>& input_types = {});

  // The value a framework name denotes here or in an enclosing graph: false when nothing
  // defines it; `value` is nullptr for a name bound to an absent optional input.
  bool lookup(std::string_view name, Value*& value) const;
  // Binds a name to a value (nullptr: an absent input); a name defined twice is an error.
  // `by` says what defines it, for that error. The name is kept as a view: names are the
  // decoders' strings, which outlive the translation.
  void define(std::string_view name, Value* value, const std::function<std::string()>& by);

  // `body` translated as a subgraph of this graph, seeing its values; named after the body,
  // or `fallback_name` when the body has none. `input_types` as for translate() (a loop
  // body whose format leaves its inputs' types to the loop).
  std::shared_ptr<Graph> translateSubgraph(const GraphDecoder& body, std::string_view fallback_name,
                                           const std::vector<TensorType>& input_types = {});
  // `body` translated in place, under the name scope `base` (made unique), its formal
  // inputs standing for `arguments` (nullptr: absent); returns its outputs.
  std::vector<Value*> inlineGraph(const GraphDecoder& body, const std::vector<Value*>& arguments,
                                  const std::string& base);
  // An If on `condition` whose branches are function bodies taking `arguments` (TensorFlow's
  // If, a Paddle conditional_block): returns the If's outputs.
  std::vector<Value*> buildIf(Value* condition, const GraphDecoder& then_body, const GraphDecoder& else_body,
                              const std::vector<Value*>& arguments, std::string_view name);
  // A Loop running `body` while `condition` holds, both function bodies over the loop
  // variables (TensorFlow's While): the condition is evaluated on `initial` before the first
  // iteration and on the body's results after each. Returns the final loop variables. Loop
  // variables whose dims change from one iteration to the next get unknown dims.
  // `scan_outputs` more results of the body (after the loop variables) are values each
  // iteration adds to a sequence, returned stacked along a new first dim after the final
  // loop variables (ONNX's scan outputs: a TensorArray filled one element per iteration).
  // `trip_count`, when given, bounds the iterations (ONNX's M); without a condition
  // (nullptr) the loop runs exactly that many, so its scan outputs are as long as it says,
  // which a backend planning static shapes needs.
  std::vector<Value*> buildWhile(const GraphDecoder* condition, const GraphDecoder& body,
                                 const std::vector<Value*>& initial, std::string_view name,
                                 size_t scan_outputs = 0, Value* trip_count = nullptr);

  // Infers the types of the nodes made after `before` (nullptr: all). Errors name the
  // model; in a subgraph they wait until the enclosing If or Loop is inferred, which knows
  // which branch runs.
  void inferAfter(Node* before);

  TranslationSession& session() const { return session_; }
  Graph& graph() const { return graph_; }
  // The IR name of a framework name made here: "scope/name", or the name itself.
  std::string scoped(std::string_view name) const;
  // The IR name of a node: scoped, an unnamed node in a scope taking its op type.
  std::string nodeName(const NodeDecoder& node) const;

 private:
  friend class TranslationSession;
  void translateNode(const NodeDecoder& node, size_t index);
  // The positions of the decoder's nodes in a topological order.
  std::vector<size_t> sortedNodes(const GraphDecoder& decoder) const;
  void bindResults(const NodeDecoder& node, size_t index, const std::vector<Value*>& results,
                   const ConversionExtension* extension);
  // Constant nodes of the decoder's weights, by name.
  std::vector<std::pair<std::string_view, Value*>> makeWeights(const GraphDecoder& decoder);
  void defineWeights(const GraphDecoder& decoder);
  // Translates the nodes of `body` (whose inputs are bound) and returns its outputs.
  std::vector<Value*> translateBody(const GraphDecoder& body);
  // A function body translated into `graph` (an If branch, a Loop body being built), its
  // formal inputs standing for `arguments`; returns its outputs.
  std::vector<Value*> translateFunctionBody(Graph& graph, const GraphDecoder& body,
                                            const std::vector<Value*>& arguments);

  TranslationSession& session_;
  Graph& graph_;
  const GraphTranslator* parent_;
  std::string scope_;
  int inline_depth_;
  // Nodes of a subgraph (or inlined into one) are inferred with their If or Loop.
  bool in_subgraph_ = false;
  // The model's main graph takes the options' input shapes.
  bool is_main_ = false;
  std::unordered_map<std::string_view, Value*> values_;
  // In an inlined body: the formal outputs, whose values the caller names.
  std::set<std::string, std::less<>> named_by_caller_;
};

// "node 'conv1' (Conv)", or "node #3 (Conv)" for an unnamed node (its position in its graph).
std::string describeNode(const NodeDecoder& node, size_t index);

// What a graph says about itself, for --mode info: inputs and outputs with their types,
// nodes per op (subgraphs included; "domain::Op" outside the default domain), and the
// weights' element and byte counts. A frontend adds its own facts (format, producer,
// versions, variants). `model` names the model in errors.
ModelInfo describeGraph(const GraphDecoder& graph, const std::string& model);

}  // namespace estuary
