// Offline models (.eom, ge_backend/include/estuary/ge/offline_model.h) through
// ge::CompiledModel::load(), which maps the file, reads its sections, rebuilds the graph and
// weights and the prebuilt plans; then a run context, as `estuary run` makes first.
#include "estuary/ge/model.h"
#include "estuary/ge/offline_model.h"
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::writeFile("model.eom", data, size);
  fuzz::run([&] {
    if (!ge::isOfflineModelFile(path)) return;
    ge::BuildOptions options;
    options.num_threads = 1;
    std::shared_ptr<ge::CompiledModel> model = ge::CompiledModel::load(path, options);
    model->createContext();
  });
  return 0;
}
