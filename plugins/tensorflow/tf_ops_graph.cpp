// Variables, function calls and functional control flow, and the helpers every op file uses.
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

int64_t normalizedAxis(NodeContext& node, int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) node.fail("axis ", axis, " is outside a rank-", rank, " tensor");
  return axis < 0 ? axis + r : axis;
}

size_t rankOf(NodeContext& node, const Value* value) {
  if (!value->shape().isRanked()) node.fail("the rank of '", value->name(), "' is not known here");
  return value->shape().rank();
}

namespace {

// A variable's handle is its value here: the graph is translated for inference, the
// variable read from the SavedModel's bundle.
Results varHandle(NodeContext& node) {
  const auto& decoder = static_cast<const TfNodeDecoder&>(node.decoder());
  if (!decoder.model().variables) {
    node.fail("reads a variable, but the model has no variables (a frozen graph must hold constants)");
  }
  std::string shared_name = node.attr<std::string>("shared_name", std::string(node.name()));
  return {node.constant(decoder.model().variables(shared_name, std::string(node.name())))};
}

Results readVariable(NodeContext& node) { return {node.emitValue("Identity", {node.requiredInput(0)})}; }

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

Results functionalWhile(NodeContext& node) {
  return node.translator().buildWhile(*node.attr<AttrValue::GraphRef>("cond"), *node.attr<AttrValue::GraphRef>("body"),
                                      node.inputs(), node.name());
}

}  // namespace

void addGraphTranslators(TranslatorTable& table) {
  table.add("VarHandleOp", varHandle).add("ReadVariableOp", readVariable).add("NoOp", noOp)
      .add("StatefulPartitionedCall", call).add("PartitionedCall", call)
      .add("If", functionalIf).add("StatelessIf", functionalIf)
      .add("While", functionalWhile).add("StatelessWhile", functionalWhile);
}

const TranslatorTable& tfTranslators() {
  static const TranslatorTable* table = [] {
    auto* translators = new TranslatorTable;
    addMathTranslators(*translators);
    addNnTranslators(*translators);
    addArrayTranslators(*translators);
    addGraphTranslators(*translators);
    return translators;
  }();
  return *table;
}

}  // namespace estuary::tensorflow_frontend
