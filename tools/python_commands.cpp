// The commands written in Python, under the command line's name: `estuary serve` (Ray Serve is
// a Python library: python/estuary/serve, docs/serving.md) and `estuary compare` (ONNX
// Runtime and the frameworks are reached from Python: python/estuary/compare,
// docs/compare.md). Each replaces itself with that Python, passing the arguments on.
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

// Imports the command's module first, so that a Python without estuary (or what the command
// needs) says so and how to point the command at one that has it, instead of a bare
// ModuleNotFoundError.
std::string bootstrap(const std::string& module, const std::string& command, const std::string& needs) {
  return "import sys\n"
         "try:\n"
         "    from " + module + ".__main__ import main\n"
         "except ImportError as error:\n"
         "    sys.exit(f\"error: estuary " + command + " runs the Python package " + module +
         ", which {sys.executable} cannot import: \"\n"
         "             f\"{error}\\nSet ESTUARY_PYTHON to a Python that has estuary (PYTHONPATH=BUILD/python in a "
         "build tree)" + needs + ".\")\n"
         "sys.exit(main(sys.argv[1:], prog=\"estuary " + command + "\"))\n";
}

[[noreturn]] void execPython(const std::string& module, const std::string& command, const std::string& needs,
                             const std::vector<std::string>& args) {
  // ESTUARY_PYTHON names the interpreter; otherwise python3 as PATH finds it.
  const char* chosen = std::getenv("ESTUARY_PYTHON");
  const bool from_environment = chosen && *chosen;
  const std::string python = from_environment ? chosen : "python3";
  std::vector<std::string> words = {python, "-c", bootstrap(module, command, needs)};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  if (from_environment) {
    execv(python.c_str(), argv.data());
  } else {
    execvp(python.c_str(), argv.data());
  }
  raise("estuary ", command, " cannot run ", from_environment ? "ESTUARY_PYTHON=" + python : "python3 from PATH",
        ": ", std::strerror(errno), " (set ESTUARY_PYTHON to a Python that has estuary", needs, ")");
}

}  // namespace

int runServe(const std::vector<std::string>& args) {
  execPython("estuary.serve", "serve", " and Ray Serve (pip install 'ray[serve]')", args);
}

int runCompare(const std::vector<std::string>& args) {
  execPython("estuary.compare", "compare", " and, to compare with it, ONNX Runtime", args);
}

}  // namespace estuary::cli
