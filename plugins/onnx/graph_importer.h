#pragma once
// Builds core IR graphs from ONNX GraphProtos: graph inputs (with symbolic dims),
// initializers (Constant nodes wrapping the file's bytes), nodes in a topological order
// (each through its op's translator), outputs; subgraphs of If/Loop recursively, seeing the
// values of the graphs around them.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "estuary/ir/graph.h"
#include "estuary/ops/schema.h"
#include "onnx_model.h"
#include "tensor_data.h"

namespace estuary::onnx_frontend {

// Gives ONNX dim_params valid, distinct symbol names, and unnamed dims fresh ones.
class SymbolTable {
 public:
  Dim named(std::string_view dim_param);
  // A fresh symbol for an unnamed dynamic dim, derived from `hint` ("input_ids_dim1").
  Dim fresh(const std::string& hint);

 private:
  std::string unique(std::string name);
  std::map<std::string, std::string, std::less<>> by_param_;
  std::map<std::string, bool, std::less<>> taken_;
};

// The IR type of an ONNX ValueInfo (a tensor type; anything else is an error naming `path`
// and `what`, e.g. "graph input"): dim_params become symbols, unnamed dims fresh ones.
TensorType valueType(const ValueInfoProto& info, SymbolTable& symbols, const std::string& path,
                     std::string_view what);

// What every graph of one model shares.
struct ModelContext {
  std::string path;        // for errors
  int64_t opset = 0;       // version of the default domain
  TensorReader* tensors = nullptr;
  SymbolTable symbols;
  // Known element values of shape-like tensors, for inference as nodes are translated.
  KnownValueMap known_values;
};

class GraphImporter {
 public:
  GraphImporter(ModelContext& model, const GraphProto& proto, Graph& graph, const GraphImporter* parent)
      : model_(model), proto_(proto), graph_(graph), parent_(parent) {}

  // Imports the whole graph: inputs, initializers, nodes, outputs.
  void import();

  ModelContext& model() { return model_; }
  Graph& graph() { return graph_; }
  // The value an ONNX name denotes here: defined in this graph or an enclosing one.
  Value* lookup(std::string_view name) const;
  // Binds an ONNX name to a value; a name defined twice is an error.
  void define(std::string_view name, Value* value, std::string_view by);
  // Imports a subgraph (an If branch, a Loop body) that sees this graph's values.
  std::shared_ptr<Graph> importSubgraph(const GraphProto& proto, std::string_view attribute_name);
  // valueType() with the model's symbols.
  TensorType typeOf(const ValueInfoProto& info, std::string_view what);

 private:
  std::vector<const NodeProto*> sortedNodes() const;
  // Infers the types of the nodes after `before` (nullptr: all nodes).
  void inferAfter(Node* before);

  ModelContext& model_;
  const GraphProto& proto_;
  Graph& graph_;
  const GraphImporter* parent_;
  std::unordered_map<std::string_view, Value*> values_;
};

// "node 'conv1' (Conv)" or "node #3 (Conv)" for an unnamed node (its position in its graph).
std::string describeNode(const NodeProto& node, size_t index);

}  // namespace estuary::onnx_frontend
