// Paddle parameter files (.pdiparams) alone: a fixed, valid PIR program
// (fixtures/paddle_params/inference.json, a convolution, a matmul and an add made by Paddle)
// with the fuzzed bytes as its inference.pdiparams, through loadModel() with the paddle
// frontend. Every input reaches the parameter reader, none is spent on the program.
#include "estuary/frontend/frontend.h"
#include "estuary/ir/graph.h"
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string program = fuzz::readSourceFile("fixtures/paddle_params/inference.json");
  static const std::string path = fuzz::writeFile("params/inference.json", program);
  fuzz::writeFile("params/inference.pdiparams", data, size);
  fuzz::run([&] {
    std::unique_ptr<Graph> graph = loadModel(ModelInput::path(path), {}, "paddle");
    fuzz::exercise(*graph);
  });
  return 0;
}
