// NumPy .npz archives (zip, stored or deflated, zip64) through the command line's
// parseNpz(), and what parses written back with formatNpz() and parsed again.
#include <cstdlib>

#include "fuzz_support.h"
#include "npy.h"

using namespace estuary;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run([&] {
    std::vector<cli::NamedArray> arrays = cli::parseNpz(fuzz::asText(data, size), "fuzz.npz");
    std::string again = cli::formatNpz(arrays, size % 2 == 1);
    if (cli::parseNpz(again, "formatted.npz").size() != arrays.size()) std::abort();
  });
  return 0;
}
