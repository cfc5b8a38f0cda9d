// Variables, function calls and functional control flow, and the helpers every op file uses.
#include <map>
#include <set>

#include "estuary/frontend/graph_translator.h"
#include "estuary/frontend/translation_helpers.h"
#include "tf_decoder.h"
#include "tf_translators.h"

namespace estuary::tensorflow_frontend {

Value* asInt64(NodeContext& node, Value* value) {
  if (value->dtype() == DType::I64) return value;
  if (const Tensor* tensor = constantTensor(value); tensor && tensor->dtype() == DType::I32) {
    std::vector<int64_t> wide(tensor->data<int32_t>(), tensor->data<int32_t>() + tensor->numElements());
    return node.constant(Tensor::fromVector<int64_t>(DType::I64, tensor->shape(), wide));
  }
  return node.cast(value, DType::I64);
}

Value* asInt64List(NodeContext& node, Value* value) {
  if (std::optional<std::vector<int64_t>> known = foldedInts(node, value)) return node.constantInts(*known);
  return node.emitValue("Reshape", {asInt64(node, value), node.constantInts({-1})});
}

std::vector<int64_t> knownInput(NodeContext& node, size_t i, const char* what) {
  std::optional<std::vector<int64_t>> values = foldedInts(node, node.requiredInput(i));
  if (!values) node.fail("input ", i, " (", what, ") must be known while translating (a constant or a static shape)");
  return *values;
}

bool channelsLast(NodeContext& node) {
  std::string format = node.attr<std::string>("data_format", "NHWC");
  std::optional<Layout> layout = parseLayout(format);
  if (!layout) node.fail("data_format '", format, "' is not a layout Estuary reads");
  return *layout == Layout::ChannelsLast;
}

namespace {

// A variable's handle is its value here: the graph is translated for inference, the
// variable read from the SavedModel's bundle.
Results varHandle(NodeContext& node) {
  const TfModelContext& model = modelOf(node.decoder());
  if (!model.variables) {
    node.fail("reads a variable, but the model has no variables (a frozen graph must hold constants)");
  }
  std::string shared_name = node.attr<std::string>("shared_name", std::string(node.name()));
  return {node.constant(model.variables(shared_name, std::string(node.name())))};
}

// A Placeholder that is not an input of the graph stands for a value the function captured
// (a variable's handle, whose ReadVariableOp then passes the value on).
Results capturedValue(NodeContext& node) {
  const TfModelContext& model = modelOf(node.decoder());
  auto found = model.captures.find(node.name());
  if (found == model.captures.end()) {
    node.fail("is a Placeholder that is neither an input of the graph nor a captured value (feed it, or name the "
              "inputs)");
  }
  return {node.constant(found->second)};
}

// The variable's value itself: a Constant, which translation-time folding (a kernel's HWIO to
// OIHW) can then see.
Results readVariable(NodeContext& node) { return {node.requiredInput(0)}; }

Results noOp(NodeContext&) { return {}; }

Results call(NodeContext& node) {
  return node.inlineFunction(*node.attr<AttrValue::GraphRef>("f"), node.inputs());
}

Results functionalIf(NodeContext& node) {
  std::vector<Value*> inputs = node.inputs();
  std::vector<Value*> arguments(inputs.begin() + 1, inputs.end());
  return node.translator().buildIf(inputs.at(0), *node.attr<AttrValue::GraphRef>("then_branch"),
                                   *node.attr<AttrValue::GraphRef>("else_branch"), arguments, node.name());
}

// A function body with some loop variables taken out: the inputs not listed in `kept`, the
// nodes listed in `dropped`, and `outputs` in place of the body's.
class ProjectedBody final : public GraphDecoder {
 public:
  ProjectedBody(const GraphDecoder& body, std::vector<size_t> kept, std::set<size_t> dropped,
                std::vector<std::string> outputs)
      : body_(body), kept_(std::move(kept)), outputs_(std::move(outputs)) {
    for (size_t i = 0; i < body.numNodes(); ++i) {
      if (!dropped.count(i)) nodes_.push_back(i);
    }
  }
  std::string name() const override { return body_.name(); }
  size_t numInputs() const override { return kept_.size(); }
  std::string_view inputName(size_t i) const override { return body_.inputName(kept_[i]); }
  TensorType inputType(size_t i, SymbolTable& symbols) const override { return body_.inputType(kept_[i], symbols); }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return body_.node(nodes_[i]); }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }

 private:
  const GraphDecoder& body_;
  std::vector<size_t> kept_;
  std::vector<size_t> nodes_;
  std::vector<std::string> outputs_;
};

// Whether any node of `graph` reads `name`.
bool reads(const GraphDecoder& graph, std::string_view name) {
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    const NodeDecoder& node = graph.node(i);
    for (size_t k = 0; k < node.numInputs(); ++k) {
      if (node.inputName(k) == name) return true;
    }
  }
  return false;
}

// What a loop variable's body output is made from, through Identities: the node, or
// nullptr when it is an argument of the body (then `returned` is its name).
const NodeDecoder* maker(const GraphDecoder& graph, const std::map<std::string_view, size_t>& producers,
                         std::string_view& returned) {
  for (auto found = producers.find(returned); found != producers.end(); found = producers.find(returned)) {
    const NodeDecoder& node = graph.node(found->second);
    if (node.opType() != "Identity" || node.numInputs() != 1) return &node;
    returned = node.inputName(0);
  }
  return nullptr;
}

std::map<std::string_view, size_t> producersOf(const GraphDecoder& graph) {
  std::map<std::string_view, size_t> producers;
  for (size_t i = 0; i < graph.numNodes(); ++i) {
    for (size_t k = 0; k < graph.node(i).numOutputs(); ++k) producers.emplace(graph.node(i).outputName(k), i);
  }
  return producers;
}

// The value of a Const node of `graph`, or nullptr.
const Tensor* constantValue(const GraphDecoder& graph, const std::map<std::string_view, size_t>& producers,
                            std::string_view name, std::optional<AttrValue>& holder) {
  auto found = producers.find(name);
  if (found == producers.end() || graph.node(found->second).opType() != "Const") return nullptr;
  holder = graph.node(found->second).attribute("value");
  return holder ? std::get_if<Tensor>(&holder->data) : nullptr;
}

// The trip count of a loop whose condition only counts iterations: a conjunction of
// `counter < bound`, each counter a loop variable that starts at 0 and the body increments
// by 1, each bound a Const of the condition or a loop variable the body passes on. Keras'
// recurrent layers and tf.while_loop with maximum_iterations loop that way. The count is the
// smallest bound; nullptr for any other condition. Knowing it, the loop needs no condition
// and its scan outputs are as long as the trip count.
Value* countedTripCount(NodeContext& node, const GraphDecoder& condition, const GraphDecoder& body,
                        const std::map<std::string_view, size_t>& producers, const std::vector<Value*>& initial) {
  auto variable = [&](std::string_view name) -> std::optional<size_t> {
    for (size_t k = 0; k < condition.numInputs() && k < initial.size(); ++k) {
      if (condition.inputName(k) == name) return k;
    }
    return std::nullopt;
  };
  auto is_one = [&](std::string_view name) {
    std::optional<AttrValue> holder;
    const Tensor* tensor = constantValue(body, producers, name, holder);
    if (!tensor || tensor->numElements() != 1) return false;
    if (tensor->dtype() == DType::I32) return tensor->data<int32_t>()[0] == 1;
    return tensor->dtype() == DType::I64 && tensor->data<int64_t>()[0] == 1;
  };
  auto counts = [&](size_t k) {
    std::optional<std::vector<int64_t>> start = foldedInts(node, initial[k]);
    if (!start || *start != std::vector<int64_t>{0} || k >= body.numOutputs()) return false;
    std::string_view returned = body.outputName(k);
    const NodeDecoder* add = maker(body, producers, returned);
    if (!add || (add->opType() != "AddV2" && add->opType() != "Add") || add->numInputs() != 2) return false;
    return (add->inputName(0) == body.inputName(k) && is_one(add->inputName(1))) ||
           (add->inputName(1) == body.inputName(k) && is_one(add->inputName(0)));
  };
  auto passed_on = [&](size_t k) {
    if (k >= body.numOutputs()) return false;
    std::string_view returned = body.outputName(k);
    return !maker(body, producers, returned) && returned == body.inputName(k);
  };
  const std::map<std::string_view, size_t> condition_producers = producersOf(condition);
  std::vector<Value*> bounds;
  std::vector<std::string_view> pending = {condition.outputName(0)};
  while (!pending.empty()) {
    std::string_view name = pending.back();
    pending.pop_back();
    const NodeDecoder* test = maker(condition, condition_producers, name);
    if (!test) return nullptr;
    if (test->opType() == "LogicalAnd" && test->numInputs() == 2) {
      pending.push_back(test->inputName(0));
      pending.push_back(test->inputName(1));
      continue;
    }
    if (test->opType() != "Less" || test->numInputs() != 2) return nullptr;
    std::string_view counter_name = test->inputName(0), bound_name = test->inputName(1);
    maker(condition, condition_producers, counter_name);
    maker(condition, condition_producers, bound_name);
    std::optional<size_t> counter = variable(counter_name), bound = variable(bound_name);
    if (!counter || !counts(*counter)) return nullptr;
    std::optional<AttrValue> holder;
    if (bound && passed_on(*bound)) {
      bounds.push_back(initial[*bound]);
    } else if (const Tensor* constant = constantValue(condition, condition_producers, bound_name, holder)) {
      bounds.push_back(node.constant(*constant));
    } else {
      return nullptr;
    }
  }
  if (bounds.empty()) return nullptr;
  auto scalar = [&](Value* bound) { return node.emitValue("Reshape", {asInt64(node, bound), node.constantInts({})}); };
  Value* count = scalar(bounds.front());
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (bounds[i] != bounds.front()) count = node.emitValue("Min", {count, scalar(bounds[i])});
  }
  return count;
}

// While (and StatelessWhile) over function bodies. A loop variable that is a reserved
// TensorList the body fills with TensorListSetItem, one element per iteration, becomes a
// scan output of the Loop: the elements stacked, without a loop variable that grows.
Results functionalWhile(NodeContext& node) {
  const auto& model = modelOf(node.decoder());
  const GraphDecoder& condition = *node.attr<AttrValue::GraphRef>("cond");
  const GraphDecoder& body = *node.attr<AttrValue::GraphRef>("body");
  std::vector<Value*> initial;
  for (size_t i = 0; i < node.numInputs(); ++i) initial.push_back(node.requiredInput(i));
  // Which node makes each value of the body.
  const std::map<std::string_view, size_t> producers = producersOf(body);
  std::vector<size_t> lists, kept;
  std::set<size_t> dropped;
  std::vector<std::string> items;
  for (size_t k = 0; k < initial.size(); ++k) {
    bool scanned = model.isReservedList(initial[k]) && k < body.numInputs() && k < body.numOutputs() &&
                   !(k < condition.numInputs() && reads(condition, condition.inputName(k)));
    // The body returns the list through Identities of TensorListSetItem(list, index, item),
    // the list's one reader.
    std::set<size_t> chain;
    std::optional<size_t> setter;
    std::string_view returned = scanned ? body.outputName(k) : std::string_view();
    while (scanned) {
      auto found = producers.find(returned);
      if (found == producers.end()) break;
      const NodeDecoder& maker = body.node(found->second);
      if (maker.opType() == "Identity" && maker.numInputs() == 1) {
        chain.insert(found->second);
        returned = maker.inputName(0);
        continue;
      }
      if (maker.opType() == "TensorListSetItem" && maker.numInputs() == 3 && maker.inputName(0) == body.inputName(k)) {
        setter = found->second;
      }
      break;
    }
    size_t readers = 0;
    for (size_t i = 0; setter && i < body.numNodes(); ++i) {
      for (size_t input = 0; input < body.node(i).numInputs(); ++input) {
        readers += body.node(i).inputName(input) == body.inputName(k);
      }
    }
    if (setter && readers == 1) {
      lists.push_back(k);
      dropped.insert(*setter);
      dropped.insert(chain.begin(), chain.end());
      items.emplace_back(body.node(*setter).inputName(2));
    } else {
      kept.push_back(k);
    }
  }
  Value* trip_count = countedTripCount(node, condition, body, producers, initial);
  if (lists.empty()) {
    return node.translator().buildWhile(trip_count ? nullptr : &condition, body, initial, node.name(), 0, trip_count);
  }
  std::vector<std::string> outputs;
  std::vector<Value*> kept_initial;
  for (size_t k : kept) {
    outputs.emplace_back(body.outputName(k));
    kept_initial.push_back(initial[k]);
  }
  outputs.insert(outputs.end(), items.begin(), items.end());
  ProjectedBody projected_body(body, kept, dropped, outputs);
  std::vector<std::string> condition_outputs;
  for (size_t i = 0; i < condition.numOutputs(); ++i) condition_outputs.emplace_back(condition.outputName(i));
  ProjectedBody projected_condition(condition, kept, {}, condition_outputs);
  Results loop = node.translator().buildWhile(trip_count ? nullptr : &projected_condition, projected_body,
                                              kept_initial, node.name(), lists.size(), trip_count);
  Results results(initial.size());
  for (size_t i = 0; i < kept.size(); ++i) results[kept[i]] = loop[i];
  for (size_t i = 0; i < lists.size(); ++i) results[lists[i]] = loop[kept.size() + i];
  return results;
}

// TensorLists (TensorArrays in TF 2 graphs: the sequences Keras' recurrent layers read and
// write inside a While) are dense tensors whose first dim counts the elements. A list made
// from a tensor is that tensor; a reserved list starts empty and grows as its elements are
// set, in order, as while loops set them. Its element shape is taken from the elements.
Results tensorListFromTensor(NodeContext& node) { return {node.emitValue("Identity", {node.requiredInput(0)})}; }

Results tensorListReserve(NodeContext& node) {
  Value* list = node.constant(Tensor::allocate(node.attr<DType>("element_dtype"), {0}));
  modelOf(node.decoder()).noteReservedList(list);
  return {list};
}

Results tensorListGetItem(NodeContext& node) {
  Value* index = node.emitValue("Reshape", {asInt64(node, node.requiredInput(1)), node.constantInts({})});
  return {node.emitValue("Gather", {node.requiredInput(0), index}, {{"axis", int64_t{0}}})};
}

// Sets the next element: the list, seen as [length, element...] (the empty list as
// [0, element...]), with the element appended. TensorFlow's loops set element i at
// iteration i, so the element set is the next one.
Results tensorListSetItem(NodeContext& node) {
  Value* item = node.requiredInput(2);
  Value* element_shape = node.emitValue("Shape", {item});
  Value* list_shape = node.emitValue("Concat", {node.constantInts({-1}), element_shape}, {{"axis", int64_t{0}}});
  Value* list = node.emitValue("Reshape", {node.requiredInput(0), list_shape});
  Value* element = node.emitValue("Unsqueeze", {item, node.constantInts({0})});
  return {node.emitValue("Concat", {list, element}, {{"axis", int64_t{0}}})};
}

// The list as a tensor. Its rank is lost through the loop that filled it (it grows from
// empty), so the element shape restores it: a Reshape to [-1, element shape], a dim the
// element shape leaves unknown (-1) copied from the list (ONNX's 0).
Results tensorListStack(NodeContext& node) {
  Value* list = node.requiredInput(0);
  std::optional<std::vector<int64_t>> element_shape = foldedInts(node, node.requiredInput(1));
  if (!element_shape || (element_shape->size() == 1 && element_shape->front() == -1 &&
                         node.requiredInput(1)->shape().rank() == 0)) {
    return {node.emitValue("Identity", {list})};  // an unknown element shape
  }
  std::vector<int64_t> shape = {-1};
  for (int64_t dim : *element_shape) shape.push_back(dim < 0 ? 0 : dim);
  return {node.emitValue("Reshape", {list, node.constantInts(shape)})};
}

Results tensorListLength(NodeContext& node) {
  Value* length = node.emitValue("Shape", {node.requiredInput(0)}, {{"start", int64_t{0}}, {"end", int64_t{1}}});
  return {node.cast(node.emitValue("Reshape", {length, node.constantInts({})}), DType::I32)};
}

}  // namespace

void addGraphTranslators(TranslatorTable& table) {
  table.add("TensorListFromTensor", tensorListFromTensor).add("TensorListReserve", tensorListReserve)
      .add("TensorListGetItem", tensorListGetItem).add("TensorListSetItem", tensorListSetItem)
      .add("TensorListStack", tensorListStack).add("TensorListLength", tensorListLength);
  table.add("VarHandleOp", varHandle).add("Placeholder", capturedValue).add("ReadVariableOp", readVariable).add("NoOp", noOp)
      .add("StatefulPartitionedCall", call).add("PartitionedCall", call)
      .add("If", functionalIf).add("StatelessIf", functionalIf)
      .add("While", functionalWhile).add("StatelessWhile", functionalWhile);
}

const TranslatorTable& tfTranslators() {
  static const TranslatorTable& table =
      TranslatorTable::filledBy({addMathTranslators, addNnTranslators, addArrayTranslators, addGraphTranslators});
  return table;
}

}  // namespace estuary::tensorflow_frontend
