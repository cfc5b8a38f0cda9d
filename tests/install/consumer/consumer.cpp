// Builds a graph from IR text, compiles and runs it with the GE backend, checks the result,
// loads the ONNX frontend plugin from wherever the installed SDK keeps it, and runs the graph
// again through an SDK session that optimizes it with the installed O2 pipeline.
#include <cmath>
#include <cstdio>
#include <vector>

#include "estuary/frontend/frontend.h"
#include "estuary/ge/model.h"
#include "estuary/sdk/session.h"
#include "estuary/text/parser.h"

int main() {
  try {
    auto graph = estuary::parseGraph(R"(graph @g(%x: f32[2,3], %w: f32[3,2]) {
  %m = MatMul(%x, %w)
  %y = Relu(%m)
  return %y
})");
    auto model = estuary::ge::CompiledModel::build(*graph);
    estuary::ge::RunContextPool contexts(model);
    std::vector<float> x{1, 2, 3, -4, -5, -6}, w{1, 0, 0, 1, 1, 1}, y(4);
    using estuary::ge::HostTensor;
    using estuary::ge::TensorDesc;
    contexts.run({HostTensor::of(TensorDesc::of(estuary::DType::F32, {2, 3}), x.data()),
                  HostTensor::of(TensorDesc::of(estuary::DType::F32, {3, 2}), w.data())},
                 {HostTensor::of(TensorDesc::of(estuary::DType::F32, {2, 2}), y.data())});
    const std::vector<float> expected{4, 5, 0, 0};
    for (size_t i = 0; i < y.size(); ++i) {
      if (std::fabs(y[i] - expected[i]) > 1e-6f) {
        std::fprintf(stderr, "consumer: y[%zu] = %g, expected %g\n", i, y[i], expected[i]);
        return 1;
      }
    }
    estuary::loadFrontend("onnx");

    // No ESTUARY_CONFIG_DIR is set: "O2" is found beside the installed library.
    estuary::sdk::Session session({{"pipeline", "O2"}, {"threads", "1"}});
    session.addGraph(1, *graph);
    std::vector<estuary::sdk::NamedTensor> outputs =
        session.runGraph(1, {{"x", HostTensor::of(TensorDesc::of(estuary::DType::F32, {2, 3}), x.data()), nullptr},
                             {"w", HostTensor::of(TensorDesc::of(estuary::DType::F32, {3, 2}), w.data()), nullptr}});
    const float* from_session = static_cast<const float*>(outputs.at(0).tensor.data);
    for (size_t i = 0; i < expected.size(); ++i) {
      if (std::fabs(from_session[i] - expected[i]) > 1e-6f) {
        std::fprintf(stderr, "consumer: the session's y[%zu] = %g, expected %g\n", i, from_session[i], expected[i]);
        return 1;
      }
    }
    std::printf("consumer: ran a MatMul + Relu graph, loaded the onnx frontend plugin, ran it in an O2 session\n");
    return 0;
  } catch (const estuary::Error& error) {
    std::fprintf(stderr, "consumer: %s\n", error.what());
    return 1;
  }
}
