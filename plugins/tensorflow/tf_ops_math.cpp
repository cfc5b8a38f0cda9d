// Element-wise ops, comparisons, casts, reductions, matrix products and softmax: TensorFlow's
// semantics in core ops. Binary ops broadcast as NumPy does in both.
#include <limits>

#include "estuary/frontend/translation_helpers.h"
#include "tf_translators.h"

namespace estuary::tensorflow_frontend {
namespace {

// A core op applied to the node's inputs as they are.
template <const char* Op>
Results same(NodeContext& node) {
  return {node.emitValue(Op, node.inputs())};
}

constexpr char kAdd[] = "Add", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div", kMax[] = "Max", kMin[] = "Min",
               kPow[] = "Pow", kRelu[] = "Relu", kSigmoid[] = "Sigmoid", kTanh[] = "Tanh", kExp[] = "Exp",
               kLog[] = "Log", kSqrt[] = "Sqrt", kNeg[] = "Neg", kAbs[] = "Abs", kSign[] = "Sign", kFloor[] = "Floor",
               kCeil[] = "Ceil", kRound[] = "Round", kErf[] = "Erf", kSin[] = "Sin", kCos[] = "Cos",
               kReciprocal[] = "Reciprocal", kSoftplus[] = "Softplus", kSoftsign[] = "Softsign", kElu[] = "Elu",
               kSelu[] = "Selu", kEqual[] = "Equal", kLess[] = "Less", kLessOrEqual[] = "LessOrEqual",
               kGreater[] = "Greater", kGreaterOrEqual[] = "GreaterOrEqual", kAnd[] = "And", kOr[] = "Or",
               kNot[] = "Not", kIsNaN[] = "IsNaN", kIsInf[] = "IsInf", kIdentity[] = "Identity", kTan[] = "Tan";

Results rsqrt(NodeContext& node) {
  return {node.emitValue("Reciprocal", {node.emitValue("Sqrt", {node.requiredInput(0)})})};
}

Results square(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Mul", {x, x})};
}

Results squaredDifference(NodeContext& node) {
  Value* difference = node.emitValue("Sub", {node.requiredInput(0), node.requiredInput(1)});
  return {node.emitValue("Mul", {difference, difference})};
}

Results erfc(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Sub", {node.scalar(x->dtype(), 1), node.emitValue("Erf", {x})})};
}

Results log1p(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Log", {node.emitValue("Add", {x, node.scalar(x->dtype(), 1)})})};
}

Results relu6(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Clip", {x, node.scalar(x->dtype(), 0), node.scalar(x->dtype(), 6)})};
}

Results leakyRelu(NodeContext& node) {
  return {node.emitValue("LeakyRelu", {node.requiredInput(0)}, {{"alpha", node.attr<double>("alpha", 0.2)}})};
}

Results notEqual(NodeContext& node) {
  return {node.emitValue("Not", {node.emitValue("Equal", {node.requiredInput(0), node.requiredInput(1)})})};
}

// Python's // and %: the quotient rounds toward negative infinity, the remainder takes the
// divisor's sign.
Results floorDiv(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* y = node.requiredInput(1);
  if (isFloatingPoint(x->dtype())) return {node.emitValue("Floor", {node.emitValue("Div", {x, y})})};
  Value* remainder = node.emitValue("Mod", {x, y}, {{"fmod", int64_t{0}}});
  return {node.emitValue("Div", {node.emitValue("Sub", {x, remainder}), y})};
}

Results floorMod(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* y = node.requiredInput(1);
  if (!isFloatingPoint(x->dtype())) return {node.emitValue("Mod", {x, y}, {{"fmod", int64_t{0}}})};
  Value* quotient = node.emitValue("Floor", {node.emitValue("Div", {x, y})});
  return {node.emitValue("Sub", {x, node.emitValue("Mul", {quotient, y})})};
}

Results addN(NodeContext& node) { return {node.emitValue("Sum", node.inputs())}; }

Results cast(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.cast(x, node.attr<DType>("DstT"))};
}

// Select picks rows by a rank-1 condition when the operands have higher rank; SelectV2
// broadcasts as NumPy does, like Where.
Results select(NodeContext& node) {
  Value* condition = node.requiredInput(0);
  Value* x = node.requiredInput(1);
  Value* y = node.requiredInput(2);
  if (node.opType() == "Select" && rankOf(node, condition) == 1 && rankOf(node, x) > 1) {
    condition = alignForBroadcast(node, condition, rankOf(node, x), 0);
  }
  return {node.emitValue("Where", {condition, x, y})};
}

// Mean, Sum, Max, Min, Prod, All, Any over the axes of input 1.
Results reduce(NodeContext& node, const char* op) {
  Value* x = node.requiredInput(0);
  bool keep = node.attr<bool>("keep_dims", false);
  Value* axes = asInt64List(node, node.requiredInput(1));
  // An empty axes list reduces nothing in TensorFlow, everything in ONNX without
  // noop_with_empty_axes.
  NodeContext::Attributes attributes = {{"keepdims", int64_t{keep}}, {"noop_with_empty_axes", int64_t{1}}};
  bool logical = node.opType() == "All" || node.opType() == "Any";
  if (logical) x = node.cast(x, DType::U8);
  Value* reduced = node.emitValue(op, {x, axes}, std::move(attributes));
  return {logical ? node.cast(reduced, DType::Bool) : reduced};
}
Results mean(NodeContext& node) { return reduce(node, "ReduceMean"); }
Results sum(NodeContext& node) { return reduce(node, "ReduceSum"); }
Results reduceMax(NodeContext& node) { return reduce(node, "ReduceMax"); }
Results reduceMin(NodeContext& node) { return reduce(node, "ReduceMin"); }
Results prod(NodeContext& node) { return reduce(node, "ReduceProd"); }
Results all(NodeContext& node) { return reduce(node, "ReduceMin"); }
Results any(NodeContext& node) { return reduce(node, "ReduceMax"); }

Results argExtreme(NodeContext& node, const char* op) {
  Value* x = node.requiredInput(0);
  int64_t axis = normalizedAxis(node, knownInput(node, 1, "dimension").at(0), rankOf(node, x));
  Value* index = node.emitValue(op, {x}, {{"axis", axis}, {"keepdims", int64_t{0}}});
  return {node.cast(index, node.attr<DType>("output_type", DType::I64))};
}
Results argMax(NodeContext& node) { return argExtreme(node, "ArgMax"); }
Results argMin(NodeContext& node) { return argExtreme(node, "ArgMin"); }

// The last two dims of `value` swapped.
Value* swapLastTwo(NodeContext& node, Value* value) {
  size_t rank = rankOf(node, value);
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return permute(node, value, perm);
}

Results matMul(NodeContext& node) {
  Value* a = node.requiredInput(0);
  Value* b = node.requiredInput(1);
  if (node.attr<bool>("transpose_a", false)) a = swapLastTwo(node, a);
  if (node.attr<bool>("transpose_b", false)) b = swapLastTwo(node, b);
  return {node.emitValue("MatMul", {a, b})};
}

// BatchMatMul, V2 and V3 (V2 and V3 broadcast the batch dims, as MatMul does).
Results batchMatMul(NodeContext& node) {
  Value* a = node.requiredInput(0);
  Value* b = node.requiredInput(1);
  if (node.attr<bool>("adj_x", false)) a = swapLastTwo(node, a);
  if (node.attr<bool>("adj_y", false)) b = swapLastTwo(node, b);
  Value* product = node.emitValue("MatMul", {a, b});
  if (node.hasAttr("Tout")) product = node.cast(product, node.attr<DType>("Tout"));
  return {product};
}

Results einsum(NodeContext& node) {
  return {node.emitValue("Einsum", node.inputs(), {{"equation", node.attr<std::string>("equation")}})};
}

Results softmax(NodeContext& node) { return {node.emitValue("Softmax", {node.requiredInput(0)}, {{"axis", int64_t{-1}}})}; }
Results logSoftmax(NodeContext& node) {
  return {node.emitValue("LogSoftmax", {node.requiredInput(0)}, {{"axis", int64_t{-1}}})};
}

Results cumsum(NodeContext& node) {
  Value* axis = asInt64(node, node.requiredInput(1));
  return {node.emitValue("CumSum", {node.requiredInput(0), axis},
                         {{"exclusive", int64_t{node.attr<bool>("exclusive", false)}},
                          {"reverse", int64_t{node.attr<bool>("reverse", false)}}})};
}

Results clipByValue(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Min", {node.emitValue("Max", {x, node.requiredInput(1)}), node.requiredInput(2)})};
}

}  // namespace

void addMathTranslators(TranslatorTable& table) {
  table.add("Add", same<kAdd>).add("AddV2", same<kAdd>).add("Sub", same<kSub>).add("Mul", same<kMul>)
      .add("RealDiv", same<kDiv>).add("Div", same<kDiv>).add("Maximum", same<kMax>).add("Minimum", same<kMin>)
      .add("Pow", same<kPow>).add("FloorDiv", floorDiv).add("FloorMod", floorMod).add("AddN", addN)
      .add("SquaredDifference", squaredDifference)
      .add("Relu", same<kRelu>).add("Relu6", relu6).add("Elu", same<kElu>).add("Selu", same<kSelu>)
      .add("LeakyRelu", leakyRelu).add("Sigmoid", same<kSigmoid>).add("Tanh", same<kTanh>).add("Exp", same<kExp>)
      .add("Log", same<kLog>).add("Log1p", log1p).add("Sqrt", same<kSqrt>).add("Rsqrt", rsqrt)
      .add("Square", square).add("Neg", same<kNeg>).add("Abs", same<kAbs>).add("Sign", same<kSign>)
      .add("Floor", same<kFloor>).add("Ceil", same<kCeil>).add("Round", same<kRound>).add("Rint", same<kRound>)
      .add("Erf", same<kErf>).add("Erfc", erfc).add("Sin", same<kSin>).add("Cos", same<kCos>).add("Tan", same<kTan>)
      .add("Reciprocal", same<kReciprocal>).add("Inv", same<kReciprocal>).add("Softplus", same<kSoftplus>)
      .add("Softsign", same<kSoftsign>).add("IsNan", same<kIsNaN>).add("IsInf", same<kIsInf>)
      .add("Equal", same<kEqual>).add("NotEqual", notEqual).add("Less", same<kLess>)
      .add("LessEqual", same<kLessOrEqual>).add("Greater", same<kGreater>)
      .add("GreaterEqual", same<kGreaterOrEqual>).add("LogicalAnd", same<kAnd>).add("LogicalOr", same<kOr>)
      .add("LogicalNot", same<kNot>).add("Cast", cast).add("Select", select).add("SelectV2", select)
      .add("ClipByValue", clipByValue)
      .add("Identity", same<kIdentity>).add("StopGradient", same<kIdentity>).add("Snapshot", same<kIdentity>)
      .add("PreventGradient", same<kIdentity>).add("CheckNumerics", same<kIdentity>)
      .add("Mean", mean).add("Sum", sum).add("Max", reduceMax).add("Min", reduceMin).add("Prod", prod)
      .add("All", all).add("Any", any).add("ArgMax", argMax).add("ArgMin", argMin)
      .add("MatMul", matMul).add("BatchMatMul", batchMatMul).add("BatchMatMulV2", batchMatMul)
      .add("BatchMatMulV3", batchMatMul).add("Einsum", einsum).add("Softmax", softmax)
      .add("LogSoftmax", logSoftmax).add("Cumsum", cumsum);
}

}  // namespace estuary::tensorflow_frontend
