// Runs the golden pass tests: every tests/golden/**/*.est file is one case (format in
// tests/golden/README.md). ESTUARY_UPDATE_GOLDEN=1 rewrites the expected sections from the
// actual output instead of comparing (review the diff before committing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kExpectedMarker = "# expected:";

struct GoldenCase {
  std::string name;  // "<pass>_<case>", a valid GoogleTest name
  fs::path path;
};

std::vector<GoldenCase> discoverCases() {
  std::vector<GoldenCase> cases;
  for (const auto& entry : fs::recursive_directory_iterator(ESTUARY_GOLDEN_DIR)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".est") continue;
    std::string name = fs::relative(entry.path(), ESTUARY_GOLDEN_DIR).replace_extension().string();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    cases.push_back({name, entry.path()});
  }
  std::sort(cases.begin(), cases.end(),
            [](const GoldenCase& a, const GoldenCase& b) { return a.name < b.name; });
  return cases;
}

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A line diff (longest common subsequence; golden cases are small): "-" lines are
// expected only, "+" lines actual only.
std::string lineDiff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = splitLines(expected), b = splitLines(actual);
  std::vector<std::vector<size_t>> common(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1
                                  : std::max(common[i + 1][j], common[i][j + 1]);
    }
  }
  std::ostringstream out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out << "  " << a[i++] << '\n';
      ++j;
    } else if (j < b.size() && (i == a.size() || common[i][j + 1] >= common[i + 1][j])) {
      out << "+ " << b[j++] << '\n';
    } else {
      out << "- " << a[i++] << '\n';
    }
  }
  return out.str();
}

// The directives of a case: the leading comment lines "# passes: ..." / "# pipeline: ...",
// and "# error: ..." for cases that must fail.
struct Directives {
  std::string passes;
  std::string pipeline;
  std::string error;
};

Directives readDirectives(const std::string& input, const fs::path& path) {
  Directives directives;
  for (const std::string& line : splitLines(input)) {
    if (line.rfind('#', 0) != 0) break;
    auto value = [&](std::string_view key, std::string& out) {
      std::string prefix = "# " + std::string(key) + ":";
      if (line.rfind(prefix, 0) != 0) return;
      std::string text = line.substr(prefix.size());
      text.erase(0, text.find_first_not_of(' '));
      out = text;
    };
    value("passes", directives.passes);
    value("pipeline", directives.pipeline);
    value("error", directives.error);
  }
  if (directives.passes.empty() == directives.pipeline.empty()) {
    throw Error(path.string() + ": the header needs exactly one of '# passes: a, b' or "
                                "'# pipeline: <file in configs/>'");
  }
  return directives;
}

class GoldenTest : public testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, Run) {
  const GoldenCase& golden = GetParam();
  std::string text = readText(golden.path);
  size_t marker = text.find("\n" + std::string(kExpectedMarker));
  std::string input = marker == std::string::npos ? text : text.substr(0, marker + 1);
  Directives directives = readDirectives(input, golden.path);
  bool expects_error = !directives.error.empty();
  if (!expects_error && marker == std::string::npos) {
    FAIL() << golden.path << ": no '" << kExpectedMarker << "' line before the expected IR";
  }

  std::string source = golden.path.string();
  std::unique_ptr<Graph> graph = parseGraph(input, source);
  auto makeManager = [&]() {
    Pipeline pipeline =
        directives.passes.empty()
            ? loadPipelineFile(std::string(ESTUARY_CONFIG_DIR) + "/" + directives.pipeline)
            : parsePassList(directives.passes);
    pipeline.settings.debug = false;
    auto manager = std::make_unique<PassManager>(std::move(pipeline));
    manager->setVerify(true);
    manager->setLog(nullptr);
    return manager;
  };

  if (expects_error) {
    try {
      makeManager()->run(*graph);
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(directives.error), std::string::npos)
          << golden.path << ": the error\n  " << error.what() << "\ndoes not contain\n  "
          << directives.error;
      return;
    }
    FAIL() << golden.path << ": expected an error containing '" << directives.error << "'";
  }

  std::unique_ptr<PassManager> manager = makeManager();
  manager->run(*graph);
  std::string actual = printGraph(*graph);
  if (const char* update = std::getenv("ESTUARY_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream out(golden.path, std::ios::binary);
    out << input << kExpectedMarker << '\n' << actual;
    return;
  }
  std::string expected_text = text.substr(marker + 1 + kExpectedMarker.size());
  std::string expected = printGraph(*parseGraph(expected_text, source + " (expected)"));
  EXPECT_EQ(expected, actual) << golden.path << ": output differs from the expected IR "
                              << "(- expected, + actual):\n"
                              << lineDiff(expected, actual);

  // Canonical output stays canonical: running the pipeline again changes nothing.
  manager->run(*graph);
  EXPECT_EQ(manager->totalChanges(), 0)
      << golden.path << ": a second run of the pipeline still changed the graph:\n"
      << printGraph(*graph);
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenTest, testing::ValuesIn(discoverCases()),
                         [](const testing::TestParamInfo<GoldenCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace estuary
