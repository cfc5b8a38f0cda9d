// Frontend registry: registration checks, loading a frontend plugin by name, picking a
// frontend by file, and the message listing every unsupported op.
#include "estuary/frontend/frontend.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "estuary/ir/graph.h"
#include "estuary/plugin/loader.h"
#include "error_of.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

const std::string kTestPluginDir = ESTUARY_BINARY_DIR "/tests/plugins";

class NullFrontend final : public Frontend {
 public:
  bool recognizes(const std::string&) const override { return false; }
  ModelInfo describe(const std::string&) const override { return {}; }
  std::unique_ptr<Graph> load(const std::string&) const override { return nullptr; }
};

FrontendInfo nullInfo(std::string name) {
  FrontendInfo info;
  info.name = std::move(name);
  info.extensions = {".null"};
  info.factory = [] { return std::make_shared<NullFrontend>(); };
  return info;
}

std::string writeFile(const std::string& name, const std::string& text) {
  fs::path path = fs::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

// The test frontend plugin is found through ESTUARY_PLUGIN_PATH.
class FrontendPluginTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("ESTUARY_PLUGIN_PATH", kTestPluginDir.c_str(), 1); }
  void TearDown() override { unsetenv("ESTUARY_PLUGIN_PATH"); }
};

TEST(FrontendRegistry, RegistersCreatesAndRefusesDuplicates) {
  FrontendRegistry registry;
  registry.add(nullInfo("null"));
  EXPECT_NE(registry.find("null"), nullptr);
  EXPECT_NE(registry.create("null"), nullptr);
  EXPECT_EQ(registry.create("other"), nullptr);
  EXPECT_EQ(registry.names(), std::vector<std::string>{"null"});
  EXPECT_NE(errorOf([&] { registry.add(nullInfo("null")); }).find("already registered"), std::string::npos);
}

TEST(FrontendRegistry, RefusesIncompleteInfo) {
  FrontendRegistry registry;
  FrontendInfo no_factory = nullInfo("a");
  no_factory.factory = nullptr;
  EXPECT_NE(errorOf([&] { registry.add(no_factory); }).find("has no factory"), std::string::npos);
  FrontendInfo bad_extension = nullInfo("b");
  bad_extension.extensions = {"onnx"};
  EXPECT_NE(errorOf([&] { registry.add(bad_extension); }).find("start with '.'"), std::string::npos);
  EXPECT_NE(errorOf([&] { registry.add(nullInfo("")); }).find("no name"), std::string::npos);
  EXPECT_TRUE(registry.names().empty());
}

TEST(UnsupportedOpsError, ListsEveryOpWithItsNodesAndOpset) {
  UnsupportedOp loss{"NegativeLogLikelihoodLoss", "", 17, {"loss"}};
  UnsupportedOp custom{"FusedThing", "com.example", 1, {"a", "b", "c", "d", "e", "f", "g"}};
  UnsupportedOpsError error("m.onnx", {loss, custom});
  std::string message = error.what();
  EXPECT_NE(message.find("m.onnx: 2 ops have no translation (8 nodes)"), std::string::npos) << message;
  EXPECT_NE(message.find("NegativeLogLikelihoodLoss (opset 17): 'loss'"), std::string::npos) << message;
  EXPECT_NE(message.find("com.example::FusedThing (opset 1): 'a', 'b', 'c', 'd', 'e' and 2 more"),
            std::string::npos)
      << message;
  EXPECT_EQ(error.ops().size(), 2u);
}

TEST_F(FrontendPluginTest, LoadsAFrontendPluginByName) {
  std::vector<std::string> available = availableFrontends();
  EXPECT_NE(std::find(available.begin(), available.end(), "test"), available.end());
  std::shared_ptr<const Frontend> frontend = loadFrontend("test");
  ASSERT_NE(frontend, nullptr);
  std::string path = writeFile("model.testmodel",
                               "# estuary test model\n"
                               "graph @g(%x: f32[2]) {\n  %y = Relu(%x) : f32[2]\n  return %y\n}\n");
  EXPECT_TRUE(frontend->recognizes(path));
  std::unique_ptr<Graph> graph = frontend->load(path);
  EXPECT_EQ(graph->numNodes(), 1u);
  EXPECT_EQ(frontend->describe(path).op_counts.at("Relu"), 1);
  bool listed = false;
  for (const PluginHandle& plugin : PluginLoader::global().loaded()) {
    if (plugin->name() == "test_frontend") listed = plugin->frontends() == std::vector<std::string>{"test"};
  }
  EXPECT_TRUE(listed);
}

TEST_F(FrontendPluginTest, UnknownNameListsAvailableFrontends) {
  std::string message = errorOf([] { loadFrontend("tset"); });
  EXPECT_NE(message.find("no frontend named 'tset'; available: "), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'test'?"), std::string::npos) << message;
}

TEST_F(FrontendPluginTest, PicksTheFrontendOfAFileByContent) {
  // The extension is not the test frontend's: recognition goes by the header line.
  std::string model = writeFile("model.txt", "# estuary test model\ngraph @g() {\n  return\n}\n");
  std::shared_ptr<const Frontend> frontend = frontendForFile(model);
  EXPECT_TRUE(frontend->recognizes(model));
  std::string other = writeFile("other.txt", "something else\n");
  std::string message = errorOf([&] { frontendForFile(other); });
  EXPECT_NE(message.find("other.txt: no frontend recognizes this file (tried: "), std::string::npos)
      << message;
  EXPECT_NE(message.find("name one with --framework"), std::string::npos) << message;
  EXPECT_NE(errorOf([] { frontendForFile("/nonexistent/model.onnx"); }).find("no such file"),
            std::string::npos);
}

TEST_F(FrontendPluginTest, ReportsEveryUnsupportedOp) {
  std::string path = writeFile("unsupported.testmodel",
                               "# estuary test model\n# unsupported Foo n1 n2\n# unsupported Bar n3\n"
                               "graph @g() {\n  return\n}\n");
  try {
    loadFrontend("test")->load(path);
    FAIL() << "expected UnsupportedOpsError";
  } catch (const UnsupportedOpsError& error) {
    ASSERT_EQ(error.ops().size(), 2u);
    EXPECT_EQ(error.ops()[0].nodes, (std::vector<std::string>{"n1", "n2"}));
    EXPECT_EQ(error.ops()[1].op_type, "Bar");
  }
}

}  // namespace
}  // namespace estuary
