// Estuary's IR text form (.est files, docs/text-format.md) through the parser, then the
// verifier, shape inference and the printer, as `estuary optimize`/`build` do with one.
#include "estuary/ir/graph.h"
#include "estuary/text/parser.h"
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run([&] {
    std::unique_ptr<Graph> graph = parseGraph(fuzz::asText(data, size), "fuzz.est");
    fuzz::exercise(*graph);
  });
  return 0;
}
