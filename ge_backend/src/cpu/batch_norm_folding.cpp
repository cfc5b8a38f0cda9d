#include "cpu/batch_norm_folding.h"

#include <cmath>
#include <optional>
#include <vector>

namespace estuary::ge {

namespace {

const Tensor* f32Constant(const Value* value) {
  if (!value || !value->producer() || !value->producer()->is("Constant")) return nullptr;
  const Attribute* attr = value->producer()->attr("value");
  if (!attr || attr->kind() != AttrKind::Tensor || attr->asTensor().dtype() != DType::F32) return nullptr;
  return &attr->asTensor();
}

Value* addConstant(Graph& graph, Node* before, Tensor tensor, std::string name) {
  Node* constant = graph.createNodeBefore(before, "Constant", {});
  constant->output()->setType(TensorType(tensor.dtype(), Shape::ofStatic(tensor.shape())));
  constant->output()->setName(std::move(name));
  constant->setAttr("value", std::move(tensor));
  return constant->output();
}

// A Conv's constant f32 weights and bias (nullptr when it has none), or nullopt when they
// are not constants.
struct ConvParameters {
  const Tensor* weights;
  const Tensor* bias;
  int64_t channels;
};

std::optional<ConvParameters> convParameters(const Node& conv) {
  const Tensor* weights = f32Constant(conv.input(1));
  const bool has_bias = conv.numInputs() > 2 && conv.input(2);
  const Tensor* bias = has_bias ? f32Constant(conv.input(2)) : nullptr;
  if (!weights || weights->shape().size() < 3 || (has_bias && !bias)) return std::nullopt;
  const int64_t channels = weights->shape()[0];
  if (bias && bias->numElements() != channels) return std::nullopt;
  return ConvParameters{weights, bias, channels};
}

// Replaces `conv` and `follower` (which reads the Conv's result, and computes
// y * scale[m] + shift[m] on output channel m) by one Conv with W'[m] = W[m] * scale[m]
// and B'[m] = B[m] * scale[m] + shift[m]; returns it.
Node* refold(Graph& graph, Node* conv, const ConvParameters& parameters, Node* follower,
             const std::vector<double>& scale, const std::vector<double>& shift) {
  const Tensor& weights = *parameters.weights;
  const int64_t channels = parameters.channels;
  Tensor new_weights = Tensor::allocate(DType::F32, weights.shape());
  Tensor new_bias = Tensor::allocate(DType::F32, {channels});
  const int64_t per_channel = weights.numElements() / channels;
  const float* w = weights.data<float>();
  auto* w_out = static_cast<float*>(new_weights.mutableData());
  auto* b_out = static_cast<float*>(new_bias.mutableData());
  for (int64_t m = 0; m < channels; ++m) {
    const auto channel = static_cast<size_t>(m);
    for (int64_t k = 0; k < per_channel; ++k) {
      w_out[m * per_channel + k] = static_cast<float>(w[m * per_channel + k] * scale[channel]);
    }
    const double b = parameters.bias ? parameters.bias->data<float>()[m] : 0.0;
    b_out[m] = static_cast<float>(b * scale[channel] + shift[channel]);
  }
  Value* w_value = addConstant(graph, conv, std::move(new_weights), conv->input(1)->name() + "/folded");
  Value* b_value = addConstant(graph, conv, std::move(new_bias), follower->name() + "/folded_bias");
  Node* replacement = graph.createNodeBefore(follower, "Conv", {conv->input(0), w_value, b_value});
  for (const auto& [name, attr] : conv->attributes()) replacement->setAttr(name, attr);
  replacement->setName(conv->name());
  replacement->output()->setType(follower->output()->type());
  replacement->output()->setName(follower->output()->name());
  follower->output()->replaceAllUsesWith(replacement->output());
  graph.eraseNode(follower);
  graph.eraseNode(conv);
  return replacement;
}

// The values of `value`, a constant broadcast against a Conv result of rank `rank`, one per
// output channel (axis 1); nullopt when it varies along any other axis.
std::optional<std::vector<float>> perChannel(const Value* value, int64_t channels, size_t rank) {
  const Tensor* tensor = f32Constant(value);
  if (!tensor || tensor->shape().size() > rank) return std::nullopt;
  const float* data = tensor->data<float>();
  if (tensor->numElements() == 1) return std::vector<float>(static_cast<size_t>(channels), data[0]);
  const size_t offset = rank - tensor->shape().size();
  for (size_t i = 0; i < tensor->shape().size(); ++i) {
    int64_t expected = offset + i == 1 ? channels : 1;
    if (tensor->shape()[i] != expected) return std::nullopt;
  }
  if (offset > 1) return std::nullopt;
  return std::vector<float>(data, data + channels);
}

// Folds the one reader of `conv`'s result into it, if it is a per-channel Mul, Div, Add or
// Sub by a constant; returns the new Conv or nullptr.
Node* foldReader(Graph& graph, Node* conv) {
  Value* result = conv->output();
  if (result->uses().size() != 1 || !result->shape().isRanked()) return nullptr;
  Node* reader = result->uses().front().user;
  const bool scales = reader->is("Mul") || reader->is("Div");
  const bool shifts = reader->is("Add") || reader->is("Sub");
  if (reader->isReturn() || (!scales && !shifts) || reader->numInputs() != 2) return nullptr;
  const size_t side = reader->input(0) == result ? 0 : 1;
  if (reader->input(side) != result || reader->input(1 - side) == result) return nullptr;
  // Only x / c and x - c; c / x and c - x are not affine in x the same way.
  if ((reader->is("Div") || reader->is("Sub")) && side != 0) return nullptr;
  if (!(reader->output()->type() == result->type())) return nullptr;
  std::optional<ConvParameters> parameters = convParameters(*conv);
  if (!parameters) return nullptr;
  std::optional<std::vector<float>> factor =
      perChannel(reader->input(1 - side), parameters->channels, result->shape().rank());
  if (!factor) return nullptr;
  const auto channels = static_cast<size_t>(parameters->channels);
  std::vector<double> scale(channels, 1.0), shift(channels, 0.0);
  for (size_t m = 0; m < channels; ++m) {
    double c = (*factor)[m];
    if (reader->is("Div")) c = 1.0 / c;
    if (reader->is("Sub")) c = -c;
    (scales ? scale : shift)[m] = c;
  }
  return refold(graph, conv, *parameters, reader, scale, shift);
}

}  // namespace

size_t foldChannelAffinesIntoConvs(Graph& graph) {
  // The Convs first: folding erases readers, which a walk of the node list would meet later.
  std::vector<Node*> convs;
  for (Node* node : graph.nodeList()) {
    if (node->is("Conv") && node->numOutputs() == 1) convs.push_back(node);
  }
  size_t folded = 0;
  for (Node* conv : convs) {
    while ((conv = foldReader(graph, conv))) ++folded;
  }
  return folded;
}

size_t foldBatchNormsIntoConvs(Graph& graph) {
  size_t folded = 0;
  for (Node* norm : graph.nodeList()) {
    if (!norm->is("BatchNormalization") || norm->numOutputs() != 1 || norm->numInputs() != 5) continue;
    if (norm->intAttr("training_mode", 0) != 0) continue;
    Value* conv_result = norm->input(0);
    Node* conv = conv_result->producer();
    if (!conv || !conv->is("Conv") || conv->numOutputs() != 1 || conv_result->uses().size() != 1) continue;
    std::optional<ConvParameters> convolution = convParameters(*conv);
    if (!convolution) continue;
    const auto channels = static_cast<size_t>(convolution->channels);
    const Tensor* parameters[4];
    bool usable = true;
    for (size_t i = 0; i < 4; ++i) {
      parameters[i] = f32Constant(norm->input(i + 1));
      usable &= parameters[i] && parameters[i]->numElements() == convolution->channels;
    }
    if (!usable) continue;
    const float* gamma = parameters[0]->data<float>();
    const float* beta = parameters[1]->data<float>();
    const float* mean = parameters[2]->data<float>();
    const float* variance = parameters[3]->data<float>();
    const double epsilon = norm->floatAttr("epsilon", 1e-5);
    std::vector<double> scale(channels), shift(channels);
    for (size_t m = 0; m < channels; ++m) {
      scale[m] = gamma[m] / std::sqrt(static_cast<double>(variance[m]) + epsilon);
      shift[m] = beta[m] - mean[m] * scale[m];
    }
    refold(graph, conv, *convolution, norm, scale, shift);
    ++folded;
  }
  return folded;
}

}  // namespace estuary::ge
