// Element-wise arithmetic, comparisons, scale, reductions and casts.
#include "pd_translators.h"

namespace estuary::paddle_frontend {

Results bySlot(NodeContext& node, const std::vector<std::pair<std::string_view, Value*>>& results);

namespace {

// add, subtract, multiply, divide, ... (PIR: NumPy broadcasting) and their legacy
// elementwise_* forms, whose `axis` aligns Y's dims with X's from that axis.
template <const char* kOp>
Results binary(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* y = requiredIn(node, 1, "Y");
  if (!isPir(node) && x->shape().isRanked() && y->shape().isRanked()) {
    int64_t axis = node.attr<int64_t>("axis", -1);
    if (axis != -1 && y->shape().rank() < x->shape().rank()) y = alignForBroadcast(node, y, x->shape().rank(), axis);
  }
  if (y->dtype() != x->dtype() && x->dtype() != DType::Undefined && y->dtype() != DType::Undefined) {
    y = node.cast(y, x->dtype());
  }
  return bySlot(node, {{"Out", node.emitValue(kOp, {x, y})}});
}

constexpr char kAdd[] = "Add", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div", kMax[] = "Max", kMin[] = "Min",
               kPow[] = "Pow", kMod[] = "Mod", kEqual[] = "Equal", kNotEqual[] = "NotEqual", kLess[] = "Less",
               kLessEqual[] = "LessOrEqual", kGreater[] = "Greater", kGreaterEqual[] = "GreaterOrEqual",
               kAnd[] = "And", kOr[] = "Or", kXor[] = "Xor";

template <const char* kOp>
Results compare(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* y = requiredIn(node, 1, "Y");
  if (y->dtype() != x->dtype()) y = node.cast(y, x->dtype());
  if (std::string_view(kOp) == "NotEqual") return bySlot(node, {{"Out", node.emitValue("Not", {node.emitValue("Equal", {x, y})})}});
  return bySlot(node, {{"Out", node.emitValue(kOp, {x, y})}});
}

// floor_divide: the quotient rounded down (integers: Paddle rounds down, as Python does).
Results floorDivide(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* y = requiredIn(node, 1, "Y");
  Value* quotient = node.emitValue("Div", {node.cast(x, DType::F64), node.cast(y, DType::F64)});
  return bySlot(node, {{"Out", node.cast(node.emitValue("Floor", {quotient}), x->dtype())}});
}

Results neg(NodeContext& node) { return bySlot(node, {{"Out", node.emitValue("Neg", {requiredIn(node, 0, "X")})}}); }

Results logicalNot(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue("Not", {node.cast(requiredIn(node, 0, "X"), DType::Bool)})}});
}

// scale(x, factor): factor * x + bias, or factor * (x + bias) when bias_after_scale is false
// (PIR: the factor is operand 1; legacy: attribute `scale`, or the ScaleTensor input).
Results scale(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* factor = isPir(node) ? requiredIn(node, 1, "") : in(node, 1, "ScaleTensor");
  if (!factor) factor = node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(node.attr<double>("scale", 1.0))));
  // Paddle writes `x + c` as scale(x, 1.0, bias=c): a factor known to be 1 multiplies nothing.
  const Tensor* known = constantTensor(factor);
  const bool unit = known && known->numElements() == 1 &&
                    ((known->dtype() == DType::F32 && *known->data<float>() == 1.f) ||
                     (known->dtype() == DType::F64 && *known->data<double>() == 1.0));
  factor = node.cast(node.emitValue("Reshape", {factor, node.constantInts({})}), x->dtype());
  const double bias = node.attr<double>("bias", 0.0);
  Value* shift = node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(bias))), x->dtype());
  auto times = [&](Value* value) { return unit ? value : node.emitValue("Mul", {value, factor}); };
  if (node.attr<bool>("bias_after_scale", true)) {
    Value* scaled = times(x);
    return bySlot(node, {{"Out", bias == 0.0 ? node.emitValue("Identity", {scaled}) : node.emitValue("Add", {scaled, shift})}});
  }
  return bySlot(node, {{"Out", times(bias == 0.0 ? x : node.emitValue("Add", {x, shift}))}});
}

// mean, sum, max, min, prod over axes (PIR: operand 1; legacy reduce_*: dim, reduce_all);
// an empty axis list reduces everything.
template <const char* kOp>
Results reduce(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::vector<int64_t> axes = intsOf(node, 1, "dim").value_or(std::vector<int64_t>{});
  const bool all = axes.empty() || (!isPir(node) && node.attr<bool>("reduce_all", false));
  const bool keep = node.hasAttr("keepdim") ? node.attr<bool>("keepdim") : node.attr<bool>("keep_dim", false);
  std::vector<Value*> inputs = {x};
  if (!all) inputs.push_back(node.constantInts(axes));
  Value* reduced = node.emitValue(kOp, inputs, {{"keepdims", int64_t{keep}}});
  DType dtype = node.attr<DType>("dtype", DType::Undefined);
  if (node.hasAttr("out_dtype")) dtype = node.attr<DType>("out_dtype");
  return bySlot(node, {{"Out", dtype == DType::Undefined ? reduced : node.cast(reduced, dtype)}});
}

constexpr char kReduceMean[] = "ReduceMean", kReduceSum[] = "ReduceSum", kReduceMax[] = "ReduceMax",
               kReduceMin[] = "ReduceMin", kReduceProd[] = "ReduceProd";

Results cast(NodeContext& node) {
  DType dtype = node.attr<DType>(isPir(node) ? "dtype" : "out_dtype");
  if (dtype == DType::Undefined) node.fail("casts to an element type Estuary lacks");
  return bySlot(node, {{"Out", node.cast(requiredIn(node, 0, "X"), dtype)}});
}

// clip(x, min, max): PIR operands, legacy attributes.
Results clip(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  auto bound = [&](size_t position, const char* name) {
    double value = scalarOf(node, position, name).value_or(position == 1 ? -3.4e38 : 3.4e38);
    return node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(value))), x->dtype());
  };
  return bySlot(node, {{"Out", node.emitValue("Clip", {x, bound(1, "min"), bound(2, "max")})}});
}

// where(condition, x, y).
Results where(NodeContext& node) {
  Value* condition = node.cast(requiredIn(node, 0, "Condition"), DType::Bool);
  return bySlot(node, {{"Out", node.emitValue("Where", {condition, requiredIn(node, 1, "X"), requiredIn(node, 2, "Y")})}});
}

// pow(x) with the exponent attribute y (PIR's pd_op.pow; legacy pow: factor).
Results power(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  double exponent = node.hasAttr("y") ? node.attr<double>("y") : node.attr<double>("factor", 1.0);
  Value* e = node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(exponent))), x->dtype());
  return bySlot(node, {{"Out", exponent == 2.0 ? node.emitValue("Mul", {x, x}) : node.emitValue("Pow", {x, e})}});
}

Results argmax(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::optional<double> axis = scalarOf(node, 1, "axis");
  if (node.attr<bool>("flatten", false)) {
    x = node.emitValue("Reshape", {x, node.constantInts({-1})});
    axis = 0;
  }
  Value* index = node.emitValue("ArgMax", {x}, {{"axis", static_cast<int64_t>(axis.value_or(0))},
                                                {"keepdims", int64_t{node.attr<bool>("keepdims", false)}}});
  DType dtype = node.attr<DType>("dtype", DType::I64);
  return bySlot(node, {{"Out", dtype == DType::I64 ? index : node.cast(index, dtype)}});
}

}  // namespace

void addMathTranslators(TranslatorTable& table) {
  const std::pair<const char*, TranslateFn> pir[] = {
      {"add", binary<kAdd>}, {"subtract", binary<kSub>}, {"multiply", binary<kMul>}, {"divide", binary<kDiv>},
      {"maximum", binary<kMax>}, {"minimum", binary<kMin>}, {"elementwise_pow", binary<kPow>},
      {"remainder", binary<kMod>}, {"add_", binary<kAdd>}, {"floor_divide", floorDivide},
      {"equal", compare<kEqual>}, {"not_equal", compare<kNotEqual>}, {"less_than", compare<kLess>},
      {"less_equal", compare<kLessEqual>}, {"greater_than", compare<kGreater>},
      {"greater_equal", compare<kGreaterEqual>}, {"logical_and", compare<kAnd>}, {"logical_or", compare<kOr>},
      {"logical_xor", compare<kXor>}, {"logical_not", logicalNot}, {"scale", scale}, {"mean", reduce<kReduceMean>},
      {"sum", reduce<kReduceSum>}, {"max", reduce<kReduceMax>}, {"min", reduce<kReduceMin>},
      {"prod", reduce<kReduceProd>}, {"cast", cast}, {"clip", clip}, {"where", where}, {"pow", power},
      {"argmax", argmax}};
  for (const auto& [name, translate] : pir) table.add("pd_op", name, translate);
  const std::pair<const char*, TranslateFn> legacy[] = {
      {"elementwise_add", binary<kAdd>}, {"elementwise_sub", binary<kSub>}, {"elementwise_mul", binary<kMul>},
      {"elementwise_div", binary<kDiv>}, {"elementwise_max", binary<kMax>}, {"elementwise_min", binary<kMin>},
      {"elementwise_pow", binary<kPow>}, {"elementwise_mod", binary<kMod>},
      {"elementwise_floordiv", floorDivide}, {"equal", compare<kEqual>}, {"not_equal", compare<kNotEqual>},
      {"less_than", compare<kLess>}, {"less_equal", compare<kLessEqual>}, {"greater_than", compare<kGreater>},
      {"greater_equal", compare<kGreaterEqual>}, {"logical_and", compare<kAnd>}, {"logical_or", compare<kOr>},
      {"logical_xor", compare<kXor>}, {"logical_not", logicalNot}, {"scale", scale},
      {"reduce_mean", reduce<kReduceMean>}, {"reduce_sum", reduce<kReduceSum>}, {"reduce_max", reduce<kReduceMax>},
      {"reduce_min", reduce<kReduceMin>}, {"reduce_prod", reduce<kReduceProd>}, {"cast", cast}, {"clip", clip},
      {"where", where}, {"pow", power}, {"arg_max", argmax}};
  for (const auto& [name, translate] : legacy) table.add(name, translate);
  table.add("pd_op", "neg", neg);
}

}  // namespace estuary::paddle_frontend
