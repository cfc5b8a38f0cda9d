// Ops that rearrange, cut, join or replicate tensors without computing on elements:
// Reshape, Transpose, Concat, Split, Slice, Squeeze, Unsqueeze, Flatten, Expand, Tile,
// Pad, DepthToSpace, SpaceToDepth, Resize.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

// Slice ends at or beyond this mean "to the end" even for a symbolic dimension
// (exporters write INT32_MAX or INT64_MAX).
constexpr int64_t kToTheEnd = std::numeric_limits<int32_t>::max();

std::vector<Dim> unknownDims(size_t rank) { return std::vector<Dim>(rank, Dim::unknown()); }

// The output has known values when the input's values are known and pass unchanged
// (Reshape, Squeeze, Unsqueeze of shape tensors).
void forwardValues(InferenceContext& context) {
  const TensorType& result = context.outputTypes()[0];
  if (!result.shape.isRanked() || result.shape.rank() > 1) return;
  if (auto values = context.knownValues(0)) context.setOutputValues(0, std::move(*values));
}

// The normalized, duplicate-free axes of a rank-`rank` tensor given by input or attribute
// values `axes`.
std::vector<size_t> normalizeAxes(const InferenceContext& context, const std::vector<int64_t>& axes,
                                  size_t rank, std::string_view what) {
  std::vector<size_t> result;
  result.reserve(axes.size());
  for (int64_t axis : axes) {
    size_t normalized = normalizeAxis(context, axis, rank, what);
    if (std::find(result.begin(), result.end(), normalized) != result.end()) {
      context.fail(what, " repeats axis ", axis);
    }
    result.push_back(normalized);
  }
  return result;
}

void inferReshape(InferenceContext& context) {
  checkRank(context, 1, 1, 1);
  const Shape& x = context.inputShape(0);
  std::optional<std::vector<SymInt>> target = context.knownValues(1);
  if (!target) {
    const Shape& shape_shape = context.inputShape(1);
    if (shape_shape.isRanked() && shape_shape.rank() == 1 && shape_shape[0].isStatic()) {
      context.setOutputShape(0, Shape(unknownDims(shape_shape[0].value())));
    }
    return;
  }
  bool allow_zero = context.intAttr("allowzero") != 0;
  std::vector<Dim> dims(target->size());
  std::optional<size_t> inferred_axis;
  bool has_zero = false;
  for (size_t k = 0; k < target->size(); ++k) {
    const SymInt& value = (*target)[k];
    if (!value.isInt()) {
      dims[k] = value.toDim();
      continue;
    }
    int64_t size = value.intValue();
    if (size == -1) {
      if (inferred_axis) {
        context.fail("input 'shape' has more than one -1 (at indices ", *inferred_axis, " and ", k,
                     ")");
      }
      inferred_axis = k;
    } else if (size < -1) {
      context.fail("shape value ", size, " at index ", k, " is invalid (sizes are >= -1)");
    } else if (size == 0 && !allow_zero) {
      // 0 copies the input's dimension at the same index.
      if (x.isRanked()) {
        if (k >= x.rank()) {
          context.fail("shape value 0 at index ", k, " copies a dimension of the input ", x.str(),
                       ", which has rank ", x.rank());
        }
        dims[k] = x[k];
      }
    } else {
      has_zero |= size == 0;
      dims[k] = Dim(size);
    }
  }
  if (has_zero && inferred_axis) {
    context.fail("with allowzero=1 a shape cannot hold both 0 and -1");
  }
  if (x.isRanked()) {
    Dim total = x.numElements();
    Dim known(1);
    for (size_t k = 0; k < dims.size(); ++k) {
      if (k != inferred_axis) known = known * dims[k];
    }
    if (inferred_axis) {
      if (total.isStatic() && known.isStatic() && known.value() != 0 &&
          total.value() % known.value() != 0) {
        context.fail("cannot reshape ", x.str(), " (", total.value(), " elements) to a shape with -1 and ",
                     known.value(), " elements elsewhere");
      }
      if (!(known.isStatic() && known.value() == 0)) dims[*inferred_axis] = total.divideExactly(known);
    } else if (total.isStatic() && known.isStatic() && total.value() != known.value()) {
      context.fail("cannot reshape ", x.str(), " (", total.value(), " elements) to ",
                   Shape(dims).str(), " (", known.value(), " elements)");
    }
  }
  context.setOutputShape(0, Shape(std::move(dims)));
  forwardValues(context);
}

void inferTranspose(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  std::vector<int64_t> perm;
  if (const Attribute* attribute = context.attr("perm")) {
    perm = attribute->asInts();
  } else {
    for (size_t d = x.rank(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != x.rank()) {
    context.fail("attribute 'perm' has ", perm.size(), " values for input of rank ", x.rank(), " ",
                 x.str());
  }
  std::vector<size_t> axes = normalizeAxes(context, perm, x.rank(), "attribute 'perm'");
  std::vector<Dim> dims;
  dims.reserve(axes.size());
  for (size_t axis : axes) dims.push_back(x[axis]);
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferConcat(InferenceContext& context) {
  std::optional<size_t> rank;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    const Shape& shape = context.inputShape(i);
    if (!shape.isRanked()) continue;
    if (shape.rank() == 0) context.fail("input ", i, " is a scalar; Concat needs rank >= 1");
    if (rank && *rank != shape.rank()) {
      context.fail("inputs have different ranks: input ", i, " is ", shape.str(), ", input 0 is ",
                   context.inputShape(0).str());
    }
    rank = shape.rank();
  }
  if (!rank) return;
  size_t axis = normalizeAxis(context, context.intAttr("axis"), *rank, "attribute 'axis'");
  std::vector<Dim> dims = unknownDims(*rank);
  Dim sum(0);
  bool first = true;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    const Shape& shape = context.inputShape(i);
    if (!shape.isRanked()) {
      sum = Dim::unknown();
      continue;
    }
    sum = sum + shape[axis];
    for (size_t d = 0; d < *rank; ++d) {
      if (d == axis) continue;
      dims[d] = first ? shape[d]
                      : unifyDims(context, dims[d], shape[d],
                                  "sizes at axis " + std::to_string(d) + " of input " +
                                      std::to_string(i) + " " + shape.str() + " and earlier inputs");
    }
    first = false;
  }
  dims[axis] = sum;
  context.setOutputShape(0, Shape(std::move(dims)));
  if (*rank == 1) {
    std::vector<SymInt> values;
    for (size_t i = 0; i < context.numInputs(); ++i) {
      std::optional<std::vector<SymInt>> part = context.knownValues(i);
      if (!part) return;
      values.insert(values.end(), part->begin(), part->end());
    }
    context.setOutputValues(0, std::move(values));
  }
}

void inferSplit(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  size_t outputs = context.numOutputs();
  const Attribute* num_outputs = context.attr("num_outputs");
  if (num_outputs && context.hasInput(1)) {
    context.fail("input 'split' and attribute 'num_outputs' cannot both be given");
  }
  if (!num_outputs && !context.hasInput(1)) {
    context.fail("needs either input 'split' or attribute 'num_outputs'");
  }
  if (num_outputs && num_outputs->asInt() != static_cast<int64_t>(outputs)) {
    context.fail("attribute 'num_outputs' is ", num_outputs->asInt(), " but the node has ", outputs,
                 " outputs");
  }
  if (!x.isRanked()) return;
  size_t axis = normalizeAxis(context, context.intAttr("axis"), x.rank(), "attribute 'axis'");
  const Dim& total = x[axis];
  std::vector<Dim> sizes(outputs);
  if (context.hasInput(1)) {
    checkRank(context, 1, 1, 1);
    if (std::optional<std::vector<int64_t>> split = context.knownInts(1)) {
      if (split->size() != outputs) {
        context.fail("input 'split' has ", split->size(), " sizes but the node has ", outputs,
                     " outputs");
      }
      int64_t sum = 0;
      for (int64_t size : *split) {
        if (size < 0) context.fail("input 'split' holds a negative size ", size);
        sum += size;
      }
      if (total.isStatic() && total.value() != sum) {
        context.fail("split sizes add up to ", sum, " but axis ", axis, " of ", x.str(), " has ",
                     total.value());
      }
      for (size_t k = 0; k < outputs; ++k) sizes[k] = Dim((*split)[k]);
    }
  } else if (total.isStatic()) {
    // Equal chunks of ceil(total / n); the last one takes what remains.
    int64_t n = static_cast<int64_t>(outputs);
    int64_t chunk = (total.value() + n - 1) / n;
    if (chunk * (n - 1) > total.value()) {
      context.fail("cannot split axis ", axis, " of ", x.str(), " into ", n, " non-empty chunks");
    }
    for (size_t k = 0; k < outputs; ++k) {
      sizes[k] = Dim(k + 1 < outputs ? chunk : total.value() - chunk * (n - 1));
    }
  } else {
    Dim chunk = total.divideExactly(Dim(static_cast<int64_t>(outputs)));
    std::fill(sizes.begin(), sizes.end(), chunk);
  }
  for (size_t k = 0; k < outputs; ++k) {
    std::vector<Dim> dims = x.dims();
    dims[axis] = sizes[k];
    context.setOutputShape(k, Shape(std::move(dims)));
  }
  // The pieces of a known 1-D tensor (Split of a shape into N, C, H, W) are known too.
  std::optional<std::vector<SymInt>> values = context.knownValues(0);
  if (!values || x.rank() != 1) return;
  size_t offset = 0;
  for (size_t k = 0; k < outputs; ++k) {
    if (!sizes[k].isStatic() || offset + static_cast<size_t>(sizes[k].value()) > values->size()) return;
    auto first = values->begin() + static_cast<std::ptrdiff_t>(offset);
    context.setOutputValues(k, std::vector<SymInt>(first, first + sizes[k].value()));
    offset += static_cast<size_t>(sizes[k].value());
  }
}

// ONNX Slice on an axis of static size n: the number of elements taken.
int64_t sliceLength(int64_t n, int64_t start, int64_t end, int64_t step) {
  if (n == 0) return 0;
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

// The slice of a symbolic dimension, where it can be exact: a unit step from a
// non-negative start to the end or to an offset from the end, or a full reversal.
Dim sliceSymbolic(const Dim& dim, int64_t start, int64_t end, int64_t step) {
  if (step == 1 && start >= 0 && end >= kToTheEnd) return addOffset(dim, -start);
  if (step == 1 && start >= 0 && end < 0) return addOffset(dim, end - start);
  if (step == -1 && (start == -1 || start >= kToTheEnd) && end <= -kToTheEnd) return dim;
  return Dim::unknown();
}

void inferSlice(InferenceContext& context) {
  for (size_t i = 1; i < 5; ++i) checkRank(context, i, 1, 1);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  std::optional<std::vector<int64_t>> starts = context.knownInts(1);
  std::optional<std::vector<int64_t>> ends = context.knownInts(2);
  std::optional<std::vector<int64_t>> axes_given =
      context.hasInput(3) ? context.knownInts(3) : std::nullopt;
  if (context.hasInput(3) && !axes_given) {
    context.setOutputShape(0, Shape(unknownDims(x.rank())));
    return;
  }
  std::vector<Dim> dims = x.dims();
  if (!starts || !ends) {
    if (!axes_given) {
      context.setOutputShape(0, Shape(unknownDims(x.rank())));
      return;
    }
    for (size_t axis : normalizeAxes(context, *axes_given, x.rank(), "input 'axes'")) {
      dims[axis] = Dim::unknown();
    }
    context.setOutputShape(0, Shape(std::move(dims)));
    return;
  }
  size_t count = starts->size();
  std::vector<int64_t> axes_values;
  if (axes_given) {
    axes_values = *axes_given;
  } else {
    for (size_t k = 0; k < count; ++k) axes_values.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> steps(count, 1);
  if (context.hasInput(4)) {
    std::optional<std::vector<int64_t>> given = context.knownInts(4);
    if (!given) {
      for (size_t axis : normalizeAxes(context, axes_values, x.rank(), "input 'axes'")) {
        dims[axis] = Dim::unknown();
      }
      context.setOutputShape(0, Shape(std::move(dims)));
      return;
    }
    steps = *given;
  }
  if (ends->size() != count || axes_values.size() != count || steps.size() != count) {
    context.fail("starts, ends, axes and steps must have the same length, got ", count, ", ",
                 ends->size(), ", ", axes_values.size(), ", ", steps.size());
  }
  std::vector<size_t> axes = normalizeAxes(context, axes_values, x.rank(), "input 'axes'");
  for (size_t k = 0; k < count; ++k) {
    if (steps[k] == 0) context.fail("input 'steps' holds a 0 at position ", k);
    const Dim& dim = x[axes[k]];
    dims[axes[k]] = dim.isStatic() ? Dim(sliceLength(dim.value(), (*starts)[k], (*ends)[k], steps[k]))
                                   : sliceSymbolic(dim, (*starts)[k], (*ends)[k], steps[k]);
  }
  context.setOutputShape(0, Shape(std::move(dims)));
  // Data propagation: a slice of a known 1-D tensor.
  std::optional<std::vector<SymInt>> values = context.knownValues(0);
  if (x.rank() != 1 || count != 1 || !values || values->empty()) return;
  int64_t n = static_cast<int64_t>(values->size());
  int64_t start = (*starts)[0], end = (*ends)[0], step = steps[0];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = step > 0 ? std::clamp<int64_t>(start, 0, n) : std::clamp<int64_t>(start, 0, n - 1);
  end = step > 0 ? std::clamp<int64_t>(end, 0, n) : std::clamp<int64_t>(end, -1, n - 1);
  std::vector<SymInt> sliced;
  for (int64_t k = start; step > 0 ? k < end : k > end; k += step) sliced.push_back((*values)[k]);
  context.setOutputValues(0, std::move(sliced));
}

void inferSqueeze(InferenceContext& context) {
  checkRank(context, 1, 1, 1);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  std::vector<bool> removed(x.rank(), false);
  if (context.hasInput(1)) {
    std::optional<std::vector<int64_t>> axes = context.knownInts(1);
    if (!axes) return;
    for (size_t axis : normalizeAxes(context, *axes, x.rank(), "input 'axes'")) {
      if (x[axis].isStatic() && x[axis].value() != 1) {
        context.fail("cannot squeeze axis ", axis, " of ", x.str(), ": its size is ",
                     x[axis].value(), ", not 1");
      }
      removed[axis] = true;
    }
  } else {
    // Without axes every size-1 axis goes; an axis of unknown size may or may not.
    for (size_t d = 0; d < x.rank(); ++d) {
      if (!x[d].isStatic()) return;
      removed[d] = x[d].value() == 1;
    }
  }
  std::vector<Dim> dims;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!removed[d]) dims.push_back(x[d]);
  }
  context.setOutputShape(0, Shape(std::move(dims)));
  forwardValues(context);
}

void inferUnsqueeze(InferenceContext& context) {
  // 'axes' is 1-D in the spec; ONNX's reference (np.expand_dims) and its own function bodies
  // (AffineGrid's expansion) also use a scalar.
  checkRank(context, 1, 0, 1);
  const Shape& x = context.inputShape(0);
  std::optional<std::vector<int64_t>> axes = context.knownInts(1);
  if (!x.isRanked() || !axes) return;
  size_t rank = x.rank() + axes->size();
  std::vector<size_t> inserted = normalizeAxes(context, *axes, rank, "input 'axes'");
  std::vector<Dim> dims(rank);
  std::vector<bool> is_new(rank, false);
  for (size_t axis : inserted) is_new[axis] = true;
  size_t next = 0;
  for (size_t d = 0; d < rank; ++d) dims[d] = is_new[d] ? Dim(1) : x[next++];
  context.setOutputShape(0, Shape(std::move(dims)));
  forwardValues(context);
}

void inferFlatten(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  int64_t axis = context.intAttr("axis");
  if (!x.isRanked()) {
    context.setOutputShape(0, Shape(unknownDims(2)));
    return;
  }
  int64_t rank = static_cast<int64_t>(x.rank());
  if (axis < -rank || axis > rank) {
    context.fail("attribute 'axis' is ", axis, ", out of range for rank ", rank, " (allowed: [",
                 -rank, ", ", rank, "])");
  }
  size_t split = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  context.setOutputShape(0, Shape({productOfDims(x, 0, split), productOfDims(x, split, x.rank())}));
}

void inferExpand(InferenceContext& context) {
  checkRank(context, 1, 1, 1);
  const Shape& x = context.inputShape(0);
  std::optional<std::vector<SymInt>> target = context.knownValues(1);
  std::vector<Dim> dims;
  if (target) {
    for (const SymInt& value : *target) {
      if (value.isInt() && value.intValue() < 0) {
        context.fail("input 'shape' holds a negative size ", value.intValue());
      }
      dims.push_back(value.toDim());
    }
  } else {
    const Shape& shape_shape = context.inputShape(1);
    if (!shape_shape.isRanked() || !shape_shape[0].isStatic()) return;
    dims = unknownDims(shape_shape[0].value());
  }
  context.setOutputShape(0, broadcastShapes(context, {x, Shape(std::move(dims))}));
}

void inferTile(InferenceContext& context) {
  checkRank(context, 1, 1, 1);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  std::optional<std::vector<int64_t>> repeats = context.knownInts(1);
  if (!repeats) {
    context.setOutputShape(0, Shape(unknownDims(x.rank())));
    return;
  }
  if (repeats->size() != x.rank()) {
    context.fail("input 'repeats' has ", repeats->size(), " values for input ", x.str(), " of rank ",
                 x.rank());
  }
  std::vector<Dim> dims(x.rank());
  for (size_t d = 0; d < x.rank(); ++d) {
    if ((*repeats)[d] < 0) context.fail("input 'repeats' holds a negative count ", (*repeats)[d]);
    dims[d] = x[d] * Dim((*repeats)[d]);
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferPad(InferenceContext& context) {
  const std::string& mode = context.stringAttr("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    context.fail("attribute 'mode' is '", mode, "', expected constant, reflect, edge or wrap");
  }
  checkRank(context, 1, 1, 1);
  checkRank(context, 2, 0, 1);
  checkRank(context, 3, 1, 1);
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  std::optional<std::vector<int64_t>> pads = context.knownInts(1);
  std::vector<int64_t> axes_values;
  if (context.hasInput(3)) {
    std::optional<std::vector<int64_t>> given = context.knownInts(3);
    if (!given) pads.reset();
    else axes_values = *given;
  } else {
    for (size_t d = 0; d < x.rank(); ++d) axes_values.push_back(static_cast<int64_t>(d));
  }
  if (!pads) {
    context.setOutputShape(0, Shape(unknownDims(x.rank())));
    return;
  }
  std::vector<size_t> axes = normalizeAxes(context, axes_values, x.rank(), "input 'axes'");
  if (pads->size() != 2 * axes.size()) {
    context.fail("input 'pads' has ", pads->size(), " values, expected ", 2 * axes.size(),
                 " (begin and end for each of ", axes.size(), " axes)");
  }
  std::vector<Dim> dims = x.dims();
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t total = 0, padded = 0;
    const Dim& dim = dims[axes[k]];
    if (__builtin_add_overflow((*pads)[k], (*pads)[k + axes.size()], &total) ||
        (dim.isStatic() && __builtin_add_overflow(dim.value(), total, &padded))) {
      context.fail("pads ", (*pads)[k], " and ", (*pads)[k + axes.size()], " on axis ", axes[k], " of ", x.str(),
                   " make a size past 64 bits");
    }
    if (dim.isStatic() && padded < 0) {
      context.fail("pads ", (*pads)[k], " and ", (*pads)[k + axes.size()], " would make axis ",
                   axes[k], " of ", x.str(), " negative");
    }
    dims[axes[k]] = addOffset(dim, total);
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferDepthToSpace(InferenceContext& context, bool to_space) {
  checkRank(context, 0, 4, 4);
  int64_t block = context.intAttr("blocksize");
  if (block < 1) context.fail("attribute 'blocksize' is ", block, ", must be >= 1");
  const std::string& mode = context.stringAttr("mode");
  if (mode != "DCR" && mode != "CRD") {
    context.fail("attribute 'mode' is '", mode, "', expected DCR or CRD");
  }
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  Dim square(block * block);
  if (to_space) {
    if (x[1].isStatic() && x[1].value() % (block * block) != 0) {
      context.fail("channels of ", x.str(), " are not divisible by blocksize^2 = ", block * block);
    }
    context.setOutputShape(0, Shape({x[0], x[1].divideExactly(square), x[2] * Dim(block),
                                     x[3] * Dim(block)}));
    return;
  }
  for (size_t d = 2; d < 4; ++d) {
    if (x[d].isStatic() && x[d].value() % block != 0) {
      context.fail("spatial size ", x[d].value(), " of ", x.str(), " is not divisible by blocksize ",
                   block);
    }
  }
  context.setOutputShape(0, Shape({x[0], x[1] * square, x[2].divideExactly(Dim(block)),
                                   x[3].divideExactly(Dim(block))}));
}

// The float values of a constant input (Resize's scales).
std::optional<std::vector<double>> constantFloats(const InferenceContext& context, size_t input) {
  const Tensor* tensor = context.constantInput(input);
  if (!tensor || tensor->shape().size() != 1) return std::nullopt;
  std::vector<double> values;
  for (int64_t k = 0; k < tensor->numElements(); ++k) {
    if (tensor->dtype() == DType::F32) {
      values.push_back(tensor->data<float>()[k]);
    } else if (tensor->dtype() == DType::F64) {
      values.push_back(tensor->data<double>()[k]);
    } else {
      return std::nullopt;
    }
  }
  return values;
}

// An input given as an empty tensor counts as absent (exporters fill unused inputs so).
bool givenAndNotEmpty(const InferenceContext& context, size_t input) {
  if (!context.hasInput(input)) return false;
  const Shape& shape = context.inputShape(input);
  return !(shape.isRanked() && shape.rank() == 1 && shape[0] == Dim(0));
}

// A size Resize computes in floating point, as an integer; one past 64 bits (a scale of
// 1e22) is refused, since converting it would be undefined.
int64_t resizedSize(InferenceContext& context, double size) {
  if (!(size >= 0 && size < 9.2e18)) context.fail("the scales or sizes give an output size of ", size, ", past 64 bits");
  return static_cast<int64_t>(size);
}

void inferResize(InferenceContext& context) {
  checkRank(context, 2, 1, 1);
  checkRank(context, 3, 1, 1);
  const Shape& x = context.inputShape(0);
  bool has_scales = givenAndNotEmpty(context, 2);
  bool has_sizes = givenAndNotEmpty(context, 3);
  if (has_scales == has_sizes) context.fail("needs exactly one of inputs 'scales' and 'sizes'");
  if (!x.isRanked()) return;
  std::vector<int64_t> axes_values;
  if (const Attribute* axes = context.attr("axes")) {
    axes_values = axes->asInts();
  } else {
    for (size_t d = 0; d < x.rank(); ++d) axes_values.push_back(static_cast<int64_t>(d));
  }
  std::vector<size_t> axes = normalizeAxes(context, axes_values, x.rank(), "attribute 'axes'");
  std::vector<Dim> dims = x.dims();
  auto check_count = [&](size_t count, const char* what) {
    if (count != axes.size()) {
      context.fail("input '", what, "' has ", count, " values for ", axes.size(), " axes");
    }
  };
  if (has_sizes) {
    std::optional<std::vector<SymInt>> sizes = context.knownValues(3);
    if (sizes) check_count(sizes->size(), "sizes");
    const std::string policy = context.stringAttr("keep_aspect_ratio_policy");
    if (policy == "stretch") {
      for (size_t k = 0; k < axes.size(); ++k) dims[axes[k]] = sizes ? (*sizes)[k].toDim() : Dim::unknown();
    } else {
      // One scale for every axis, the largest (not_larger) or smallest (not_smaller) that
      // keeps the output within `sizes`; each size is then round(scale * input size), half up.
      std::optional<std::vector<int64_t>> known = context.knownInts(3);
      bool computable = known.has_value();
      for (size_t axis : axes) computable &= x[axis].isStatic() && x[axis].value() > 0;
      if (policy != "not_larger" && policy != "not_smaller") {
        context.fail("attribute 'keep_aspect_ratio_policy' is '", policy, "'; expected stretch, not_larger or not_smaller");
      }
      double scale = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t k = 0; computable && k < axes.size(); ++k) {
        double ratio = static_cast<double>((*known)[k]) / static_cast<double>(x[axes[k]].value());
        scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
      }
      for (size_t k = 0; k < axes.size(); ++k) {
        dims[axes[k]] = computable ? Dim(resizedSize(context, std::floor(scale * static_cast<double>(x[axes[k]].value()) + 0.5)))
                                   : Dim::unknown();
      }
    }
  } else {
    std::optional<std::vector<double>> scales = constantFloats(context, 2);
    if (scales) check_count(scales->size(), "scales");
    for (size_t k = 0; k < axes.size(); ++k) {
      const Dim& in = x[axes[k]];
      Dim out;
      if (scales) {
        double scale = (*scales)[k];
        if (!(scale > 0)) context.fail("input 'scales' holds ", scale, ", scales must be positive");
        if (in.isStatic()) {
          out = Dim(resizedSize(context, std::floor(static_cast<double>(in.value()) * scale)));
        } else if (scale == std::floor(scale)) {
          out = in * Dim(resizedSize(context, scale));
        }
      }
      dims[axes[k]] = out;
    }
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

}  // namespace

void registerTensorOps(OpRegistry& registry) {
  const std::vector<DType> all = allTypes();
  registry.add(OpSchema("Reshape")
                   .input("data", "T")
                   .input("shape", "i64")
                   .output("reshaped", "T")
                   .attr("allowzero", AttrKind::Int, 0)
                   .typeConstraint("T", all)
                   .inference(inferReshape));
  registry.add(OpSchema("Transpose")
                   .input("data", "T")
                   .output("transposed", "T")
                   .attr("perm", AttrKind::Ints)
                   .typeConstraint("T", all)
                   .inference(inferTranspose));
  registry.add(OpSchema("Concat")
                   .input("inputs", "T", Arity::Variadic)
                   .output("concat_result", "T")
                   .requiredAttr("axis", AttrKind::Int)
                   .typeConstraint("T", all)
                   .inference(inferConcat));
  registry.add(OpSchema("Split")
                   .input("input", "T")
                   .input("split", "i64", Arity::Optional)
                   .output("outputs", "T", Arity::Variadic)
                   .attr("axis", AttrKind::Int, 0)
                   .attr("num_outputs", AttrKind::Int)
                   .typeConstraint("T", all)
                   .inference(inferSplit));
  registry.add(OpSchema("Slice")
                   .input("data", "T")
                   .input("starts", "Tind")
                   .input("ends", "Tind")
                   .input("axes", "Tind", Arity::Optional)
                   .input("steps", "Tind", Arity::Optional)
                   .output("output", "T")
                   .typeConstraint("T", all)
                   .typeConstraint("Tind", indexTypes())
                   .inference(inferSlice));
  registry.add(OpSchema("Squeeze")
                   .input("data", "T")
                   .input("axes", "i64", Arity::Optional)
                   .output("squeezed", "T")
                   .typeConstraint("T", all)
                   .inference(inferSqueeze));
  registry.add(OpSchema("Unsqueeze")
                   .input("data", "T")
                   .input("axes", "i64")
                   .output("expanded", "T")
                   .typeConstraint("T", all)
                   .inference(inferUnsqueeze));
  registry.add(OpSchema("Flatten")
                   .input("input", "T")
                   .output("output", "T")
                   .attr("axis", AttrKind::Int, 1)
                   .typeConstraint("T", all)
                   .inference(inferFlatten));
  registry.add(OpSchema("Expand")
                   .input("input", "T")
                   .input("shape", "i64")
                   .output("output", "T")
                   .typeConstraint("T", all)
                   .inference(inferExpand));
  registry.add(OpSchema("Tile")
                   .input("input", "T")
                   .input("repeats", "i64")
                   .output("output", "T")
                   .typeConstraint("T", all)
                   .inference(inferTile));
  registry.add(OpSchema("Pad")
                   .input("data", "T")
                   .input("pads", "i64")
                   .input("constant_value", "T", Arity::Optional)
                   .input("axes", "Tind", Arity::Optional)
                   .output("output", "T")
                   .attr("mode", AttrKind::String, "constant")
                   .typeConstraint("T", all)
                   .typeConstraint("Tind", indexTypes())
                   .inference(inferPad));
  registry.add(OpSchema("DepthToSpace")
                   .input("input", "T")
                   .output("output", "T")
                   .requiredAttr("blocksize", AttrKind::Int)
                   .attr("mode", AttrKind::String, "DCR")
                   .typeConstraint("T", all)
                   .inference([](InferenceContext& context) { inferDepthToSpace(context, true); }));
  registry.add(OpSchema("SpaceToDepth")
                   .input("input", "T")
                   .output("output", "T")
                   .requiredAttr("blocksize", AttrKind::Int)
                   .attr("mode", AttrKind::String, "DCR")
                   .typeConstraint("T", all)
                   .inference([](InferenceContext& context) { inferDepthToSpace(context, false); }));
  registry.add(OpSchema("Resize")
                   .input("X", "T1")
                   .input("roi", "T2", Arity::Optional)
                   .input("scales", "f32", Arity::Optional)
                   .input("sizes", "i64", Arity::Optional)
                   .output("Y", "T1")
                   .attr("antialias", AttrKind::Int, 0)
                   .attr("axes", AttrKind::Ints)
                   .attr("coordinate_transformation_mode", AttrKind::String, "half_pixel")
                   .attr("cubic_coeff_a", AttrKind::Float, -0.75)
                   .attr("exclude_outside", AttrKind::Int, 0)
                   .attr("extrapolation_value", AttrKind::Float, 0.0)
                   .attr("keep_aspect_ratio_policy", AttrKind::String, "stretch")
                   .attr("mode", AttrKind::String, "nearest")
                   .attr("nearest_mode", AttrKind::String, "round_prefer_floor")
                   .typeConstraint("T1", all)
                   .typeConstraint("T2", {DType::F32, DType::F16, DType::F64})
                   .inference(inferResize));
}

}  // namespace estuary
