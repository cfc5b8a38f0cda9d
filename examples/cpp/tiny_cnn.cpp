// A small CNN built by hand with the typed op classes, built and run in a session, its output
// checked against plain loops: conv 3x3 (3 -> 8) + ReLU, max pool 2x2, conv 3x3 (8 -> 16) +
// ReLU, global average pool, flatten, and a dense layer to 10 classes.
#include <algorithm>
#include <cstdio>

#include "estuary/sdk/ops.h"
#include "estuary/sdk/session.h"
#include "estuary/support/error.h"
#include "example_support.h"

using namespace estuary;

namespace {

constexpr int64_t kBatch = 2, kSize = 16, kClasses = 10;

struct Weights {
  std::vector<float> conv1, bias1, conv2, bias2, dense, dense_bias;
};

// NCHW convolution, 3x3, stride 1, padding 1, then ReLU.
std::vector<float> convRelu(const std::vector<float>& x, int64_t in, int64_t out, int64_t size,
                            const std::vector<float>& w, const std::vector<float>& b) {
  std::vector<float> y(static_cast<size_t>(kBatch * out * size * size));
  for (int64_t n = 0; n < kBatch; ++n)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < size; ++i)
        for (int64_t j = 0; j < size; ++j) {
          float sum = b[o];
          for (int64_t c = 0; c < in; ++c)
            for (int64_t di = -1; di <= 1; ++di)
              for (int64_t dj = -1; dj <= 1; ++dj) {
                int64_t r = i + di, s = j + dj;
                if (r < 0 || s < 0 || r >= size || s >= size) continue;
                sum += x[((n * in + c) * size + r) * size + s] * w[((o * in + c) * 3 + di + 1) * 3 + dj + 1];
              }
          y[((n * out + o) * size + i) * size + j] = std::max(sum, 0.0f);
        }
  return y;
}

std::vector<float> reference(const std::vector<float>& x, const Weights& w) {
  std::vector<float> a = convRelu(x, 3, 8, kSize, w.conv1, w.bias1);
  const int64_t half = kSize / 2;
  std::vector<float> pooled(static_cast<size_t>(kBatch * 8 * half * half));
  for (int64_t nc = 0; nc < kBatch * 8; ++nc)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < half; ++j) {
        const float* p = &a[(nc * kSize + 2 * i) * kSize + 2 * j];
        pooled[(nc * half + i) * half + j] = std::max({p[0], p[1], p[kSize], p[kSize + 1]});
      }
  std::vector<float> b = convRelu(pooled, 8, 16, half, w.conv2, w.bias2);
  std::vector<float> logits(static_cast<size_t>(kBatch * kClasses));
  for (int64_t n = 0; n < kBatch; ++n)
    for (int64_t k = 0; k < kClasses; ++k) {
      float sum = w.dense_bias[k];
      for (int64_t c = 0; c < 16; ++c) {
        float mean = 0;
        for (int64_t p = 0; p < half * half; ++p) mean += b[(n * 16 + c) * half * half + p];
        sum += mean / static_cast<float>(half * half) * w.dense[c * kClasses + k];
      }
      logits[n * kClasses + k] = sum;
    }
  return logits;
}

std::unique_ptr<Graph> buildCnn(const Weights& w) {
  using namespace sdk::ops;
  sdk::GraphBuilder g("tiny_cnn");
  auto constant = [&](const std::vector<float>& values, std::vector<int64_t> dims, const char* name) {
    return g.constant(Tensor::fromVector(DType::F32, std::move(dims), values), name);
  };
  // A 3x3 convolution with padding 1 and its bias, then ReLU.
  auto convRelu = [&](sdk::Output x, const std::vector<float>& weight, const std::vector<float>& bias, int64_t in,
                      int64_t out, const std::string& name) {
    sdk::Output conv = Conv(g, name)
                           .set_input_X(x)
                           .set_input_W(constant(weight, {out, in, 3, 3}, (name + ".weight").c_str()))
                           .set_input_B(constant(bias, {out}, (name + ".bias").c_str()))
                           .set_attr_pads({1, 1, 1, 1});
    return sdk::Output(Relu(g, name + ".relu").set_input_X(conv));
  };
  sdk::Output x = g.input("image", DType::F32, {Dim::symbol("batch"), 3, kSize, kSize});
  sdk::Output relu1 = convRelu(x, w.conv1, w.bias1, 3, 8, "conv1");
  sdk::Output pool = MaxPool(g, "pool").set_input_X(relu1).set_attr_kernel_shape({2, 2}).set_attr_strides({2, 2});
  sdk::Output relu2 = convRelu(pool, w.conv2, w.bias2, 8, 16, "conv2");
  sdk::Output features = Flatten(g, "flatten").set_input_input(GlobalAveragePool(g, "gap").set_input_X(relu2));
  sdk::Output logits = Gemm(g, "classifier")
                           .set_input_A(features)
                           .set_input_B(constant(w.dense, {16, kClasses}, "classifier.weight"))
                           .set_input_C(constant(w.dense_bias, {kClasses}, "classifier.bias"));
  g.output(logits, "logits");
  return g.finish();
}

}  // namespace

int main() {
  try {
    std::mt19937 random(7);
    Weights w{example::randomValues(8 * 3 * 9, 0.3f, random),  example::randomValues(8, 0.1f, random),
              example::randomValues(16 * 8 * 9, 0.2f, random), example::randomValues(16, 0.1f, random),
              example::randomValues(16 * kClasses, 0.3f, random), example::randomValues(kClasses, 0.1f, random)};
    std::unique_ptr<Graph> graph = buildCnn(w);
    std::printf("built graph '%s' with %zu nodes by hand\n", graph->name().c_str(), graph->numNodes());

    sdk::Session session({{"threads", "1"}});
    session.addGraph(1, *graph);
    std::vector<float> image = example::randomValues(kBatch * 3 * kSize * kSize, 1.0f, random);
    std::vector<float> logits(kBatch * kClasses);
    std::vector<sdk::NamedTensor> outputs = {
        {"logits", ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {kBatch, kClasses}), logits.data()), nullptr}};
    session.runGraph(1,
                     {{"image", ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {kBatch, 3, kSize, kSize}), image.data()),
                       nullptr}},
                     outputs);
    return example::matches("tiny_cnn logits", logits.data(), reference(image, w), 1e-4f) ? 0 : 1;
  } catch (const Error& error) {
    std::fprintf(stderr, "tiny_cnn: %s\n", error.what());
    return 1;
  }
}
