// Parses an ONNX model into a graph, edits it (every Relu becomes a Sigmoid), builds and runs
// it, and checks the result against sigmoid(x @ W) computed from the weights the graph holds.
// The model is the one make_linear_onnx.py writes.
//
//   edit_onnx linear.onnx
#include <cmath>
#include <cstdio>

#include "estuary/sdk/build.h"
#include "estuary/sdk/parser.h"
#include "estuary/sdk/session.h"
#include "estuary/support/error.h"
#include "example_support.h"

using namespace estuary;

namespace {

// Replaces each Relu with a Sigmoid of the same input, name and type; returns how many.
int reluToSigmoid(Graph& graph) {
  int replaced = 0;
  for (Node* relu : graph.nodeList()) {
    if (!relu->is("Relu")) continue;
    Node* sigmoid = graph.createNodeBefore(relu, "Sigmoid", {relu->input(0)});
    sigmoid->setName(relu->name());
    sigmoid->output()->setType(relu->output()->type());
    relu->output()->replaceAllUsesWith(sigmoid->output());
    sigmoid->output()->setName(relu->output()->name());
    graph.eraseNode(relu);
    ++replaced;
  }
  return replaced;
}

// The constant weight the graph's MatMul multiplies by.
const Tensor& matmulWeight(const Graph& graph) {
  for (const Node* node : graph.nodes()) {
    if (!node->is("MatMul")) continue;
    const Node* producer = node->input(1)->producer();
    if (producer && producer->is("Constant")) return producer->attr("value")->asTensor();
  }
  raise("the model has no MatMul by a constant weight; make it with make_linear_onnx.py");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: edit_onnx MODEL.onnx (make_linear_onnx.py writes one)\n");
    return 2;
  }
  try {
    std::unique_ptr<Graph> graph = sdk::parseOnnx(argv[1]);
    const int replaced = reluToSigmoid(*graph);
    std::printf("parsed %s: %zu nodes; replaced %d Relu with Sigmoid\n", argv[1], graph->numNodes(), replaced);
    if (replaced == 0) raise(argv[1], " has no Relu to replace");

    const Tensor& weight = matmulWeight(*graph);
    const int64_t in = weight.shape()[0], out = weight.shape()[1], batch = 3;
    sdk::Session session;
    session.addGraph(1, *graph, {{"input_shape", "x:" + std::to_string(batch) + "," + std::to_string(in)}});

    std::mt19937 random(5);
    std::vector<float> x = example::randomValues(static_cast<size_t>(batch * in), 1.0f, random);
    std::vector<sdk::NamedTensor> outputs = session.runGraph(
        1, {{"x", ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {batch, in}), x.data()), nullptr}});

    const float* w = static_cast<const float*>(weight.data());
    std::vector<float> expected(static_cast<size_t>(batch * out));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t o = 0; o < out; ++o) {
        float sum = 0;
        for (int64_t i = 0; i < in; ++i) sum += x[b * in + i] * w[i * out + o];
        expected[b * out + o] = 1.0f / (1.0f + std::exp(-sum));
      }
    return example::matches("edited model output", static_cast<const float*>(outputs.at(0).tensor.data), expected,
                            1e-5f)
               ? 0
               : 1;
  } catch (const Error& error) {
    std::fprintf(stderr, "edit_onnx: %s\n", error.what());
    return 1;
  }
}
