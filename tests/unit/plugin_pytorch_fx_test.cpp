// The PyTorch frontend plugin: FX graph descriptions (as estuary.torch hands them over) into
// core IR, given in memory through the Frontend API as the Python bindings give them.
#include <gtest/gtest.h>

#include <algorithm>

#include "estuary/frontend/frontend.h"
#include "estuary/pytorch/fx_graph.h"
#include "estuary/text/printer.h"

namespace estuary::pytorch {
namespace {

std::unique_ptr<Graph> translate(const FxGraph& graph) {
  std::string name = graph.name.empty() ? "FX graph" : "FX graph '" + graph.name + "'";
  return loadModel(ModelInput::object(kFxGraphObjectType, &graph, nullptr, name));
}

bool supports(const std::string& target) {
  std::vector<std::string> ops = loadFrontend("pytorch")->ops();
  return std::find(ops.begin(), ops.end(), target) != ops.end();
}

FxArg ref(size_t node) {
  FxArg arg;
  arg.kind = FxArg::Kind::Node;
  arg.node = node;
  return arg;
}
FxArg integer(int64_t value) {
  FxArg arg;
  arg.kind = FxArg::Kind::Int;
  arg.int_value = value;
  return arg;
}
FxArg number(double value) {
  FxArg arg;
  arg.kind = FxArg::Kind::Float;
  arg.float_value = value;
  return arg;
}
FxArg list(std::vector<FxArg> items) {
  FxArg arg;
  arg.kind = FxArg::Kind::List;
  arg.list = std::move(items);
  return arg;
}

FxNode input(std::string name, std::vector<std::string> sizes, DType dtype = DType::F32) {
  FxNode node;
  node.kind = FxNode::Kind::Input;
  node.name = std::move(name);
  node.dtype = dtype;
  node.sizes = std::move(sizes);
  return node;
}
FxNode call(std::string name, std::string target, std::vector<FxArg> args, DType result = DType::F32) {
  FxNode node;
  node.name = std::move(name);
  node.target = std::move(target);
  node.args = std::move(args);
  node.result_dtypes = {result};
  return node;
}

std::string errorOf(const FxGraph& graph) {
  try {
    translate(graph);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(PytorchFx, WeightsAreSharedConstantsAndCopyIntoAnInputIsAnUpdate) {
  std::vector<float> weight(16, 0.5f);
  FxGraph fx;
  fx.name = "linear";
  fx.nodes.push_back(input("x", {"s0", "4"}));
  FxNode w;
  w.kind = FxNode::Kind::Weight;
  w.name = "w";
  w.dtype = DType::F32;
  w.sizes = {"4", "4"};
  w.weight = Tensor::wrap(DType::F32, {4, 4}, weight.data(), nullptr);
  fx.nodes.push_back(w);
  fx.nodes.push_back(input("count", {"4"}));
  fx.nodes.push_back(call("t", "aten.t.default", {ref(1)}));
  fx.nodes.push_back(call("mm", "aten.mm.default", {ref(0), ref(3)}));
  fx.nodes.push_back(call("add", "aten.add.Tensor", {ref(2), number(1.0)}));
  fx.nodes.push_back(call("copy_", "aten.copy_.default", {ref(2), ref(5)}));
  fx.outputs = {ref(4)};
  std::unique_ptr<Graph> graph = translate(fx);

  ASSERT_EQ(graph->inputs().size(), 2u);  // the weight is not an input
  EXPECT_EQ(graph->output(0)->type().str(), "f32[s0,4]");
  Value* count = graph->input(1);
  EXPECT_TRUE(count->isMutableInput());
  ASSERT_NE(graph->inputUpdate(count), nullptr);
  EXPECT_TRUE(graph->inputUpdate(count)->producer()->is("Add"));
  bool shared = false;
  for (Node* node : graph->nodes()) {
    if (node->is("Constant") && node->output()->name() == "w") {
      shared = node->attr("value")->asTensor().data() == weight.data();
    }
  }
  EXPECT_TRUE(shared) << printGraph(*graph);
}

TEST(PytorchFx, SymbolicSizeArgumentsKeepSymbolicDims) {
  FxGraph fx;
  FxNode s0;
  s0.kind = FxNode::Kind::SymInt;
  s0.name = "s0_size";
  s0.sizes = {"s0"};
  fx.nodes.push_back(s0);
  fx.nodes.push_back(input("x", {"s0", "3", "4"}));
  fx.nodes.push_back(call("mul", "operator.mul", {ref(0), integer(3)}, DType::I64));
  fx.nodes.push_back(call("view", "aten.view.default", {ref(1), list({ref(2), integer(4)})}));
  fx.nodes.push_back(call("arange", "aten.arange.default", {ref(0)}, DType::I64));
  fx.outputs = {ref(3), ref(4)};
  std::unique_ptr<Graph> graph = translate(fx);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[3*s0,4]");
  EXPECT_EQ(graph->output(1)->type().str(), "i64[s0]");
}

TEST(PytorchFx, UntranslatedTargetsAreListedTogether) {
  FxGraph fx;
  fx.name = "g";
  fx.nodes.push_back(input("x", {"2"}));
  fx.nodes.push_back(call("sort", "aten.sort.default", {ref(0)}));
  fx.nodes.push_back(call("erfinv", "aten.erfinv.default", {ref(0)}));
  fx.nodes.push_back(call("erfinv_1", "aten.erfinv.default", {ref(2)}));
  fx.outputs = {ref(3)};
  try {
    translate(fx);
    FAIL() << "translated";
  } catch (const UnsupportedOpsError& error) {
    // In order of first appearance, with every node.
    ASSERT_EQ(error.ops().size(), 2u);
    EXPECT_EQ(error.ops()[0].op_type, "aten.sort.default");
    EXPECT_EQ(error.ops()[1].op_type, "aten.erfinv.default");
    EXPECT_EQ(error.ops()[1].nodes, (std::vector<std::string>{"erfinv", "erfinv_1"}));
  }
  EXPECT_TRUE(supports("aten.convolution.default"));
  EXPECT_FALSE(supports("aten.sort.default"));
}

TEST(PytorchFx, ErrorsNameTheFxNode) {
  FxGraph fx;
  fx.nodes.push_back(input("x", {"1", "3", "8", "8"}));
  fx.nodes.push_back(input("w", {"4", "3", "3", "3"}));
  fx.nodes.push_back(call("conv", "aten.convolution.default", {ref(0), ref(1)}));
  fx.outputs = {ref(2)};
  EXPECT_EQ(errorOf(fx), "FX graph: node 'conv' (aten.convolution.default): argument 'stride' is missing");

  FxGraph copy;
  copy.nodes.push_back(input("x", {"2"}));
  copy.nodes.push_back(call("neg", "aten.neg.default", {ref(0)}));
  copy.nodes.push_back(call("copy_", "aten.copy_.default", {ref(1), ref(0)}));
  copy.outputs = {ref(1)};
  EXPECT_NE(errorOf(copy).find("node 'copy_' (aten.copy_.default): copy_ into 'neg', which is not a graph input"),
            std::string::npos);

  FxGraph symbol;
  FxNode lone;
  lone.kind = FxNode::Kind::SymInt;
  lone.name = "u0";
  lone.sizes = {"u0"};
  symbol.nodes.push_back(lone);
  symbol.nodes.push_back(call("arange", "aten.arange.default", {ref(0)}, DType::I64));
  symbol.outputs = {ref(1)};
  EXPECT_EQ(errorOf(symbol), "FX graph: node 'arange' (aten.arange.default): the symbolic size u0 is neither a dim "
                             "of a tensor input nor given at run time, so its value is unknown");
  // Given at run time, it is a 0-d input, and sizes computed from it are built in the graph.
  symbol.nodes[0].runtime = true;
  std::unique_ptr<Graph> graph = translate(symbol);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->type().str(), "i64[]");
}

}  // namespace
}  // namespace estuary::pytorch
