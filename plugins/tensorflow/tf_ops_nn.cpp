// Convolutions, pooling, batch normalization, bias and resizing, with TensorFlow's layouts:
// NHWC activations (NCHW when data_format says so) and HWIO filters. A channels-last op
// becomes the core op between transposes of its activations; its filter is transposed once,
// here, when it is a constant.
#include <cmath>

#include "estuary/frontend/translation_helpers.h"
#include "tf_translators.h"

namespace estuary::tensorflow_frontend {
namespace {

// The spatial entries of a data-format-ordered list (strides, dilations, ksize).
std::vector<int64_t> spatialOf(NodeContext& node, const std::vector<int64_t>& values, size_t rank, bool last) {
  if (values.size() != rank) node.fail("a list of ", values.size(), " entries for a rank-", rank, " input");
  return last ? std::vector<int64_t>(values.begin() + 1, values.end() - 1)
              : std::vector<int64_t>(values.begin() + 2, values.end());
}

std::vector<int64_t> listAttr(NodeContext& node, const char* name, size_t rank) {
  return node.attr<std::vector<int64_t>>(name, std::vector<int64_t>(rank, 1));
}

// The padding attributes of a convolution or pooling: SAME (the odd pad at the end, as
// TensorFlow puts it), VALID, or EXPLICIT pairs in data-format order.
NodeContext::Attributes windowPadding(NodeContext& node, size_t rank, bool last) {
  std::string padding = node.attr<std::string>("padding");
  std::optional<PaddingRule> rule = parsePaddingRule(padding);
  if (!rule) node.fail("padding '", padding, "' is not SAME, VALID or EXPLICIT");
  if (*rule != PaddingRule::Explicit) return paddingAttributes(*rule);
  std::vector<int64_t> pads = node.attr<std::vector<int64_t>>("explicit_paddings");
  if (pads.size() != 2 * rank) node.fail("explicit_paddings has ", pads.size(), " entries, expected ", 2 * rank);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (size_t d = last ? 1 : 2; d < (last ? rank - 1 : rank); ++d) pairs.emplace_back(pads[2 * d], pads[2 * d + 1]);
  return paddingAttributes(PaddingRule::Explicit, pairs);
}

Value* toChannelsFirst(NodeContext& node, Value* x, bool last) {
  return last ? permute(node, x, channelsFirstPermutation(rankOf(node, x))) : x;
}

Value* fromChannelsFirst(NodeContext& node, Value* y, bool last) {
  return last ? permute(node, y, channelsLastPermutation(rankOf(node, y))) : y;
}

// Conv2D and Conv3D: filters [spatial..., in/group, out].
Results conv(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* filter = node.requiredInput(1);
  const size_t rank = rankOf(node, x);
  const bool last = channelsLast(node);
  NodeContext::Attributes attributes = windowPadding(node, rank, last);
  attributes.emplace_back("strides", spatialOf(node, listAttr(node, "strides", rank), rank, last));
  attributes.emplace_back("dilations", spatialOf(node, listAttr(node, "dilations", rank), rank, last));
  const Dim& channels = x->shape()[last ? rank - 1 : 1];
  const Dim& filter_in = filter->shape()[rankOf(node, filter) - 2];
  if (channels.isStatic() && filter_in.isStatic() && filter_in.value() > 0 && channels.value() != filter_in.value()) {
    attributes.emplace_back("group", channels.value() / filter_in.value());
  }
  Value* weights = permute(node, filter, spatialLastToFirstWeights(rankOf(node, filter)));
  Value* y = node.emitValue("Conv", {toChannelsFirst(node, x, last), weights}, std::move(attributes));
  return {fromChannelsFirst(node, y, last)};
}

// DepthwiseConv2dNative: filter [h, w, channels, multiplier], each channel convolved with
// its own `multiplier` filters: a grouped convolution of [channels * multiplier, 1, h, w].
Results depthwiseConv(NodeContext& node) {
  Value* x = node.requiredInput(0);
  Value* filter = node.requiredInput(1);
  const bool last = channelsLast(node);
  const Shape& shape = filter->shape();
  if (!shape.isStatic() || shape.rank() != 4) node.fail("the depthwise filter's shape must be static, it is ", shape.str());
  const int64_t h = shape[0].value(), w = shape[1].value(), channels = shape[2].value(), multiplier = shape[3].value();
  const std::vector<int64_t> folded_shape = {h, w, 1, channels * multiplier};
  const Tensor* tensor = constantTensor(filter);
  Value* folded = tensor ? node.constant(Tensor::wrap(tensor->dtype(), folded_shape, tensor->data(), tensor->keepAlive()))
                         : node.emitValue("Reshape", {filter, node.constantInts(folded_shape)});
  Value* weights = permute(node, folded, spatialLastToFirstWeights(4));
  NodeContext::Attributes attributes = windowPadding(node, 4, last);
  attributes.emplace_back("strides", spatialOf(node, listAttr(node, "strides", 4), 4, last));
  attributes.emplace_back("dilations", spatialOf(node, listAttr(node, "dilations", 4), 4, last));
  attributes.emplace_back("group", channels);
  Value* y = node.emitValue("Conv", {toChannelsFirst(node, x, last), weights}, std::move(attributes));
  return {fromChannelsFirst(node, y, last)};
}

Results pool(NodeContext& node, const char* op) {
  Value* x = node.requiredInput(0);
  const size_t rank = rankOf(node, x);
  const bool last = channelsLast(node);
  std::vector<int64_t> ksize = node.hasAttr("ksize") ? node.attr<std::vector<int64_t>>("ksize") : knownInput(node, 1, "ksize");
  std::vector<int64_t> strides =
      node.hasAttr("strides") ? node.attr<std::vector<int64_t>>("strides") : knownInput(node, 2, "strides");
  NodeContext::Attributes attributes = windowPadding(node, rank, last);
  attributes.emplace_back("kernel_shape", spatialOf(node, ksize, rank, last));
  attributes.emplace_back("strides", spatialOf(node, strides, rank, last));
  Value* y = node.emitValue(op, {toChannelsFirst(node, x, last)}, std::move(attributes));
  return {fromChannelsFirst(node, y, last)};
}
Results maxPool(NodeContext& node) { return pool(node, "MaxPool"); }
Results avgPool(NodeContext& node) { return pool(node, "AveragePool"); }

// A per-channel vector shaped to broadcast along the channel axis.
Value* perChannel(NodeContext& node, Value* vector, size_t rank, bool last) {
  return alignForBroadcast(node, vector, rank, last ? static_cast<int64_t>(rank) - 1 : 1);
}

// FusedBatchNorm, V2, V3 in inference: y = x * a + b with a = scale / sqrt(variance + eps)
// and b = offset - mean * a, computed now when the statistics are constants.
Results fusedBatchNorm(NodeContext& node) {
  if (node.attr<bool>("is_training", true)) {
    node.fail("is_training is true: the graph computes batch statistics, which inference graphs do not "
              "(export in inference mode)");
  }
  Value* x = node.requiredInput(0);
  const size_t rank = rankOf(node, x);
  const bool last = channelsLast(node);
  const double epsilon = node.attr<double>("epsilon", 1e-4);
  const Tensor* scale = constantTensor(node.requiredInput(1));
  const Tensor* offset = constantTensor(node.requiredInput(2));
  const Tensor* mean = constantTensor(node.requiredInput(3));
  const Tensor* variance = constantTensor(node.requiredInput(4));
  Value *a = nullptr, *b = nullptr;
  if (scale && offset && mean && variance && scale->dtype() == DType::F32 && offset->dtype() == DType::F32 &&
      mean->dtype() == DType::F32 && variance->dtype() == DType::F32) {
    const int64_t channels = scale->numElements();
    Tensor multiplier = Tensor::allocate(DType::F32, {channels});
    Tensor shift = Tensor::allocate(DType::F32, {channels});
    auto* m = static_cast<float*>(multiplier.mutableData());
    auto* s = static_cast<float*>(shift.mutableData());
    for (int64_t c = 0; c < channels; ++c) {
      m[c] = scale->data<float>()[c] / std::sqrt(variance->data<float>()[c] + static_cast<float>(epsilon));
      s[c] = offset->data<float>()[c] - mean->data<float>()[c] * m[c];
    }
    a = node.constant(std::move(multiplier));
    b = node.constant(std::move(shift));
  } else {
    Value* variance_value = node.cast(node.requiredInput(4), DType::F32);
    Value* deviation = node.emitValue("Sqrt", {node.emitValue("Add", {variance_value, node.scalar(DType::F32, epsilon)})});
    a = node.emitValue("Div", {node.cast(node.requiredInput(1), DType::F32), deviation});
    b = node.emitValue("Sub", {node.cast(node.requiredInput(2), DType::F32),
                               node.emitValue("Mul", {node.cast(node.requiredInput(3), DType::F32), a})});
  }
  a = node.cast(perChannel(node, a, rank, last), x->dtype());
  b = node.cast(perChannel(node, b, rank, last), x->dtype());
  return {node.emitValue("Add", {node.emitValue("Mul", {x, a}), b})};
}

Results biasAdd(NodeContext& node) {
  Value* x = node.requiredInput(0);
  return {node.emitValue("Add", {x, perChannel(node, node.requiredInput(1), rankOf(node, x), channelsLast(node))})};
}

// ResizeBilinear and ResizeNearestNeighbor on NHWC images to `size` [height, width].
Results resize(NodeContext& node) {
  Value* x = node.requiredInput(0);
  const bool bilinear = node.opType() == "ResizeBilinear";
  const bool align_corners = node.attr<bool>("align_corners", false);
  const bool half_pixel = node.attr<bool>("half_pixel_centers", false);
  std::string transform = align_corners ? "align_corners" : half_pixel ? "half_pixel" : "asymmetric";
  NodeContext::Attributes attributes = {{"mode", bilinear ? "linear" : "nearest"},
                                        {"coordinate_transformation_mode", transform}};
  if (!bilinear) {
    if (half_pixel) {
      // TensorFlow's nearest with half-pixel centers reads floor((i + 0.5) * scale):
      // ONNX's half_pixel mapping, rounding half up.
      attributes.back().second = "half_pixel";
      attributes.emplace_back("nearest_mode", "round_prefer_ceil");
    } else {
      attributes.emplace_back("nearest_mode", align_corners ? "round_prefer_ceil" : "floor");
    }
  }
  Value* nchw = toChannelsFirst(node, x, true);
  Value* leading = node.emitValue("Shape", {nchw}, {{"start", int64_t{0}}, {"end", int64_t{2}}});
  Value* sizes = node.emitValue("Concat", {leading, asInt64(node, node.requiredInput(1))}, {{"axis", int64_t{0}}});
  Value* y = node.emitValue("Resize", {nchw, nullptr, nullptr, sizes}, std::move(attributes));
  return {fromChannelsFirst(node, y, true)};
}

}  // namespace

void addNnTranslators(TranslatorTable& table) {
  table.add("Conv2D", conv).add("Conv3D", conv).add("DepthwiseConv2dNative", depthwiseConv)
      .add("MaxPool", maxPool).add("MaxPoolV2", maxPool).add("MaxPool3D", maxPool).add("AvgPool", avgPool)
      .add("AvgPool3D", avgPool).add("FusedBatchNorm", fusedBatchNorm).add("FusedBatchNormV2", fusedBatchNorm)
      .add("FusedBatchNormV3", fusedBatchNorm).add("BiasAdd", biasAdd).add("BiasAddV1", biasAdd)
      .add("ResizeBilinear", resize).add("ResizeNearestNeighbor", resize);
}

}  // namespace estuary::tensorflow_frontend
