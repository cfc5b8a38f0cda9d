#include "estuary/sdk/graph_builder.h"

#include "estuary/ir/verifier.h"
#include "estuary/support/error.h"

namespace estuary::sdk {

const TensorType& Output::type() const {
  if (!value_) raise("an empty sdk::Output has no type");
  return value_->type();
}

GraphBuilder::GraphBuilder(std::string name) : graph_(std::make_unique<Graph>(std::move(name))) {}

Graph& GraphBuilder::graph() {
  if (!graph_) raise("the GraphBuilder was finished already");
  return *graph_;
}

Output GraphBuilder::input(std::string name, DType dtype, std::vector<Dim> dims, bool is_mutable) {
  for (const Value* existing : graph().inputs()) {
    if (existing->name() == name) raise("graph '", graph_->name(), "' has an input '", name, "' already");
  }
  return Output(graph().addInput(std::move(name), TensorType(dtype, Shape(std::move(dims))), is_mutable));
}

Output GraphBuilder::constant(Tensor value, std::string name) {
  if (value.isNull()) raise("GraphBuilder::constant '", name, "': the tensor is empty");
  Node* node = graph().createNode("Constant", {});
  node->setName(name);
  node->setAttr("value", std::move(value));
  node->output()->setName(std::move(name));
  return Output(infer(node)->output());
}

void GraphBuilder::output(const Output& value, std::string name) {
  if (!value) raise("graph '", graph().name(), "': an output is an empty sdk::Output");
  if (value.value()->graph() != graph_.get()) raise("output '", name, "' is a value of another graph");
  if (!name.empty()) value.value()->setName(std::move(name));
  graph_->addOutput(value.value());
}

std::unique_ptr<Graph> GraphBuilder::finish() {
  Graph& built = graph();
  if (built.numOutputs() == 0) raise("graph '", built.name(), "' has no outputs; mark them with GraphBuilder::output");
  verifyGraph(built);
  known_values_.clear();
  return std::move(graph_);
}

Node* GraphBuilder::infer(Node* node) {
  inferNode(*node, known_values_);
  return node;
}

OpBuilder::OpBuilder(GraphBuilder& graph, std::string_view op_type, std::string_view domain, std::string name)
    : graph_(&graph), schema_(OpRegistry::global().find(op_type, domain)), name_(std::move(name)) {
  if (!schema_) {
    raise("no op ", domain.empty() ? "" : std::string(domain) + "::", op_type,
          " is registered; if a plugin brings it, load the plugin first");
  }
  operands_.resize(schema_->inputs().size());
  for (const OperandSpec& result : schema_->outputs()) {
    if (result.arity == Arity::Single) ++results_;
  }
}

std::string OpBuilder::describe() const {
  return (name_.empty() ? "a node" : "node '" + name_ + "'") + " (" + schema_->qualifiedName() + ")";
}

void OpBuilder::requireUnmade(std::string_view what) const {
  if (node_) raise(describe(), ": ", what, " after the node was made (by taking an output)");
}

size_t OpBuilder::operandIndex(std::string_view operand) const {
  const std::vector<OperandSpec>& specs = schema_->inputs();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == operand) return i;
  }
  std::string known;
  for (const OperandSpec& spec : specs) known += (known.empty() ? "'" : ", '") + spec.name + "'";
  raise(describe(), " has no input '", operand, "' (its inputs: ", known, ")");
}

OpBuilder& OpBuilder::input(std::string_view operand, const Output& value) {
  return input(operandIndex(operand), value);
}

OpBuilder& OpBuilder::input(size_t operand, const Output& value) {
  requireUnmade("setting an input");
  if (operand >= operands_.size()) {
    raise(describe(), " has ", operands_.size(), " inputs; input ", operand, " is past them");
  }
  const OperandSpec& spec = schema_->inputs()[operand];
  if (!value) raise(describe(), ": input '", spec.name, "' is given an empty sdk::Output");
  if (spec.arity == Arity::Variadic) return inputs(operand, {value});
  operands_[operand] = {value.value()};
  return *this;
}

OpBuilder& OpBuilder::inputs(size_t operand, const std::vector<Output>& values) {
  requireUnmade("setting an input");
  if (operand >= operands_.size()) {
    raise(describe(), " has ", operands_.size(), " inputs; input ", operand, " is past them");
  }
  const OperandSpec& spec = schema_->inputs()[operand];
  if (spec.arity != Arity::Variadic && values.size() != 1) {
    raise(describe(), ": input '", spec.name, "' takes one value, ", values.size(), " were given");
  }
  operands_[operand].clear();
  for (const Output& value : values) {
    if (!value) raise(describe(), ": input '", spec.name, "' is given an empty sdk::Output");
    operands_[operand].push_back(value.value());
  }
  return *this;
}

OpBuilder& OpBuilder::attr(std::string_view name, Attribute value) {
  requireUnmade("setting an attribute");
  const AttrSpec* spec = schema_->findAttr(name);
  if (!spec) {
    std::string known;
    for (const AttrSpec& attr : schema_->attrs()) known += (known.empty() ? "'" : ", '") + attr.name + "'";
    raise(describe(), " has no attribute '", name, "' (its attributes: ", known.empty() ? "none" : known, ")");
  }
  if (value.kind() != spec->kind) {
    raise(describe(), ": attribute '", name, "' is ", attrKindName(spec->kind), ", the value given is ",
          attrKindName(value.kind()));
  }
  for (auto& [existing, set] : attributes_) {
    if (existing == name) {
      set = std::move(value);
      return *this;
    }
  }
  attributes_.emplace_back(std::string(name), std::move(value));
  return *this;
}

OpBuilder& OpBuilder::results(size_t count) {
  requireUnmade("choosing the number of results");
  results_ = count;
  return *this;
}

Node* OpBuilder::node() {
  if (node_) return node_;
  const std::vector<OperandSpec>& specs = schema_->inputs();
  std::vector<Value*> flat;
  size_t given_end = 0;  // operands past the last one given are left off
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!operands_[i].empty()) given_end = i + 1;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const OperandSpec& spec = specs[i];
    if (operands_[i].empty()) {
      if (spec.arity == Arity::Single) raise(describe(), ": required input '", spec.name, "' was not set");
      if (spec.arity == Arity::Variadic && spec.min_count > 0) {
        raise(describe(), ": input '", spec.name, "' needs at least ", spec.min_count, " values, none were set");
      }
      if (i < given_end && spec.arity == Arity::Optional) flat.push_back(nullptr);
      continue;
    }
    flat.insert(flat.end(), operands_[i].begin(), operands_[i].end());
  }
  for (const AttrSpec& spec : schema_->attrs()) {
    bool set = false;
    for (const auto& attribute : attributes_) set |= attribute.first == spec.name;
    if (spec.required && !set) raise(describe(), ": required attribute '", spec.name, "' was not set");
  }
  if (results_ == 0) {
    raise(describe(), ": its results are variadic; say how many with results(count) before taking one");
  }
  Graph& graph = graph_->graph();
  for (Value* value : flat) {
    if (value && !graph.canSee(value)) raise(describe(), ": an input is a value of another graph");
  }
  Node* made = graph.createNode(schema_->opType(), flat, results_, schema_->domain());
  made->setName(name_);
  for (auto& [name, value] : attributes_) made->setAttr(name, std::move(value));
  attributes_.clear();
  node_ = made;
  try {
    graph_->infer(made);
  } catch (...) {
    // The graph keeps no node that failed inference.
    for (size_t k = 0; k < made->numOutputs(); ++k) {
      if (made->output(k)->hasUses()) throw;
    }
    graph.eraseNode(made);
    node_ = nullptr;
    throw;
  }
  return made;
}

Output OpBuilder::output(size_t index) {
  Node* made = node();
  if (index >= made->numOutputs()) {
    raise(describe(), " was made with ", made->numOutputs(), " results; result ", index,
          " is past them (ask for more with results(count) before taking any)");
  }
  return Output(made->output(index));
}

std::vector<Output> OpBuilder::outputs() {
  Node* made = node();
  std::vector<Output> all;
  for (size_t k = 0; k < made->numOutputs(); ++k) all.push_back(Output(made->output(k)));
  return all;
}

}  // namespace estuary::sdk
