// The Frontend API: registration checks, loading a frontend plugin by name, choosing the
// frontend of an input, the input kinds (file, directory, file set, in-memory object), the
// options (unknown keys, input names, outputs, input shapes), and the message listing every
// unsupported op. The test frontend plugin (tests/plugins/test_frontend.cpp) reads IR text.
#include "estuary/frontend/frontend.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "estuary/ir/graph.h"
#include "estuary/plugin/loader.h"
#include "estuary/text/printer.h"
#include "error_of.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

const std::string kTestPluginDir = ESTUARY_BINARY_DIR "/tests/plugins";

class NullFrontend final : public Frontend {
 public:
  bool supports(const ModelInput&, const FrontendOptions&) const override { return false; }
  ModelInfo describe(const ModelInput&, const FrontendOptions&) const override { return {}; }
  std::unique_ptr<Graph> load(const ModelInput&, const FrontendOptions&) const override { return nullptr; }
};

FrontendInfo nullInfo(std::string name) {
  FrontendInfo info;
  info.name = std::move(name);
  info.extensions = {".null"};
  info.accepts = "nothing";
  info.factory = [] { return std::make_shared<NullFrontend>(); };
  return info;
}

fs::path tempDir() {
  fs::path dir = fs::path(::testing::TempDir()) / "frontend_test";
  fs::create_directories(dir);
  return dir;
}

std::string writeFile(const std::string& name, const std::string& text) {
  fs::path path = tempDir() / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

constexpr const char* kScaleModel =
    "# estuary test model\n"
    "# weights w 2\n"
    "graph @g(%x: f32[batch,2]) {\n"
    "  %w = Constant() {value = tensor<f32[2]> [0, 0]} : f32[2]\n"
    "  %y = Mul(%x, %w) : f32[batch,2]\n"
    "  %z = Relu(%y) : f32[batch,2]\n"
    "  return %z\n"
    "}\n";

std::string weightBytes(std::vector<float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

const Tensor& weightOf(const Graph& graph) {
  for (const Node* node : graph.nodes()) {
    if (node->is("Constant")) return node->attr("value")->asTensor();
  }
  throw Error("no constant");
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
  FrontendInfo silent = nullInfo("c");
  silent.accepts.clear();
  EXPECT_NE(errorOf([&] { registry.add(silent); }).find("does not say what it accepts"), std::string::npos);
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

TEST(ModelInput, KnowsItsKindAndRefusesMissingPaths) {
  std::string file = writeFile("kinds/m.testmodel", "x");
  EXPECT_EQ(ModelInput::path(file).kind(), ModelInput::Kind::File);
  EXPECT_EQ(ModelInput::path(tempDir().string()).kind(), ModelInput::Kind::Directory);
  ModelInput pair = ModelInput::files({file, writeFile("kinds/m.testweights", "")});
  EXPECT_EQ(pair.kind(), ModelInput::Kind::Files);
  EXPECT_EQ(pair.pathEndingWith(".testweights"), tempDir().string() + "/kinds/m.testweights");
  EXPECT_EQ(pair.extensions(), (std::vector<std::string>{".testmodel", ".testweights"}));
  EXPECT_EQ(ModelInput::files({file}).kind(), ModelInput::Kind::File);
  EXPECT_EQ(errorOf([] { ModelInput::path("/nonexistent/m.onnx"); }), "/nonexistent/m.onnx: no such file or directory");
  EXPECT_NE(errorOf([&] { ModelInput::files({file, "/nonexistent/m.testweights"}); })
                .find("/nonexistent/m.testweights: no such file or directory (a part of the model given)"),
            std::string::npos);
  std::string text = "model";
  ModelInput object = ModelInput::object("test.model_text", &text, nullptr, "in memory");
  EXPECT_EQ(object.object("test.model_text"), &text);
  EXPECT_EQ(object.object("other.type"), nullptr);
  EXPECT_EQ(object.describe(), "in-memory test.model_text 'in memory'");
}

TEST_F(FrontendPluginTest, LoadsAFrontendPluginByName) {
  std::vector<std::string> available = availableFrontends();
  EXPECT_NE(std::find(available.begin(), available.end(), "test"), available.end());
  std::shared_ptr<const Frontend> frontend = loadFrontend("test");
  ASSERT_NE(frontend, nullptr);
  std::string path = writeFile("model.testmodel",
                               "# estuary test model\n"
                               "graph @g(%x: f32[2]) {\n  %y = Relu(%x) : f32[2]\n  return %y\n}\n");
  EXPECT_TRUE(frontend->supports(ModelInput::path(path), {}));
  std::unique_ptr<Graph> graph = loadModel(ModelInput::path(path));
  EXPECT_EQ(graph->numNodes(), 1u);
  ModelInfo info = describeModel(ModelInput::path(path));
  EXPECT_EQ(info.frontend, "test");
  EXPECT_EQ(info.op_counts.at("Relu"), 1);
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

TEST_F(FrontendPluginTest, ChoosesTheFrontendOfAnInputByContent) {
  // The extension is not the test frontend's: the choice goes by the header line.
  std::string model = writeFile("model.txt", "# estuary test model\ngraph @g() {\n  return\n}\n");
  EXPECT_EQ(chooseFrontend(ModelInput::path(model), {}), "test");
  std::string other = writeFile("other.txt", "something else\n");
  std::string message = errorOf([&] { chooseFrontend(ModelInput::path(other), {}); });
  EXPECT_NE(message.find("other.txt: no frontend supports this input (file " + other + "); asked:"), std::string::npos)
      << message;
  // Every frontend asked says what it looks for.
  EXPECT_NE(message.find("\n  test: looks for a file (or a directory's model.testmodel) starting with "
                         "'# estuary test model'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("name one with --framework"), std::string::npos) << message;
  // A named frontend must support the input.
  message = errorOf([&] { chooseFrontend(ModelInput::path(other), {}, "test"); });
  EXPECT_NE(message.find(other + ": not a model the test frontend reads: it looks for a file"), std::string::npos)
      << message;
}

TEST_F(FrontendPluginTest, TakesADirectoryAndNamesItsMissingPart) {
  fs::path dir = tempDir() / "saved";
  fs::create_directories(dir);
  std::ofstream(dir / "model.testmodel") << kScaleModel;
  std::ofstream(dir / "model.testweights", std::ios::binary) << weightBytes({2, 3});
  std::unique_ptr<Graph> graph = loadModel(ModelInput::path(dir.string()));
  EXPECT_EQ(weightOf(*graph).data<float>()[1], 3.0f);
  // Without the file holding the graph, the test frontend does not claim the directory.
  fs::path empty = tempDir() / "empty_saved";
  fs::create_directories(empty);
  std::string message = errorOf([&] { loadModel(ModelInput::path(empty.string()), {}, "test"); });
  EXPECT_NE(message.find("not a model the test frontend reads"), std::string::npos) << message;
}

TEST_F(FrontendPluginTest, TakesAFilePairAndNamesTheMissingWeights) {
  std::string model = writeFile("pair/scale.testmodel", kScaleModel);
  std::string weights = writeFile("pair/elsewhere.testweights", weightBytes({4, 5}));
  std::unique_ptr<Graph> graph = loadModel(ModelInput::files({model, weights}));
  EXPECT_EQ(weightOf(*graph).data<float>()[0], 4.0f);
  // The model alone: the part it needs is named.
  std::string message = errorOf([&] { loadModel(ModelInput::path(model)); });
  EXPECT_NE(message.find("the weights of 'w' are missing: no " + tempDir().string() + "/pair/scale.testweights"),
            std::string::npos)
      << message;
  // Or named through the options.
  FrontendOptions options;
  options.weights = weights;
  EXPECT_EQ(weightOf(*loadModel(ModelInput::path(model), options)).data<float>()[1], 5.0f);
}

TEST_F(FrontendPluginTest, TakesAnInMemoryObject) {
  std::string text = "# estuary test model\ngraph @g(%x: f32[3]) {\n  %y = Neg(%x) : f32[3]\n  return %y\n}\n";
  ModelInput input = ModelInput::object("test.model_text", &text, nullptr, "text model");
  EXPECT_EQ(chooseFrontend(input, {}), "test");
  std::unique_ptr<Graph> graph = loadModel(input);
  EXPECT_TRUE(graph->firstNode()->is("Neg"));
}

TEST_F(FrontendPluginTest, OptionsAreCheckedAndApplied) {
  std::string path = writeFile("options.testmodel",
                               "# estuary test model\n"
                               "graph @g(%a: f32[?,2], %b: f32[2]) {\n"
                               "  %s = Add(%a, %b) : f32[?,2]\n"
                               "  %r = Relu(%s) : f32[?,2]\n"
                               "  return %r\n"
                               "}\n");
  ModelInput input = ModelInput::path(path);
  FrontendOptions unknown;
  unknown.keys = {{"graph-nmae", "x"}};
  EXPECT_EQ(errorOf([&] { loadModel(input, unknown); }),
            "the test frontend has no option 'graph-nmae'; its options:\n  graph-name: renames the graph");
  FrontendOptions options;
  options.keys = {{"graph-name", "renamed"}};
  options.inputs = {"b", "a"};
  options.outputs = {"s"};
  options.input_shapes = {{"a", {4, -1}}};
  std::unique_ptr<Graph> graph = loadModel(input, options);
  EXPECT_EQ(graph->name(), "renamed");
  EXPECT_EQ(graph->input(0)->name(), "b");
  EXPECT_EQ(graph->input(1)->type().str(), "f32[4,2]");
  ASSERT_EQ(graph->numOutputs(), 1u);
  EXPECT_EQ(graph->output(0)->name(), "s");

  FrontendOptions wrong_input;
  wrong_input.inputs = {"b", "c"};
  EXPECT_EQ(errorOf([&] { loadModel(input, wrong_input); }), path + ": the model has no input 'c'; its inputs: a, b");
  FrontendOptions wrong_output;
  wrong_output.outputs = {"t"};
  EXPECT_NE(errorOf([&] { loadModel(input, wrong_output); })
                .find(path + ": no value of the model is named 't' (asked for as an output)"),
            std::string::npos);
  FrontendOptions wrong_shape;
  wrong_shape.input_shapes = {{"a", {4, 3}}};
  EXPECT_NE(errorOf([&] { loadModel(input, wrong_shape); }).find("input 'a' dim 1 is 2 in the graph"),
            std::string::npos);
}

TEST_F(FrontendPluginTest, ReportsEveryUnsupportedOp) {
  std::string path = writeFile("unsupported.testmodel",
                               "# estuary test model\n# unsupported Foo n1 n2\n# unsupported Bar n3\n"
                               "graph @g() {\n  return\n}\n");
  try {
    loadModel(ModelInput::path(path));
    FAIL() << "expected UnsupportedOpsError";
  } catch (const UnsupportedOpsError& error) {
    ASSERT_EQ(error.ops().size(), 2u);
    EXPECT_EQ(error.ops()[0].nodes, (std::vector<std::string>{"n1", "n2"}));
    EXPECT_EQ(error.ops()[1].op_type, "Bar");
  }
}

}  // namespace
}  // namespace estuary
