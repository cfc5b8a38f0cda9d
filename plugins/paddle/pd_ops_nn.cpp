// Convolutions, pooling, normalizations, activations, matrix products and dropout.
#include <algorithm>

#include "pd_translators.h"

namespace estuary::paddle_frontend {

// The results of a legacy op placed by output slot (its outputs are listed by slot name);
// a PIR op's in order. Defined with the legacy decoder.
Results bySlot(NodeContext& node, const std::vector<std::pair<std::string_view, Value*>>& results);

namespace {

bool channelsLast(NodeContext& node) {
  std::string format = node.attr<std::string>(node.hasAttr("data_format") ? "data_format" : "data_layout", "NCHW");
  if (format == "AnyLayout" || format == "Undefined(AnyLayout)") return false;
  std::optional<Layout> layout = parseLayout(format);
  if (!layout) node.fail("data_format '", format, "' is not a layout Estuary reads");
  return *layout == Layout::ChannelsLast;
}

Value* toFirst(NodeContext& node, Value* x, bool last) {
  return last ? permute(node, x, channelsFirstPermutation(rankOf(node, x))) : x;
}
Value* fromFirst(NodeContext& node, Value* y, bool last) {
  return last ? permute(node, y, channelsLastPermutation(rankOf(node, y))) : y;
}

// Paddle's paddings: one per spatial dim (both sides), or (begin, end) per spatial dim, as
// the core's pads with padding_algorithm (EXPLICIT, SAME, VALID).
NodeContext::Attributes padding(NodeContext& node, size_t spatial) {
  std::string algorithm = node.attr<std::string>("padding_algorithm", "EXPLICIT");
  std::optional<PaddingRule> rule = parsePaddingRule(algorithm);
  if (!rule) node.fail("padding_algorithm '", algorithm, "' is not one Estuary reads");
  if (*rule != PaddingRule::Explicit) return paddingAttributes(*rule == PaddingRule::SameLower ? PaddingRule::SameUpper : *rule);
  std::vector<int64_t> pads = node.attr<std::vector<int64_t>>("paddings", std::vector<int64_t>(spatial, 0));
  std::vector<std::pair<int64_t, int64_t>> sides;
  if (pads.size() == spatial) {
    for (int64_t pad : pads) sides.emplace_back(pad, pad);
  } else if (pads.size() == 2 * spatial) {
    for (size_t d = 0; d < spatial; ++d) sides.emplace_back(pads[2 * d], pads[2 * d + 1]);
  } else {
    node.fail("paddings has ", pads.size(), " values for ", spatial, " spatial dims");
  }
  return paddingAttributes(PaddingRule::Explicit, sides);
}

std::vector<int64_t> perDim(NodeContext& node, std::string_view name, size_t spatial, int64_t fallback) {
  std::vector<int64_t> values = node.attr<std::vector<int64_t>>(name, std::vector<int64_t>(spatial, fallback));
  if (values.size() == 1) values.assign(spatial, values[0]);
  if (values.size() != spatial) node.fail("'", name, "' has ", values.size(), " values for ", spatial, " spatial dims");
  return values;
}

// conv2d and depthwise_conv2d (PIR: x, filter; legacy: Input, Filter), filters OIHW.
Results conv(NodeContext& node) {
  Value* x = requiredIn(node, 0, "Input");
  Value* filter = requiredIn(node, 1, "Filter");
  const bool last = channelsLast(node);
  const size_t spatial = rankOf(node, x) - 2;
  NodeContext::Attributes attributes = padding(node, spatial);
  attributes.emplace_back("strides", perDim(node, "strides", spatial, 1));
  attributes.emplace_back("dilations", perDim(node, "dilations", spatial, 1));
  attributes.emplace_back("group", node.attr<int64_t>("groups", 1));
  Value* y = node.emitValue("Conv", {toFirst(node, x, last), filter}, std::move(attributes));
  return bySlot(node, {{"Output", fromFirst(node, y, last)}});
}

// pool2d: max or average over a window (PIR: the kernel size is operand 1; legacy: ksize),
// global, or adaptive (output size given; taken as global for 1x1, as a window that divides
// the input evenly otherwise).
Results pool(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  const bool last = channelsLast(node);
  const size_t spatial = rankOf(node, x) - 2;
  const bool max = node.attr<std::string>("pooling_type", "max") == "max";
  std::vector<int64_t> kernel = intsOf(node, 1, "ksize").value_or(std::vector<int64_t>{});
  if (kernel.size() == 1) kernel.assign(spatial, kernel[0]);
  Value* input = toFirst(node, x, last);
  const bool adaptive = node.attr<bool>("adaptive", false);
  bool global = node.attr<bool>("global_pooling", false);
  if (adaptive && std::all_of(kernel.begin(), kernel.end(), [](int64_t size) { return size == 1; })) global = true;
  if (global) {
    return bySlot(node, {{"Out", fromFirst(node, node.emitValue(max ? "GlobalMaxPool" : "GlobalAveragePool", {input}), last)}});
  }
  std::vector<int64_t> strides = perDim(node, "strides", spatial, 1);
  NodeContext::Attributes attributes;
  if (adaptive) {
    // Output size `kernel`: an even split of a static input is a window of input/output.
    const Shape& shape = input->shape();
    for (size_t d = 0; d < spatial; ++d) {
      const Dim& size = shape[2 + d];
      if (!size.isStatic() || kernel[d] <= 0 || size.value() % kernel[d] != 0) {
        node.fail("adaptive pooling to ", kernel[d], " is translated only for a static input size it divides");
      }
      strides[d] = size.value() / kernel[d];
      kernel[d] = strides[d];
    }
  } else {
    attributes = padding(node, spatial);
    if (node.attr<bool>("ceil_mode", false)) attributes.emplace_back("ceil_mode", int64_t{1});
  }
  if (kernel.size() != spatial) node.fail("the pooling window has ", kernel.size(), " sizes for ", spatial, " dims");
  attributes.emplace_back("kernel_shape", kernel);
  attributes.emplace_back("strides", strides);
  if (!max) attributes.emplace_back("count_include_pad", int64_t{!node.attr<bool>("exclusive", true)});
  Value* y = node.emitValue(max ? "MaxPool" : "AveragePool", {input}, std::move(attributes));
  return bySlot(node, {{"Out", fromFirst(node, y, last)}});
}

// batch_norm / batch_norm_ (PIR: x, mean, variance, scale, bias; legacy slots), inference.
Results batchNorm(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* mean = requiredIn(node, 1, "Mean");
  Value* variance = requiredIn(node, 2, "Variance");
  Value* scale = requiredIn(node, 3, "Scale");
  Value* bias = requiredIn(node, 4, "Bias");
  const bool last = channelsLast(node);
  Value* y = node.emitValue("BatchNormalization", {toFirst(node, x, last), scale, bias, mean, variance},
                            {{"epsilon", node.attr<double>("epsilon", 1e-5)}});
  return bySlot(node, {{"Y", fromFirst(node, y, last)}});
}

// layer_norm (x, scale, bias): over the dims from begin_norm_axis, with scale and bias
// flattened to their product (absent: 1 and 0).
Results layerNorm(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  const size_t rank = rankOf(node, x);
  const int64_t axis = normalizedAxis(node, node.attr<int64_t>("begin_norm_axis", 1), rank);
  std::vector<int64_t> normalized;
  for (size_t d = static_cast<size_t>(axis); d < rank; ++d) {
    if (!x->shape()[d].isStatic()) node.fail("the normalized dims must be static, they are ", x->shape().str());
    normalized.push_back(x->shape()[d].value());
  }
  auto shaped = [&](Value* value, float fallback) -> Value* {
    if (!value) {
      Tensor ones = Tensor::allocate(x->dtype() == DType::Undefined ? DType::F32 : x->dtype(), normalized);
      if (ones.dtype() != DType::F32) node.fail("layer_norm without scale or bias is translated for f32 only");
      std::fill_n(static_cast<float*>(ones.mutableData()), ones.numElements(), fallback);
      return node.constant(std::move(ones));
    }
    return normalized.size() == 1 ? value : node.emitValue("Reshape", {value, node.constantInts(normalized)});
  };
  Value* y = node.emitValue("LayerNormalization", {x, shaped(in(node, 1, "Scale"), 1.f), shaped(in(node, 2, "Bias"), 0.f)},
                            {{"axis", axis}, {"epsilon", node.attr<double>("epsilon", 1e-5)}});
  return bySlot(node, {{"Y", y}});
}

Results softmax(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue("Softmax", {requiredIn(node, 0, "X")}, {{"axis", node.attr<int64_t>("axis", -1)}})}});
}

// matmul (PIR: transpose_x, transpose_y), matmul_v2 (trans_x, trans_y), legacy matmul
// (transpose_X, transpose_Y, alpha): the last two dims swapped first where asked.
Results matmul(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  Value* y = requiredIn(node, 1, "Y");
  auto flag = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
      if (node.hasAttr(name)) return node.attr<bool>(name);
    }
    return false;
  };
  auto swapped = [&](Value* value) {
    const size_t rank = rankOf(node, value);
    if (rank < 2) return value;
    std::vector<int64_t> perm(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return permute(node, value, perm);
  };
  if (flag({"transpose_x", "trans_x", "transpose_X"})) x = swapped(x);
  if (flag({"transpose_y", "trans_y", "transpose_Y"})) y = swapped(y);
  Value* product = node.emitValue("MatMul", {x, y});
  if (node.hasAttr("alpha") && node.attr<double>("alpha") != 1.0) {
    Value* alpha = node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(node.attr<double>("alpha"))));
    product = node.emitValue("Mul", {product, node.cast(alpha, product->dtype())});
  }
  return bySlot(node, {{"Out", product}});
}

// dropout at inference: the identity ("upscale_in_train") or a scale by 1 - p
// ("downgrade_in_infer").
Results dropout(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  std::string mode = node.attr<std::string>(isPir(node) ? "mode" : "dropout_implementation", "downgrade_in_infer");
  if (!node.attr<bool>("is_test", true)) node.fail("dropout in training mode is not translated (the program is not for inference)");
  if (mode == "upscale_in_train") return bySlot(node, {{"Out", node.emitValue("Identity", {x})}});
  double p = scalarOf(node, 2, "dropout_prob").value_or(0.5);
  Value* keep = node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(1.0 - p))), x->dtype());
  return bySlot(node, {{"Out", node.emitValue("Mul", {x, keep})}});
}

template <const char* kOp>
Results unary(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue(kOp, {requiredIn(node, 0, "X")})}});
}

constexpr char kRelu[] = "Relu", kSigmoid[] = "Sigmoid", kTanh[] = "Tanh", kHardSwish[] = "HardSwish",
               kExp[] = "Exp", kSqrt[] = "Sqrt", kAbs[] = "Abs", kLog[] = "Log", kErf[] = "Erf", kFloor[] = "Floor",
               kCeil[] = "Ceil", kSin[] = "Sin", kCos[] = "Cos", kReciprocal[] = "Reciprocal",
               kSoftplus[] = "Softplus";

Results relu6(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  double threshold = node.attr<double>("threshold", 6.0);
  auto bound = [&](double v) { return node.cast(node.constant(Tensor::scalar<float>(DType::F32, static_cast<float>(v))), x->dtype()); };
  return bySlot(node, {{"Out", node.emitValue("Clip", {x, bound(0.0), bound(threshold)})}});
}

Results hardSigmoid(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue("HardSigmoid", {requiredIn(node, 0, "X")},
                                              {{"alpha", node.attr<double>("slope", 0.1666667)},
                                               {"beta", node.attr<double>("offset", 0.5)}})}});
}

Results silu(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue("Swish", {requiredIn(node, 0, "X")})}});
}

Results swish(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue("Swish", {requiredIn(node, 0, "X")}, {{"alpha", node.attr<double>("beta", 1.0)}})}});
}

Results gelu(NodeContext& node) {
  std::string approximate = node.attr<bool>("approximate", false) ? "tanh" : "none";
  return bySlot(node, {{"Out", node.emitValue("Gelu", {requiredIn(node, 0, "X")}, {{"approximate", approximate}})}});
}

Results leakyRelu(NodeContext& node) {
  double slope = node.hasAttr("negative_slope") ? node.attr<double>("negative_slope") : node.attr<double>("alpha", 0.02);
  return bySlot(node, {{"Out", node.emitValue("LeakyRelu", {requiredIn(node, 0, "X")}, {{"alpha", slope}})}});
}

Results rsqrt(NodeContext& node) {
  return bySlot(node, {{"Out", node.emitValue("Reciprocal", {node.emitValue("Sqrt", {requiredIn(node, 0, "X")})})}});
}

Results square(NodeContext& node) {
  Value* x = requiredIn(node, 0, "X");
  return bySlot(node, {{"Out", node.emitValue("Mul", {x, x})}});
}

}  // namespace

void addNnTranslators(TranslatorTable& table) {
  for (std::string_view domain : {"pd_op", ""}) {
    table.add(domain, "conv2d", conv).add(domain, "depthwise_conv2d", conv).add(domain, "pool2d", pool)
        .add(domain, "batch_norm", batchNorm).add(domain, "batch_norm_", batchNorm).add(domain, "layer_norm", layerNorm)
        .add(domain, "softmax", softmax).add(domain, "matmul", matmul).add(domain, "dropout", dropout)
        .add(domain, "relu", unary<kRelu>).add(domain, "sigmoid", unary<kSigmoid>).add(domain, "tanh", unary<kTanh>)
        .add(domain, "exp", unary<kExp>).add(domain, "sqrt", unary<kSqrt>).add(domain, "abs", unary<kAbs>)
        .add(domain, "log", unary<kLog>).add(domain, "erf", unary<kErf>).add(domain, "floor", unary<kFloor>)
        .add(domain, "ceil", unary<kCeil>).add(domain, "sin", unary<kSin>).add(domain, "cos", unary<kCos>)
        .add(domain, "reciprocal", unary<kReciprocal>).add(domain, "softplus", unary<kSoftplus>)
        .add(domain, "relu6", relu6).add(domain, "hardsigmoid", hardSigmoid).add(domain, "silu", silu)
        .add(domain, "swish", swish).add(domain, "gelu", gelu).add(domain, "leaky_relu", leakyRelu)
        .add(domain, "rsqrt", rsqrt).add(domain, "square", square);
  }
  table.add("pd_op", "hardswish", unary<kHardSwish>).add("", "hard_swish", unary<kHardSwish>)
      .add("", "hard_sigmoid", hardSigmoid).add("", "matmul_v2", matmul).add("pd_op", "relu_", unary<kRelu>);
}

}  // namespace estuary::paddle_frontend
