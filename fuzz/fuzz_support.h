#pragma once
// What every harness in fuzz/ shares: files for the fuzzed bytes, inputs split into several
// files, and the rule that estuary::Error is the one expected failure.
//
// The readers under test read files (they map them, look at their names and at the files
// beside them), so each input is written to a file in a scratch folder of this process
// (under $ESTUARY_FUZZ_TMPDIR, else /dev/shm when it exists, else $TMPDIR or /tmp) and read
// through the public API from there. A harness body is
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     std::string path = estuary::fuzz::writeFile("model.onnx", data, size);
//     estuary::fuzz::run([&] { ... load path ... });
//     return 0;
//   }
//
// run() swallows estuary::Error (a malformed file must end in one) and lets anything else
// escape: libFuzzer reports an uncaught exception (std::bad_alloc, std::out_of_range, ...)
// as a crash, as it does sanitizer reports, timeouts and running out of memory.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/support/error.h"

namespace estuary {
class Graph;
}

namespace estuary::fuzz {

// The process's scratch folder, made on first use and removed at exit.
const std::string& scratchDir();

// Writes `bytes` to scratchDir()/name (making the folders `name` has), replacing what was
// there, and returns its path.
std::string writeFile(std::string_view name, std::string_view bytes);
inline std::string writeFile(std::string_view name, const uint8_t* data, size_t size) {
  return writeFile(name, std::string_view(reinterpret_cast<const char*>(data), size));
}
// An empty folder scratchDir()/name (emptied when it exists), and its path.
std::string freshDir(std::string_view name);

// Inputs holding several files (a program and its parameters, a SavedModel's three files)
// separate them with this line; fuzz/make_corpus.py writes seeds in this form. The
// separator rather than length prefixes: libFuzzer's insertions and deletions inside one
// part then leave the others intact.
inline constexpr std::string_view kPartSeparator = "\n--estuary-fuzz-part--\n";
// The first `count` parts; missing ones are empty, text after the last separator that
// would make a further part stays in the last one.
std::vector<std::string_view> splitParts(std::string_view input, size_t count);
inline std::string_view asText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// A file of fuzz/ in the source tree (a fixture), read whole; aborts when it cannot be read,
// since the harness cannot work without it.
std::string readSourceFile(std::string_view relative_path);

// Whether ESTUARY_FUZZ_VERBOSE is set: run() then prints the errors it swallows
// (reportError()), to see whether the seeds load or why an input is refused.
bool verbose();
void reportError(const Error& error);

// Runs `body`, swallowing estuary::Error, the clean failure every reader must end in.
template <typename Body>
void run(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    if (verbose()) reportError(error);
  }
}

// What a conversion does next with a graph a reader produced, the cheap part: verify it,
// infer shapes over it and print it (the text form walks every attribute and type).
void exercise(Graph& graph);

// What the framework harnesses do with the files they wrote: loadModel() with `framework`,
// exercise() on the graph, then describeModel() (each in run()).
void loadAndDescribe(const std::string& path, const std::string& framework);

}  // namespace estuary::fuzz
