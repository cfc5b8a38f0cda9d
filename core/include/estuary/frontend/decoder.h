#pragma once
// The node view (decoder): how translators see a framework's nodes and graphs without
// seeing its message types. A frontend implements NodeDecoder over its nodes (an ONNX
// NodeProto, a TensorFlow NodeDef, a Paddle OpDesc, an FX node) and GraphDecoder over its
// graphs (a GraphProto, a FunctionDef body, a sub-block); the shared GraphTranslator
// (graph_translator.h) walks them, and translators read them through a NodeContext
// (node_context.h). OpenVINO's frontend decoders are the model.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "estuary/ir/dtype.h"
#include "estuary/ir/shape.h"
#include "estuary/ir/tensor.h"

namespace estuary {

class GraphDecoder;

// A shape an attribute states (TensorFlow's `shape` attributes): dims of -1 are unknown.
struct AttrShape {
  bool ranked = true;
  std::vector<int64_t> dims;
};

// One attribute of a framework node, decoded. `type_name` is what the framework calls its
// type ("INTS", "list(int)"), for errors: a string that lives as long as the program (a
// literal). std::monostate stands for a kind Estuary does not read (an ONNX TYPE_PROTO),
// which no typed access accepts.
struct AttrValue {
  using GraphRef = std::shared_ptr<const GraphDecoder>;
  using Data = std::variant<std::monostate, int64_t, double, bool, std::string, DType, Tensor, GraphRef, AttrShape,
                            std::vector<int64_t>, std::vector<double>, std::vector<bool>,
                            std::vector<std::string>, std::vector<DType>, std::vector<Tensor>,
                            std::vector<GraphRef>, std::vector<AttrShape>>;
  Data data;
  std::string_view type_name;
};

// Hands out valid, distinct symbol names for a model's symbolic dims: a framework's dim
// names ("batch_size", "N") and fresh ones for unnamed dynamic dims ("input_ids_dim1").
class SymbolTable {
 public:
  // The symbol of a framework's named dim: the same name gives the same symbol.
  Dim named(std::string_view name);
  // A fresh symbol for an unnamed dynamic dim, derived from `hint`.
  Dim fresh(const std::string& hint);

 private:
  std::string unique(std::string name);
  std::map<std::string, std::string, std::less<>> by_name_;
  std::map<std::string, bool, std::less<>> taken_;
};

class NodeDecoder {
 public:
  virtual ~NodeDecoder() = default;

  virtual std::string_view opType() const = 0;
  // The op's domain or namespace ("" for the framework's default); translators and
  // extensions are keyed by (domain, op type).
  virtual std::string_view domain() const { return {}; }
  // The version the node was written against (an ONNX opset; 0 when unversioned).
  virtual int64_t version() const { return 0; }
  // The node's name; may be empty.
  virtual std::string_view name() const = 0;

  // The names of the values the node reads, in order; "" for an absent optional input.
  virtual size_t numInputs() const = 0;
  virtual std::string_view inputName(size_t i) const = 0;
  // The position of the input a framework names (Paddle's slot "X", an FX keyword
  // argument), or nullopt when the node has no input so named.
  virtual std::optional<size_t> inputIndex(std::string_view slot) const { return std::nullopt; }
  // Names of values that must be translated before this node without feeding it (a
  // TensorFlow control input "^init"). They order translation only: the core IR is
  // functional, so an ordering edge has nothing to carry once the graph is built.
  virtual std::vector<std::string_view> controlInputs() const { return {}; }

  // The names the node gives its results; "" for an unused optional output.
  virtual size_t numOutputs() const = 0;
  virtual std::string_view outputName(size_t i) const = 0;
  // The type the model declares for result i, where it declares one (an FX node's fake
  // value, an ONNX value_info): what a conversion extension's result is checked against.
  virtual TensorType outputType(size_t i) const { return {}; }

  virtual std::vector<std::string_view> attributeNames() const = 0;
  // Whether the node has the attribute, without decoding it.
  virtual bool hasAttribute(std::string_view name) const {
    for (std::string_view attribute : attributeNames()) {
      if (attribute == name) return true;
    }
    return false;
  }
  // The attribute, decoded, or nullopt when the node does not have it.
  virtual std::optional<AttrValue> attribute(std::string_view name) const = 0;
  // The graphs the node's attributes hold (If branches, a Loop body), in attribute order,
  // without decoding its other attributes: what the census and the node order look into.
  virtual std::vector<AttrValue::GraphRef> subgraphs() const { return {}; }
};

class GraphDecoder {
 public:
  virtual ~GraphDecoder() = default;

  virtual std::string name() const = 0;

  // Inputs the graph takes: names and declared types. `symbols` gives dynamic dims their
  // symbols; a type Estuary lacks raises UnsupportedOpsError, an undeclared one is TensorType().
  virtual size_t numInputs() const = 0;
  virtual std::string_view inputName(size_t i) const = 0;
  virtual TensorType inputType(size_t i, SymbolTable& symbols) const = 0;

  // Constants of the graph that nodes read by name (ONNX initializers, Paddle parameters,
  // FX parameters). weightType() is read without touching the data (for --mode info).
  virtual size_t numWeights() const { return 0; }
  virtual std::string_view weightName(size_t i) const { return {}; }
  virtual TensorType weightType(size_t i) const { return {}; }
  virtual Tensor weight(size_t i) const { return {}; }

  virtual size_t numNodes() const = 0;
  virtual const NodeDecoder& node(size_t i) const = 0;

  // The values the graph returns, by name, and their declared types where declared.
  virtual size_t numOutputs() const = 0;
  virtual std::string_view outputName(size_t i) const = 0;
  virtual TensorType outputType(size_t i, SymbolTable& symbols) const { return {}; }
};

}  // namespace estuary
