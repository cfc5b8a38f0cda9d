// Element-wise arithmetic, comparisons, casts, reductions and the scalar ops of Python
// values kept in the graph (loop counters, dims of a shape).
#include "ms_translators.h"
#include "ms_values.h"

namespace estuary::mindspore_frontend {
namespace {

// MindSpore promotes a Python number to the tensor's type: a 0-d constant operand whose type
// differs from the other operand's takes the other's.
std::pair<Value*, Value*> promoted(NodeContext& node, Value* x, Value* y) {
  if (x->dtype() == y->dtype() || x->dtype() == DType::Undefined || y->dtype() == DType::Undefined) return {x, y};
  auto isScalarConstant = [](Value* value) {
    const Tensor* tensor = constantTensor(value);
    return tensor && tensor->numElements() == 1 && value->shape().isRanked() && value->shape().rank() == 0;
  };
  if (isScalarConstant(y)) return {x, node.cast(y, x->dtype())};
  if (isScalarConstant(x)) return {node.cast(x, y->dtype()), y};
  return {x, y};
}

template <const char* kOp>
Results binary(NodeContext& node) {
  auto [x, y] = promoted(node, requiredArg(node, 0, "input"), requiredArg(node, 1, "other"));
  return {node.emitValue(kOp, {x, y})};
}

constexpr char kAdd[] = "Add", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div", kMax[] = "Max", kMin[] = "Min",
               kPow[] = "Pow", kEqual[] = "Equal", kLess[] = "Less", kLessEqual[] = "LessOrEqual",
               kGreater[] = "Greater", kGreaterEqual[] = "GreaterOrEqual", kAnd[] = "And", kOr[] = "Or",
               kXor[] = "Xor";

// AddExt and SubExt (input, other, alpha): input +/- alpha * other.
template <const char* kOp>
Results scaledBinary(NodeContext& node) {
  auto [x, y] = promoted(node, requiredArg(node, 0, "input"), requiredArg(node, 1, "other"));
  const double alpha = node.hasAttr("2") ? floatArg(node, 2, "alpha") : 1.0;
  if (alpha != 1.0) {
    y = node.emitValue("Mul", {y, node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(alpha))), y->dtype())});
  }
  return {node.emitValue(kOp, {x, y})};
}

Results notEqual(NodeContext& node) {
  auto [x, y] = promoted(node, requiredArg(node, 0, "input"), requiredArg(node, 1, "other"));
  return {node.emitValue("Not", {node.emitValue("Equal", {x, y})})};
}

// FloorDiv: floor(x / y); for integers, Python's floor division.
Results floorDiv(NodeContext& node) {
  auto [x, y] = promoted(node, requiredArg(node, 0, "input"), requiredArg(node, 1, "other"));
  if (isFloatingPoint(x->dtype())) return {node.emitValue("Floor", {node.emitValue("Div", {x, y})})};
  Value* quotient = node.emitValue("Div", {x, y});
  Value* remainder = node.emitValue("Mod", {x, y}, {{"fmod", int64_t{0}}});
  Value* zero = node.cast(node.constant(Tensor::scalar<int64_t>(DType::I64, 0)), x->dtype());
  Value* inexact = node.emitValue("Not", {node.emitValue("Equal", {remainder, zero})});
  Value* signs_differ = node.emitValue("Xor", {node.emitValue("Less", {x, zero}), node.emitValue("Less", {y, zero})});
  Value* adjust = node.cast(node.emitValue("And", {inexact, signs_differ}), x->dtype());
  return {node.emitValue("Sub", {quotient, adjust})};
}

// FloorMod: the remainder with the divisor's sign (Python's %).
Results floorMod(NodeContext& node) {
  auto [x, y] = promoted(node, requiredArg(node, 0, "input"), requiredArg(node, 1, "other"));
  return {node.emitValue("Mod", {x, y}, {{"fmod", int64_t{isFloatingPoint(x->dtype()) ? 1 : 0}}})};
}

template <const char* kOp>
Results unary(NodeContext& node) {
  return {node.emitValue(kOp, {requiredArg(node, 0, "input")})};
}

constexpr char kNeg[] = "Neg", kAbs[] = "Abs", kExp[] = "Exp", kLog[] = "Log", kSqrt[] = "Sqrt", kErf[] = "Erf",
               kSin[] = "Sin", kCos[] = "Cos", kFloor[] = "Floor", kCeil[] = "Ceil", kRound[] = "Round",
               kSign[] = "Sign", kReciprocal[] = "Reciprocal", kNot[] = "Not", kIdentity[] = "Identity";

Results rsqrt(NodeContext& node) {
  return {node.emitValue("Reciprocal", {node.emitValue("Sqrt", {requiredArg(node, 0, "input")})})};
}

Results square(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  return {node.emitValue("Mul", {x, x})};
}

// Cast (input, dtype): the dtype as MindSpore's TypeId number.
Results cast(NodeContext& node) {
  std::optional<AttrValue> dtype = node.attribute("1");
  if (dtype) {
    if (auto* type = std::get_if<DType>(&dtype->data)) return {node.cast(requiredArg(node, 0, "input"), *type)};
  }
  int64_t type_id = intArg(node, 1, "dtype");
  std::optional<DType> target = dtypeFromTypeId(type_id);
  if (!target) node.fail("casts to MindSpore type ", type_id, ", which Estuary has no element type for");
  return {node.cast(requiredArg(node, 0, "input"), *target)};
}

// ReduceMean, ReduceSum, ... (x, axis, keep_dims): an empty axis tuple reduces everything;
// MeanExt and SumExt (input, dim, keepdim, dtype): None reduces everything.
template <const char* kOp>
Results reduce(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  std::vector<int64_t> axes = optionalInts(node, 1, "axis").value_or(std::vector<int64_t>{});
  const bool keep = node.hasAttr("2") ? boolArg(node, 2, "keep_dims") : node.attr<bool>("keep_dims", false);
  std::vector<Value*> inputs = {x};
  if (!axes.empty()) inputs.push_back(node.constantInts(axes));
  Value* reduced = node.emitValue(kOp, inputs, {{"keepdims", int64_t{keep}}});
  if (std::optional<AttrValue> dtype = node.attribute("3")) {
    if (auto* type_id = std::get_if<int64_t>(&dtype->data)) {
      std::optional<DType> target = dtypeFromTypeId(*type_id);
      if (!target) node.fail("reduces to MindSpore type ", *type_id, ", which Estuary has no element type for");
      reduced = node.cast(reduced, *target);
    }
  }
  return {reduced};
}

constexpr char kReduceMean[] = "ReduceMean", kReduceSum[] = "ReduceSum", kReduceMax[] = "ReduceMax",
               kReduceMin[] = "ReduceMin", kReduceProd[] = "ReduceProd";

// Argmax (input, axis, output_type) and ArgMaxExt (input, dim, keepdim).
Results argmax(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  const int64_t axis = optionalInts(node, 1, "axis").value_or(std::vector<int64_t>{-1}).at(0);
  const bool keep = node.opType() == "ArgMaxExt" && node.hasAttr("2") && boolArg(node, 2, "keepdim");
  return {node.emitValue("ArgMax", {x}, {{"axis", axis}, {"keepdims", int64_t{keep}}})};
}

// Select (condition, x, y) -> Where.
Results select(NodeContext& node) {
  auto [x, y] = promoted(node, requiredArg(node, 1, "input"), requiredArg(node, 2, "other"));
  return {node.emitValue("Where", {node.cast(requiredArg(node, 0, "condition"), DType::Bool), x, y})};
}

// ClampScalar (input, min, max) and ClipByValue (x, min, max).
Results clamp(NodeContext& node) {
  Value* x = requiredArg(node, 0, "input");
  auto bound = [&](size_t k, double fallback) {
    Value* value = arg(node, k);
    if (!value) value = node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(fallback)));
    return node.cast(value, x->dtype());
  };
  return {node.emitValue("Clip", {x, bound(1, -3.4e38), bound(2, 3.4e38)})};
}

// ScalarToTensor (scalar, dtype): the scalar (a 0-d value here) as a tensor of dtype.
Results scalarToTensor(NodeContext& node) {
  Value* scalar = requiredArg(node, 0, "input");
  std::optional<AttrValue> dtype = node.attribute("1");
  if (!dtype || std::holds_alternative<std::monostate>(dtype->data)) return {node.emitValue("Identity", {scalar})};
  std::optional<DType> target = dtypeFromTypeId(intArg(node, 1, "dtype"));
  if (!target) node.fail("makes a tensor of a MindSpore type Estuary has no element type for");
  return {node.cast(scalar, *target)};
}

}  // namespace

void addMathTranslators(TranslatorTable& table) {
  const std::pair<const char*, TranslateFn> binaries[] = {
      {"Add", binary<kAdd>}, {"Sub", binary<kSub>}, {"Mul", binary<kMul>}, {"Div", binary<kDiv>},
      {"RealDiv", binary<kDiv>}, {"DivMod", binary<kDiv>}, {"Maximum", binary<kMax>}, {"Minimum", binary<kMin>},
      {"Pow", binary<kPow>}, {"Equal", binary<kEqual>}, {"Less", binary<kLess>}, {"LessEqual", binary<kLessEqual>},
      {"Greater", binary<kGreater>}, {"GreaterEqual", binary<kGreaterEqual>}, {"LogicalAnd", binary<kAnd>},
      {"LogicalOr", binary<kOr>}, {"LogicalXor", binary<kXor>}, {"Muls", binary<kMul>}, {"Divs", binary<kDiv>},
      {"Adds", binary<kAdd>}, {"Subs", binary<kSub>}, {"LessScalar", binary<kLess>},
      {"GreaterScalar", binary<kGreater>}, {"EqualScalar", binary<kEqual>},
      // Python numbers in the graph: 0-d tensors.
      {"ScalarAdd", binary<kAdd>}, {"ScalarSub", binary<kSub>}, {"ScalarMul", binary<kMul>},
      {"ScalarDiv", binary<kDiv>}, {"ScalarFloorDiv", floorDiv}, {"ScalarMod", floorMod}, {"ScalarEq", binary<kEqual>},
      {"ScalarLt", binary<kLess>}, {"ScalarLe", binary<kLessEqual>}, {"ScalarGt", binary<kGreater>},
      {"ScalarGe", binary<kGreaterEqual>}, {"ScalarMax", binary<kMax>}, {"ScalarMin", binary<kMin>},
      {"NotEqual", notEqual}, {"FloorDiv", floorDiv}, {"FloorMod", floorMod}, {"AddExt", scaledBinary<kAdd>},
      {"SubExt", scaledBinary<kSub>},
  };
  for (const auto& [name, translate] : binaries) table.add(name, translate);
  const std::pair<const char*, TranslateFn> others[] = {
      {"Neg", unary<kNeg>}, {"Abs", unary<kAbs>}, {"Exp", unary<kExp>}, {"Log", unary<kLog>}, {"Sqrt", unary<kSqrt>},
      {"Erf", unary<kErf>}, {"Sin", unary<kSin>}, {"Cos", unary<kCos>}, {"Floor", unary<kFloor>},
      {"Ceil", unary<kCeil>}, {"Round", unary<kRound>}, {"Sign", unary<kSign>}, {"Reciprocal", unary<kReciprocal>},
      {"LogicalNot", unary<kNot>}, {"Identity", unary<kIdentity>}, {"Rsqrt", rsqrt}, {"Square", square},
      {"Cast", cast}, {"ScalarCast", cast}, {"ScalarToTensor", scalarToTensor}, {"TensorToScalar", unary<kIdentity>},
      {"ReduceMean", reduce<kReduceMean>}, {"ReduceSum", reduce<kReduceSum>}, {"ReduceMax", reduce<kReduceMax>},
      {"ReduceMin", reduce<kReduceMin>}, {"ReduceProd", reduce<kReduceProd>}, {"MeanExt", reduce<kReduceMean>},
      {"SumExt", reduce<kReduceSum>}, {"ProdExt", reduce<kReduceProd>}, {"Argmax", argmax},
      {"ArgMaxExt", argmax}, {"Select", select}, {"ClampScalar", clamp}, {"ClipByValue", clamp},
  };
  for (const auto& [name, translate] : others) table.add(name, translate);
}

}  // namespace estuary::mindspore_frontend
