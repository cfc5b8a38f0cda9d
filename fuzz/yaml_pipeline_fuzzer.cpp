// YAML pass pipelines (configs/*.yaml) through parsePipelineYaml(), and the same bytes as a
// pass switch file through loadPassSwitchFile().
//
// A pipeline names plugins to load, by name or by path. Names resolve in the install
// directory of this build only (the scratch folder and ESTUARY_PLUGIN_PATH hold none), so
// they can reach no more than Estuary's own plugins; inputs that could name a plugin by path
// (any '/' in an input that says "plugins") are skipped, so that the fuzzer does not load
// arbitrary shared objects of the machine.
#include "estuary/pass/pipeline.h"
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::asText(data, size);
  if (text.find("plugins") != std::string_view::npos && text.find('/') != std::string_view::npos) return -1;
  fuzz::run([&] { parsePipelineYaml(text, "fuzz.yaml", fuzz::scratchDir()); });
  std::string path = fuzz::writeFile("switches.yaml", text);
  fuzz::run([&] { loadPassSwitchFile(path); });
  return 0;
}
