#include "batch_norm_folding.h"

#include <cmath>

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

}  // namespace

size_t foldBatchNormsIntoConvs(Graph& graph) {
  size_t folded = 0;
  for (Node* norm : graph.nodeList()) {
    if (!norm->is("BatchNormalization") || norm->numOutputs() != 1 || norm->numInputs() != 5) continue;
    if (norm->intAttr("training_mode", 0) != 0) continue;
    Value* conv_result = norm->input(0);
    Node* conv = conv_result->producer();
    if (!conv || !conv->is("Conv") || conv->numOutputs() != 1 || conv_result->uses().size() != 1) continue;
    const Tensor* weights = f32Constant(conv->input(1));
    const bool has_bias = conv->numInputs() > 2 && conv->input(2);
    const Tensor* bias = has_bias ? f32Constant(conv->input(2)) : nullptr;
    if (!weights || weights->shape().size() < 3 || (has_bias && !bias)) continue;
    const int64_t channels = weights->shape()[0];
    const Tensor* parameters[4];
    bool usable = !bias || bias->numElements() == channels;
    for (size_t i = 0; i < 4; ++i) {
      parameters[i] = f32Constant(norm->input(i + 1));
      usable &= parameters[i] && parameters[i]->numElements() == channels;
    }
    if (!usable) continue;
    const float* scale = parameters[0]->data<float>();
    const float* shift = parameters[1]->data<float>();
    const float* mean = parameters[2]->data<float>();
    const float* variance = parameters[3]->data<float>();
    const double epsilon = norm->floatAttr("epsilon", 1e-5);

    Tensor new_weights = Tensor::allocate(DType::F32, weights->shape());
    Tensor new_bias = Tensor::allocate(DType::F32, {channels});
    const int64_t per_channel = weights->numElements() / channels;
    const float* w = weights->data<float>();
    auto* w_out = static_cast<float*>(new_weights.mutableData());
    auto* b_out = static_cast<float*>(new_bias.mutableData());
    for (int64_t m = 0; m < channels; ++m) {
      const double factor = scale[m] / std::sqrt(static_cast<double>(variance[m]) + epsilon);
      for (int64_t k = 0; k < per_channel; ++k) {
        w_out[m * per_channel + k] = static_cast<float>(w[m * per_channel + k] * factor);
      }
      const double b = bias ? bias->data<float>()[m] : 0.0;
      b_out[m] = static_cast<float>((b - mean[m]) * factor + shift[m]);
    }

    Value* w_value = addConstant(graph, conv, std::move(new_weights), conv->input(1)->name() + "/folded");
    Value* b_value = addConstant(graph, conv, std::move(new_bias), norm->name() + "/folded_bias");
    Node* replacement = graph.createNodeBefore(norm, "Conv", {conv->input(0), w_value, b_value});
    for (const auto& [name, attr] : conv->attributes()) replacement->setAttr(name, attr);
    replacement->setName(conv->name());
    replacement->output()->setType(norm->output()->type());
    replacement->output()->setName(norm->output()->name());
    norm->output()->replaceAllUsesWith(replacement->output());
    graph.eraseNode(norm);
    graph.eraseNode(conv);
    ++folded;
  }
  return folded;
}

}  // namespace estuary::ge
