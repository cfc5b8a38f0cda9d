#include "estuary/frontend/graph_translator.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_set>

#include "estuary/frontend/node_context.h"
#include "estuary/support/error.h"
#include "estuary/transforms/input_shapes.h"

namespace estuary {

std::string describeNode(const NodeDecoder& node, size_t index) {
  std::string text = node.name().empty() ? "node #" + std::to_string(index) : "node '" + std::string(node.name()) + "'";
  return text + " (" + (node.domain().empty() ? "" : std::string(node.domain()) + "::") + std::string(node.opType()) +
         ")";
}

// --- Session -------------------------------------------------------------------------------

TranslationSession::TranslationSession(std::string frontend, std::string model, const TranslatorTable& table,
                                       const FrontendOptions& options)
    : frontend_(std::move(frontend)), model_(std::move(model)), table_(table), options_(options) {}

TranslationSession::Translation TranslationSession::translationOf(const NodeDecoder& node) const {
  Translation translation;
  const ConversionExtension* extension =
      findExtension(options_.extensions, frontend_, node.domain(), node.opType());
  if (!extension) extension = ConversionExtensions::global().find(frontend_, node.domain(), node.opType());
  if (extension) {
    translation.translate = &extension->translate;
    translation.extension = extension;
    return translation;
  }
  if (resolve_function_) {
    translation.function = resolve_function_(node);
    if (translation.function) return translation;
  }
  translation.translate = table_.find(node.domain(), node.opType(), node.version());
  return translation;
}

void TranslationSession::census(const GraphDecoder& graph, int depth, std::vector<UnsupportedOp>& found,
                                std::map<std::string, size_t>& index) const {
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    const NodeDecoder& node = graph.node(i);
    Translation translation = translationOf(node);
    if (translation.function && depth < GraphTranslator::kMaxInlineDepth) {
      census(*translation.function, depth + 1, found, index);
    } else if (!translation.translate && !translation.function) {
      std::string key = std::string(node.domain()) + "::" + std::string(node.opType());
      auto [entry, added] = index.emplace(key, found.size());
      if (added) {
        found.push_back(UnsupportedOp{std::string(node.opType()), std::string(node.domain()), node.version(), {}});
      }
      found[entry->second].nodes.push_back(node.name().empty() ? "#" + std::to_string(i) : std::string(node.name()));
    }
    for (const AttrValue::GraphRef& subgraph : node.subgraphs()) {
      if (subgraph) census(*subgraph, depth, found, index);
    }
  }
}

std::vector<UnsupportedOp> TranslationSession::unsupportedOps(const GraphDecoder& graph) const {
  std::vector<UnsupportedOp> found;
  std::map<std::string, size_t> index;
  census(graph, 0, found, index);
  return found;
}

std::unique_ptr<Graph> TranslationSession::translate(const GraphDecoder& main) {
  std::vector<UnsupportedOp> unsupported = unsupportedOps(main);
  if (!unsupported.empty()) throw UnsupportedOpsError(model_, std::move(unsupported));
  std::string name = main.name();
  auto graph = std::make_unique<Graph>(name.empty() ? "main" : name);
  GraphTranslator translator(*this, *graph);
  translator.is_main_ = true;
  translator.translate(main);
  return graph;
}

std::string TranslationSession::uniqueScope(const std::string& base) {
  int& count = scopes_[base];
  return count++ == 0 ? base : base + "_" + std::to_string(count - 1);
}

// --- Graphs --------------------------------------------------------------------------------

GraphTranslator::GraphTranslator(TranslationSession& session, Graph& graph, const GraphTranslator* parent,
                                 std::string scope, int inline_depth)
    : session_(session),
      graph_(graph),
      parent_(parent),
      scope_(std::move(scope)),
      inline_depth_(inline_depth),
      in_subgraph_(parent != nullptr) {}

std::string GraphTranslator::scoped(std::string_view name) const {
  if (scope_.empty()) return std::string(name);
  return scope_ + "/" + std::string(name);
}

std::string GraphTranslator::nodeName(const NodeDecoder& node) const {
  if (scope_.empty()) return std::string(node.name());
  return scoped(node.name().empty() ? node.opType() : node.name());
}

bool GraphTranslator::lookup(std::string_view name, Value*& value) const {
  for (const GraphTranslator* scope = this; scope; scope = scope->parent_) {
    auto found = scope->values_.find(name);
    if (found != scope->values_.end()) {
      value = found->second;
      return true;
    }
  }
  return false;
}

void GraphTranslator::define(std::string_view name, Value* value, const std::function<std::string()>& by) {
  if (!values_.emplace(name, value).second) {
    raise(session_.model(), ": graph '", graph_.name(), "': value '", name, "' is defined twice (again by ", by(),
          "); a value is defined once");
  }
  if (value && value->name().empty() && !named_by_caller_.count(name)) value->setName(scoped(name));
}

void GraphTranslator::inferAfter(Node* before) {
  for (Node* made = before ? before->next() : graph_.firstNode(); made; made = made->next()) {
    try {
      inferNode(*made, session_.knownValues());
    } catch (const Error& error) {
      // A branch may be invalid for inputs it never runs on (ONNX's AffineGrid splits the
      // size into 4 in the branch for 2-D, which a 3-D size never takes): a subgraph's node
      // is judged when its If or Loop is inferred, knowing the condition where it is known.
      if (in_subgraph_) continue;
      raise(session_.model(), ": ", error.what());
    }
  }
}

namespace {

// The names `graph` (with its subgraphs) reads from enclosing graphs: what its nodes read
// that neither its inputs, its weights nor its nodes define. A function body's own names
// stay inside it, even where they equal a name outside.
void collectFreeReads(const GraphDecoder& graph, std::vector<std::string_view>& names) {
  std::unordered_set<std::string_view> defined;
  for (size_t i = 0; i < graph.numInputs(); ++i) defined.insert(graph.inputName(i));
  for (size_t i = 0; i < graph.numWeights(); ++i) defined.insert(graph.weightName(i));
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    const NodeDecoder& node = graph.node(i);
    for (size_t k = 0; k < node.numOutputs(); ++k) defined.insert(node.outputName(k));
  }
  std::vector<std::string_view> reads;
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    const NodeDecoder& node = graph.node(i);
    for (size_t k = 0; k < node.numInputs(); ++k) reads.push_back(node.inputName(k));
    for (std::string_view control : node.controlInputs()) reads.push_back(control);
    for (const AttrValue::GraphRef& subgraph : node.subgraphs()) {
      if (subgraph) collectFreeReads(*subgraph, reads);
    }
  }
  for (size_t i = 0; i < graph.numOutputs(); ++i) reads.push_back(graph.outputName(i));
  for (std::string_view name : reads) {
    if (!name.empty() && !defined.count(name)) names.push_back(name);
  }
}

}  // namespace

std::vector<size_t> GraphTranslator::sortedNodes(const GraphDecoder& decoder) const {
  // Frameworks require nodes in topological order but not every exporter obeys (and
  // TensorFlow's GraphDef never promised it); the order is restored here (stable: ready
  // nodes are taken in file order) and a cycle is an error.
  const size_t count = decoder.numNodes();
  std::unordered_map<std::string_view, size_t> producer;
  for (size_t i = 0; i < count; ++i) {
    const NodeDecoder& node = decoder.node(i);
    for (size_t k = 0; k < node.numOutputs(); ++k) {
      if (!node.outputName(k).empty()) producer.emplace(node.outputName(k), i);
    }
  }
  std::vector<std::vector<size_t>> users(count);
  std::vector<size_t> pending(count, 0);
  std::vector<std::string_view> reads;
  for (size_t i = 0; i < count; ++i) {
    const NodeDecoder& node = decoder.node(i);
    reads.clear();
    for (size_t k = 0; k < node.numInputs(); ++k) reads.push_back(node.inputName(k));
    for (std::string_view control : node.controlInputs()) reads.push_back(control);
    for (const AttrValue::GraphRef& subgraph : node.subgraphs()) {
      if (subgraph) collectFreeReads(*subgraph, reads);
    }
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (std::string_view name : reads) {
      if (name.empty()) continue;
      auto found = producer.find(name);
      if (found == producer.end()) continue;
      if (found->second == i) {
        raise(session_.model(), ": graph '", decoder.name(), "': ", describeNode(node, i), " reads its own output '",
              name, "' (a cycle)");
      }
      users[found->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < count; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t user : users[i]) {
      if (--pending[user] == 0) ready.push(user);
    }
  }
  if (order.size() != count) {
    std::string stuck;
    size_t listed = 0;
    for (size_t i = 0; i < count && listed < 8; ++i) {
      if (pending[i] == 0) continue;
      stuck += (listed++ ? ", " : "") + describeNode(decoder.node(i), i);
    }
    raise(session_.model(), ": graph '", decoder.name(), "' has a cycle: ", count - order.size(),
          " nodes cannot be put in an order where every input is defined before its use, among them ", stuck);
  }
  return order;
}

std::vector<std::pair<std::string_view, Value*>> GraphTranslator::makeWeights(const GraphDecoder& decoder) {
  std::vector<std::pair<std::string_view, Value*>> weights;
  Node* before = graph_.lastNode();
  for (size_t i = 0; i < decoder.numWeights(); ++i) {
    Node* constant = graph_.createNode("Constant", {});
    constant->setAttr("value", decoder.weight(i));
    weights.emplace_back(decoder.weightName(i), constant->output());
  }
  inferAfter(before);
  return weights;
}

void GraphTranslator::defineWeights(const GraphDecoder& decoder) {
  for (const auto& [name, value] : makeWeights(decoder)) define(name, value, [] { return std::string("a weight"); });
}

void GraphTranslator::translate(const GraphDecoder& decoder, const std::vector<TensorType>& input_types) {
  // Weights first: a graph input of the same name (ONNX models of IR version < 4 list every
  // initializer as an input too) is then a constant, not an input.
  std::vector<std::pair<std::string_view, Value*>> weights = makeWeights(decoder);
  for (size_t i = 0; i < decoder.numInputs(); ++i) {
    std::string_view name = decoder.inputName(i);
    bool is_weight = std::any_of(weights.begin(), weights.end(), [&](const auto& entry) { return entry.first == name; });
    if (is_weight) continue;
    const bool given = i < input_types.size() && input_types[i].dtype != DType::Undefined;
    Value* value = graph_.addInput(scoped(name), given ? input_types[i] : decoder.inputType(i, session_.symbols()));
    define(name, value, [] { return std::string("a graph input"); });
  }
  if (is_main_) {
    // Before any node, so that translators see the dims the user fixed.
    try {
      fixInputShapes(graph_, session_.options().input_shapes);
    } catch (const Error& error) {
      raise(session_.model(), ": ", error.what());
    }
  }
  for (const auto& [name, value] : weights) define(name, value, [] { return std::string("a weight"); });
  for (Value* output : translateBody(decoder)) graph_.addOutput(output);
}

std::vector<Value*> GraphTranslator::translateBody(const GraphDecoder& decoder) {
  for (size_t index : sortedNodes(decoder)) translateNode(decoder.node(index), index);
  std::vector<Value*> outputs;
  for (size_t i = 0; i < decoder.numOutputs(); ++i) {
    Value* value = nullptr;
    if (!lookup(decoder.outputName(i), value) || !value) {
      raise(session_.model(), ": graph '", decoder.name(), "': output '", decoder.outputName(i),
            "' is not defined by any node, weight or input");
    }
    outputs.push_back(value);
  }
  return outputs;
}

void GraphTranslator::translateNode(const NodeDecoder& node, size_t index) {
  TranslationSession::Translation translation = session_.translationOf(node);
  NodeContext context(*this, node, index);
  std::vector<Value*> results;
  if (translation.function) {
    std::vector<Value*> arguments;
    for (size_t i = 0; i < node.numInputs(); ++i) arguments.push_back(context.input(i));
    std::string base = scope_.empty() && !node.name().empty() ? std::string(node.name()) : nodeName(node);
    if (base.empty()) base = std::string(node.opType());
    results = inlineGraph(*translation.function, arguments, base);
  } else if (translation.extension) {
    try {
      results = (*translation.translate)(context);
    } catch (const UnsupportedOpsError&) {
      throw;
    } catch (const Error& error) {
      std::string message = error.what();
      // Errors raised through the context already say where they come from.
      if (message.rfind(context.where(), 0) == 0) throw;
      context.fail("the conversion extension (", translation.extension->origin, ") failed: ", message);
    }
  } else if (translation.translate) {
    try {
      results = (*translation.translate)(context);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& error) {
      // A translator's own bug (an index out of range): an Estuary error naming the node and
      // op, never a foreign exception type reaching the caller.
      context.fail("internal error while translating: ", error.what());
    }
  } else {
    // The census checks every op before translating any, so this is a bug of the census.
    context.fail("no translator");
  }
  bindResults(node, index, results, translation.extension);
}

void GraphTranslator::bindResults(const NodeDecoder& node, size_t index, const std::vector<Value*>& results,
                                  const ConversionExtension* extension) {
  NodeContext context(*this, node, index);
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    std::string_view name = node.outputName(i);
    if (name.empty()) continue;
    Value* value = i < results.size() ? results[i] : nullptr;
    if (!value) {
      if (extension) {
        context.fail("the conversion extension (", extension->origin, ") returned ", results.size(),
                     results.size() == 1 ? " value" : " values", ", output ", i, " '", name, "' is used");
      }
      context.fail("output ", i, " '", name, "' is not produced by Estuary's translation of ", node.opType());
    }
    if (extension) {
      DType declared = node.outputType(i).dtype;
      if (declared != DType::Undefined && value->dtype() != DType::Undefined && value->dtype() != declared) {
        context.fail("the conversion extension (", extension->origin, ") returned ", dtypeName(value->dtype()),
                     " for output ", i, " '", name, "', the model declares ", dtypeName(declared));
      }
    }
    define(name, value, [&] { return describeNode(node, index); });
  }
}

std::shared_ptr<Graph> GraphTranslator::translateSubgraph(const GraphDecoder& body, std::string_view fallback_name,
                                                          const std::vector<TensorType>& input_types) {
  std::string name = body.name();
  auto subgraph = std::make_shared<Graph>(name.empty() ? std::string(fallback_name) : name);
  GraphTranslator translator(session_, *subgraph, this, scope_, inline_depth_);
  translator.translate(body, input_types);
  return subgraph;
}

std::vector<Value*> GraphTranslator::inlineGraph(const GraphDecoder& body, const std::vector<Value*>& arguments,
                                                 const std::string& base) {
  if (inline_depth_ >= kMaxInlineDepth) {
    raise(session_.model(), ": function '", body.name(), "' calls functions more than ", kMaxInlineDepth,
          " levels deep (a call cycle?)");
  }
  // The body's names are its own: it sees its formal inputs, not the caller's values.
  GraphTranslator translator(session_, graph_, nullptr, session_.uniqueScope(base), inline_depth_ + 1);
  translator.in_subgraph_ = in_subgraph_;
  for (size_t i = 0; i < body.numOutputs(); ++i) translator.named_by_caller_.emplace(body.outputName(i));
  for (size_t i = 0; i < body.numInputs(); ++i) {
    translator.define(body.inputName(i), i < arguments.size() ? arguments[i] : nullptr, [] { return std::string("a function input"); });
  }
  translator.defineWeights(body);
  return translator.translateBody(body);
}

namespace {

// `value` as the bool scalar an If or Loop takes: TensorFlow conditions may be any single
// number (nonzero is true) of rank 0 or 1.
Value* asCondition(GraphTranslator& translator, Value* value, const std::string& name) {
  Graph& graph = translator.graph();
  Node* before = graph.lastNode();
  if (!value->shape().isRanked() || value->shape().rank() != 0) {
    Node* shape = graph.createNode("Constant", {});
    shape->setAttr("value", Tensor::fromVector<int64_t>(DType::I64, {0}, {}));
    Node* reshape = graph.createNode("Reshape", {value, shape->output()});
    reshape->setName(name);
    value = reshape->output();
  }
  translator.inferAfter(before);
  before = graph.lastNode();
  if (value->dtype() != DType::Bool) {
    Node* cast = graph.createNode("Cast", {value});
    cast->setAttr("to", DType::Bool);
    cast->setName(name);
    value = cast->output();
  }
  translator.inferAfter(before);
  return value;
}

// Drops what data propagation knows about the values of `graph`, before it is discarded:
// the map is keyed by address, and a later value could take a freed one's.
void forgetValues(const Graph& graph, KnownValueMap& known) {
  for (const Value* input : graph.inputs()) known.erase(input);
  for (const Node* node : graph.nodes()) {
    for (const Value* output : node->outputs()) known.erase(output);
    for (const Graph* subgraph : node->subgraphs()) forgetValues(*subgraph, known);
  }
}

}  // namespace

std::vector<Value*> GraphTranslator::translateFunctionBody(Graph& graph, const GraphDecoder& body,
                                                           const std::vector<Value*>& arguments) {
  GraphTranslator translator(session_, graph, nullptr, scope_, inline_depth_ + 1);
  translator.in_subgraph_ = true;
  for (size_t i = 0; i < body.numInputs(); ++i) {
    translator.define(body.inputName(i), i < arguments.size() ? arguments[i] : nullptr, [] { return std::string("a function input"); });
  }
  translator.defineWeights(body);
  return translator.translateBody(body);
}

std::vector<Value*> GraphTranslator::buildIf(Value* condition, const GraphDecoder& then_body,
                                             const GraphDecoder& else_body, const std::vector<Value*>& arguments,
                                             std::string_view name) {
  auto branch = [&](const GraphDecoder& body, const char* attribute) {
    auto graph = std::make_shared<Graph>(body.name().empty() ? std::string(attribute) : body.name());
    for (Value* output : translateFunctionBody(*graph, body, arguments)) graph->addOutput(output);
    return graph;
  };
  std::shared_ptr<Graph> then_branch = branch(then_body, "then_branch");
  std::shared_ptr<Graph> else_branch = branch(else_body, "else_branch");
  if (then_branch->numOutputs() != else_branch->numOutputs()) {
    raise(session_.model(), ": '", scoped(name), "': the branches of an If return different numbers of values (",
          then_branch->numOutputs(), " and ", else_branch->numOutputs(), ")");
  }
  Value* predicate = asCondition(*this, condition, scoped(name));
  Node* before = graph_.lastNode();
  Node* node = graph_.createNode("If", {predicate}, then_branch->numOutputs());
  node->setName(scoped(name));
  node->setAttr("then_branch", then_branch);
  node->setAttr("else_branch", else_branch);
  inferAfter(before);
  return node->outputs();
}

std::vector<Value*> GraphTranslator::buildWhile(const GraphDecoder* condition, const GraphDecoder& body,
                                                const std::vector<Value*>& initial, std::string_view name,
                                                size_t scan_outputs, Value* trip_count) {
  const std::string node_name = scoped(name);
  if (!condition && !trip_count) raise(session_.model(), ": '", node_name, "': a loop needs a condition or a trip count");
  Value* first = nullptr;
  if (condition) first = asCondition(*this, inlineGraph(*condition, initial, node_name + "/cond").at(0), node_name);
  // The loop variables take the initial values' types. Where the body changes a dim (a
  // growing sequence), that dim is unknown and the body is translated again.
  std::vector<TensorType> types;
  for (Value* value : initial) types.push_back(value->type());
  constexpr int kMaxRounds = 4;
  for (int round = 0;; ++round) {
    auto loop_body = std::make_shared<Graph>(body.name().empty() ? "body" : body.name());
    loop_body->addInput(node_name + "/iteration", TensorType(DType::I64, Shape(std::vector<Dim>{})));
    loop_body->addInput(node_name + "/condition", TensorType(DType::Bool, Shape(std::vector<Dim>{})));
    std::vector<Value*> carried;
    for (size_t i = 0; i < initial.size(); ++i) {
      std::string input_name = i < body.numInputs() ? std::string(body.inputName(i)) : "var" + std::to_string(i);
      carried.push_back(loop_body->addInput(node_name + "/" + input_name, types[i]));
    }
    std::vector<Value*> results = translateFunctionBody(*loop_body, body, carried);
    if (results.size() != initial.size() + scan_outputs) {
      raise(session_.model(), ": '", node_name, "': the loop body returns ", results.size(), " values for ",
            initial.size(), " loop variables and ", scan_outputs, " scan outputs");
    }
    std::vector<Value*> scanned(results.begin() + static_cast<std::ptrdiff_t>(initial.size()), results.end());
    results.resize(initial.size());
    GraphTranslator inside(session_, *loop_body, nullptr, scope_, inline_depth_ + 1);
    inside.in_subgraph_ = true;
    Value* next = nullptr;
    if (condition) {
      next = asCondition(inside, inside.inlineGraph(*condition, results, node_name + "/cond").at(0), node_name);
    } else {
      // The iterations the trip count says: nothing ends the loop early.
      Node* before = loop_body->lastNode();
      Node* always = loop_body->createNode("Constant", {});
      always->setAttr("value", Tensor::scalar<uint8_t>(DType::Bool, 1));
      inside.inferAfter(before);
      next = always->output();
    }
    loop_body->addOutput(next);
    for (Value* result : results) loop_body->addOutput(result);
    for (Value* value : scanned) loop_body->addOutput(value);

    bool stable = true;
    for (size_t i = 0; i < types.size(); ++i) {
      const Shape& before = types[i].shape;
      const Shape& after = results[i]->shape();
      if (!before.isRanked()) continue;
      if (!after.isRanked() || after.rank() != before.rank()) {
        types[i] = TensorType(types[i].dtype, Shape::unranked());
        stable = false;
        continue;
      }
      std::vector<Dim> dims = before.dims();
      for (size_t d = 0; d < dims.size(); ++d) {
        if (!dims[d].isUnknown() && !(after[d] == dims[d])) {
          dims[d] = Dim();
          stable = false;
        }
      }
      types[i] = TensorType(types[i].dtype, Shape(std::move(dims)));
    }
    if (!stable && round + 1 < kMaxRounds) {
      forgetValues(*loop_body, session_.knownValues());
      continue;
    }
    std::vector<Value*> inputs = {trip_count, first};
    inputs.insert(inputs.end(), initial.begin(), initial.end());
    Node* before = graph_.lastNode();
    Node* node = graph_.createNode("Loop", inputs, initial.size() + scan_outputs);
    node->setName(node_name);
    node->setAttr("body", loop_body);
    inferAfter(before);
    return node->outputs();
  }
}

// --- Information ---------------------------------------------------------------------------

ModelInfo describeGraph(const GraphDecoder& graph, const std::string& model) {
  ModelInfo info;
  SymbolTable symbols;
  std::vector<std::string_view> weight_names;
  for (size_t i = 0; i < graph.numWeights(); ++i) weight_names.push_back(graph.weightName(i));
  for (size_t i = 0; i < graph.numInputs(); ++i) {
    std::string_view name = graph.inputName(i);
    if (std::find(weight_names.begin(), weight_names.end(), name) != weight_names.end()) continue;
    info.inputs.push_back({std::string(name), graph.inputType(i, symbols).str()});
  }
  for (size_t i = 0; i < graph.numOutputs(); ++i) {
    info.outputs.push_back({std::string(graph.outputName(i)), graph.outputType(i, symbols).str()});
  }
  std::function<void(const GraphDecoder&)> count = [&](const GraphDecoder& g) {
    for (size_t i = 0; i < g.numNodes(); ++i) {
      const NodeDecoder& node = g.node(i);
      std::string domain = node.domain().empty() ? std::string() : std::string(node.domain()) + "::";
      ++info.op_counts[domain + std::string(node.opType())];
      for (const AttrValue::GraphRef& subgraph : node.subgraphs()) {
        if (subgraph) count(*subgraph);
      }
    }
    for (size_t i = 0; i < g.numWeights(); ++i) {
      TensorType type = g.weightType(i);
      if (!type.shape.isStatic()) continue;
      int64_t elements = 1;
      for (const Dim& dim : type.shape.dims()) {
        if (__builtin_mul_overflow(elements, dim.value(), &elements)) {
          raise(model, ": weight '", g.weightName(i), "' has more elements than a 64-bit count can say");
        }
      }
      int64_t bytes = 0;
      if (__builtin_mul_overflow(elements, static_cast<int64_t>(dtypeSize(type.dtype)), &bytes) ||
          __builtin_add_overflow(info.parameter_count, elements, &info.parameter_count) ||
          __builtin_add_overflow(info.parameter_bytes, bytes, &info.parameter_bytes)) {
        raise(model, ": the weights hold more bytes than a 64-bit count can say (corrupt file)");
      }
    }
  };
  count(graph);
  return info;
}

}  // namespace estuary
