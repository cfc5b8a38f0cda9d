// TensorFlow SavedModel directories through loadModel() with the tensorflow frontend, then
// describeModel(). Input: three parts separated by fuzz::kPartSeparator, written as
// saved_model.pb, variables/variables.index (the tensor bundle's table) and
// variables/variables.data-00000-of-00001 (its one shard). All three are fuzzed together:
// a fixed saved_model.pb would leave the MetaGraph, signature and function-library reading
// (most of a SavedModel's own code) unexercised, and the separator keeps libFuzzer's
// insertions in one part from shifting the others. An empty part leaves its file out.
#include "estuary/frontend/frontend.h"
#include "estuary/ir/graph.h"
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> parts = fuzz::splitParts(fuzz::asText(data, size), 3);
  std::string dir = fuzz::freshDir("saved_model");
  fuzz::writeFile("saved_model/saved_model.pb", parts[0]);
  if (!parts[1].empty()) fuzz::writeFile("saved_model/variables/variables.index", parts[1]);
  if (!parts[2].empty()) fuzz::writeFile("saved_model/variables/variables.data-00000-of-00001", parts[2]);
  fuzz::run([&] {
    ModelInput input = ModelInput::path(dir);
    fuzz::run([&] {
      std::unique_ptr<Graph> graph = loadModel(input, {}, "tensorflow");
      fuzz::exercise(*graph);
    });
    describeModel(input, {}, "tensorflow");
  });
  return 0;
}
