// NumPy .npy images (the inputs of `estuary run`) through the command line's parseNpy(),
// and what parses written back with formatNpy() and parsed again (it must round-trip).
#include <cstdlib>

#include "fuzz_support.h"
#include "npy.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run([&] {
    Tensor array = cli::parseNpy(fuzz::asText(data, size), "fuzz.npy");
    std::string again = cli::formatNpy(array);
    Tensor back = cli::parseNpy(again, "formatted.npy");
    if (back.byteSize() != array.byteSize()) std::abort();
  });
  return 0;
}
