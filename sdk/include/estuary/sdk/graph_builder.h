#pragma once
// Building graphs by hand: GE's graph construction API in Estuary's form. Every core op has a
// typed class generated from the op schema registry at build time (estuary/sdk/ops.h), with a
// setter per input and attribute and an accessor per output:
//
//   sdk::GraphBuilder g("tiny_cnn");
//   sdk::Output x = g.input("x", DType::F32, {Dim::symbol("batch"), 3, 32, 32});
//   sdk::Output w = g.constant(Tensor::fromVector(DType::F32, {8, 3, 3, 3}, weights));
//   sdk::Output y = sdk::ops::Conv(g, "conv1").set_input_X(x).set_input_W(w)
//                       .set_attr_pads({1, 1, 1, 1}).set_attr_strides({1, 1});
//   g.output(sdk::ops::Relu(g).set_input_X(y), "y");
//   std::unique_ptr<Graph> graph = g.finish();
//
// A setter of the wrong type does not compile (an attribute's C++ type follows its schema kind).
// Shape inference runs when a node is made, which is when its first output is taken: an
// input missing or of the wrong type, or shapes that do not fit, raise an Error naming the
// op, the input or the attribute right at the line that made the node. Ops that plugins
// register (no generated class) are built with OpBuilder by name.
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "estuary/ir/attribute.h"
#include "estuary/ir/graph.h"
#include "estuary/ir/tensor.h"
#include "estuary/ops/schema.h"

namespace estuary::sdk {

class GraphBuilder;

// A value of the graph being built: an input, a constant or an op's output.
class Output {
 public:
  Output() = default;
  Value* value() const { return value_; }
  const TensorType& type() const;
  explicit operator bool() const { return value_ != nullptr; }

 private:
  friend class GraphBuilder;
  friend class OpBuilder;
  explicit Output(Value* value) : value_(value) {}
  Value* value_ = nullptr;
};

// An integer attribute's value: any integer type, and nothing else (a double is a compile
// error rather than a silent truncation).
struct IntValue {
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  IntValue(T number) : value(static_cast<int64_t>(number)) {}  // NOLINT(google-explicit-constructor)
  int64_t value;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "main");
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  // A graph input; dims are sizes or symbols (Dim::symbol("batch")).
  Output input(std::string name, DType dtype, std::vector<Dim> dims, bool is_mutable = false);
  // A weight or any other constant.
  Output constant(Tensor value, std::string name = {});
  // Marks `value` as a graph output, renamed to `name` when given.
  void output(const Output& value, std::string name = {});
  // The finished graph, verified. Raises an Error when it has no outputs, or names the node
  // the verifier refuses. The builder is empty afterwards.
  std::unique_ptr<Graph> finish();

  Graph& graph();

 private:
  friend class OpBuilder;
  Node* infer(Node* node);
  std::unique_ptr<Graph> graph_;
  KnownValueMap known_values_;
};

// One node under construction, by schema: operands and attributes by name or position.
// The generated op classes derive from it; a plugin's op is built with it directly:
//   sdk::OpBuilder(g, "AddRMSNorm", "estuary", "norm").input("X", x).input("R", r).input("scale", w)
//       .attr("epsilon", 1e-6).output(0)
class OpBuilder {
 public:
  // Raises an Error when no schema is registered for the op.
  OpBuilder(GraphBuilder& graph, std::string_view op_type, std::string_view domain = "", std::string name = {});

  OpBuilder& input(std::string_view operand, const Output& value);
  OpBuilder& input(size_t operand, const Output& value);
  // A variadic operand's values (Concat's inputs, Sum's data).
  OpBuilder& inputs(size_t operand, const std::vector<Output>& values);
  // Checked against the schema: an unknown name or a value of another kind is an Error.
  OpBuilder& attr(std::string_view name, Attribute value);
  // How many results to make: optional results are left off unless asked for, and a
  // variadic result (Split's outputs) needs its count. Before the first output() only.
  OpBuilder& results(size_t count);

  // The node's result `index`, making the node on first use (which infers its types).
  Output output(size_t index = 0);
  std::vector<Output> outputs();
  // The node, made now if not yet.
  Node* node();

 protected:
  const OpSchema& schema() const { return *schema_; }

 private:
  size_t operandIndex(std::string_view operand) const;
  std::string describe() const;  // "node 'conv1' (Conv)"
  void requireUnmade(std::string_view what) const;

  GraphBuilder* graph_;
  const OpSchema* schema_;
  std::string name_;
  std::vector<std::vector<Value*>> operands_;  // per operand spec
  std::vector<std::pair<std::string, Attribute>> attributes_;
  size_t results_ = 0;
  Node* node_ = nullptr;
};

}  // namespace estuary::sdk
