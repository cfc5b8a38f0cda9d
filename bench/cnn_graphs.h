#pragma once
// Synthetic CNNs built with the C++ IR API, random weights (He-scaled, so activations stay
// in range through 50 layers): ResNet-50, MobileNetV2, and a chain of ResNet bottleneck
// blocks. Convolutions are followed by BatchNormalization as in the exported models, so
// that the backend's folding runs. Used by cnn_bench and the GE layout tests.
#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "estuary/ir/graph.h"
#include "estuary/ops/schema.h"
#include "estuary/transforms/shape_inference.h"

namespace estuary::cnn {

class CnnBuilder {
 public:
  CnnBuilder(Graph& graph, uint32_t seed) : graph_(graph), random_(seed) {}

  Value* conv(Value* x, int64_t out_channels, int64_t kernel, int64_t stride, int64_t group = 1) {
    const int64_t in_channels = x->shape()[1].value();
    const int64_t fan_in = in_channels / group * kernel * kernel;
    Value* w = constant({out_channels, in_channels / group, kernel, kernel}, 0.f, std::sqrt(2.f / fan_in));
    Node* node = graph_.createNode("Conv", {x, w});
    const int64_t pad = kernel / 2;
    node->setAttr("pads", std::vector<int64_t>{pad, pad, pad, pad});
    node->setAttr("strides", std::vector<int64_t>{stride, stride});
    if (group > 1) node->setAttr("group", group);
    return typed(node);
  }
  Value* batchNorm(Value* x) {
    const int64_t channels = x->shape()[1].value();
    Node* node = graph_.createNode("BatchNormalization", {x, constant({channels}, 1.f, 0.2f), constant({channels}, 0.f, 0.1f),
                                                          constant({channels}, 0.f, 0.1f), positive({channels})});
    return typed(node);
  }
  Value* convBn(Value* x, int64_t out_channels, int64_t kernel, int64_t stride, int64_t group = 1) {
    return batchNorm(conv(x, out_channels, kernel, stride, group));
  }
  Value* op(const char* type, std::vector<Value*> inputs) { return typed(graph_.createNode(type, inputs)); }
  Value* relu(Value* x) { return op("Relu", {x}); }
  Value* relu6(Value* x) {
    return op("Clip", {x, scalar(0.f), scalar(6.f)});
  }
  Value* maxPool(Value* x, int64_t kernel, int64_t stride, int64_t pad) {
    Node* node = graph_.createNode("MaxPool", {x});
    node->setAttr("kernel_shape", std::vector<int64_t>{kernel, kernel});
    node->setAttr("strides", std::vector<int64_t>{stride, stride});
    node->setAttr("pads", std::vector<int64_t>{pad, pad, pad, pad});
    return typed(node);
  }
  // GlobalAveragePool, Flatten, Gemm to `classes` logits.
  Value* classifier(Value* x, int64_t classes) {
    Value* pooled = op("Flatten", {op("GlobalAveragePool", {x})});
    const int64_t features = pooled->shape()[1].value();
    Node* gemm = graph_.createNode("Gemm", {pooled, constant({classes, features}, 0.f, std::sqrt(1.f / features)),
                                            constant({classes}, 0.f, 0.1f)});
    gemm->setAttr("transB", int64_t{1});
    return typed(gemm);
  }

 private:
  // Shapes are inferred node by node so that the builder can read channel counts.
  Value* typed(Node* node) {
    KnownValueMap known;
    inferNode(*node, known);
    return node->output();
  }
  Value* constant(std::vector<int64_t> dims, float mean, float stddev) {
    Tensor tensor = Tensor::allocate(DType::F32, dims);
    std::normal_distribution<float> normal(mean, stddev);
    auto* values = static_cast<float*>(tensor.mutableData());
    for (int64_t i = 0; i < tensor.numElements(); ++i) values[i] = stddev == 0.f ? mean : normal(random_);
    return constantNode(std::move(tensor));
  }
  Value* scalar(float value) { return constant({}, value, 0.f); }
  Value* positive(std::vector<int64_t> dims) {
    Tensor tensor = Tensor::allocate(DType::F32, dims);
    std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
    auto* values = static_cast<float*>(tensor.mutableData());
    for (int64_t i = 0; i < tensor.numElements(); ++i) values[i] = uniform(random_);
    return constantNode(std::move(tensor));
  }
  Value* constantNode(Tensor tensor) {
    Node* node = graph_.createNode("Constant", {});
    node->output()->setType(TensorType(DType::F32, Shape::ofStatic(tensor.shape())));
    node->setAttr("value", std::move(tensor));
    return node->output();
  }

  Graph& graph_;
  std::mt19937 random_;
};

// ResNet-50 v1 (torchvision's layout: stride on the 3x3 of each bottleneck), f32[batch,3,size,size].
inline std::unique_ptr<Graph> resnet50(int64_t batch, int64_t size = 224, uint32_t seed = 1) {
  auto graph = std::make_unique<Graph>("resnet50");
  CnnBuilder b(*graph, seed);
  Value* x = graph->addInput("image", TensorType(DType::F32, Shape::ofStatic({batch, 3, size, size})));
  x = b.maxPool(b.relu(b.convBn(x, 64, 7, 2)), 3, 2, 1);
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    for (int64_t block = 0; block < blocks[stage]; ++block) {
      const int64_t width = widths[stage], stride = stage > 0 && block == 0 ? 2 : 1;
      Value* y = b.relu(b.convBn(x, width, 1, 1));
      y = b.relu(b.convBn(y, width, 3, stride));
      y = b.convBn(y, width * 4, 1, 1);
      Value* shortcut = block == 0 ? b.convBn(x, width * 4, 1, stride) : x;
      x = b.relu(b.op("Add", {y, shortcut}));
    }
  }
  graph->addOutput(b.classifier(x, 1000));
  return graph;
}

// MobileNetV2 (width 1.0): inverted residual blocks with depthwise 3x3 convolutions and ReLU6.
inline std::unique_ptr<Graph> mobilenetV2(int64_t batch, int64_t size = 224, uint32_t seed = 1) {
  auto graph = std::make_unique<Graph>("mobilenet_v2");
  CnnBuilder b(*graph, seed);
  Value* x = graph->addInput("image", TensorType(DType::F32, Shape::ofStatic({batch, 3, size, size})));
  x = b.relu6(b.convBn(x, 32, 3, 2));
  int64_t channels = 32;
  const int64_t settings[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                 {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};  // expand, out, repeats, stride
  for (const auto& [expand, out, repeats, first_stride] : settings) {
    for (int64_t i = 0; i < repeats; ++i) {
      const int64_t stride = i == 0 ? first_stride : 1, hidden = channels * expand;
      Value* y = expand == 1 ? x : b.relu6(b.convBn(x, hidden, 1, 1));
      y = b.relu6(b.convBn(y, hidden, 3, stride, hidden));
      y = b.convBn(y, out, 1, 1);
      x = stride == 1 && channels == out ? b.op("Add", {x, y}) : y;
      channels = out;
    }
  }
  x = b.relu6(b.convBn(x, 1280, 1, 1));
  graph->addOutput(b.classifier(x, 1000));
  return graph;
}

// `blocks` ResNet bottleneck blocks (1x1 -> 3x3 -> 1x1, identity residual) on
// f32[batch,channels,size,size]; channels is the block's outer width (4x its inner one).
inline std::unique_ptr<Graph> bottleneckChain(int64_t batch, int64_t channels, int64_t size, int blocks,
                                              uint32_t seed = 1) {
  auto graph = std::make_unique<Graph>("bottlenecks");
  CnnBuilder b(*graph, seed);
  Value* x = graph->addInput("x", TensorType(DType::F32, Shape::ofStatic({batch, channels, size, size})));
  for (int i = 0; i < blocks; ++i) {
    Value* y = b.relu(b.convBn(x, channels / 4, 1, 1));
    y = b.relu(b.convBn(y, channels / 4, 3, 1));
    x = b.relu(b.op("Add", {b.convBn(y, channels, 1, 1), x}));
  }
  graph->addOutput(x);
  return graph;
}

}  // namespace estuary::cnn
