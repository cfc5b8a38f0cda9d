// Convolutions, pools, normalizations, matrix products and activations.
#include "ms_translators.h"

namespace estuary::mindspore_frontend {
namespace {

// MindSpore's data formats: the string attribute of PRIMITIVE ops ("NCHW") or the Format
// enum of PRIMITIVE_FUNCTION arguments (0 NCHW, 1 NHWC).
bool channelsLast(NodeContext& node, size_t k) {
  if (std::optional<AttrValue> format = node.attribute(std::to_string(k))) {
    if (auto* code = std::get_if<int64_t>(&format->data)) return *code == 1;
  }
  for (const char* name : {"format", "data_format"}) {
    if (node.hasAttr(name)) {
      std::optional<AttrValue> format = node.attribute(name);
      if (auto* text = std::get_if<std::string>(&format->data)) return *text == "NHWC";
      if (auto* code = std::get_if<int64_t>(&format->data)) return *code == 1;
    }
  }
  return false;
}

Value* toFirst(NodeContext& node, Value* x, bool last) {
  return last ? permute(node, x, channelsFirstPermutation(rankOf(node, x))) : x;
}
Value* fromFirst(NodeContext& node, Value* y, bool last) {
  return last ? permute(node, y, channelsLastPermutation(rankOf(node, y))) : y;
}

// The spatial part of a window attribute written as (h, w) or (1, 1, h, w).
std::vector<int64_t> spatialOf(NodeContext& node, std::vector<int64_t> values, std::string_view name, size_t spatial) {
  if (values.size() == 1) values.assign(spatial, values[0]);
  if (values.size() == spatial + 2) values.erase(values.begin(), values.begin() + 2);
  if (values.size() != spatial) node.fail("'", name, "' has ", values.size(), " values for ", spatial, " spatial dims");
  return values;
}

// A pad mode: MindSpore's PadMode enum (0 PAD, 1 SAME, 2 VALID) or its name in any case.
PaddingRule padRule(NodeContext& node, const AttrValue& mode) {
  if (auto* code = std::get_if<int64_t>(&mode.data)) {
    if (*code == 0) return PaddingRule::Explicit;
    if (*code == 1) return PaddingRule::SameUpper;
    if (*code == 2) return PaddingRule::Valid;
  }
  if (auto* text = std::get_if<std::string>(&mode.data)) {
    std::string lower;
    for (char c : *text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (lower == "pad") return PaddingRule::Explicit;
    if (lower == "same") return PaddingRule::SameUpper;
    if (lower == "valid") return PaddingRule::Valid;
  }
  node.fail("pad mode ", mode.type_name, " is not one Estuary reads (pad, same, valid)");
}

// Conv2D (x, w), a PRIMITIVE op: pad_list (top, bottom, left, right) holds the pads MindSpore
// worked out, for every pad_mode; strides and dilations may be written 4-D.
Results conv2d(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  Value* weight = requiredArg(node, 1, "weight");
  const bool last = channelsLast(node, kAttributeOnly);
  NodeContext::Attributes attributes;
  std::optional<std::vector<int64_t>> pads = optionalInts(node, kAttributeOnly, "pad_list");
  if (pads && pads->size() == 4) {
    attributes = paddingAttributes(PaddingRule::Explicit, {{(*pads)[0], (*pads)[1]}, {(*pads)[2], (*pads)[3]}});
  } else {
    PaddingRule rule = padRule(node, *node.attribute("pad_mode"));
    std::vector<int64_t> pad = optionalInts(node, kAttributeOnly, "pad").value_or(std::vector<int64_t>(4, 0));
    if (pad.size() == 1) pad.assign(4, pad[0]);
    attributes = paddingAttributes(rule, {{pad.at(0), pad.at(1)}, {pad.at(2), pad.at(3)}});
  }
  attributes.emplace_back("strides", spatialOf(node, intsArg(node, kAttributeOnly, "stride"), "stride", 2));
  attributes.emplace_back("dilations", spatialOf(node, optionalInts(node, kAttributeOnly, "dilation").value_or(std::vector<int64_t>{1, 1}), "dilation", 2));
  attributes.emplace_back("group", optionalInts(node, kAttributeOnly, "group").value_or(std::vector<int64_t>{1}).at(0));
  return {fromFirst(node, node.emitValue("Conv", {toFirst(node, x, last), weight}, std::move(attributes)), last)};
}

// MaxPool (PRIMITIVE: attributes) and AvgPool (x, kernel_size, strides, pad_mode, data_format).
template <bool kMax>
Results pool(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  const bool last = channelsLast(node, 4);
  const size_t spatial = rankOf(node, x) - 2;
  NodeContext::Attributes attributes;
  std::optional<AttrValue> mode = node.attribute("3");
  if (!mode) mode = node.attribute("pad_mode");
  PaddingRule rule = mode ? padRule(node, *mode) : PaddingRule::Valid;
  if (rule == PaddingRule::Explicit) node.fail("pooling with pad mode PAD is not translated");
  attributes = paddingAttributes(rule);
  attributes.emplace_back("kernel_shape", spatialOf(node, intsArg(node, 1, "kernel_size"), "kernel_size", spatial));
  attributes.emplace_back("strides", spatialOf(node, intsArg(node, 2, "strides"), "strides", spatial));
  Value* y = node.emitValue(kMax ? "MaxPool" : "AveragePool", {toFirst(node, x, last)}, std::move(attributes));
  return {fromFirst(node, y, last)};
}

// AdaptiveAvgPool2D (x, output_size): global for 1x1, else a window the static input divides.
Results adaptiveAvgPool(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  std::vector<int64_t> size = spatialOf(node, intsArg(node, 1, "output_size"), "output_size", 2);
  if (size[0] == 1 && size[1] == 1) return {node.emitValue("GlobalAveragePool", {x})};
  std::vector<int64_t> window;
  for (size_t d = 0; d < 2; ++d) {
    const Dim& dim = x->shape()[2 + d];
    if (!dim.isStatic() || size[d] <= 0 || dim.value() % size[d] != 0) {
      node.fail("adaptive pooling to ", size[d], " is translated only for a static input size it divides");
    }
    window.push_back(dim.value() / size[d]);
  }
  return {node.emitValue("AveragePool", {x}, {{"kernel_shape", window}, {"strides", window}})};
}

// BiasAdd (x, bias, data_format): the bias along the channel axis (1 for NCHW, last for NHWC).
Results biasAdd(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  Value* bias = requiredArg(node, 1, "bias");
  const size_t rank = rankOf(node, x);
  const int64_t axis = channelsLast(node, 2) || rank < 2 ? -1 : 1;
  return {node.emitValue("Add", {x, alignForBroadcast(node, bias, rank, axis)})};
}

// BatchNorm (x, scale, bias, mean, variance, is_training, epsilon, momentum, data_format):
// inference form; its other four results are the statistics it used.
Results batchNorm(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  Value* scale = requiredArg(node, 1, "scale");
  Value* bias = requiredArg(node, 2, "bias");
  Value* mean = requiredArg(node, 3, "mean");
  Value* variance = requiredArg(node, 4, "variance");
  if (node.hasAttr("5") ? boolArg(node, 5, "is_training") : node.attr<bool>("is_training", false)) {
    node.fail("BatchNorm in training mode (batch statistics): call net.set_train(False) before mindspore.export");
  }
  const double epsilon = node.hasAttr("6") ? floatArg(node, 6, "epsilon") : node.attr<double>("epsilon", 1e-5);
  const bool last = channelsLast(node, 8);
  Value* y = node.emitValue("BatchNormalization", {toFirst(node, x, last), scale, bias, mean, variance},
                            {{"epsilon", epsilon}});
  Results results = {fromFirst(node, y, last)};
  if (node.usedOutputs() > 1) results.insert(results.end(), {mean, variance, mean, variance});
  return results;
}

// The dims from `axis` to the end, which must be static to shape a normalization's weights.
std::vector<int64_t> trailingDims(NodeContext& node, Value* x, int64_t axis) {
  std::vector<int64_t> dims;
  for (size_t d = static_cast<size_t>(axis); d < rankOf(node, x); ++d) {
    if (!x->shape()[d].isStatic()) node.fail("the normalized dims must be static, they are ", x->shape().str());
    dims.push_back(x->shape()[d].value());
  }
  return dims;
}

// LayerNorm (x, gamma, beta, begin_norm_axis, begin_params_axis, epsilon) -> (y, mean,
// variance). MindSpore's documentation has called the third result rstd since 2.3, but its
// CPU kernel (2.10) returns the variance without epsilon, which is what a MindSpore run of
// the model gives: that is what Estuary computes, as ReduceMean((x - mean)^2).
Results layerNorm(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  const size_t rank = rankOf(node, x);
  const int64_t axis = normalizedAxis(node, intArg(node, 3, "begin_norm_axis"), rank);
  const int64_t params_axis = normalizedAxis(node, intArg(node, 4, "begin_params_axis"), rank);
  if (params_axis != axis) node.fail("begin_params_axis ", params_axis, " differs from begin_norm_axis ", axis);
  std::vector<int64_t> normalized = trailingDims(node, x, axis);
  auto shaped = [&](Value* value) {
    return normalized.size() == 1 ? value : node.emitValue("Reshape", {value, node.constantInts(normalized)});
  };
  const size_t used = node.usedOutputs();
  Node* norm = node.emit("LayerNormalization", {x, shaped(requiredArg(node, 1, "gamma")), shaped(requiredArg(node, 2, "beta"))},
                         {{"axis", axis}, {"epsilon", floatArg(node, 5, "epsilon")}}, used > 1 ? 2 : 1);
  Results results = norm->outputs();
  if (used > 2) {
    std::vector<int64_t> axes;
    for (size_t d = static_cast<size_t>(axis); d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
    Value* centered = node.emitValue("Sub", {x, results[1]});
    Value* squared = node.emitValue("Mul", {centered, centered});
    results.push_back(node.emitValue("ReduceMean", {squared, node.constantInts(axes)}, {{"keepdims", int64_t{1}}}));
  }
  return results;
}

// RmsNorm (x, gamma, epsilon) -> (y, rstd): over the dims gamma covers.
Results rmsNorm(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  Value* gamma = requiredArg(node, 1, "gamma");
  const int64_t axis = static_cast<int64_t>(rankOf(node, x) - rankOf(node, gamma));
  if (node.usedOutputs() > 1) node.fail("its rstd result is used, which is not translated");
  return {node.emitValue("RMSNormalization", {x, gamma}, {{"axis", axis}, {"epsilon", floatArg(node, 2, "epsilon")}})};
}

Value* swapLastTwo(NodeContext& node, Value* value) {
  const size_t rank = rankOf(node, value);
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  if (rank >= 2) std::swap(perm[rank - 1], perm[rank - 2]);
  return permute(node, value, perm);
}

// MatMul and BatchMatMul (a, b, transpose_a, transpose_b); MatMulExt and BatchMatMulExt
// (a, b) have NumPy's matmul meaning.
Results matmul(NodeContext& node) {
  Value* a = requiredArg(node, 0, "input");
  Value* b = requiredArg(node, 1, "mat2");
  const bool has_flags = node.hasAttr("2") || node.hasAttr("transpose_a");
  if (has_flags && boolArg(node, 2, "transpose_a")) a = swapLastTwo(node, a);
  if (has_flags && boolArg(node, 3, "transpose_b")) b = swapLastTwo(node, b);
  return {node.emitValue("MatMul", {a, b})};
}

// Dense (x, weight, bias): x W^T + b.
Results dense(NodeContext& node) {
  Value* y = node.emitValue("MatMul", {requiredArg(node, 0, "x"), swapLastTwo(node, requiredArg(node, 1, "weight"))});
  if (Value* bias = arg(node, 2)) y = node.emitValue("Add", {y, bias});
  return {y};
}

// Softmax (x, axis): the axis as a one-element tuple.
Results softmax(NodeContext& node) {
  std::vector<int64_t> axis = optionalInts(node, 1, "axis").value_or(std::vector<int64_t>{-1});
  if (axis.size() != 1) node.fail("softmax over ", axis.size(), " axes is not translated");
  return {node.emitValue("Softmax", {requiredArg(node, 0, "x")}, {{"axis", axis[0]}})};
}

Results logSoftmax(NodeContext& node) {
  return {node.emitValue("LogSoftmax", {requiredArg(node, 0, "x")}, {{"axis", intArg(node, 1, "axis")}})};
}

template <const char* kOp>
Results unary(NodeContext& node) {
  return {node.emitValue(kOp, {requiredArg(node, 0, "x")})};
}

constexpr char kRelu[] = "Relu", kSigmoid[] = "Sigmoid", kTanh[] = "Tanh", kHardSwish[] = "HardSwish",
               kSwish[] = "Swish", kFlatten[] = "Flatten";

Value* scalarLike(NodeContext& node, Value* x, double value) {
  return node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(value))), x->dtype());
}

Results relu6(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  return {node.emitValue("Clip", {x, scalarLike(node, x, 0.0), scalarLike(node, x, 6.0)})};
}

// HSigmoid: relu6(x + 3) / 6.
Results hardSigmoid(NodeContext& node) {
  return {node.emitValue("HardSigmoid", {requiredArg(node, 0, "x")}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}})};
}

// GeLU is exact (erf); FastGeLU is MindSpore's x / (1 + exp(-1.702 |x|)) * exp(0.851 (x - |x|)),
// which equals x * sigmoid(1.702 x).
Results gelu(NodeContext& node) {
  std::string approximate = "none";
  if (node.hasAttr("1")) {
    std::optional<AttrValue> mode = node.attribute("1");
    if (auto* text = std::get_if<std::string>(&mode->data); text && *text == "tanh") approximate = "tanh";
  }
  return {node.emitValue("Gelu", {requiredArg(node, 0, "x")}, {{"approximate", approximate}})};
}

Results fastGelu(NodeContext& node) {
  Value* x = requiredArg(node, 0, "x");
  return {node.emitValue("Mul", {x, node.emitValue("Sigmoid", {node.emitValue("Mul", {x, scalarLike(node, x, 1.702)})})})};
}

Results leakyRelu(NodeContext& node) {
  double alpha = node.hasAttr("1") ? floatArg(node, 1, "negative_slope") : node.attr<double>("alpha", 0.01);
  return {node.emitValue("LeakyRelu", {requiredArg(node, 0, "x")}, {{"alpha", alpha}})};
}

// Dropout at inference: the identity; its mask result is not computed.
Results dropout(NodeContext& node) {
  if (node.usedOutputs() > 1) node.fail("its mask is used, which inference has none of");
  return {node.emitValue("Identity", {requiredArg(node, 0, "x")})};
}

}  // namespace

void addNnTranslators(TranslatorTable& table) {
  table.add("Conv2D", conv2d).add("MaxPool", pool<true>).add("AvgPool", pool<false>)
      .add("AdaptiveAvgPool2D", adaptiveAvgPool).add("BiasAdd", biasAdd).add("BatchNorm", batchNorm)
      .add("LayerNorm", layerNorm).add("RmsNorm", rmsNorm).add("MatMul", matmul).add("BatchMatMul", matmul)
      .add("MatMulExt", matmul).add("BatchMatMulExt", matmul).add("Dense", dense).add("Softmax", softmax)
      .add("LogSoftmax", logSoftmax).add("ReLU", unary<kRelu>).add("Sigmoid", unary<kSigmoid>)
      .add("Tanh", unary<kTanh>).add("HSwish", unary<kHardSwish>).add("SiLU", unary<kSwish>)
      .add("Flatten", unary<kFlatten>).add("ReLU6", relu6).add("HSigmoid", hardSigmoid).add("GeLU", gelu)
      .add("FastGeLU", fastGelu).add("LeakyReLU", leakyRelu).add("Dropout", dropout);
}

}  // namespace estuary::mindspore_frontend
