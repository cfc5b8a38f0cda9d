// Paddle PIR programs (inference.json) with their parameters (inference.pdiparams beside
// them) through loadModel() with the paddle frontend, then describeModel(). Input: the JSON,
// then after fuzz::kPartSeparator the .pdiparams (left out when empty).
#include "fuzz_support.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string_view> parts = fuzz::splitParts(fuzz::asText(data, size), 2);
  std::string dir = fuzz::freshDir("pir");
  std::string path = fuzz::writeFile("pir/inference.json", parts[0]);
  if (!parts[1].empty()) fuzz::writeFile("pir/inference.pdiparams", parts[1]);
  fuzz::loadAndDescribe(path, "paddle");
  return 0;
}
