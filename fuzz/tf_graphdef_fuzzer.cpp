// Frozen TensorFlow GraphDefs (.pb) through loadModel() with the tensorflow frontend, then
// describeModel().
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::writeFile("frozen.pb", data, size);
  fuzz::loadAndDescribe(path, "tensorflow");
  return 0;
}
