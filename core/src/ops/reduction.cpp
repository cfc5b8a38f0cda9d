// Reductions (axes as an input, keepdims, noop_with_empty_axes) and ArgMax/ArgMin.
#include <functional>

#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

using Fold = std::function<SymInt(const SymInt&, const SymInt&)>;

// `noop_keeps_values`: reduced over no axis, each element alone is left as it is (Sum, Prod,
// Max, Min, Mean), not made |x|, x^2 or log x (L1, L2, SumSquare, LogSum).
void inferReduce(InferenceContext& context, const Fold& fold, bool noop_keeps_values) {
  checkRank(context, 1, 1, 1);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  bool keep_dims = context.intAttr("keepdims") != 0;
  std::optional<std::vector<int64_t>> axes =
      context.hasInput(1) ? context.knownInts(1) : std::vector<int64_t>{};
  if (!axes) {
    // Which axes go is unknown: the rank survives only with keepdims.
    if (keep_dims) context.setOutputShape(0, Shape(std::vector<Dim>(x.rank())));
    return;
  }
  std::vector<bool> reduced(x.rank(), axes->empty());
  if (axes->empty() && context.intAttr("noop_with_empty_axes") != 0) {
    context.setOutputShape(0, x);
    if (!noop_keeps_values) return;
    if (auto values = context.knownValues(0)) context.setOutputValues(0, std::move(*values));
    return;
  }
  for (int64_t axis : *axes) reduced[normalizeAxis(context, axis, x.rank(), "input 'axes'")] = true;
  std::vector<Dim> dims;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!reduced[d]) {
      dims.push_back(x[d]);
    } else if (keep_dims) {
      dims.emplace_back(1);
    }
  }
  context.setOutputShape(0, Shape(std::move(dims)));
  // Data propagation: the whole of a known 1-D tensor folded into one value (the element
  // count from a Shape, say).
  if (!fold || x.rank() != 1 || !reduced[0]) return;
  std::optional<std::vector<SymInt>> values = context.knownValues(0);
  if (!values || values->empty()) return;
  SymInt result = (*values)[0];
  for (size_t k = 1; k < values->size(); ++k) result = fold(result, (*values)[k]);
  context.setOutputValues(0, {result});
}

SymInt maxOf(const SymInt& a, const SymInt& b) {
  if (!a.isInt() || !b.isInt()) return SymInt();
  return a.intValue() >= b.intValue() ? a : b;
}

SymInt minOf(const SymInt& a, const SymInt& b) {
  if (!a.isInt() || !b.isInt()) return SymInt();
  return a.intValue() <= b.intValue() ? a : b;
}

OpSchema reduction(const char* op_type, std::vector<DType> types, Fold fold, bool noop_keeps_values) {
  OpSchema schema(op_type);
  schema.input("data", "T")
      .input("axes", "i64", Arity::Optional)
      .output("reduced", "T")
      .attr("keepdims", AttrKind::Int, 1)
      .attr("noop_with_empty_axes", AttrKind::Int, 0)
      .typeConstraint("T", std::move(types));
  schema.inference([fold, noop_keeps_values](InferenceContext& context) { inferReduce(context, fold, noop_keeps_values); });
  return schema;
}

void inferArgReduce(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  size_t axis = normalizeAxis(context, context.intAttr("axis"), x.rank(), "attribute 'axis'");
  std::vector<Dim> dims = x.dims();
  if (context.intAttr("keepdims") != 0) {
    dims[axis] = Dim(1);
  } else {
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

}  // namespace

void registerReductionOps(OpRegistry& registry) {
  const std::vector<DType> wide = floatAndWideIntTypes();
  std::vector<DType> ordered = wide;  // ReduceMax/Min also take bytes and bool
  for (DType type : {DType::I8, DType::U8, DType::Bool}) ordered.push_back(type);
  registry.add(reduction("ReduceSum", wide, std::plus<SymInt>(), true));
  registry.add(reduction("ReduceProd", wide, std::multiplies<SymInt>(), true));
  registry.add(reduction("ReduceMax", ordered, maxOf, true));
  registry.add(reduction("ReduceMin", ordered, minOf, true));
  registry.add(reduction("ReduceMean", wide, nullptr, true));
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare"}) {
    registry.add(reduction(op, wide, nullptr, false));
  }
  for (const char* op : {"ReduceLogSum", "ReduceLogSumExp"}) {
    registry.add(reduction(op, floatTypes(), nullptr, false));
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    registry.add(OpSchema(op)
                     .input("data", "T")
                     .output("reduced", "i64")
                     .attr("axis", AttrKind::Int, 0)
                     .attr("keepdims", AttrKind::Int, 1)
                     .attr("select_last_index", AttrKind::Int, 0)
                     .typeConstraint("T", numericTypes())
                     .inference(inferArgReduce));
  }
}

}  // namespace estuary
