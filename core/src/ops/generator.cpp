// Ops that make tensors from attributes or from the shape of other tensors: Constant,
// ConstantOfShape, Range, EyeLike, Shape, Size. They seed data propagation.
#include <cmath>

#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

// The known values of a small integer tensor, or nullopt.
std::optional<std::vector<SymInt>> integerValues(const Tensor& tensor) {
  if (!isInteger(tensor.dtype()) || tensor.shape().size() > 1 ||
      tensor.numElements() > static_cast<int64_t>(kMaxKnownValues)) {
    return std::nullopt;
  }
  std::vector<SymInt> values;
  for (int64_t k = 0; k < tensor.numElements(); ++k) {
    switch (tensor.dtype()) {
      case DType::I64: values.emplace_back(tensor.data<int64_t>()[k]); break;
      case DType::I32: values.emplace_back(int64_t{tensor.data<int32_t>()[k]}); break;
      case DType::I16: values.emplace_back(int64_t{tensor.data<int16_t>()[k]}); break;
      case DType::I8: values.emplace_back(int64_t{tensor.data<int8_t>()[k]}); break;
      default: values.emplace_back(int64_t{tensor.data<uint8_t>()[k]}); break;
    }
  }
  return values;
}

void inferConstant(InferenceContext& context) {
  const Node& node = context.node();
  size_t given = node.attributes().size();
  if (given != 1) {
    context.fail("needs exactly one of the attributes value, value_float, value_floats, value_int, "
                 "value_ints, got ", given);
  }
  const auto& [name, value] = *node.attributes().begin();
  if (name == "value") {
    const Tensor& tensor = value.asTensor();
    context.setOutputType(0, TensorType(tensor.dtype(), Shape::ofStatic(tensor.shape())));
    if (auto values = integerValues(tensor)) context.setOutputValues(0, std::move(*values));
  } else if (name == "value_float") {
    context.setOutputType(0, TensorType(DType::F32, Shape()));
  } else if (name == "value_floats") {
    int64_t count = static_cast<int64_t>(value.asFloats().size());
    context.setOutputType(0, TensorType(DType::F32, Shape({Dim(count)})));
  } else if (name == "value_int") {
    context.setOutputType(0, TensorType(DType::I64, Shape()));
    context.setOutputValues(0, {SymInt(value.asInt())});
  } else if (name == "value_ints") {
    const std::vector<int64_t>& ints = value.asInts();
    context.setOutputType(0, TensorType(DType::I64, Shape({Dim(static_cast<int64_t>(ints.size()))})));
    context.setOutputValues(0, std::vector<SymInt>(ints.begin(), ints.end()));
  } else {
    context.fail("attribute '", name, "' makes a string tensor; Estuary has no string element type");
  }
}

void inferConstantOfShape(InferenceContext& context) {
  checkRank(context, 0, 1, 1);
  DType dtype = DType::F32;
  std::optional<SymInt> fill = SymInt(int64_t{0});
  if (const Attribute* value = context.attr("value")) {
    const Tensor& tensor = value->asTensor();
    if (tensor.numElements() != 1) {
      context.fail("attribute 'value' must hold one element, holds ", tensor.numElements());
    }
    dtype = tensor.dtype();
    std::optional<std::vector<SymInt>> element = integerValues(tensor);
    fill = element ? std::optional<SymInt>((*element)[0]) : std::nullopt;
  }
  std::optional<std::vector<SymInt>> sizes = context.knownValues(0);
  if (!sizes) {
    const Shape& shape_shape = context.inputShape(0);
    if (shape_shape.isRanked() && shape_shape[0].isStatic()) {
      context.setOutputType(0, TensorType(dtype, Shape(std::vector<Dim>(shape_shape[0].value()))));
    } else {
      context.setOutputType(0, TensorType(dtype, Shape::unranked()));
    }
    return;
  }
  std::vector<Dim> dims;
  for (const SymInt& size : *sizes) {
    if (size.isInt() && size.intValue() < 0) {
      context.fail("input 'input' holds a negative size ", size.intValue());
    }
    dims.push_back(size.toDim());
  }
  Shape shape(std::move(dims));
  if (fill && shape.rank() <= 1) {
    Dim count = shape.numElements();
    if (count.isStatic() && count.value() <= static_cast<int64_t>(kMaxKnownValues)) {
      context.setOutputValues(0, std::vector<SymInt>(count.value(), *fill));
    }
  }
  context.setOutputType(0, TensorType(dtype, std::move(shape)));
}

void inferRange(InferenceContext& context) {
  // ONNX specifies scalars, but its reference (np.arange) takes any one-element tensor and
  // its own function bodies pass them (AffineGrid's expansion: a [1] from Split); a dim
  // not known to be 1 is checked by the kernel.
  for (size_t i = 0; i < 3; ++i) {
    const Shape& shape = context.inputShape(i);
    if (!shape.isRanked()) continue;
    for (size_t d = 0; d < shape.rank(); ++d) {
      if (shape[d].isStatic() && shape[d].value() != 1) {
        context.fail("input ", i, " '", context.schema().inputs()[i].name, "' must be a scalar, got ", shape.str());
      }
    }
  }
  Dim length;
  std::optional<std::vector<SymInt>> start = context.knownValues(0);
  std::optional<std::vector<SymInt>> limit = context.knownValues(1);
  std::optional<std::vector<SymInt>> delta = context.knownValues(2);
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
    const SymInt& first = (*start)[0];
    const SymInt& step = (*delta)[0];
    if (step.isInt() && step.intValue() == 0) context.fail("input 'delta' is 0");
    SymInt span = (*limit)[0] - first;
    if (span.isInt() && step.isInt()) {
      int64_t s = step.intValue();
      int64_t count = s > 0 ? (span.intValue() + s - 1) / s : (span.intValue() + s + 1) / s;
      length = Dim(std::max<int64_t>(count, 0));
    } else if (step.isInt() && step.intValue() > 0) {
      // ceil(span / step) is exact only where the division is.
      length = (span / step).toDim();
    }
    if (length.isStatic() && length.value() <= static_cast<int64_t>(kMaxKnownValues) &&
        first.isInt() && step.isInt()) {
      std::vector<SymInt> values;
      for (int64_t k = 0; k < length.value(); ++k) {
        values.emplace_back(first.intValue() + k * step.intValue());
      }
      context.setOutputValues(0, std::move(values));
    }
  } else {
    std::optional<double> first = constantScalar(context, 0);
    std::optional<double> last = constantScalar(context, 1);
    std::optional<double> step = constantScalar(context, 2);
    if (first && last && step) {
      if (*step == 0) context.fail("input 'delta' is 0");
      double count = std::ceil((*last - *first) / *step);
      length = Dim(count > 0 ? static_cast<int64_t>(count) : 0);
    }
  }
  context.setOutputShape(0, Shape({length}));
}

void inferShape(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) {
    context.setOutputShape(0, Shape({Dim::unknown()}));
    return;
  }
  int64_t rank = static_cast<int64_t>(x.rank());
  auto clampIndex = [rank](int64_t index) {
    if (index < 0) index += rank;
    return std::clamp<int64_t>(index, 0, rank);
  };
  int64_t start = clampIndex(context.intAttr("start"));
  int64_t end = context.attr("end") ? clampIndex(context.intAttr("end")) : rank;
  std::vector<SymInt> values;
  for (int64_t d = start; d < end; ++d) values.emplace_back(x[d]);
  context.setOutputShape(0, Shape({Dim(static_cast<int64_t>(values.size()))}));
  context.setOutputValues(0, std::move(values));
}

void inferSize(InferenceContext& context) {
  context.setOutputShape(0, Shape());
  const Shape& x = context.inputShape(0);
  if (x.isRanked()) context.setOutputValues(0, {SymInt(x.numElements())});
}

void inferEyeLike(InferenceContext& context) {
  checkRank(context, 0, 2, 2);
  const Attribute* dtype = context.attr("dtype");
  context.setOutputType(0, TensorType(dtype ? dtype->asType() : context.inputType(0).dtype,
                                      context.inputShape(0)));
}

}  // namespace

void registerGeneratorOps(OpRegistry& registry) {
  registry.add(OpSchema("Constant")
                   .output("output", "T")
                   .attr("value", AttrKind::Tensor)
                   .attr("value_float", AttrKind::Float)
                   .attr("value_floats", AttrKind::Floats)
                   .attr("value_int", AttrKind::Int)
                   .attr("value_ints", AttrKind::Ints)
                   .attr("value_string", AttrKind::String)
                   .attr("value_strings", AttrKind::Strings)
                   .typeConstraint("T", allTypes())
                   .inference(inferConstant));
  registry.add(OpSchema("ConstantOfShape")
                   .input("input", "i64")
                   .output("output", "T2")
                   .attr("value", AttrKind::Tensor)
                   .typeConstraint("T2", allTypes())
                   .inference(inferConstantOfShape));
  std::vector<DType> range_types = floatTypes();
  for (DType type : {DType::I16, DType::I32, DType::I64}) range_types.push_back(type);
  registry.add(OpSchema("Range")
                   .input("start", "T")
                   .input("limit", "T")
                   .input("delta", "T")
                   .output("output", "T")
                   .attr("stash_type", AttrKind::Type, DType::F32)
                   .typeConstraint("T", range_types)
                   .inference(inferRange));
  registry.add(OpSchema("EyeLike")
                   .input("input", "T1")
                   .output("output", "T2")
                   .attr("dtype", AttrKind::Type)
                   .attr("k", AttrKind::Int, 0)
                   .typeConstraint("T1", allTypes())
                   .typeConstraint("T2", allTypes())
                   .inference(inferEyeLike));
  registry.add(OpSchema("Shape")
                   .input("data", "T")
                   .output("shape", "i64")
                   .attr("end", AttrKind::Int)
                   .attr("start", AttrKind::Int, 0)
                   .typeConstraint("T", allTypes())
                   .inference(inferShape));
  registry.add(OpSchema("Size")
                   .input("data", "T")
                   .output("size", "i64")
                   .typeConstraint("T", allTypes())
                   .inference(inferSize));
}

}  // namespace estuary
