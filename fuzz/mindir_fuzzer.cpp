// MindSpore MindIR models (.mindir, weights in the file) through loadModel() with the
// mindspore frontend, then describeModel().
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::writeFile("model.mindir", data, size);
  fuzz::loadAndDescribe(path, "mindspore");
  return 0;
}
