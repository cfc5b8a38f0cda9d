#pragma once
// Op schemas: one place that says everything about an op: operands, attributes with
// kinds and defaults, type constraints, and shape/type inference.
//
// Semantics follow the ONNX operator specification (latest opset) where ONNX has the op
// (domain ""). Ops ONNX lacks live in domain "estuary" or a plugin's own domain. Plugins
// register more ops into the registry they are handed.
//
// ONNX attributes holding a TensorProto data type (Cast's `to`, EyeLike's `dtype`, the
// `stash_type` of the normalizations, Attention's `softmax_precision`) are AttrKind::Type
// here: a frontend converts an INT attribute whenever the schema declares Type.
//
// Running inference over a graph (the shape-inference pass) is a loop over the nodes in
// topological order calling inferNode() with one KnownValueMap:
//
//   KnownValueMap known;
//   for (Node* node : graph.topologicalOrder()) {
//     if (inferNode(*node, known) == InferStatus::Changed) ++changes;
//   }
//
// inferNode() infers a node's subgraphs (If branches, Loop bodies) itself, so the loop
// visits top-level nodes only.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/ir/attribute.h"
#include "estuary/ir/graph.h"
#include "estuary/ir/shape.h"
#include "estuary/ops/sym_int.h"

namespace estuary {

enum class Arity : uint8_t {
  Single,    // exactly one value
  Optional,  // zero or one (nullptr operand, or left off at the end, when absent)
  Variadic,  // min_count or more (only the last operand/result may be variadic)
};

struct OperandSpec {
  std::string name;
  // A TypeConstraint's variable ("T"), or a fixed element type by its dtype name ("i64").
  std::string type_var;
  Arity arity = Arity::Single;
  // Variadic only: whether all values share one type (If/Loop carry values of different
  // types), and the fewest values accepted.
  bool homogeneous = true;
  uint32_t min_count = 1;
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
class OpRegistry;

// Known element values of small integer tensors (the results of Shape, Gather, Concat
// ... on shapes), keyed by value. One map lives for one inference run over a graph; it
// holds plain pointers, so drop it before erasing nodes.
using KnownValueMap = std::unordered_map<const Value*, std::vector<SymInt>>;

// Tensors with more elements than this are not tracked by data propagation.
inline constexpr size_t kMaxKnownValues = 64;

// What a shape-inference function sees and sets for one node.
class InferenceContext {
 public:
  // `known_values` may be null (no data propagation beyond Constant nodes).
  InferenceContext(const Node& node, const OpSchema& schema, KnownValueMap* known_values = nullptr,
                   const OpRegistry* registry = nullptr);

  const Node& node() const { return node_; }
  const OpSchema& schema() const { return schema_; }

  // --- Inputs ----------------------------------------------------------------------------
  size_t numInputs() const { return node_.numInputs(); }
  bool hasInput(size_t i) const { return i < node_.numInputs() && node_.input(i) != nullptr; }
  // The type of input i; an unknown type ("?[*]") when the input is absent.
  const TensorType& inputType(size_t i) const;
  const Shape& inputShape(size_t i) const { return inputType(i).shape; }
  // The contents of input i when it is produced by a Constant node with a `value`
  // tensor, else nullptr.
  const Tensor* constantInput(size_t i) const;
  // The element values of a scalar or 1-D integer input of at most kMaxKnownValues
  // elements when they are known, possibly symbolically (Shape of a [batch,seq] input
  // gives {batch, seq}). This is ONNX's data propagation; it lets Reshape/Expand keep
  // symbolic dims.
  std::optional<std::vector<SymInt>> knownValues(size_t i) const;
  // knownValues() when every element is a known integer.
  std::optional<std::vector<int64_t>> knownInts(size_t i) const;

  // --- Attributes ------------------------------------------------------------------------
  // The node's attribute, or the schema's default, or nullptr when absent without default.
  const Attribute* attr(std::string_view name) const;
  // Typed access; each raises an Error naming the node when the attribute is absent and
  // has no default.
  int64_t intAttr(std::string_view name) const;
  double floatAttr(std::string_view name) const;
  const std::string& stringAttr(std::string_view name) const;
  DType typeAttr(std::string_view name) const;
  const std::vector<int64_t>& intsAttr(std::string_view name) const;
  const std::vector<double>& floatsAttr(std::string_view name) const;

  // --- Outputs ---------------------------------------------------------------------------
  size_t numOutputs() const { return outputs_.size(); }
  // The element type the type constraints give output i: the type bound to its type
  // variable by the inputs, its fixed type, or Undefined.
  DType outputDType(size_t i) const;
  // Setting an output the node does not have (an optional output left off) is a no-op,
  // so inference functions can set every output the op may have.
  void setOutputType(size_t i, TensorType type);
  // Sets the shape with outputDType(i) as element type.
  void setOutputShape(size_t i, Shape shape);
  const std::vector<TensorType>& outputTypes() const { return outputs_; }
  // Known element values of output i, for data propagation (see knownValues()).
  // Ignored for outputs the node does not have and for more than kMaxKnownValues values.
  void setOutputValues(size_t i, std::vector<SymInt> values);
  const std::vector<std::optional<std::vector<SymInt>>>& outputValues() const {
    return output_values_;
  }

  // Infers a subgraph (If branch, Loop body) in place: merges `input_types` into its
  // inputs' types (fewer types than inputs leave the rest as they are), runs inferNode()
  // on each of its nodes with this context's known values, and returns the types of its
  // outputs.
  std::vector<TensorType> inferSubgraph(Graph& graph, const std::vector<TensorType>& input_types);
  // The known element values of a value of a subgraph inferred with inferSubgraph (its
  // outputs, say), when data propagation found them.
  std::optional<std::vector<SymInt>> knownValuesOf(const Value* value) const;

  // Raises an Error: "node 'x' (Op): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    std::ostringstream message;
    (message << ... << parts);
    failWith(message.str());
  }

 private:
  friend class OpSchema;
  [[noreturn]] void failWith(const std::string& message) const;
  const Attribute& requireAttr(std::string_view name) const;

  const Node& node_;
  const OpSchema& schema_;
  KnownValueMap* known_values_;
  const OpRegistry* registry_;
  std::vector<DType> bindings_;  // per type constraint of the schema
  std::vector<TensorType> outputs_;
  std::vector<std::optional<std::vector<SymInt>>> output_values_;
};

using InferenceFn = std::function<void(InferenceContext&)>;

class OpSchema {
 public:
  explicit OpSchema(std::string op_type, std::string domain = "");

  // Builder-style declaration.
  OpSchema& doc(std::string text);
  OpSchema& input(std::string name, std::string type_var, Arity arity = Arity::Single,
                  bool homogeneous = true, uint32_t min_count = 1);
  OpSchema& output(std::string name, std::string type_var, Arity arity = Arity::Single,
                   bool homogeneous = true, uint32_t min_count = 1);
  OpSchema& attr(std::string name, AttrKind kind, std::optional<Attribute> default_value = {},
                 bool required = false);
  OpSchema& requiredAttr(std::string name, AttrKind kind) {
    return attr(std::move(name), kind, std::nullopt, true);
  }
  OpSchema& typeConstraint(std::string var, std::vector<DType> allowed);
  // Shape/type inference beyond what the type constraints give (see infer()).
  OpSchema& inference(InferenceFn fn);
  // Set by whoever registers the schema from a plugin, so the plugin's code (the
  // inference function) stays loaded as long as the schema does.
  OpSchema& keepAlive(std::shared_ptr<const void> owner);

  const std::string& opType() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  std::string qualifiedName() const;  // "Add", "estuary::AddRMSNorm"
  const std::string& docText() const { return doc_; }
  const std::vector<OperandSpec>& inputs() const { return inputs_; }
  const std::vector<OperandSpec>& outputs() const { return outputs_; }
  // The spec of operand or result `i`: the last spec, when variadic, covers the tail;
  // nullptr beyond the declared ones.
  const OperandSpec* inputSpec(size_t i) const;
  const OperandSpec* outputSpec(size_t i) const;
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const std::vector<TypeConstraint>& typeConstraints() const { return type_constraints_; }
  const AttrSpec* findAttr(std::string_view name) const;
  const TypeConstraint* findTypeConstraint(std::string_view var) const;

  // Raises an Error naming the op when the declaration itself is inconsistent: a type
  // variable without constraint, a variadic operand that is not last, a default of the
  // wrong kind, a name declared twice. OpRegistry::add() calls it.
  void check() const;

  // Checks operand and result counts, attribute names/kinds/required-ness, and that
  // known input dtypes satisfy the type constraints and agree where they share a type
  // variable. Raises an Error naming the node, e.g.
  // "node 'conv1' (Conv): input 1 'W' has dtype i64, allowed: f32, f16, bf16, f64".
  void validate(const Node& node) const;
  // Validates the node, gives every output the element type its constraint implies,
  // then runs the inference function. Results land in the context; the node's outputs
  // are not touched (its subgraphs are inferred in place). Raises an Error naming the
  // node on inconsistent inputs.
  void infer(InferenceContext& context) const;
  bool hasInference() const { return static_cast<bool>(inference_); }

 private:
  // Operand and result counts, absent required operands, attributes.
  void checkStructure(const Node& node) const;
  // Checks input dtypes and binds type variables (one entry per type constraint).
  void bindTypes(const Node& node, std::vector<DType>& bindings) const;

  // First, so it is destroyed last: the inference function may be plugin code.
  std::shared_ptr<const void> keep_alive_;
  std::string op_type_;
  std::string domain_;
  std::string doc_;
  std::vector<OperandSpec> inputs_;
  std::vector<OperandSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  std::vector<TypeConstraint> type_constraints_;
  InferenceFn inference_;
};

// Lookups may run concurrently; add() must not run concurrently with anything else
// (plugins register their ops while being loaded, before graphs are processed).
class OpRegistry {
 public:
  // The process-wide registry, holding every core op (registered on first use). Plugins
  // add to it.
  static OpRegistry& global();

  // Checks the schema (OpSchema::check()) and adds it. Raises an Error if (domain,
  // op_type) is already registered.
  void add(OpSchema schema);
  const OpSchema* find(std::string_view op_type, std::string_view domain = "") const;
  const OpSchema* find(const Node& node) const { return find(node.opType(), node.domain()); }
  std::vector<const OpSchema*> all() const;  // sorted by qualified name
  size_t size() const { return size_; }

 private:
  // By op type, then the few domains that share it. Lookup allocates nothing.
  std::map<std::string, std::vector<std::unique_ptr<OpSchema>>, std::less<>> schemas_;
  size_t size_ = 0;
};

// Type-constraint helpers.
std::vector<DType> floatTypes();    // f32 f16 bf16 f64
std::vector<DType> integerTypes();  // i8 i16 i32 i64 u8
std::vector<DType> signedTypes();   // floats and signed integers
std::vector<DType> numericTypes();  // floats and integers
std::vector<DType> allTypes();      // numeric and bool
// "f32, f16, i64": element types joined for messages.
std::string joinDTypes(const std::vector<DType>& types);

// Combines what a value's type says already with what inference found: a known dtype or
// rank fills an unknown one; per dimension a static size wins over a symbolic one, and a
// symbolic over unknown; where both are symbolic the inferred expression wins (it ties
// the value to the graph's inputs). Returns nullopt when the two contradict (different
// dtypes, ranks or static sizes).
std::optional<TensorType> mergeTypes(const TensorType& existing, const TensorType& inferred);

enum class InferStatus : uint8_t {
  NoSchema,   // unknown op: outputs left as they are
  Unchanged,  // inferred; the output types were already that precise
  Changed,    // some output type became more precise
};

// Infers one node (after its subgraphs) and merges the result into its output types
// (mergeTypes()); records the known values of its outputs in `known_values`. Raises an
// Error naming the node when the node is invalid or its declared output types contradict
// inference.
InferStatus inferNode(Node& node, KnownValueMap& known_values,
                      const OpRegistry& registry = OpRegistry::global());

}  // namespace estuary
