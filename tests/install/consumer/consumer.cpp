// Builds a graph from IR text, compiles and runs it with the GE backend, checks the result, and
// loads the ONNX frontend plugin from wherever the installed SDK keeps it.
#include <cmath>
#include <cstdio>
#include <vector>

#include "estuary/frontend/frontend.h"
#include "estuary/ge/model.h"
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
    std::printf("consumer: ran a MatMul + Relu graph and loaded the onnx frontend plugin\n");
    return 0;
  } catch (const estuary::Error& error) {
    std::fprintf(stderr, "consumer: %s\n", error.what());
    return 1;
  }
}
