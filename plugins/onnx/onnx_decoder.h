#pragma once
// The ONNX node view: NodeProtos, GraphProtos and model-local function bodies seen through
// the frontend layer's decoders (estuary/frontend/decoder.h), so that the shared graph
// translator can walk them. Attributes decode on request (tensors read through the
// TensorReader, graphs as decoders of their own); inside a function body, an attribute that
// refers to the function's attributes (ref_attr_name) resolves against the call.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "onnx_model.h"
#include "tensor_data.h"

namespace estuary::onnx_frontend {

// What every decoder of one model shares.
struct OnnxModelContext {
  std::string path;  // for errors
  const ModelProto* model = nullptr;
  TensorReader* tensors = nullptr;
  int64_t opset = 0;                           // of the default domain
  std::map<std::string, int64_t, std::less<>> domain_versions;  // the model's imports
  // The model's functions by (domain, name).
  std::map<std::pair<std::string_view, std::string_view>, const FunctionProto*> functions;

  OnnxModelContext(std::string path, const ModelProto& model, TensorReader& tensors, int64_t opset);
};

class OnnxNodeDecoder;

// Where a node is: the default-domain opset of its graph or function body, and inside a
// function body the function and the call its attribute references resolve against.
struct NodeScope {
  int64_t opset = 0;
  const FunctionProto* function = nullptr;
  const OnnxNodeDecoder* call = nullptr;
};

class OnnxNodeDecoder final : public NodeDecoder {
 public:
  // `declared` holds the value types its graph declares (outputs and value_info).
  OnnxNodeDecoder(const OnnxModelContext& model, const NodeProto& node, NodeScope scope,
                  const std::unordered_map<std::string_view, const ValueInfoProto*>* declared);

  const NodeProto& proto() const { return node_; }
  const NodeScope& scope() const { return scope_; }
  // The attribute, a reference to the calling function's attributes resolved; nullptr when
  // absent (or referring to an attribute the call leaves unset).
  const AttributeProto* findAttribute(std::string_view name) const;

  std::string_view opType() const override { return node_.op_type; }
  std::string_view domain() const override { return isDefaultDomain(node_.domain) ? std::string_view() : node_.domain; }
  int64_t version() const override;
  std::string_view name() const override { return node_.name; }
  size_t numInputs() const override { return node_.inputs.size(); }
  std::string_view inputName(size_t i) const override { return node_.inputs[i]; }
  size_t numOutputs() const override { return node_.outputs.size(); }
  std::string_view outputName(size_t i) const override { return node_.outputs[i]; }
  TensorType outputType(size_t i) const override;
  std::vector<std::string_view> attributeNames() const override;
  bool hasAttribute(std::string_view name) const override { return findAttribute(name) != nullptr; }
  std::optional<AttrValue> attribute(std::string_view name) const override;
  std::vector<AttrValue::GraphRef> subgraphs() const override;

 private:
  AttrValue::GraphRef graphOf(const std::shared_ptr<GraphProto>& graph) const;

  const OnnxModelContext& model_;
  const NodeProto& node_;
  NodeScope scope_;
  const std::unordered_map<std::string_view, const ValueInfoProto*>* declared_;
  // One decoder per subgraph, made with the node, so that the census, the node order and
  // the translation see the same one.
  std::map<const GraphProto*, AttrValue::GraphRef> subgraphs_;
};

class OnnxGraphDecoder final : public GraphDecoder {
 public:
  OnnxGraphDecoder(const OnnxModelContext& model, const GraphProto& graph, NodeScope scope);
  OnnxGraphDecoder(const OnnxGraphDecoder&) = delete;
  OnnxGraphDecoder& operator=(const OnnxGraphDecoder&) = delete;

  std::string name() const override { return std::string(graph_.name); }
  size_t numInputs() const override { return graph_.inputs.size(); }
  std::string_view inputName(size_t i) const override { return graph_.inputs[i].name; }
  TensorType inputType(size_t i, SymbolTable& symbols) const override;
  size_t numWeights() const override { return graph_.initializers.size() + graph_.sparse_initializers.size(); }
  std::string_view weightName(size_t i) const override;
  TensorType weightType(size_t i) const override;
  Tensor weight(size_t i) const override;
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return nodes_[i]; }
  size_t numOutputs() const override { return graph_.outputs.size(); }
  std::string_view outputName(size_t i) const override { return graph_.outputs[i].name; }
  TensorType outputType(size_t i, SymbolTable& symbols) const override;

 private:
  const OnnxModelContext& model_;
  const GraphProto& graph_;
  std::unordered_map<std::string_view, const ValueInfoProto*> declared_;
  std::vector<OnnxNodeDecoder> nodes_;
};

// The IR type of an ONNX ValueInfo (a tensor type; anything else is UnsupportedOpsError
// naming `path`, an absent type TensorType()): dim_params become symbols, unnamed dims
// fresh ones. `what` says what it is for errors ("graph input").
TensorType valueType(const ValueInfoProto& info, SymbolTable& symbols, const std::string& path,
                     std::string_view what);

// The default-domain opset of a function's body: its own import, else `model_opset`.
// Raises an Error for an import newer than Estuary knows.
int64_t functionOpset(const FunctionProto& function, int64_t model_opset, const std::string& path);

// The body of the model-local function `node` calls (decoded as a graph whose inputs and
// outputs are its formal parameters), or nullptr when it calls an op.
std::shared_ptr<const GraphDecoder> functionCalledBy(const OnnxModelContext& model, const NodeDecoder& node);

}  // namespace estuary::onnx_frontend
