// Golden translations: every golden/<case>.onnx (written by make_fixtures.py) is loaded
// through the onnx frontend plugin, and its IR, printed, must equal golden/<case>.est.
// ESTUARY_UPDATE_GOLDEN=1 writes the .est files from the actual output instead (read the
// diff before committing it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "estuary/frontend/frontend.h"
#include "estuary/ir/graph.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> discoverCases() {
  std::vector<std::string> cases;
  for (const auto& entry : fs::directory_iterator(ESTUARY_ONNX_GOLDEN_DIR)) {
    if (entry.path().extension() == ".onnx") cases.push_back(entry.path().stem().string());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class OnnxGoldenTest : public testing::TestWithParam<std::string> {};

TEST_P(OnnxGoldenTest, Translates) {
  const fs::path dir(ESTUARY_ONNX_GOLDEN_DIR);
  const fs::path model = dir / (GetParam() + ".onnx");
  const fs::path expected_path = dir / (GetParam() + ".est");
  std::unique_ptr<Graph> graph = loadModel(ModelInput::path(model.string()), {}, "onnx");
  std::string actual = printGraph(*graph);
  if (const char* update = std::getenv("ESTUARY_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(expected_path, std::ios::binary)
        << "# " << GetParam() << ".onnx (tests/onnx/make_fixtures.py) in core IR\n" << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path << " is missing; write it with ESTUARY_UPDATE_GOLDEN=1";
  std::string expected = printGraph(*parseGraph(readText(expected_path), expected_path.string()));
  EXPECT_EQ(expected, actual) << model << " translates differently from " << expected_path;
}

INSTANTIATE_TEST_SUITE_P(Golden, OnnxGoldenTest, testing::ValuesIn(discoverCases()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace estuary
