// Constants, control flow, and the helpers every op file uses.
#include <cstring>

#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "pd_translators.h"

namespace estuary::paddle_frontend {

bool isPir(const NodeContext& node) { return node.decoder().domain() == "pd_op"; }

Value* in(NodeContext& node, size_t pir_position, std::string_view legacy_slot) {
  if (isPir(node)) return pir_position < node.numInputs() ? node.input(pir_position) : nullptr;
  return node.decoder().inputIndex(legacy_slot) ? node.input(legacy_slot) : nullptr;
}

Value* requiredIn(NodeContext& node, size_t pir_position, std::string_view legacy_slot) {
  Value* value = in(node, pir_position, legacy_slot);
  if (!value) {
    if (isPir(node)) node.fail("needs operand ", pir_position);
    node.fail("needs input '", legacy_slot, "'");
  }
  return value;
}

std::optional<std::vector<int64_t>> intsOf(NodeContext& node, size_t pir_position, std::string_view legacy_attr,
                                           std::string_view legacy_tensor_slot) {
  if (isPir(node)) {
    Value* value = pir_position < node.numInputs() ? node.input(pir_position) : nullptr;
    if (!value) return std::nullopt;
    std::optional<std::vector<int64_t>> known = foldedInts(node, value);
    if (!known) node.fail("operand ", pir_position, " must be known while translating (a constant or a static shape)");
    return known;
  }
  if (!legacy_tensor_slot.empty() && node.decoder().inputIndex(legacy_tensor_slot)) {
    std::optional<std::vector<int64_t>> known = foldedInts(node, node.input(legacy_tensor_slot));
    if (!known) node.fail("input '", legacy_tensor_slot, "' must be known while translating");
    return known;
  }
  if (!node.hasAttr(legacy_attr)) return std::nullopt;
  return node.attr<std::vector<int64_t>>(legacy_attr);
}

std::optional<double> scalarOf(NodeContext& node, size_t pir_position, std::string_view legacy_attr) {
  if (isPir(node)) {
    Value* value = pir_position < node.numInputs() ? node.input(pir_position) : nullptr;
    if (!value) return std::nullopt;
    const Tensor* tensor = constantTensor(value);
    if (!tensor || tensor->numElements() != 1) node.fail("operand ", pir_position, " must be a constant scalar");
    switch (tensor->dtype()) {
      case DType::F32: return *tensor->data<float>();
      case DType::F64: return *tensor->data<double>();
      case DType::I32: return *tensor->data<int32_t>();
      case DType::I64: return static_cast<double>(*tensor->data<int64_t>());
      default: node.fail("operand ", pir_position, " is a ", dtypeName(tensor->dtype()), " constant, not a number");
    }
  }
  if (!node.hasAttr(legacy_attr)) return std::nullopt;
  return node.attr<double>(legacy_attr);
}

Value* int64s(NodeContext& node, Value* value) {
  if (value->dtype() == DType::I64) return value;
  if (std::optional<std::vector<int64_t>> known = foldedInts(node, value); known && value->shape().isStatic()) {
    return node.constant(Tensor::fromVector<int64_t>(DType::I64, value->shape().staticDims(), *known));
  }
  return node.cast(value, DType::I64);
}

namespace {

// A tensor of `dtype` and `dims` with every element `value`.
Tensor filled(NodeContext& node, DType dtype, const std::vector<int64_t>& dims, double value) {
  Tensor tensor = Tensor::allocate(dtype, dims);
  const int64_t count = tensor.numElements();
  auto fill = [&](auto typed) {
    using T = decltype(typed);
    T* data = static_cast<T*>(tensor.mutableData());
    for (int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(value);
  };
  switch (dtype) {
    case DType::F32: fill(float{}); break;
    case DType::F64: fill(double{}); break;
    case DType::I32: fill(int32_t{}); break;
    case DType::I64: fill(int64_t{}); break;
    case DType::I8: fill(int8_t{}); break;
    case DType::I16: fill(int16_t{}); break;
    case DType::U8: fill(uint8_t{}); break;
    case DType::Bool: fill(uint8_t{}); break;
    default:
      node.fail("a constant of ", dtypeName(dtype), " is not made while translating");  // f16 and bf16: see full()
  }
  return tensor;
}

// pd_op.full: a constant of `shape`, `dtype`, every element `value`.
Results full(NodeContext& node) {
  std::vector<int64_t> shape = node.attr<std::vector<int64_t>>("shape");
  DType dtype = node.attr<DType>("dtype", DType::F32);
  if (dtype == DType::F16 || dtype == DType::BF16) {
    return {node.cast(node.constant(filled(node, DType::F32, shape, node.attr<double>("value"))), dtype)};
  }
  return {node.constant(filled(node, dtype, shape, node.attr<double>("value")))};
}

// pd_op.full_int_array: the integers of `value` as a 1-D constant.
Results fullIntArray(NodeContext& node) {
  std::vector<int64_t> values = node.attr<std::vector<int64_t>>("value");
  DType dtype = node.attr<DType>("dtype", DType::I64);
  if (dtype == DType::I32) {
    std::vector<int32_t> narrow(values.begin(), values.end());
    return {node.constant(Tensor::fromVector<int32_t>(DType::I32, {static_cast<int64_t>(narrow.size())}, narrow))};
  }
  return {node.constantInts(values)};
}

// pd_op.full_like(x, value): value, of `dtype`, in x's shape.
Results fullLike(NodeContext& node) {
  Value* x = node.requiredInput(0);
  DType dtype = node.attr<DType>("dtype", DType::Undefined);
  if (dtype == DType::Undefined) dtype = x->dtype();
  Value* value = node.cast(node.requiredInput(1), dtype);
  Value* scalar = node.emitValue("Reshape", {value, node.constantInts({})});
  return {node.emitValue("Expand", {scalar, node.emitValue("Shape", {x})})};
}

// pd_op.if: the branches are regions that read enclosing values by name.
Results pirIf(NodeContext& node) {
  return node.emit("If", {node.requiredInput(0)},
                   {{"then_branch", node.subgraph("then_branch")}, {"else_branch", node.subgraph("else_branch")}},
                   node.numOutputs())
      ->outputs();
}

// pd_op.while(cond, init...) and the legacy while the view makes of a while op: the body takes
// the loop values and yields the next condition and values, as an ONNX Loop body does (its
// decoder adds the iteration and condition inputs).
// The body's loop variables take the initial values' element types and ranks, their dims
// left unknown (they may change from one iteration to the next); a legacy sub-block does
// not declare them.
Results pirWhile(NodeContext& node) {
  std::vector<Value*> inputs = {nullptr};
  std::vector<TensorType> types = {TensorType(DType::I64, Shape(std::vector<Dim>{})),
                                   TensorType(DType::Bool, Shape(std::vector<Dim>{}))};
  for (size_t i = 0; i < node.numInputs(); ++i) {
    Value* value = node.requiredInput(i);
    inputs.push_back(value);
    if (i == 0) continue;
    const Shape& shape = value->shape();
    types.push_back(shape.isRanked() ? TensorType(value->dtype(), Shape(std::vector<Dim>(shape.rank())))
                                     : TensorType(value->dtype(), Shape::unranked()));
  }
  return node.emit("Loop", inputs, {{"body", node.subgraph("body", types)}}, node.numOutputs())->outputs();
}

// select_input (legacy): the If the view made of an if/else's two conditional_blocks, on
// the mask that picks the true side.
Results selectInput(NodeContext& node) {
  return node.emit("If", {node.cast(node.requiredInput(0), DType::Bool)},
                   {{"then_branch", node.subgraph("then_branch")}, {"else_branch", node.subgraph("else_branch")}},
                   node.numOutputs())
      ->outputs();
}

// fill_constant (legacy): a constant of `shape` (or the ShapeTensor input), `dtype`, every
// element `value` (or str_value, which keeps large integers exact).
Results fillConstant(NodeContext& node) {
  std::optional<std::vector<int64_t>> shape = intsOf(node, 0, "shape", "ShapeTensor");
  if (!shape) node.fail("has no shape");
  DType dtype = node.attr<DType>("dtype", DType::F32);
  double value = node.attr<double>("value", 0.0);
  std::string text = node.attr<std::string>("str_value", "");
  if (!text.empty()) value = std::stod(text);
  Tensor tensor = dtype == DType::F16 || dtype == DType::BF16 ? filled(node, DType::F32, *shape, value)
                                                              : filled(node, dtype, *shape, value);
  Value* constant = node.constant(std::move(tensor));
  return {constant->dtype() == dtype ? constant : node.cast(constant, dtype)};
}

}  // namespace

void addGraphTranslators(TranslatorTable& table) {
  table.add("while", pirWhile).add("select_input", selectInput).add("fill_constant", fillConstant);
  table.add("pd_op", "full", full).add("pd_op", "full_int_array", fullIntArray).add("pd_op", "full_like", fullLike)
      .add("pd_op", "if", pirIf).add("pd_op", "while", pirWhile);
}

const TranslatorTable& pdTranslators() {
  static const TranslatorTable& table =
      TranslatorTable::filledBy({addNnTranslators, addMathTranslators, addArrayTranslators, addGraphTranslators});
  return table;
}

}  // namespace estuary::paddle_frontend
