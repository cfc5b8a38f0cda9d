#include "estuary/frontend/node_context.h"

#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"

namespace estuary {

Graph& NodeContext::graph() { return translator_.graph(); }

std::string NodeContext::where() const {
  std::ostringstream text;
  text << translator_.session().model() << ": ";
  if (node_.name().empty()) {
    text << "node #" << index_;
  } else {
    text << "node '" << translator_.nodeName(node_) << "'";
  }
  text << " (" << (node_.domain().empty() ? "" : std::string(node_.domain()) + "::") << node_.opType();
  const std::string& label = translator_.session().versionLabel();
  if (!label.empty()) text << ", " << label << " " << node_.version();
  text << ")";
  return text.str();
}

void NodeContext::failWith(const std::string& message) const { raise(where(), ": ", message); }

Value* NodeContext::valueNamed(std::string_view name, size_t i) const {
  Value* value = nullptr;
  if (!translator_.lookup(name, value)) {
    fail("input ", i, " '", name, "' is not defined by any node, weight or graph input");
  }
  return value;
}

Value* NodeContext::input(size_t i) const {
  if (i >= node_.numInputs()) return nullptr;
  std::string_view name = node_.inputName(i);
  return name.empty() ? nullptr : valueNamed(name, i);
}

Value* NodeContext::input(std::string_view slot) const {
  std::optional<size_t> index = node_.inputIndex(slot);
  return index ? input(*index) : nullptr;
}

Value* NodeContext::requiredInput(size_t i) const {
  Value* value = input(i);
  if (!value) fail("input ", i, " is required but absent");
  return value;
}

Value* NodeContext::requiredInput(std::string_view slot) const {
  Value* value = input(slot);
  if (!value) fail("input '", slot, "' is required but absent");
  return value;
}

std::vector<Value*> NodeContext::inputs() const {
  std::vector<Value*> values;
  for (size_t i = 0; i < node_.numInputs(); ++i) values.push_back(input(i));
  while (!values.empty() && values.back() == nullptr) values.pop_back();
  return values;
}

const Tensor* NodeContext::constantInput(size_t i) const {
  Value* value = input(i);
  Node* producer = value ? value->producer() : nullptr;
  if (!producer || !producer->is("Constant")) return nullptr;
  const Attribute* attr = producer->attr("value");
  return attr && attr->kind() == AttrKind::Tensor ? &attr->asTensor() : nullptr;
}

std::optional<std::vector<int64_t>> NodeContext::knownInts(const Value* value) const {
  if (!value) return std::nullopt;
  const KnownValueMap& known = translator_.session().knownValues();
  auto found = known.find(value);
  if (found == known.end()) return std::nullopt;
  std::vector<int64_t> ints;
  for (const SymInt& element : found->second) {
    if (!element.isInt()) return std::nullopt;
    ints.push_back(element.intValue());
  }
  return ints;
}

size_t NodeContext::usedOutputs() const {
  size_t count = node_.numOutputs();
  while (count > 0 && !hasOutput(count - 1)) --count;
  return count;
}

bool NodeContext::hasAttr(std::string_view name) const { return node_.hasAttribute(name); }

std::shared_ptr<Graph> NodeContext::subgraph(std::string_view name, const std::vector<TensorType>& input_types) {
  AttrValue::GraphRef body = attr<AttrValue::GraphRef>(name);
  if (!body) fail("attribute '", name, "' holds no graph");
  return translator_.translateSubgraph(*body, name, input_types);
}

Node* NodeContext::emit(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes,
                        size_t num_outputs, std::string_view domain) {
  Node* last = graph().lastNode();
  Node* node = graph().createNode(op_type, inputs, num_outputs, domain);
  node->setName(translator_.nodeName(node_));
  for (auto& [attribute, value] : attributes) node->setAttr(attribute, std::move(value));
  translator_.inferAfter(last);
  return node;
}

Value* NodeContext::constant(Tensor tensor) {
  Node* last = graph().lastNode();
  Node* node = graph().createNode("Constant", {});
  node->setAttr("value", std::move(tensor));
  translator_.inferAfter(last);
  return node->output();
}

Value* NodeContext::constantInts(const std::vector<int64_t>& values) {
  return constant(Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values));
}

Value* NodeContext::scalar(DType dtype, double value) {
  switch (dtype) {
    case DType::F32: return constant(Tensor::scalar<float>(dtype, static_cast<float>(value)));
    case DType::F64: return constant(Tensor::scalar<double>(dtype, value));
    case DType::I64: return constant(Tensor::scalar<int64_t>(dtype, static_cast<int64_t>(value)));
    case DType::I32: return constant(Tensor::scalar<int32_t>(dtype, static_cast<int32_t>(value)));
    case DType::Bool: return constant(Tensor::scalar<uint8_t>(dtype, value != 0.0));
    default: return cast(constant(Tensor::scalar<double>(DType::F64, value)), dtype);
  }
}

Value* NodeContext::cast(Value* value, DType dtype) {
  if (value->dtype() == dtype) return value;
  return emitValue("Cast", {value}, {{"to", dtype}});
}

std::vector<Value*> NodeContext::inlineFunction(const GraphDecoder& body, const std::vector<Value*>& arguments) {
  std::string base = node_.name().empty() ? body.name() : std::string(node_.name());
  return translator_.inlineGraph(body, arguments, translator_.scoped(base));
}

// --- Typed attributes ----------------------------------------------------------------------

namespace {

template <typename T>
const T* holds(const AttrValue& value) {
  return std::get_if<T>(&value.data);
}

}  // namespace

template <>
std::optional<int64_t> attrAs<int64_t>(const AttrValue& value) {
  if (const auto* v = holds<int64_t>(value)) return *v;
  if (const auto* v = holds<bool>(value)) return int64_t{*v};
  return std::nullopt;
}
template <>
std::optional<double> attrAs<double>(const AttrValue& value) {
  if (const auto* v = holds<double>(value)) return *v;
  if (const auto* v = holds<int64_t>(value)) return static_cast<double>(*v);
  return std::nullopt;
}
template <>
std::optional<bool> attrAs<bool>(const AttrValue& value) {
  if (const auto* v = holds<bool>(value)) return *v;
  if (const auto* v = holds<int64_t>(value)) return *v != 0;
  return std::nullopt;
}
template <>
std::optional<std::vector<int64_t>> attrAs<std::vector<int64_t>>(const AttrValue& value) {
  if (const auto* v = holds<std::vector<int64_t>>(value)) return *v;
  if (const auto* v = holds<std::vector<bool>>(value)) return std::vector<int64_t>(v->begin(), v->end());
  return std::nullopt;
}
template <>
std::optional<std::vector<double>> attrAs<std::vector<double>>(const AttrValue& value) {
  if (const auto* v = holds<std::vector<double>>(value)) return *v;
  if (const auto* v = holds<std::vector<int64_t>>(value)) return std::vector<double>(v->begin(), v->end());
  return std::nullopt;
}
template <>
std::optional<std::vector<bool>> attrAs<std::vector<bool>>(const AttrValue& value) {
  if (const auto* v = holds<std::vector<bool>>(value)) return *v;
  if (const auto* v = holds<std::vector<int64_t>>(value)) {
    std::vector<bool> bools;
    for (int64_t i : *v) bools.push_back(i != 0);
    return bools;
  }
  return std::nullopt;
}

// The types taken only as they are.
#define ESTUARY_EXACT_ATTR(Type)                                    \
  template <>                                                       \
  std::optional<Type> attrAs<Type>(const AttrValue& value) {        \
    if (const auto* v = holds<Type>(value)) return *v;              \
    return std::nullopt;                                            \
  }
ESTUARY_EXACT_ATTR(std::string)
ESTUARY_EXACT_ATTR(DType)
ESTUARY_EXACT_ATTR(Tensor)
ESTUARY_EXACT_ATTR(AttrShape)
ESTUARY_EXACT_ATTR(AttrValue::GraphRef)
ESTUARY_EXACT_ATTR(std::vector<std::string>)
ESTUARY_EXACT_ATTR(std::vector<DType>)
ESTUARY_EXACT_ATTR(std::vector<Tensor>)
ESTUARY_EXACT_ATTR(std::vector<AttrValue::GraphRef>)
#undef ESTUARY_EXACT_ATTR

#define ESTUARY_ATTR_DESCRIPTION(Type, text) \
  template <>                                \
  std::string_view attrTypeDescription<Type>() { return text; }
ESTUARY_ATTR_DESCRIPTION(int64_t, "an integer")
ESTUARY_ATTR_DESCRIPTION(double, "a number")
ESTUARY_ATTR_DESCRIPTION(bool, "a bool")
ESTUARY_ATTR_DESCRIPTION(std::string, "a string")
ESTUARY_ATTR_DESCRIPTION(DType, "an element type")
ESTUARY_ATTR_DESCRIPTION(Tensor, "a tensor")
ESTUARY_ATTR_DESCRIPTION(AttrShape, "a shape")
ESTUARY_ATTR_DESCRIPTION(AttrValue::GraphRef, "a graph")
ESTUARY_ATTR_DESCRIPTION(std::vector<int64_t>, "a list of integers")
ESTUARY_ATTR_DESCRIPTION(std::vector<double>, "a list of numbers")
ESTUARY_ATTR_DESCRIPTION(std::vector<bool>, "a list of bools")
ESTUARY_ATTR_DESCRIPTION(std::vector<std::string>, "a list of strings")
ESTUARY_ATTR_DESCRIPTION(std::vector<DType>, "a list of element types")
ESTUARY_ATTR_DESCRIPTION(std::vector<Tensor>, "a list of tensors")
ESTUARY_ATTR_DESCRIPTION(std::vector<AttrValue::GraphRef>, "a list of graphs")
#undef ESTUARY_ATTR_DESCRIPTION

}  // namespace estuary
