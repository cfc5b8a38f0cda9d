#include "estuary/frontend/translation_helpers.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

#include "estuary/support/error.h"

namespace estuary {

namespace {

std::string upper(std::string_view text) {
  std::string result(text);
  std::transform(result.begin(), result.end(), result.begin(), [](unsigned char c) { return std::toupper(c); });
  return result;
}

}  // namespace

Value* alignForBroadcast(NodeContext& node, Value* y, size_t x_rank, int64_t axis) {
  if (axis < 0) return y;
  if (!y->shape().isRanked()) node.fail("broadcasting along axis ", axis, " needs the rank of '", y->name(), "'");
  const size_t y_rank = y->shape().rank();
  if (static_cast<size_t>(axis) + y_rank > x_rank) {
    node.fail("a tensor of rank ", y_rank, " cannot line up with one of rank ", x_rank, " from axis ", axis);
  }
  const size_t trailing = x_rank - static_cast<size_t>(axis) - y_rank;
  if (trailing == 0) return y;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < trailing; ++i) axes.push_back(static_cast<int64_t>(y_rank + i));
  return node.emitValue("Unsqueeze", {y, node.constantInts(axes)});
}

std::optional<PaddingRule> parsePaddingRule(std::string_view text) {
  std::string rule = upper(text);
  if (rule == "SAME" || rule == "SAME_UPPER") return PaddingRule::SameUpper;
  if (rule == "SAME_LOWER") return PaddingRule::SameLower;
  if (rule == "VALID") return PaddingRule::Valid;
  if (rule == "EXPLICIT" || rule == "NOTSET") return PaddingRule::Explicit;
  return std::nullopt;
}

NodeContext::Attributes paddingAttributes(PaddingRule rule,
                                          const std::vector<std::pair<int64_t, int64_t>>& explicit_pads) {
  switch (rule) {
    case PaddingRule::SameUpper: return {{"auto_pad", "SAME_UPPER"}};
    case PaddingRule::SameLower: return {{"auto_pad", "SAME_LOWER"}};
    case PaddingRule::Valid: return {{"auto_pad", "VALID"}};
    case PaddingRule::Explicit: {
      std::vector<int64_t> pads;
      for (const auto& pad : explicit_pads) pads.push_back(pad.first);
      for (const auto& pad : explicit_pads) pads.push_back(pad.second);
      return {{"pads", pads}};
    }
  }
  return {};
}

std::pair<int64_t, int64_t> samePads(int64_t input, int64_t kernel, int64_t stride, int64_t dilation, bool upper) {
  const int64_t output = (input + stride - 1) / stride;
  const int64_t extent = (kernel - 1) * dilation + 1;
  const int64_t total = std::max<int64_t>(0, (output - 1) * stride + extent - input);
  const int64_t small = total / 2;
  return upper ? std::make_pair(small, total - small) : std::make_pair(total - small, small);
}

std::optional<Layout> parseLayout(std::string_view text) {
  std::string layout = upper(text);
  if (layout == "NCHW" || layout == "NCW" || layout == "NCDHW") return Layout::ChannelsFirst;
  if (layout == "NHWC" || layout == "NWC" || layout == "NDHWC") return Layout::ChannelsLast;
  return std::nullopt;
}

std::vector<int64_t> channelsFirstPermutation(size_t rank) {
  std::vector<int64_t> perm = {0};
  if (rank > 1) perm.push_back(static_cast<int64_t>(rank) - 1);
  for (size_t i = 1; i + 1 < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  return perm;
}

std::vector<int64_t> channelsLastPermutation(size_t rank) {
  std::vector<int64_t> perm = {0};
  for (size_t i = 2; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  if (rank > 1) perm.push_back(1);
  return perm;
}

std::vector<int64_t> spatialLastToFirstWeights(size_t rank) {
  std::vector<int64_t> perm;
  if (rank < 2) return perm;
  perm.push_back(static_cast<int64_t>(rank) - 1);
  perm.push_back(static_cast<int64_t>(rank) - 2);
  for (size_t i = 0; i + 2 < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  return perm;
}

Tensor transposeTensor(const Tensor& tensor, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& shape = tensor.shape();
  const size_t rank = shape.size();
  if (perm.size() != rank) raise("a permutation of ", perm.size(), " axes for a tensor of rank ", rank);
  std::vector<int64_t> out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[i] = shape.at(static_cast<size_t>(perm[i]));
  Tensor out = Tensor::allocate(tensor.dtype(), out_shape);
  const size_t element = dtypeSize(tensor.dtype());
  // Strides of the source, in elements, visited in the output's order.
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  std::vector<int64_t> index(rank, 0);
  const auto* from = static_cast<const char*>(tensor.data());
  auto* to = static_cast<char*>(out.mutableData());
  for (int64_t k = 0, count = out.numElements(); k < count; ++k) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i) offset += index[i] * strides[static_cast<size_t>(perm[i])];
    std::memcpy(to + k * element, from + offset * element, element);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out_shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

Value* permute(NodeContext& node, Value* value, const std::vector<int64_t>& perm) {
  if (const Tensor* tensor = constantTensor(value)) return node.constant(transposeTensor(*tensor, perm));
  return node.emitValue("Transpose", {value}, {{"perm", perm}});
}

std::optional<std::vector<int64_t>> foldedInts(const NodeContext& node, const Value* value) {
  if (const Tensor* tensor = constantTensor(value)) {
    if (tensor->dtype() == DType::I64) {
      return std::vector<int64_t>(tensor->data<int64_t>(), tensor->data<int64_t>() + tensor->numElements());
    }
    if (tensor->dtype() == DType::I32) {
      return std::vector<int64_t>(tensor->data<int32_t>(), tensor->data<int32_t>() + tensor->numElements());
    }
    return std::nullopt;
  }
  return node.knownInts(value);
}

size_t rankOf(const NodeContext& node, const Value* value) {
  if (!value->shape().isRanked()) node.fail("the rank of '", value->name(), "' is not known here");
  return value->shape().rank();
}

int64_t normalizedAxis(const NodeContext& node, int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) node.fail("axis ", axis, " is outside a rank-", rank, " tensor");
  return axis < 0 ? axis + r : axis;
}

namespace {

constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();
constexpr int64_t kFromEnd = std::numeric_limits<int64_t>::min();

// Element i of a 1-D integer value, as a 1-element i64 value.
Value* elementOf(NodeContext& node, Value* vector, int64_t i) {
  return node.emitValue("Slice", {vector, node.constantInts({i}), node.constantInts({i + 1}), node.constantInts({0})});
}

}  // namespace

Value* stridedSlice(NodeContext& node, Value* x, Value* begin, Value* end, const std::vector<int64_t>& strides,
                    const StridedSliceMasks& masks) {
  const size_t rank = rankOf(node, x);
  std::optional<std::vector<int64_t>> known_begin = foldedInts(node, begin);
  std::optional<std::vector<int64_t>> known_end = foldedInts(node, end);
  const int64_t begin_mask = masks.begin, end_mask = masks.end, ellipsis_mask = masks.ellipsis;
  const int64_t new_axis_mask = masks.new_axis, shrink_mask = masks.shrink_axis;
  const int64_t specs = static_cast<int64_t>(strides.size());
  int64_t real_specs = 0;
  for (int64_t i = 0; i < specs; ++i) {
    if (!(ellipsis_mask >> i & 1) && !(new_axis_mask >> i & 1)) ++real_specs;
  }
  std::vector<Value*> starts, ends;
  std::vector<int64_t> axes, steps, dropped, inserted;
  int64_t dim = 0, output_dim = 0;
  bool seen_ellipsis = false;
  auto bound = [&](Value* values, const std::optional<std::vector<int64_t>>& known, int64_t i, int64_t fallback,
                   bool use_fallback) -> Value* {
    if (use_fallback) return node.constantInts({fallback});
    if (known) return node.constantInts({known->at(static_cast<size_t>(i))});
    return elementOf(node, values, i);
  };
  for (int64_t i = 0; i < specs; ++i) {
    if (ellipsis_mask >> i & 1) {
      if (seen_ellipsis) node.fail("more than one ellipsis in the slice specs");
      seen_ellipsis = true;
      const int64_t covered = static_cast<int64_t>(rank) - real_specs;
      dim += covered;
      output_dim += covered;
      continue;
    }
    if (new_axis_mask >> i & 1) {
      inserted.push_back(output_dim++);
      continue;
    }
    if (dim >= static_cast<int64_t>(rank)) node.fail("more slice specs than the input has dims (", rank, ")");
    const int64_t step = strides[static_cast<size_t>(i)];
    if (step == 0) node.fail("stride ", i, " is 0");
    if (shrink_mask >> i & 1) {
      // One index: [b, b + 1), where b + 1 of -1 is the end, not 0.
      Value* start = bound(begin, known_begin, i, 0, false);
      if (known_begin) {
        const int64_t b = known_begin->at(static_cast<size_t>(i));
        ends.push_back(node.constantInts({b == -1 ? kToEnd : b + 1}));
      } else {
        Value* next = node.emitValue("Add", {start, node.constantInts({1})});
        Value* is_last = node.emitValue("Equal", {next, node.constantInts({0})});
        ends.push_back(node.emitValue("Where", {is_last, node.constantInts({kToEnd}), next}));
      }
      starts.push_back(start);
      steps.push_back(1);
      dropped.push_back(dim);
    } else {
      starts.push_back(bound(begin, known_begin, i, step > 0 ? 0 : kToEnd, begin_mask >> i & 1));
      ends.push_back(bound(end, known_end, i, step > 0 ? kToEnd : kFromEnd, end_mask >> i & 1));
      steps.push_back(step);
      ++output_dim;
    }
    axes.push_back(dim++);
  }
  Value* y = x;
  if (!axes.empty()) {
    Value* start_values = node.emitValue("Concat", starts, {{"axis", int64_t{0}}});
    Value* end_values = node.emitValue("Concat", ends, {{"axis", int64_t{0}}});
    y = node.emitValue("Slice", {x, start_values, end_values, node.constantInts(axes), node.constantInts(steps)});
  }
  if (!dropped.empty()) y = node.emitValue("Squeeze", {y, node.constantInts(dropped)});
  if (!inserted.empty()) y = node.emitValue("Unsqueeze", {y, node.constantInts(inserted)});
  return y == x ? node.emitValue("Identity", {x}) : y;
}

}  // namespace estuary
