#pragma once
// Op schemas: one place that says everything about an op: operands, attributes with
// kinds and defaults, type constraints, and shape/type inference.
//
// Semantics follow the ONNX operator specification where ONNX has the op (domain "").
// Ops ONNX lacks live in domain "estuary". Plugins register more ops into the registry
// they are handed.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/attribute.h"
#include "estuary/ir/graph.h"
#include "estuary/ir/shape.h"

namespace estuary {

enum class Arity : uint8_t {
  Single,    // exactly one value
  Optional,  // zero or one (nullptr operand when absent)
  Variadic,  // one or more (only the last operand/result may be variadic)
};

struct OperandSpec {
  std::string name;
  std::string type_var;  // name of a TypeConstraint, e.g. "T"
  Arity arity = Arity::Single;
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<Attribute> default_value;  // nullopt with required=false: may be absent
  bool required = false;
};

struct TypeConstraint {
  std::string var;
  std::vector<DType> allowed;
};

class OpSchema;

// What a shape-inference function sees and sets for one node.
class InferenceContext {
 public:
  InferenceContext(const Node& node, const OpSchema& schema,
                   const std::function<const std::vector<Dim>*(const Value*)>& known_values)
      : node_(node), schema_(schema), known_values_(known_values) {}

  const Node& node() const { return node_; }
  size_t numInputs() const { return node_.numInputs(); }
  bool hasInput(size_t i) const { return i < node_.numInputs() && node_.input(i) != nullptr; }
  const TensorType& inputType(size_t i) const;
  // The contents of input i when it is produced by a Constant node, else nullptr.
  const Tensor* constantInput(size_t i) const;
  // The element values of a small 1-D or scalar integer input when they are known, possibly
  // symbolically (e.g. the output of Shape on a [batch,seq] input is {batch, seq}).
  // This is ONNX's "data propagation"; it lets Reshape/Expand keep symbolic dims.
  const std::vector<Dim>* knownValues(size_t i) const;

  // Attribute value, or the schema's default, or nullptr when absent without default.
  const Attribute* attr(std::string_view name) const;
  int64_t intAttr(std::string_view name) const;    // raises if absent and no default
  double floatAttr(std::string_view name) const;
  std::vector<int64_t> intsAttr(std::string_view name) const;

  void setOutputType(size_t i, TensorType type);
  const std::vector<TensorType>& outputTypes() const { return outputs_; }
  // Known element values of output i, for data propagation (see knownValues()).
  void setOutputValues(size_t i, std::vector<Dim> values);
  const std::map<size_t, std::vector<Dim>>& outputValues() const { return output_values_; }

  // Raises an Error: "node 'x' (Op): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream message;
    (message << ... << parts);
    failWith(message.str());
  }

 private:
  [[noreturn]] void failWith(const std::string& message) const;
  const Node& node_;
  const OpSchema& schema_;
  const std::function<const std::vector<Dim>*(const Value*)>& known_values_;
  std::vector<TensorType> outputs_;
  std::map<size_t, std::vector<Dim>> output_values_;
};

using InferenceFn = std::function<void(InferenceContext&)>;

class OpSchema {
 public:
  OpSchema(std::string op_type, std::string domain = "");

  // Builder-style declaration.
  OpSchema& doc(std::string text);
  OpSchema& input(std::string name, std::string type_var, Arity arity = Arity::Single);
  OpSchema& output(std::string name, std::string type_var, Arity arity = Arity::Single);
  OpSchema& attr(std::string name, AttrKind kind, std::optional<Attribute> default_value = {},
                 bool required = false);
  OpSchema& requiredAttr(std::string name, AttrKind kind) {
    return attr(std::move(name), kind, std::nullopt, true);
  }
  OpSchema& typeConstraint(std::string var, std::vector<DType> allowed);
  OpSchema& inference(InferenceFn fn);
  // Set by the registry when a plugin registers the schema, so the plugin's code stays
  // loaded as long as the schema does.
  OpSchema& keepAlive(std::shared_ptr<const void> owner);

  const std::string& opType() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  std::string qualifiedName() const;
  const std::string& docText() const { return doc_; }
  const std::vector<OperandSpec>& inputs() const { return inputs_; }
  const std::vector<OperandSpec>& outputs() const { return outputs_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const std::vector<TypeConstraint>& typeConstraints() const { return type_constraints_; }
  const AttrSpec* findAttr(std::string_view name) const;
  const TypeConstraint* findTypeConstraint(std::string_view var) const;

  // Checks operand and result counts, attribute names/kinds/required-ness, and that
  // known input dtypes satisfy the type constraints (and agree where they share a
  // type variable). Raises an Error naming the node.
  void validate(const Node& node) const;
  // Runs inference; returns output types (and known values) without touching the node.
  // Raises an Error naming the node on inconsistent inputs.
  void infer(InferenceContext& context) const;
  bool hasInference() const { return static_cast<bool>(inference_); }

 private:
  std::string op_type_;
  std::string domain_;
  std::string doc_;
  std::vector<OperandSpec> inputs_;
  std::vector<OperandSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  std::vector<TypeConstraint> type_constraints_;
  InferenceFn inference_;
  std::shared_ptr<const void> keep_alive_;
};

class OpRegistry {
 public:
  // The process-wide registry, holding every core op. Plugins add to it.
  static OpRegistry& global();

  // Raises an Error if (domain, op_type) is already registered.
  void add(OpSchema schema);
  const OpSchema* find(std::string_view op_type, std::string_view domain = "") const;
  const OpSchema* find(const Node& node) const { return find(node.opType(), node.domain()); }
  std::vector<const OpSchema*> all() const;  // sorted by qualified name

 private:
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> schemas_;  // by qualified name
};

// Type-constraint helpers.
std::vector<DType> floatTypes();      // f32 f16 bf16 f64
std::vector<DType> numericTypes();    // floats and integers
std::vector<DType> integerTypes();    // i8 i16 i32 i64 u8
std::vector<DType> allTypes();        // numeric and bool

// Infers one node with the global registry and writes the result onto its outputs.
// Returns false for ops without a schema or inference function.
bool inferNode(Node& node, const OpRegistry& registry = OpRegistry::global());

}  // namespace estuary
