#include "ms_graph.h"

#include <deque>
#include <set>
#include <unordered_map>

#include "estuary/support/error.h"
#include "ms_values.h"

namespace estuary::mindspore_frontend {
namespace {

constexpr std::string_view kRef = "REF::";
// How deep calls may nest in the view: deeper means recursion that is not a while loop.
constexpr int kMaxCallDepth = 48;

// What a name in the model denotes once side effects and tuple plumbing are looked through.
struct Ref {
  enum Kind { Value, Tuple, Constant, Monad, None, Function, Closure };
  Kind kind = Value;
  std::string_view name;     // Value: the value; Constant, Closure: the node; Function: the graph
  std::vector<Ref> elements;  // Tuple
};

// Where a name is defined. MindIR names every node, input, parameter and graph uniquely
// across the whole model.
struct Definition {
  const MsGraph* graph = nullptr;
  const MsValueInfo* input = nullptr;
  const MsTensor* parameter = nullptr;
  const MsNode* node = nullptr;
  bool is_graph = false;
};

enum class NodeClass { Constant, Primitive, GraphCall, ClosureCall };

class ModelIndex {
 public:
  // Keeps pointers into `model`, which must outlive the index.
  ModelIndex(const MsModelProto& model, std::string path, ParameterReader read)
      : path_(std::move(path)), read_(std::move(read)) {
    for (const MsPrimitive& primitive : model.primitives) primitives_.emplace(primitive.name, &primitive);
    addGraph(*model.graph);
    for (const MsGraph& function : model.functions) addGraph(function);
  }

  const std::string& path() const { return path_; }
  const ParameterReader& reader() const { return read_; }

  const Definition* find(std::string_view name) const {
    auto it = definitions_.find(name);
    return it == definitions_.end() ? nullptr : &it->second;
  }
  const MsGraph* graph(std::string_view name) const {
    const Definition* definition = find(name);
    return definition && definition->is_graph ? definition->graph : nullptr;
  }
  const MsNode& node(std::string_view name) const { return *find(name)->node; }
  // The node whose result `name` is, through Depends (which only order side effects); nullptr
  // for an input or parameter.
  const MsNode* producer(std::string_view name) const {
    const Definition* definition = find(name);
    while (definition && definition->node && classify(*definition->node) == NodeClass::Primitive &&
           opOf(*definition->node) == "Depend" && !definition->node->input.empty()) {
      definition = find(definition->node->input[0]);
    }
    return definition ? definition->node : nullptr;
  }

  NodeClass classify(const MsNode& node) const {
    if (node.op_type == "Constant") return NodeClass::Constant;
    if (node.op_type.substr(0, kRef.size()) != kRef) return NodeClass::Primitive;  // older files: the op itself
    std::string_view target = node.op_type.substr(kRef.size());
    if (primitives_.count(target)) return NodeClass::Primitive;
    const Definition* definition = find(target);
    if (definition && definition->is_graph) return NodeClass::GraphCall;
    if (definition && definition->node) return NodeClass::ClosureCall;
    fail(node, "refers to '" + std::string(target) + "', which is no primitive, graph or node of the model");
  }

  // The primitive of a Primitive node, or nullptr for an older file's bare op name.
  const MsPrimitive* primitive(const MsNode& node) const {
    if (node.op_type.substr(0, kRef.size()) != kRef) return nullptr;
    auto it = primitives_.find(node.op_type.substr(kRef.size()));
    return it == primitives_.end() ? nullptr : it->second;
  }
  std::string_view opOf(const MsNode& node) const {
    const MsPrimitive* prim = primitive(node);
    return prim ? prim->op_type : node.op_type;
  }
  // The graph a GraphCall calls, the node a ClosureCall calls.
  std::string_view target(const MsNode& node) const { return node.op_type.substr(kRef.size()); }

  std::string_view intern(std::string text) { return names_.emplace_back(std::move(text)); }
  // "0", "1", ...: the attribute names of constant arguments.
  std::string_view positionName(size_t k) {
    while (positions_.size() <= k) positions_.push_back(intern(std::to_string(positions_.size())));
    return positions_[k];
  }

  [[noreturn]] void fail(const MsNode& node, const std::string& what) const {
    raise(path_, ": node '", node.name, "' (", node.op_type, "): ", what);
  }
  [[noreturn]] void failGraph(const MsGraph& graph, const std::string& what) const {
    raise(path_, ": graph '", graph.name, "': ", what);
  }

  // The element names of an op's tuple result: "<node>#<i>".
  std::string_view elementName(std::string_view node, size_t i) {
    return intern(std::string(node) + "#" + std::to_string(i));
  }

  Ref resolve(std::string_view name, const std::unordered_map<std::string_view, Ref>& aliases, int depth = 0) {
    if (auto alias = aliases.find(name); alias != aliases.end()) return alias->second;
    const Definition* definition = find(name);
    if (!definition) raise(path_, ": '", name, "' is read but defined nowhere in the model");
    if (depth > 256) raise(path_, ": '", name, "' is defined through a cycle of tuples and loads");
    if (definition->is_graph) return {Ref::Function, name, {}};
    if (definition->input) return {isMonad(*definition->input) ? Ref::Monad : Ref::Value, name, {}};
    if (definition->parameter) return {Ref::Value, name, {}};
    const MsNode& node = *definition->node;
    const MsAttribute* abstract = abstractOf(node);
    switch (classify(node)) {
      case NodeClass::Constant: {
        const MsAttribute* value = node.attribute.empty() ? nullptr : &node.attribute[0];
        if (!value) fail(node, "a constant without a value");
        if (abstractKind(value) == AbstractKind::Monad) return {Ref::Monad, name, {}};
        if (value->type == kAttrNone) return {Ref::None, name, {}};
        return {Ref::Constant, name, {}};
      }
      case NodeClass::GraphCall:
      case NodeClass::ClosureCall: return resultOf(node, abstract);
      case NodeClass::Primitive: break;
    }
    std::string_view op = opOf(node);
    if (op == "Load" || op == "Depend") {
      if (node.input.empty()) fail(node, "has no input");
      return resolve(node.input[0], aliases, depth + 1);
    }
    if (op == "UpdateState") return {Ref::Monad, name, {}};
    if (op == "Partial" || op == "Switch") return {Ref::Closure, name, {}};
    if (op == "MakeTuple" && !isScalarTuple(abstract)) {
      Ref tuple{Ref::Tuple, name, {}};
      for (std::string_view element : node.input) tuple.elements.push_back(resolve(element, aliases, depth + 1));
      return tuple;
    }
    if (op == "TupleGetItem") {
      if (node.input.size() != 2) fail(node, "takes a tuple and an index");
      Ref tuple = resolve(node.input[0], aliases, depth + 1);
      if (tuple.kind != Ref::Tuple) return {Ref::Value, name, {}};  // an element of a shape: a real op
      int64_t index = constantIndex(node, node.input[1], aliases);
      if (index < 0 || index >= static_cast<int64_t>(tuple.elements.size())) {
        fail(node, "index " + std::to_string(index) + " is outside a tuple of " + std::to_string(tuple.elements.size()));
      }
      return tuple.elements[static_cast<size_t>(index)];
    }
    return resultOf(node, abstract);
  }

  // Whether a Primitive node is only plumbing, which the view looks through.
  bool isPlumbing(const MsNode& node, const std::unordered_map<std::string_view, Ref>& aliases) {
    std::string_view op = opOf(node);
    if (op == "Load" || op == "Depend" || op == "UpdateState" || op == "Partial" || op == "Switch") return true;
    if (op == "MakeTuple") return !isScalarTuple(abstractOf(node));
    if (op == "TupleGetItem") return !node.input.empty() && resolve(node.input[0], aliases).kind == Ref::Tuple;
    return false;
  }

 private:
  void addGraph(const MsGraph& graph) {
    define(graph.name, Definition{&graph, nullptr, nullptr, nullptr, true});
    for (const MsValueInfo& input : graph.input) define(input.name, Definition{&graph, &input, nullptr, nullptr, false});
    for (const MsTensor& parameter : graph.parameter) {
      define(parameter.name, Definition{&graph, nullptr, &parameter, nullptr, false});
    }
    for (const MsNode& node : graph.node) {
      std::string_view name = node.output.empty() ? node.name : node.output[0];
      if (node.output.size() > 1) raise(path_, ": node '", node.name, "' names ", node.output.size(), " outputs; MindIR nodes have one");
      define(name, Definition{&graph, nullptr, nullptr, &node, false});
    }
  }

  void define(std::string_view name, Definition definition) {
    if (!definitions_.emplace(name, definition).second) {
      raise(path_, ": '", name, "' is defined twice in the model (in graph '", definition.graph->name, "')");
    }
  }

  // An op's or call's result: a value, or for a tuple of tensors one value per element.
  Ref resultOf(const MsNode& node, const MsAttribute* abstract) {
    std::string_view name = node.output.empty() ? node.name : node.output[0];
    if (tupleArity(abstract) == 0 || isScalarTuple(abstract)) return {Ref::Value, name, {}};
    Ref tuple{Ref::Tuple, name, {}};
    for (size_t i = 0; i < tupleArity(abstract); ++i) tuple.elements.push_back({Ref::Value, elementName(name, i), {}});
    return tuple;
  }

  int64_t constantIndex(const MsNode& node, std::string_view name, const std::unordered_map<std::string_view, Ref>& aliases) {
    Ref ref = resolve(name, aliases);
    if (ref.kind == Ref::Constant) {
      AttrValue value = attrValueOf(this->node(ref.name).attribute[0], path_ + ": node '" + std::string(node.name) + "'");
      if (const int64_t* index = std::get_if<int64_t>(&value.data)) return *index;
    }
    fail(node, "the index must be a constant integer");
  }

  std::string path_;
  ParameterReader read_;
  std::unordered_map<std::string_view, const MsPrimitive*> primitives_;
  std::unordered_map<std::string_view, Definition> definitions_;
  std::deque<std::string> names_;
  std::vector<std::string_view> positions_;
};

class GraphView;

// How a graph is seen: its inputs named (a loop body's are the header's parameters), names
// standing for others (a body's parameters for the loop variables), nodes left out (the tail
// call that closes a loop) and outputs given in place of the graph's own.
struct ViewOptions {
  std::vector<std::string_view> inputs;
  bool inputs_given = false;
  std::unordered_map<std::string_view, Ref> aliases;
  std::set<const MsNode*> excluded;
  std::optional<std::vector<std::string_view>> outputs;
  bool main = false;
  int depth = 0;
};

class NodeView final : public NodeDecoder {
 public:
  std::string_view opType() const override { return op_; }
  std::string_view domain() const override { return domain_; }
  std::string_view name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_.at(i); }
  std::optional<size_t> inputIndex(std::string_view slot) const override {
    size_t argument = 0;
    for (char c : slot) {
      if (c < '0' || c > '9') return std::nullopt;
      argument = argument * 10 + static_cast<size_t>(c - '0');
    }
    if (slot.empty() || argument >= slot_starts_.size() || slot_starts_[argument] == kNoSlot) return std::nullopt;
    return slot_starts_[argument];
  }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_.at(i); }

  std::vector<std::string_view> attributeNames() const override {
    std::vector<std::string_view> names;
    for (const auto& [name, attribute] : attributes_) names.push_back(name);
    for (const auto& [name, graph] : subgraphs_) names.push_back(name);
    for (const auto& [name, value] : made_) names.push_back(name);
    return names;
  }
  std::optional<AttrValue> attribute(std::string_view name) const override {
    for (const auto& [attribute_name, attribute] : attributes_) {
      if (attribute_name == name) return attrValueOf(*attribute, where_);
    }
    for (const auto& [graph_name, graph] : subgraphs_) {
      if (graph_name == name) return AttrValue{graph, "GRAPH"};
    }
    for (const auto& [made_name, value] : made_) {
      if (made_name == name) return value;
    }
    return std::nullopt;
  }
  std::vector<AttrValue::GraphRef> subgraphs() const override {
    std::vector<AttrValue::GraphRef> graphs;
    for (const auto& [name, graph] : subgraphs_) graphs.push_back(graph);
    return graphs;
  }

 private:
  friend class GraphView;
  static constexpr size_t kNoSlot = static_cast<size_t>(-1);

  std::string_view op_;
  std::string_view domain_;
  std::string_view name_;
  std::string where_;  // for attribute errors
  std::vector<std::string_view> inputs_;
  std::vector<size_t> slot_starts_;
  std::vector<std::string_view> outputs_;
  std::vector<std::pair<std::string_view, const MsAttribute*>> attributes_;
  std::vector<std::pair<std::string_view, AttrValue::GraphRef>> subgraphs_;
  std::vector<std::pair<std::string_view, AttrValue>> made_;  // attributes the view adds
};

class GraphView final : public GraphDecoder {
 public:
  GraphView(ModelIndex& index, const MsGraph& graph, ViewOptions options)
      : index_(index), graph_(graph), options_(std::move(options)) {
    if (options_.depth > kMaxCallDepth) {
      index_.failGraph(graph_, "graphs call each other recursively in a way that is not a while loop Estuary can rebuild");
    }
    if (!options_.inputs_given) {
      for (const MsValueInfo& input : graph_.input) {
        if (isMonad(input)) continue;
        declared_.push_back(&input);
        std::string_view name = options_.main ? pythonName(input.name) : input.name;
        if (name != input.name) options_.aliases.emplace(input.name, Ref{Ref::Value, name, {}});
        options_.inputs.push_back(name);
      }
    }
    for (const MsNode& node : graph_.node) {
      if (!options_.excluded.count(&node)) addNode(node);
    }
    outputs_ = options_.outputs ? *options_.outputs : graphOutputs();
  }

  std::string name() const override { return std::string(graph_.name); }
  size_t numInputs() const override { return options_.inputs.size(); }
  std::string_view inputName(size_t i) const override { return options_.inputs.at(i); }
  TensorType inputType(size_t i, SymbolTable& symbols) const override {
    if (i >= declared_.size()) return {};
    return valueInfoType(*declared_[i], symbols, std::string(options_.inputs[i]), index_.path());
  }
  size_t numWeights() const override { return graph_.parameter.size(); }
  std::string_view weightName(size_t i) const override { return graph_.parameter.at(i).name; }
  TensorType weightType(size_t i) const override {
    const MsTensor& parameter = graph_.parameter.at(i);
    std::optional<DType> dtype = dtypeFromMs(parameter.data_type);
    if (!dtype) {
      raise(index_.path(), ": parameter '", parameter.name, "' is ", msTypeName(parameter.data_type),
            ", which Estuary has no tensor for");
    }
    std::vector<Dim> dims(parameter.dims.begin(), parameter.dims.end());
    return TensorType(*dtype, Shape(std::move(dims)));
  }
  Tensor weight(size_t i) const override {
    const MsTensor& parameter = graph_.parameter.at(i);
    return index_.reader()(parameter, "parameter '" + std::string(parameter.ref_key.empty() ? parameter.name
                                                                                                : parameter.ref_key) + "'");
  }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return *nodes_.at(i); }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_.at(i); }

 private:
  Ref resolve(std::string_view name) { return index_.resolve(name, options_.aliases); }

  // A main-graph input by its Python name ("x" of "<graph>:x"), or "x_input" where the model
  // spells another name "x"; the full name when both are taken.
  std::string_view pythonName(std::string_view full) {
    const size_t colon = full.rfind(':');
    if (colon == std::string_view::npos) return full;
    std::string_view short_name = full.substr(colon + 1);
    for (std::string candidate : {std::string(short_name), std::string(short_name) + "_input"}) {
      if (!index_.find(candidate) && !taken_.count(candidate)) return *taken_.insert(index_.intern(candidate)).first;
    }
    return full;
  }

  // The names a value reference stands for as inputs: one, or a tuple's elements.
  void appendNames(const MsNode& node, const Ref& ref, std::vector<std::string_view>& names) {
    switch (ref.kind) {
      case Ref::Value:
      case Ref::Constant: names.push_back(ref.name); return;
      case Ref::None: names.emplace_back(); return;
      case Ref::Monad: return;
      case Ref::Tuple:
        for (const Ref& element : ref.elements) appendNames(node, element, names);
        return;
      case Ref::Function:
      case Ref::Closure: index_.fail(node, "takes a function ('" + std::string(ref.name) + "') as a value");
    }
  }

  std::vector<std::string_view> graphOutputs() {
    if (graph_.output.empty()) index_.failGraph(graph_, "has no output");
    std::vector<std::string_view> names;
    appendOutput(resolve(graph_.output[0].name), names);
    return names;
  }

  void appendOutput(const Ref& ref, std::vector<std::string_view>& names) {
    if (ref.kind == Ref::Tuple) {
      for (const Ref& element : ref.elements) appendOutput(element, names);
    } else if (ref.kind == Ref::Value || ref.kind == Ref::Constant) {
      names.push_back(ref.name);
    } else {
      index_.failGraph(graph_, "returns a value that is not a tensor (a function, a monad or None)");
    }
  }

  NodeView& newNode(const MsNode& node, std::string_view op, std::string_view domain) {
    auto view = std::make_unique<NodeView>();
    view->op_ = op;
    view->domain_ = domain;
    view->name_ = node.output.empty() ? node.name : node.output[0];
    view->where_ = index_.path() + ": node '" + std::string(view->name_) + "' (" + std::string(op) + ")";
    nodes_.push_back(std::move(view));
    return *nodes_.back();
  }

  void setOutputs(NodeView& view, const MsNode& node) {
    const MsAttribute* abstract = abstractOf(node);
    size_t arity = isScalarTuple(abstract) ? 0 : tupleArity(abstract);
    if (arity == 0) {
      view.outputs_.push_back(view.name_);
    } else {
      for (size_t i = 0; i < arity; ++i) view.outputs_.push_back(index_.elementName(view.name_, i));
    }
  }

  void addNode(const MsNode& node) {
    switch (index_.classify(node)) {
      case NodeClass::Constant: return addConstant(node);
      case NodeClass::Primitive:
        if (!index_.isPlumbing(node, options_.aliases)) addPrimitive(node);
        return;
      case NodeClass::GraphCall: return addGraphCall(node);
      case NodeClass::ClosureCall: return addClosureCall(node);
    }
  }

  void addConstant(const MsNode& node) {
    if (node.attribute.empty()) index_.fail(node, "a constant without a value");
    const MsAttribute& value = node.attribute[0];
    AttrValue decoded = attrValueOf(value, index_.path() + ": constant '" + std::string(node.name) + "'");
    // Monads, None, strings and types are arguments only, never values.
    if (std::holds_alternative<std::monostate>(decoded.data) || std::holds_alternative<std::string>(decoded.data) ||
        std::holds_alternative<DType>(decoded.data) || std::holds_alternative<std::vector<std::string>>(decoded.data)) {
      return;
    }
    NodeView& view = newNode(node, "Constant", "mindir");
    view.outputs_.push_back(view.name_);
    view.attributes_.emplace_back("value", &value);
  }

  void addPrimitive(const MsNode& node) {
    NodeView& view = newNode(node, index_.opOf(node), "");
    for (size_t k = 0; k < node.input.size(); ++k) {
      Ref ref = resolve(node.input[k]);
      const size_t before = view.inputs_.size();
      appendNames(node, ref, view.inputs_);
      view.slot_starts_.push_back(view.inputs_.size() > before ? before : NodeView::kNoSlot);
      if (ref.kind == Ref::Constant || ref.kind == Ref::None) {
        view.attributes_.emplace_back(index_.positionName(k), &index_.node(ref.name).attribute[0]);
      }
    }
    if (const MsPrimitive* primitive = index_.primitive(node)) {
      for (const MsAttribute& attribute : primitive->attribute) view.attributes_.emplace_back(attribute.name, &attribute);
    }
    setOutputs(view, node);
  }

  // A call's arguments bound to the callee's parameters, positionally, monads left out.
  struct Binding {
    std::vector<std::string_view> parameters;
    std::vector<std::string_view> arguments;
  };
  Binding bind(const MsNode& node, const MsGraph& callee, const std::vector<std::string_view>& arguments) {
    if (arguments.size() != callee.input.size()) {
      index_.fail(node, "calls '" + std::string(callee.name) + "' with " + std::to_string(arguments.size()) +
                            " arguments; it takes " + std::to_string(callee.input.size()));
    }
    Binding binding;
    for (size_t i = 0; i < arguments.size(); ++i) {
      if (isMonad(callee.input[i])) continue;
      Ref ref = resolve(arguments[i]);
      if (ref.kind == Ref::Monad) continue;
      std::vector<std::string_view> names;
      appendNames(node, ref, names);
      if (names.size() != 1) index_.fail(node, "passes a tuple to '" + std::string(callee.name) + "'");
      binding.parameters.push_back(callee.input[i].name);
      binding.arguments.push_back(names[0]);
    }
    return binding;
  }

  // A closure (a Partial of a graph, or a graph) and the extra arguments of its call: the
  // graph and the bound arguments followed by the extra ones.
  std::pair<const MsGraph*, std::vector<std::string_view>> closureTarget(const MsNode& node, std::string_view name,
                                                                         const std::vector<std::string_view>& extra) {
    Ref ref = resolve(name);
    if (ref.kind == Ref::Function) {
      return {index_.graph(ref.name), extra};
    }
    if (ref.kind == Ref::Closure && index_.opOf(index_.node(ref.name)) == "Partial") {
      const MsNode& partial = index_.node(ref.name);
      if (partial.input.empty()) index_.fail(partial, "binds no graph");
      Ref function = resolve(partial.input[0]);
      if (function.kind != Ref::Function) index_.fail(partial, "binds '" + std::string(partial.input[0]) + "', which is not a graph");
      std::vector<std::string_view> arguments(partial.input.begin() + 1, partial.input.end());
      arguments.insert(arguments.end(), extra.begin(), extra.end());
      return {index_.graph(function.name), arguments};
    }
    index_.fail(node, "calls '" + std::string(name) + "', which is neither a graph nor a Partial of one");
  }

  ViewOptions childOptions() const {
    ViewOptions options;
    options.depth = options_.depth + 1;
    return options;
  }

  std::shared_ptr<GraphView> calleeView(const MsGraph& callee, std::vector<std::string_view> inputs,
                                        std::unordered_map<std::string_view, Ref> aliases = {},
                                        std::set<const MsNode*> excluded = {},
                                        std::optional<std::vector<std::string_view>> outputs = std::nullopt) {
    ViewOptions options = childOptions();
    options.inputs = std::move(inputs);
    options.inputs_given = true;
    options.aliases = std::move(aliases);
    options.excluded = std::move(excluded);
    options.outputs = std::move(outputs);
    return std::make_shared<GraphView>(index_, callee, std::move(options));
  }

  // The parts of a while loop when `header` is the header of one: the Switch's condition, the
  // body (whose result is the header called again) with its tail call, and the after-block.
  struct LoopParts {
    const MsNode* closure_call = nullptr;
    std::string_view condition;
    bool body_when_true = true;
    const MsGraph* body = nullptr;
    std::vector<std::string_view> body_arguments;
    const MsNode* tail_call = nullptr;
    const MsGraph* after = nullptr;
    std::vector<std::string_view> after_arguments;
  };
  std::optional<LoopParts> loopOf(const MsGraph& header) {
    if (header.output.empty()) return std::nullopt;
    const MsNode* result = index_.producer(header.output[0].name);
    if (!result || index_.classify(*result) != NodeClass::ClosureCall) return std::nullopt;
    LoopParts parts;
    parts.closure_call = result;
    Ref chooser = resolve(index_.target(*result));
    if (chooser.kind != Ref::Closure || index_.opOf(index_.node(chooser.name)) != "Switch") return std::nullopt;
    const MsNode& select = index_.node(chooser.name);
    if (select.input.size() != 3) index_.fail(select, "a Switch takes a condition and two branches");
    std::vector<std::string_view> extra(result->input.begin(), result->input.end());
    auto [on_true, true_arguments] = closureTarget(*result, select.input[1], extra);
    auto [on_false, false_arguments] = closureTarget(*result, select.input[2], extra);
    auto tailCall = [&](const MsGraph& branch) -> const MsNode* {
      if (branch.output.empty()) return nullptr;
      const MsNode* call = index_.producer(branch.output[0].name);
      if (!call || index_.classify(*call) != NodeClass::GraphCall) return nullptr;
      return index_.target(*call) == header.name ? call : nullptr;
    };
    const MsNode* true_tail = tailCall(*on_true);
    const MsNode* false_tail = tailCall(*on_false);
    if (!true_tail && !false_tail) return std::nullopt;
    if (true_tail && false_tail) index_.failGraph(header, "is a while loop that never ends (both branches loop)");
    parts.condition = select.input[0];
    parts.body_when_true = true_tail != nullptr;
    parts.body = parts.body_when_true ? on_true : on_false;
    parts.body_arguments = parts.body_when_true ? true_arguments : false_arguments;
    parts.tail_call = parts.body_when_true ? true_tail : false_tail;
    parts.after = parts.body_when_true ? on_false : on_true;
    parts.after_arguments = parts.body_when_true ? false_arguments : true_arguments;
    return parts;
  }

  void addGraphCall(const MsNode& node) {
    const MsGraph& callee = *index_.graph(index_.target(node));
    std::vector<std::string_view> arguments(node.input.begin(), node.input.end());
    Binding binding = bind(node, callee, arguments);
    std::optional<LoopParts> loop = loopOf(callee);
    NodeView& view = newNode(node, loop ? "While" : "Call", "mindir");
    view.inputs_ = binding.arguments;
    setOutputs(view, node);
    if (!loop) {
      view.subgraphs_.emplace_back("callee", calleeView(callee, binding.parameters));
      return;
    }
    addLoop(view, callee, binding.parameters, *loop);
  }

  // The header's parameters are the loop variables: the condition reads them, and the body and
  // the after-block take them through the Partials that bind them.
  void addLoop(NodeView& view, const MsGraph& header, const std::vector<std::string_view>& variables,
               const LoopParts& loop) {
    std::set<std::string_view> is_variable(variables.begin(), variables.end());
    auto aliasesFor = [&](const MsGraph& graph, const std::vector<std::string_view>& arguments) {
      std::unordered_map<std::string_view, Ref> aliases;
      const MsNode& call = *loop.closure_call;
      if (arguments.size() != graph.input.size()) {
        index_.fail(call, "calls '" + std::string(graph.name) + "' with " + std::to_string(arguments.size()) +
                              " arguments; it takes " + std::to_string(graph.input.size()));
      }
      for (size_t i = 0; i < arguments.size(); ++i) {
        if (isMonad(graph.input[i])) continue;
        Ref ref = index_.resolve(arguments[i], {});
        if (ref.kind == Ref::Monad) continue;
        if (ref.kind != Ref::Value || !is_variable.count(ref.name)) {
          index_.failGraph(header, "is a while loop whose '" + std::string(graph.name) + "' takes '" +
                                       std::string(arguments[i]) +
                                       "', which is not a loop variable; Estuary rebuilds loops whose body and "
                                       "after-block take only the loop variables");
        }
        aliases.emplace(graph.input[i].name, ref);
      }
      return aliases;
    };
    // The condition: the header itself, up to the Switch; negated when the body is the false branch.
    Ref condition = index_.resolve(loop.condition, {});
    if (condition.kind != Ref::Value && condition.kind != Ref::Constant) {
      index_.failGraph(header, "is a while loop whose condition is not a tensor");
    }
    view.subgraphs_.emplace_back("condition", calleeView(header, variables, {}, {loop.closure_call},
                                                         std::vector<std::string_view>{condition.name}));
    // MindSpore's Switch may loop on its false branch (`while not c`): the condition is negated.
    view.made_.emplace_back("negate_condition", AttrValue{!loop.body_when_true, "BOOL"});
    // The body: its tail call's arguments are the next values of the loop variables.
    const MsNode& tail = *loop.tail_call;
    auto body_aliases = aliasesFor(*loop.body, loop.body_arguments);
    std::vector<std::string_view> next;
    for (size_t i = 0; i < tail.input.size() && i < header.input.size(); ++i) {
      if (isMonad(header.input[i])) continue;
      Ref ref = index_.resolve(tail.input[i], body_aliases);
      if (ref.kind == Ref::Monad) continue;
      std::vector<std::string_view> names;
      appendNames(tail, ref, names);
      if (names.size() != 1) index_.fail(tail, "passes a tuple to the loop header");
      next.push_back(names[0]);
    }
    if (next.size() != variables.size()) {
      index_.fail(tail, "gives " + std::to_string(next.size()) + " values for " + std::to_string(variables.size()) +
                            " loop variables");
    }
    view.subgraphs_.emplace_back("body", calleeView(*loop.body, variables, std::move(body_aliases), {&tail}, next));
    view.subgraphs_.emplace_back("after", calleeView(*loop.after, variables, aliasesFor(*loop.after, loop.after_arguments)));
  }

  void addClosureCall(const MsNode& node) {
    Ref chooser = resolve(index_.target(node));
    if (chooser.kind != Ref::Closure || index_.opOf(index_.node(chooser.name)) != "Switch") {
      // A Partial called directly: a plain call with the bound arguments first.
      auto [callee, arguments] = closureTarget(node, index_.target(node), {node.input.begin(), node.input.end()});
      Binding binding = bind(node, *callee, arguments);
      NodeView& view = newNode(node, "Call", "mindir");
      view.inputs_ = binding.arguments;
      setOutputs(view, node);
      view.subgraphs_.emplace_back("callee", calleeView(*callee, binding.parameters));
      return;
    }
    const MsNode& select = index_.node(chooser.name);
    if (select.input.size() != 3) index_.fail(select, "a Switch takes a condition and two branches");
    std::vector<std::string_view> extra(node.input.begin(), node.input.end());
    auto [then_graph, then_arguments] = closureTarget(node, select.input[1], extra);
    auto [else_graph, else_arguments] = closureTarget(node, select.input[2], extra);
    Binding then_binding = bind(node, *then_graph, then_arguments);
    Binding else_binding = bind(node, *else_graph, else_arguments);
    NodeView& view = newNode(node, "If", "mindir");
    std::vector<std::string_view> condition;
    appendNames(select, resolve(select.input[0]), condition);
    if (condition.size() != 1) index_.fail(select, "its condition is not a tensor");
    view.inputs_ = condition;
    view.inputs_.insert(view.inputs_.end(), then_binding.arguments.begin(), then_binding.arguments.end());
    view.inputs_.insert(view.inputs_.end(), else_binding.arguments.begin(), else_binding.arguments.end());
    setOutputs(view, node);
    // Both branches take every argument; each ignores the other's.
    std::vector<std::string_view> then_inputs = then_binding.parameters;
    for (size_t i = 0; i < else_binding.arguments.size(); ++i) {
      then_inputs.push_back(index_.intern(std::string(then_graph->name) + "#unused" + std::to_string(i)));
    }
    std::vector<std::string_view> else_inputs;
    for (size_t i = 0; i < then_binding.arguments.size(); ++i) {
      else_inputs.push_back(index_.intern(std::string(else_graph->name) + "#unused" + std::to_string(i)));
    }
    else_inputs.insert(else_inputs.end(), else_binding.parameters.begin(), else_binding.parameters.end());
    view.subgraphs_.emplace_back("then_branch", calleeView(*then_graph, then_inputs));
    view.subgraphs_.emplace_back("else_branch", calleeView(*else_graph, else_inputs));
  }

  ModelIndex& index_;
  const MsGraph& graph_;
  ViewOptions options_;
  std::vector<const MsValueInfo*> declared_;
  std::set<std::string_view> taken_;  // input names given here
  std::vector<std::unique_ptr<NodeView>> nodes_;
  std::vector<std::string_view> outputs_;
};

// Keeps the index alive as long as the main graph's view.
class MainGraph final : public GraphDecoder {
 public:
  MainGraph(const MsModelProto& model, const std::string& path, ParameterReader read)
      : index_(std::make_unique<ModelIndex>(model, path, std::move(read))) {
    ViewOptions options;
    options.main = true;
    view_ = std::make_unique<GraphView>(*index_, *model.graph, std::move(options));
  }
  std::string name() const override { return view_->name(); }
  size_t numInputs() const override { return view_->numInputs(); }
  std::string_view inputName(size_t i) const override { return view_->inputName(i); }
  TensorType inputType(size_t i, SymbolTable& symbols) const override { return view_->inputType(i, symbols); }
  size_t numWeights() const override { return view_->numWeights(); }
  std::string_view weightName(size_t i) const override { return view_->weightName(i); }
  TensorType weightType(size_t i) const override { return view_->weightType(i); }
  Tensor weight(size_t i) const override { return view_->weight(i); }
  size_t numNodes() const override { return view_->numNodes(); }
  const NodeDecoder& node(size_t i) const override { return view_->node(i); }
  size_t numOutputs() const override { return view_->numOutputs(); }
  std::string_view outputName(size_t i) const override { return view_->outputName(i); }

 private:
  std::unique_ptr<ModelIndex> index_;
  std::unique_ptr<GraphView> view_;
};

}  // namespace

std::shared_ptr<GraphDecoder> msMainGraph(const MsModelProto& model, const std::string& path, ParameterReader read) {
  if (!model.graph) raise(path, ": the model has no graph");
  return std::make_shared<MainGraph>(model, path, std::move(read));
}

}  // namespace estuary::mindspore_frontend
