// estuary serve: a model over HTTP on Ray Serve. Ray Serve is a Python library, so this
// command is `python -m estuary.serve` (python/estuary/serve, docs/serving.md) under the
// command line's name: it replaces itself with that Python, passing the arguments on.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "estuary/support/error.h"

namespace estuary::cli {
namespace {

// Imports the server first, so that a Python without estuary or Ray says so and how to
// point the command at one that has both, instead of a bare ModuleNotFoundError.
constexpr const char* kBootstrap = R"(import sys
try:
    from estuary.serve.__main__ import main
except ImportError as error:
    sys.exit(f"error: estuary serve runs the Python package estuary.serve, which {sys.executable} cannot import: "
             f"{error}\nSet ESTUARY_PYTHON to a Python that has estuary (PYTHONPATH=BUILD/python in a build tree) "
             "and Ray Serve (pip install 'ray[serve]').")
main(sys.argv[1:], prog="estuary serve")
)";

}  // namespace

int runServe(const std::vector<std::string>& args) {
  // ESTUARY_PYTHON names the interpreter; otherwise python3 as PATH finds it.
  const char* chosen = std::getenv("ESTUARY_PYTHON");
  const bool from_environment = chosen && *chosen;
  const std::string python = from_environment ? chosen : "python3";
  std::vector<std::string> words = {python, "-c", kBootstrap};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  if (from_environment) {
    execv(python.c_str(), argv.data());
  } else {
    execvp(python.c_str(), argv.data());
  }
  raise("estuary serve cannot run ", from_environment ? "ESTUARY_PYTHON=" + python : "python3 from PATH", ": ",
        std::strerror(errno), " (set ESTUARY_PYTHON to a Python that has estuary and ray[serve])");
}

}  // namespace estuary::cli
