#pragma once
// Translating one ONNX node into core IR. Each ONNX op type has a small free function
// (op_table.cpp) that receives a NodeTranslation: the node's inputs as IR values, its
// attributes, the opset it was written against, and helpers to emit IR nodes and bind the
// ONNX outputs. Core ops follow the newest ONNX opset, so most functions copy the node as it
// is; the ones for ops whose meaning changed adapt older opsets to the newest semantics.
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/graph.h"
#include "onnx_model.h"

namespace estuary::onnx_frontend {

class GraphImporter;

class NodeTranslation {
 public:
  NodeTranslation(GraphImporter& importer, const NodeProto& proto, int64_t opset)
      : importer_(importer), proto_(proto), opset_(opset) {}

  const NodeProto& proto() const { return proto_; }
  std::string_view opType() const { return proto_.op_type; }
  // The version of the default ONNX domain the node was written against.
  int64_t opset() const { return opset_; }
  Graph& graph();

  // Inputs; an absent optional input (empty name, or past the end) is nullptr.
  size_t numInputs() const { return proto_.inputs.size(); }
  Value* input(size_t i) const;
  std::vector<Value*> inputs() const;
  // The contents of input i when it is a constant (an initializer or a Constant node).
  const Tensor* constantInput(size_t i) const;
  size_t numOutputs() const { return proto_.outputs.size(); }
  // Whether output i is used: named (ONNX leaves unused optional outputs unnamed).
  bool hasOutput(size_t i) const { return i < proto_.outputs.size() && !proto_.outputs[i].empty(); }

  // Attributes by name; nullptr when absent.
  const AttributeProto* attr(std::string_view name) const;
  int64_t intAttr(std::string_view name, int64_t fallback) const;
  float floatAttr(std::string_view name, float fallback) const;
  std::string stringAttr(std::string_view name, std::string fallback) const;
  // INTS attribute, or nullopt when absent.
  std::optional<std::vector<int64_t>> intsAttr(std::string_view name) const;

  // Emits a node named after the ONNX node, appended to the graph.
  Node* emit(std::string_view op_type, const std::vector<Value*>& inputs, size_t num_outputs = 1);
  // Emits a Constant of the given tensor (unnamed, shared by nothing else).
  Value* constant(Tensor tensor);
  Value* constantInts(const std::vector<int64_t>& values);  // 1-D i64
  Value* constantScalar(int64_t value);                     // 0-D i64
  // Sets the ONNX node's attributes on `node` in the kinds its core schema declares (an INT
  // becomes an element type where the schema wants a Type, a GRAPH a subgraph), except those
  // named in `skip`. An attribute the schema does not know is an error.
  void copyAttributes(Node* node, std::initializer_list<std::string_view> skip = {});
  // Binds the ONNX node's outputs, in order, to `values` (the names of unused outputs are
  // skipped); sets the value names.
  void setOutputs(const std::vector<Value*>& values);
  void setOutputs(Node* node) { setOutputs(node->outputs()); }

  // Raises "<model>: node 'name' (OpType, opset N): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream message;
    (message << ... << parts);
    failWith(message.str());
  }

 private:
  [[noreturn]] void failWith(const std::string& message) const;

  GraphImporter& importer_;
  const NodeProto& proto_;
  int64_t opset_;
};

using TranslateFn = void (*)(NodeTranslation&);

struct OpTranslator {
  // The first opset of the default domain with the op.
  int64_t since;
  TranslateFn translate;
};

// The translator of an op of the default domain, or nullptr when the op has none.
const OpTranslator* findTranslator(std::string_view op_type);

// The ONNX opsets of the default domain the frontend translates.
inline constexpr int64_t kOldestOpset = 11;
// The newest opset of onnx 1.23 (onnx.defs.onnx_opset_version()).
inline constexpr int64_t kNewestOpset = 28;

}  // namespace estuary::onnx_frontend
