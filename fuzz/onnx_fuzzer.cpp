// ONNX models (.onnx) through loadModel() with the onnx frontend, then describeModel() (the
// frontend's second reading path, `estuary convert --mode info`).
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::writeFile("model.onnx", data, size);
  fuzz::loadAndDescribe(path, "onnx");
  return 0;
}
