// Estuary's binary IR files (.estir: core/proto/estuary/ir.proto, large tensors in a
// `.weights` side file) through loadGraph(), then the verifier, shape inference and the
// printer. Input: the graph file, then (after fuzz::kPartSeparator) its side file; without
// a separator there is no side file. The same bytes also go through loadGraphFromBytes().
#include "estuary/ir/graph.h"
#include "estuary/serialize/serialize.h"
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input = fuzz::asText(data, size);
  bool has_side_file = input.find(fuzz::kPartSeparator) != std::string_view::npos;
  std::vector<std::string_view> parts = fuzz::splitParts(input, 2);
  std::string path = fuzz::writeFile("model.estir", parts[0]);
  std::string side = path + ".weights";
  if (has_side_file) {
    fuzz::writeFile("model.estir.weights", parts[1]);
  } else {
    std::remove(side.c_str());
  }
  fuzz::run([&] {
    std::unique_ptr<Graph> graph = loadGraph(path);
    fuzz::exercise(*graph);
  });
  if (!has_side_file) {
    fuzz::run([&] { loadGraphFromBytes(parts[0], "fuzz.estir"); });
  }
  return 0;
}
