#include "estuary/ops/inference_helpers.h"

#include <algorithm>
#include <cstdint>

#include "estuary/ir/float16.h"

namespace estuary {

Shape broadcastShapes(const InferenceContext& context, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) {
    if (!shape.isRanked()) return Shape::unranked();
    rank = std::max(rank, shape.rank());
  }
  std::vector<Dim> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t static_size = 1;
    const Dim* symbolic = nullptr;  // the one distinct non-static size seen so far
    bool several_symbolic = false;
    for (const Shape& shape : shapes) {
      if (d + shape.rank() < rank) continue;  // shape has no dimension here
      const Dim& dim = shape[d + shape.rank() - rank];
      if (dim.isStatic()) {
        if (dim.value() == 1) continue;
        if (static_size != 1 && dim.value() != static_size) {
          std::string list;
          for (const Shape& each : shapes) list += (list.empty() ? "" : " and ") + each.str();
          context.fail("cannot broadcast shapes ", list, ": sizes ", static_size, " and ",
                       dim.value(), " meet at axis ", d, " of the result");
        }
        static_size = dim.value();
      } else if (!symbolic) {
        symbolic = &dim;
      } else if (!dim.provablyEqual(*symbolic)) {
        several_symbolic = true;
      }
    }
    if (static_size != 1 || !symbolic) {
      dims[d] = Dim(static_size);
    } else if (!several_symbolic) {
      dims[d] = *symbolic;
    }
  }
  return Shape(std::move(dims));
}

Dim unifyDims(const InferenceContext& context, const Dim& a, const Dim& b, std::string_view what) {
  if (a.isStatic() && b.isStatic() && a.value() != b.value()) {
    context.fail(what, " differ: ", a.value(), " vs ", b.value());
  }
  if (a.isStatic() || b.isUnknown()) return a;
  if (b.isStatic() || a.isUnknown()) return b;
  return a;
}

size_t normalizeAxis(const InferenceContext& context, int64_t axis, size_t rank,
                     std::string_view what) {
  int64_t signed_rank = static_cast<int64_t>(rank);
  if (axis < -signed_rank || axis >= signed_rank) {
    context.fail(what, " is ", axis, ", out of range for rank ", rank, " (allowed: [",
                 -signed_rank, ", ", signed_rank - 1, "])");
  }
  return static_cast<size_t>(axis < 0 ? axis + signed_rank : axis);
}

void checkRank(const InferenceContext& context, size_t input, size_t min_rank, size_t max_rank) {
  const Shape& shape = context.inputShape(input);
  if (!context.hasInput(input) || !shape.isRanked()) return;
  if (shape.rank() < min_rank || shape.rank() > max_rank) {
    const OperandSpec& spec = context.schema().inputs()[std::min(
        input, context.schema().inputs().size() - 1)];
    if (min_rank == max_rank) {
      context.fail("input ", input, " '", spec.name, "' must have rank ", min_rank, ", got ",
                   shape.str());
    }
    if (max_rank == SIZE_MAX) {
      context.fail("input ", input, " '", spec.name, "' must have rank >= ", min_rank, ", got ",
                   shape.str());
    }
    context.fail("input ", input, " '", spec.name, "' must have rank ", min_rank, " to ",
                 max_rank, ", got ", shape.str());
  }
}

Dim addOffset(const Dim& dim, int64_t offset) {
  return offset >= 0 ? dim + Dim(offset) : dim - Dim(-offset);
}

Dim productOfDims(const Shape& shape, size_t begin, size_t end) {
  Dim product(1);
  for (size_t d = begin; d < end; ++d) product = product * shape[d];
  return product;
}

void propagateShape(InferenceContext& context, size_t input, size_t output) {
  context.setOutputShape(output, context.inputShape(input));
}

std::optional<double> constantScalar(const InferenceContext& context, size_t input) {
  const Tensor* tensor = context.constantInput(input);
  if (!tensor || tensor->numElements() != 1) return std::nullopt;
  switch (tensor->dtype()) {
    case DType::F32: return tensor->data<float>()[0];
    case DType::F64: return tensor->data<double>()[0];
    case DType::F16: return toFloat(tensor->data<Float16>()[0]);
    case DType::BF16: return toFloat(tensor->data<BFloat16>()[0]);
    default: return std::nullopt;
  }
}

}  // namespace estuary
