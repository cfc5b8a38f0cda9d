#pragma once
// The translation context: what a translator (a frontend's or a conversion extension's)
// sees of one node. Inputs arrive as IR values already translated, attributes typed with
// defaults, and emit() appends IR nodes named after the framework node with their types
// inferred at once, so that the next line of the translator sees ranks and dtypes. Errors
// come in one form naming the model, the node and what is wrong:
//
//   model.onnx: node 'conv1' (Conv, opset 17): attribute 'group' is FLOAT, expected an integer
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/ir/graph.h"

namespace estuary {

class GraphTranslator;

class NodeContext {
 public:
  using Attributes = std::vector<std::pair<std::string, Attribute>>;

  NodeContext(GraphTranslator& translator, const NodeDecoder& node, size_t index)
      : translator_(translator), node_(node), index_(index) {}

  const NodeDecoder& decoder() const { return node_; }
  std::string_view opType() const { return node_.opType(); }
  std::string_view domain() const { return node_.domain(); }
  int64_t version() const { return node_.version(); }
  std::string_view name() const { return node_.name(); }
  GraphTranslator& translator() { return translator_; }
  // The graph being built. Nodes are made with emit(), which infers their types.
  Graph& graph();

  // --- Inputs ---------------------------------------------------------------------------
  size_t numInputs() const { return node_.numInputs(); }
  // Input i, or nullptr when absent (no name, or past the end). A name nothing defines is
  // an error.
  Value* input(size_t i) const;
  // The input in slot `slot` (by name), or nullptr when the node has none.
  Value* input(std::string_view slot) const;
  // The same, an error naming the input when absent.
  Value* requiredInput(size_t i) const;
  Value* requiredInput(std::string_view slot) const;
  // Every input, absent ones as nullptr, absent ones at the end left off (as the IR does).
  std::vector<Value*> inputs() const;
  // The tensor of input i when a Constant node makes it, else nullptr.
  const Tensor* constantInput(size_t i) const;
  // The integer elements of `value` when known while translating: a constant, or a value
  // computed from static shapes (Shape -> Gather -> Concat chains fold this way).
  std::optional<std::vector<int64_t>> knownInts(const Value* value) const;

  // --- Outputs --------------------------------------------------------------------------
  size_t numOutputs() const { return node_.numOutputs(); }
  // Whether output i is used (has a name).
  bool hasOutput(size_t i) const { return i < node_.numOutputs() && !node_.outputName(i).empty(); }
  // The number of outputs up to the last used one.
  size_t usedOutputs() const;

  // --- Attributes -----------------------------------------------------------------------
  bool hasAttr(std::string_view name) const;
  std::optional<AttrValue> attribute(std::string_view name) const { return node_.attribute(name); }
  // A typed attribute: int64_t, double, bool, std::string, DType, Tensor, AttrShape,
  // AttrValue::GraphRef, and std::vector of int64_t, double, bool, std::string, DType,
  // Tensor. Integers widen to double and bools to integers; any other mismatch is an error
  // naming the attribute, as is a missing attribute without a fallback.
  template <typename T>
  T attr(std::string_view name) const;
  template <typename T>
  T attr(std::string_view name, T fallback) const {
    return hasAttr(name) ? attr<T>(name) : std::move(fallback);
  }
  template <typename T>
  std::optional<T> optionalAttr(std::string_view name) const {
    if (!hasAttr(name)) return std::nullopt;
    return attr<T>(name);
  }
  // A graph attribute translated as a subgraph that sees this graph's values (ONNX's If
  // branches and Loop body); `input_types` where given type its inputs instead of the
  // decoder (GraphTranslator::translate).
  std::shared_ptr<Graph> subgraph(std::string_view name, const std::vector<TensorType>& input_types = {});

  // --- Building -------------------------------------------------------------------------
  // Appends a node named after the framework node, with `attributes`, and infers its types.
  Node* emit(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes = {},
             size_t num_outputs = 1, std::string_view domain = "");
  Value* emitValue(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes = {}) {
    return emit(op_type, inputs, std::move(attributes))->output();
  }
  Value* constant(Tensor tensor);
  Value* constantInts(const std::vector<int64_t>& values);  // 1-D i64
  Value* scalar(DType dtype, double value);                // 0-D
  Value* cast(Value* value, DType dtype);                  // no node when already `dtype`
  // A function body (a TensorFlow PartitionedCall's `f`) translated in place, its formal
  // inputs standing for `arguments`; returns its outputs.
  std::vector<Value*> inlineFunction(const GraphDecoder& body, const std::vector<Value*>& arguments);

  // --- Errors ---------------------------------------------------------------------------
  // "<model>: node 'name' (OpType, opset N)".
  std::string where() const;
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream message;
    (message << ... << parts);
    failWith(message.str());
  }

 private:
  [[noreturn]] void failWith(const std::string& message) const;
  Value* valueNamed(std::string_view name, size_t i) const;

  GraphTranslator& translator_;
  const NodeDecoder& node_;
  size_t index_;  // the node's position in its graph, naming unnamed nodes
};

// Typed access to a decoded attribute: the value, or nullopt when its kind does not convert
// to T (see NodeContext::attr). Specialized for the types NodeContext::attr takes.
template <typename T>
std::optional<T> attrAs(const AttrValue& value);
// "an integer", "a list of numbers": what T is, for errors.
template <typename T>
std::string_view attrTypeDescription();

#define ESTUARY_DECLARE_ATTR_TYPE(Type)                              \
  template <>                                                        \
  std::optional<Type> attrAs<Type>(const AttrValue& value);          \
  template <>                                                        \
  std::string_view attrTypeDescription<Type>();
ESTUARY_DECLARE_ATTR_TYPE(int64_t)
ESTUARY_DECLARE_ATTR_TYPE(double)
ESTUARY_DECLARE_ATTR_TYPE(bool)
ESTUARY_DECLARE_ATTR_TYPE(std::string)
ESTUARY_DECLARE_ATTR_TYPE(DType)
ESTUARY_DECLARE_ATTR_TYPE(Tensor)
ESTUARY_DECLARE_ATTR_TYPE(AttrShape)
ESTUARY_DECLARE_ATTR_TYPE(AttrValue::GraphRef)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<int64_t>)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<double>)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<bool>)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<std::string>)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<DType>)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<Tensor>)
ESTUARY_DECLARE_ATTR_TYPE(std::vector<AttrValue::GraphRef>)
#undef ESTUARY_DECLARE_ATTR_TYPE

template <typename T>
T NodeContext::attr(std::string_view name) const {
  std::optional<AttrValue> value = node_.attribute(name);
  if (!value) fail("attribute '", name, "' is missing");
  std::optional<T> typed = attrAs<T>(*value);
  if (!typed) fail("attribute '", name, "' is ", value->type_name, ", expected ", attrTypeDescription<T>());
  return std::move(*typed);
}

}  // namespace estuary
