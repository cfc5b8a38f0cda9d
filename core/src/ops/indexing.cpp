// Ops that select or place elements by index or position: Gather, GatherElements,
// GatherND, ScatterElements, ScatterND, TopK, NonZero, OneHot, Trilu, CumSum.
#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

void inferGather(InferenceContext& context) {
  const Shape& data = context.inputShape(0);
  const Shape& indices = context.inputShape(1);
  if (!data.isRanked()) return;
  if (data.rank() == 0) context.fail("input 0 'data' is a scalar; Gather needs rank >= 1");
  size_t axis = normalizeAxis(context, context.intAttr("axis"), data.rank(), "attribute 'axis'");
  if (!indices.isRanked()) return;
  std::vector<Dim> dims(data.dims().begin(), data.dims().begin() + axis);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  context.setOutputShape(0, Shape(std::move(dims)));
  // Data propagation: picking elements of a known 1-D tensor (a dimension out of Shape).
  if (data.rank() != 1 || indices.rank() > 1) return;
  std::optional<std::vector<SymInt>> values = context.knownValues(0);
  std::optional<std::vector<int64_t>> picks = context.knownInts(1);
  if (!values || !picks) return;
  int64_t n = static_cast<int64_t>(values->size());
  std::vector<SymInt> picked;
  for (int64_t index : *picks) {
    if (index < -n || index >= n) {
      context.fail("index ", index, " is out of range for axis 0 of size ", n);
    }
    picked.push_back((*values)[index < 0 ? index + n : index]);
  }
  context.setOutputValues(0, std::move(picked));
}

void inferGatherElements(InferenceContext& context) {
  const Shape& data = context.inputShape(0);
  const Shape& indices = context.inputShape(1);
  if (data.isRanked() && indices.isRanked() && data.rank() != indices.rank()) {
    context.fail("data ", data.str(), " and indices ", indices.str(), " must have the same rank");
  }
  if (data.isRanked()) normalizeAxis(context, context.intAttr("axis"), data.rank(), "attribute 'axis'");
  context.setOutputShape(0, indices);
}

void inferGatherNd(InferenceContext& context) {
  const Shape& data = context.inputShape(0);
  const Shape& indices = context.inputShape(1);
  if (!data.isRanked() || !indices.isRanked()) return;
  int64_t batch_dims = context.intAttr("batch_dims");
  if (indices.rank() < 1 || batch_dims < 0 ||
      batch_dims >= static_cast<int64_t>(std::min(data.rank(), indices.rank()))) {
    context.fail("attribute 'batch_dims' is ", batch_dims, ", must be below the ranks of data ",
                 data.str(), " and indices ", indices.str());
  }
  const Dim& depth = indices[indices.rank() - 1];
  if (!depth.isStatic()) return;
  size_t consumed = static_cast<size_t>(batch_dims) + static_cast<size_t>(depth.value());
  if (consumed > data.rank()) {
    context.fail("indices ", indices.str(), " index ", depth.value(), " axes beyond batch_dims ",
                 batch_dims, " of data ", data.str());
  }
  std::vector<Dim> dims(indices.dims().begin(), indices.dims().end() - 1);
  dims.insert(dims.end(), data.dims().begin() + consumed, data.dims().end());
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferScatter(InferenceContext& context) {
  const std::string& reduction = context.stringAttr("reduction");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    context.fail("attribute 'reduction' is '", reduction, "', expected none, add, mul, max or min");
  }
  sameShapeAsFirstInput(context);
}

void inferTopK(InferenceContext& context) {
  checkRank(context, 1, 1, 1);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  size_t axis = normalizeAxis(context, context.intAttr("axis"), x.rank(), "attribute 'axis'");
  std::vector<Dim> dims = x.dims();
  dims[axis] = Dim::unknown();
  if (std::optional<std::vector<SymInt>> k = context.knownValues(1)) {
    if (k->size() != 1) context.fail("input 'K' must hold one value, holds ", k->size());
    const SymInt& count = (*k)[0];
    if (count.isInt()) {
      if (count.intValue() < 0) context.fail("input 'K' is negative: ", count.intValue());
      if (x[axis].isStatic() && count.intValue() > x[axis].value()) {
        context.fail("K=", count.intValue(), " exceeds the size ", x[axis].value(), " of axis ",
                     axis, " of ", x.str());
      }
    }
    dims[axis] = count.toDim();
  }
  context.setOutputShape(0, Shape(dims));
  context.setOutputShape(1, Shape(std::move(dims)));
}

void inferNonZero(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  context.setOutputShape(
      0, Shape({x.isRanked() ? Dim(static_cast<int64_t>(x.rank())) : Dim::unknown(), Dim::unknown()}));
}

void inferOneHot(InferenceContext& context) {
  checkRank(context, 1, 0, 1);
  checkRank(context, 2, 1, 1);
  const Shape& indices = context.inputShape(0);
  if (!indices.isRanked()) return;
  size_t rank = indices.rank() + 1;
  size_t axis = normalizeAxis(context, context.intAttr("axis"), rank, "attribute 'axis'");
  Dim depth;
  if (std::optional<std::vector<SymInt>> values = context.knownValues(1)) {
    if (values->size() == 1) depth = (*values)[0].toDim();
  } else if (std::optional<double> value = constantScalar(context, 1)) {
    if (!(*value >= 1)) context.fail("input 'depth' must be at least 1, got ", *value);
    depth = Dim(static_cast<int64_t>(*value));  // a float depth is cast to an integer
  }
  std::vector<Dim> dims = indices.dims();
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  context.setOutputShape(0, Shape(std::move(dims)));
}

}  // namespace

void registerIndexingOps(OpRegistry& registry) {
  const std::vector<DType> all = allTypes();
  const std::vector<DType> one_hot_index_types = {DType::F32, DType::F16, DType::F64, DType::I8,
                                               DType::I16, DType::I32, DType::I64, DType::U8};
  registry.add(OpSchema("Gather")
                   .input("data", "T")
                   .input("indices", "Tind")
                   .output("output", "T")
                   .attr("axis", AttrKind::Int, 0)
                   .typeConstraint("T", all)
                   .typeConstraint("Tind", indexTypes())
                   .inference(inferGather));
  registry.add(OpSchema("GatherElements")
                   .input("data", "T")
                   .input("indices", "Tind")
                   .output("output", "T")
                   .attr("axis", AttrKind::Int, 0)
                   .typeConstraint("T", all)
                   .typeConstraint("Tind", indexTypes())
                   .inference(inferGatherElements));
  registry.add(OpSchema("GatherND")
                   .input("data", "T")
                   .input("indices", "i64")
                   .output("output", "T")
                   .attr("batch_dims", AttrKind::Int, 0)
                   .typeConstraint("T", all)
                   .inference(inferGatherNd));
  registry.add(OpSchema("ScatterElements")
                   .input("data", "T")
                   .input("indices", "Tind")
                   .input("updates", "T")
                   .output("output", "T")
                   .attr("axis", AttrKind::Int, 0)
                   .attr("reduction", AttrKind::String, "none")
                   .typeConstraint("T", all)
                   .typeConstraint("Tind", indexTypes())
                   .inference([](InferenceContext& context) {
                     const Shape& data = context.inputShape(0);
                     if (data.isRanked()) {
                       normalizeAxis(context, context.intAttr("axis"), data.rank(), "attribute 'axis'");
                     }
                     inferScatter(context);
                   }));
  registry.add(OpSchema("ScatterND")
                   .input("data", "T")
                   .input("indices", "i64")
                   .input("updates", "T")
                   .output("output", "T")
                   .attr("reduction", AttrKind::String, "none")
                   .typeConstraint("T", all)
                   .inference(inferScatter));
  registry.add(OpSchema("TopK")
                   .input("X", "T")
                   .input("K", "i64")
                   .output("Values", "T")
                   .output("Indices", "i64")
                   .attr("axis", AttrKind::Int, -1)
                   .attr("largest", AttrKind::Int, 1)
                   .attr("sorted", AttrKind::Int, 1)
                   .typeConstraint("T", numericTypes())
                   .inference(inferTopK));
  registry.add(OpSchema("NonZero")
                   .input("X", "T")
                   .output("Y", "i64")
                   .typeConstraint("T", all)
                   .inference(inferNonZero));
  registry.add(OpSchema("OneHot")
                   .input("indices", "T1")
                   .input("depth", "T2")
                   .input("values", "T3")
                   .output("output", "T3")
                   .attr("axis", AttrKind::Int, -1)
                   .typeConstraint("T1", one_hot_index_types)
                   .typeConstraint("T2", one_hot_index_types)
                   .typeConstraint("T3", all)
                   .inference(inferOneHot));
  registry.add(OpSchema("Trilu")
                   .input("input", "T")
                   .input("k", "i64", Arity::Optional)
                   .output("output", "T")
                   .attr("upper", AttrKind::Int, 1)
                   .typeConstraint("T", all)
                   .inference([](InferenceContext& context) {
                     checkRank(context, 0, 2, SIZE_MAX);
                     checkRank(context, 1, 0, 0);
                     sameShapeAsFirstInput(context);
                   }));
  registry.add(OpSchema("CumSum")
                   .input("x", "T")
                   .input("axis", "T2")
                   .output("y", "T")
                   .attr("exclusive", AttrKind::Int, 0)
                   .attr("reverse", AttrKind::Int, 0)
                   .typeConstraint("T", floatAndWideIntTypes())
                   .typeConstraint("T2", indexTypes())
                   .inference([](InferenceContext& context) {
                     checkRank(context, 1, 0, 1);
                     const Shape& x = context.inputShape(0);
                     std::optional<std::vector<int64_t>> axis = context.knownInts(1);
                     if (x.isRanked() && axis && axis->size() == 1) {
                       normalizeAxis(context, (*axis)[0], x.rank(), "input 'axis'");
                     }
                     sameShapeAsFirstInput(context);
                   }));
}

}  // namespace estuary
