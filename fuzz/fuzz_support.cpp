#include "fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "estuary/frontend/frontend.h"
#include "estuary/ir/graph.h"
#include "estuary/ir/verifier.h"
#include "estuary/ops/schema.h"
#include "estuary/text/printer.h"
#include "estuary/transforms/shape_inference.h"

namespace fs = std::filesystem;

namespace estuary::fuzz {
namespace {

std::string makeScratchDir() {
  std::string base;
  if (const char* env = std::getenv("ESTUARY_FUZZ_TMPDIR"); env && *env) {
    base = env;
  } else if (fs::is_directory("/dev/shm")) {
    base = "/dev/shm";
  } else if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) {
    base = tmp;
  } else {
    base = "/tmp";
  }
  fs::path dir = fs::path(base) / ("estuary-fuzz-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

struct ScratchDir {
  std::string path = makeScratchDir();
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

const std::string& scratchDir() {
  static ScratchDir dir;
  return dir.path;
}

std::string writeFile(std::string_view name, std::string_view bytes) {
  fs::path path = fs::path(scratchDir()) / std::string(name);
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz_support: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path.string();
}

std::string freshDir(std::string_view name) {
  fs::path path = fs::path(scratchDir()) / std::string(name);
  fs::remove_all(path);
  fs::create_directories(path);
  return path.string();
}

std::vector<std::string_view> splitParts(std::string_view input, size_t count) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < count) {
    size_t at = input.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + kPartSeparator.size());
  }
  parts.push_back(input);
  parts.resize(count);
  return parts;
}

std::string readSourceFile(std::string_view relative_path) {
  fs::path path = fs::path(ESTUARY_FUZZ_SOURCE_DIR) / std::string(relative_path);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz_support: cannot read the fixture %s\n", path.c_str());
    std::abort();
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool verbose() {
  static const bool on = std::getenv("ESTUARY_FUZZ_VERBOSE") != nullptr;
  return on;
}

void reportError(const Error& error) { std::fprintf(stderr, "estuary::Error: %s\n", error.what()); }

void exercise(Graph& graph) {
  verifyGraph(graph);
  inferShapes(graph, OpRegistry::global());
  std::string text = printGraph(graph);
  // Keeps the printing from being optimized away.
  if (text.empty()) std::abort();
}

void loadAndDescribe(const std::string& path, const std::string& framework) {
  ModelInput input = ModelInput::path(path);
  run([&] {
    std::unique_ptr<Graph> graph = loadModel(input, {}, framework);
    exercise(*graph);
  });
  run([&] { describeModel(input, {}, framework); });
}

}  // namespace estuary::fuzz

// Loads the frontend plugins before the first input, so that their coverage counters are
// registered from the start (and a plugin that fails to load shows at once).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  for (const char* name : {"onnx", "tensorflow", "paddle", "mindspore"}) {
    try {
      estuary::loadFrontend(name);
    } catch (const estuary::Error& error) {
      std::fprintf(stderr, "fuzz_support: cannot load the %s frontend: %s\n", name, error.what());
      std::abort();
    }
  }
  return 0;
}
