// Constants, calls and control flow, and the argument helpers every op file uses.
#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "ms_translators.h"

namespace estuary::mindspore_frontend {

namespace {

std::string slotName(size_t k) { return std::to_string(k); }

// The constant argument k, when the file holds one (decoded by the view).
std::optional<AttrValue> constantArg(NodeContext& node, size_t k) { return node.attribute(slotName(k)); }

}  // namespace

Value* arg(NodeContext& node, size_t k) {
  std::optional<size_t> position = node.decoder().inputIndex(slotName(k));
  return position ? node.input(*position) : nullptr;
}

Value* requiredArg(NodeContext& node, size_t k, std::string_view name) {
  Value* value = arg(node, k);
  if (!value) node.fail("needs argument ", k, " (", name, ")");
  return value;
}

std::vector<Value*> tupleArg(NodeContext& node, size_t k, std::string_view name) {
  std::optional<size_t> begin = node.decoder().inputIndex(slotName(k));
  if (!begin) node.fail("needs argument ", k, " (", name, ")");
  size_t end = node.numInputs();
  for (size_t next = k + 1; next < k + 64; ++next) {
    if (std::optional<size_t> start = node.decoder().inputIndex(slotName(next))) {
      end = *start;
      break;
    }
  }
  std::vector<Value*> values;
  for (size_t i = *begin; i < end; ++i) values.push_back(node.requiredInput(i));
  return values;
}

std::optional<std::vector<int64_t>> optionalInts(NodeContext& node, size_t k, std::string_view name) {
  if (std::optional<AttrValue> constant = constantArg(node, k)) {
    if (std::holds_alternative<std::monostate>(constant->data)) return std::nullopt;  // None
    if (auto* one = std::get_if<int64_t>(&constant->data)) return std::vector<int64_t>{*one};
    if (auto* flag = std::get_if<bool>(&constant->data)) return std::vector<int64_t>{*flag};
    if (auto* many = std::get_if<std::vector<int64_t>>(&constant->data)) return *many;
    if (auto* tensor = std::get_if<Tensor>(&constant->data)) {
      if (std::optional<std::vector<int64_t>> known = node.knownInts(node.constant(*tensor))) return known;
    }
    node.fail("argument ", k, " (", name, ") is ", constant->type_name, ", expected integers");
  }
  if (Value* value = arg(node, k)) {
    std::optional<std::vector<int64_t>> known = foldedInts(node, value);
    if (!known) node.fail("argument ", k, " (", name, ") must be known while translating (a constant or a static shape)");
    return known;
  }
  // A PRIMITIVE op keeps the argument as its attribute.
  if (node.hasAttr(name)) {
    std::optional<AttrValue> attribute = node.attribute(name);
    if (auto* one = std::get_if<int64_t>(&attribute->data)) return std::vector<int64_t>{*one};
    return node.attr<std::vector<int64_t>>(name);
  }
  return std::nullopt;
}

std::vector<int64_t> intsArg(NodeContext& node, size_t k, std::string_view name) {
  std::optional<std::vector<int64_t>> values = optionalInts(node, k, name);
  if (!values) node.fail("needs argument ", k, " (", name, ")");
  return *values;
}

int64_t intArg(NodeContext& node, size_t k, std::string_view name) {
  std::vector<int64_t> values = intsArg(node, k, name);
  if (values.size() != 1) node.fail("argument ", k, " (", name, ") has ", values.size(), " values, expected one");
  return values[0];
}

double floatArg(NodeContext& node, size_t k, std::string_view name) {
  std::optional<AttrValue> constant = constantArg(node, k);
  if (!constant && node.hasAttr(name)) constant = node.attribute(name);
  if (constant) {
    if (auto* real = std::get_if<double>(&constant->data)) return *real;
    if (auto* integer = std::get_if<int64_t>(&constant->data)) return static_cast<double>(*integer);
    if (auto* tensor = std::get_if<Tensor>(&constant->data); tensor && tensor->numElements() == 1) {
      switch (tensor->dtype()) {
        case DType::F32: return *tensor->data<float>();
        case DType::F64: return *tensor->data<double>();
        case DType::I32: return *tensor->data<int32_t>();
        case DType::I64: return static_cast<double>(*tensor->data<int64_t>());
        default: break;
      }
    }
    node.fail("argument ", k, " (", name, ") is ", constant->type_name, ", expected a number");
  }
  node.fail("argument ", k, " (", name, ") must be a constant number");
}

bool boolArg(NodeContext& node, size_t k, std::string_view name) {
  std::optional<AttrValue> constant = constantArg(node, k);
  if (!constant && node.hasAttr(name)) constant = node.attribute(name);
  if (constant) {
    if (auto* flag = std::get_if<bool>(&constant->data)) return *flag;
    if (auto* integer = std::get_if<int64_t>(&constant->data)) return *integer != 0;
    node.fail("argument ", k, " (", name, ") is ", constant->type_name, ", expected a bool");
  }
  node.fail("argument ", k, " (", name, ") must be a constant bool");
}

namespace {

// mindir::Constant: a value node. Scalars become 0-d tensors (Python ints i64, floats f32),
// tuples of numbers 1-D tensors.
Results constant(NodeContext& node) {
  AttrValue value = *node.attribute("value");
  if (auto* tensor = std::get_if<Tensor>(&value.data)) return {node.constant(*tensor)};
  if (auto* integer = std::get_if<int64_t>(&value.data)) return {node.constant(Tensor::scalar<int64_t>(DType::I64, *integer))};
  if (auto* flag = std::get_if<bool>(&value.data)) {
    return {node.constant(Tensor::scalar<uint8_t>(DType::Bool, *flag ? 1 : 0))};
  }
  if (auto* real = std::get_if<double>(&value.data)) {
    return {node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(*real)))};
  }
  if (auto* integers = std::get_if<std::vector<int64_t>>(&value.data)) return {node.constantInts(*integers)};
  if (auto* reals = std::get_if<std::vector<double>>(&value.data)) {
    std::vector<float> floats(reals->begin(), reals->end());
    return {node.constant(Tensor::fromVector<float>(DType::F32, {static_cast<int64_t>(floats.size())}, floats))};
  }
  node.fail("a constant of type ", value.type_name, ", which Estuary has no tensor for");
}

// mindir::Call: a graph called with arguments, inlined.
Results call(NodeContext& node) {
  return node.inlineFunction(*node.attr<AttrValue::GraphRef>("callee"), node.inputs());
}

// mindir::If: Switch(c, then, else) called; the branches take every argument, each
// ignoring the other's.
Results ifElse(NodeContext& node) {
  std::vector<Value*> inputs = node.inputs();
  std::vector<Value*> arguments(inputs.begin() + 1, inputs.end());
  return node.translator().buildIf(node.cast(inputs.at(0), DType::Bool), *node.attr<AttrValue::GraphRef>("then_branch"),
                                   *node.attr<AttrValue::GraphRef>("else_branch"), arguments, node.name());
}

// The condition of a loop that runs while its Switch's condition is false.
class NegatedCondition final : public GraphDecoder {
 public:
  explicit NegatedCondition(const GraphDecoder& condition) : condition_(condition) {}
  std::string name() const override { return condition_.name(); }
  size_t numInputs() const override { return condition_.numInputs(); }
  std::string_view inputName(size_t i) const override { return condition_.inputName(i); }
  TensorType inputType(size_t i, SymbolTable& symbols) const override { return condition_.inputType(i, symbols); }
  size_t numNodes() const override { return condition_.numNodes() + 1; }
  const NodeDecoder& node(size_t i) const override { return i < condition_.numNodes() ? condition_.node(i) : not_; }
  size_t numOutputs() const override { return 1; }
  std::string_view outputName(size_t) const override { return not_.output; }

 private:
  struct Not final : NodeDecoder {
    std::string_view input;
    std::string output;
    std::string_view opType() const override { return "LogicalNot"; }
    std::string_view name() const override { return output; }
    size_t numInputs() const override { return 1; }
    std::string_view inputName(size_t) const override { return input; }
    size_t numOutputs() const override { return 1; }
    std::string_view outputName(size_t) const override { return output; }
    std::vector<std::string_view> attributeNames() const override { return {}; }
    std::optional<AttrValue> attribute(std::string_view) const override { return std::nullopt; }
  };
  const GraphDecoder& condition_;
  Not not_ = [this] {
    Not made;
    made.input = condition_.outputName(0);
    made.output = std::string(made.input) + "#not";
    return made;
  }();
};

// mindir::While: the header's condition and the body over the loop variables, then the
// after-block on their final values.
Results whileLoop(NodeContext& node) {
  const GraphDecoder& condition = *node.attr<AttrValue::GraphRef>("condition");
  const GraphDecoder& body = *node.attr<AttrValue::GraphRef>("body");
  std::vector<Value*> finals;
  if (node.attr<bool>("negate_condition", false)) {
    NegatedCondition negated(condition);
    finals = node.translator().buildWhile(&negated, body, node.inputs(), node.name());
  } else {
    finals = node.translator().buildWhile(&condition, body, node.inputs(), node.name());
  }
  return node.inlineFunction(*node.attr<AttrValue::GraphRef>("after"), finals);
}

}  // namespace

void addGraphTranslators(TranslatorTable& table) {
  table.add("mindir", "Constant", constant).add("mindir", "Call", call).add("mindir", "If", ifElse)
      .add("mindir", "While", whileLoop);
}

const TranslatorTable& msTranslators() {
  static const TranslatorTable& table =
      TranslatorTable::filledBy({addNnTranslators, addMathTranslators, addArrayTranslators, addGraphTranslators});
  return table;
}

}  // namespace estuary::mindspore_frontend
