#include <gtest/gtest.h>

#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "estuary/transforms/dce.h"

namespace estuary {
namespace {

std::vector<std::string> opTypes(const Graph& graph) {
  std::vector<std::string> ops;
  for (Node* node : graph.nodes()) ops.push_back(node->opType());
  return ops;
}

TEST(DeadCodeElimination, ErasesUnusedChainsAndConstants) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4]) {
  %c = Constant() {value = tensor<f32[4]> [1.0, 2.0, 3.0, 4.0]} : f32[4]
  %unused = Constant() {value = tensor<f32[1]> [5.0]} : f32[1]
  %a = Add(%x, %c) : f32[4]
  %d1 = Neg(%a) : f32[4]
  %d2 = Exp(%d1) : f32[4]
  %d3 = Mul(%d2, %unused) : f32[4]
  return %a
})");
  EXPECT_EQ(eliminateDeadCode(*graph), 4);
  EXPECT_EQ(opTypes(*graph), (std::vector<std::string>{"Constant", "Add"}));
  EXPECT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(eliminateDeadCode(*graph), 0);
}

TEST(DeadCodeElimination, KeepsMutableInputUpdatesAndWhatTheyUse) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %cache: f32[4] mutable, %unused_input: f32[2]) {
  %sum = Add(%cache, %x) : f32[4]
  %scaled = Mul(%sum, %x) : f32[4]
  %dead = Neg(%x) : f32[4]
  return %x
  update %cache = %scaled
})");
  EXPECT_EQ(eliminateDeadCode(*graph), 1);
  EXPECT_EQ(opTypes(*graph), (std::vector<std::string>{"Add", "Mul"}));
  EXPECT_EQ(graph->inputs().size(), 3u);
  ASSERT_NE(graph->inputUpdate(graph->input(1)), nullptr);
}

TEST(DeadCodeElimination, KeepsValuesCapturedByLiveSubgraphsAndCleansThem) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %cond: bool[]) {
  %captured = Neg(%x) : f32[4]
  %only_dead_inside = Exp(%x) : f32[4]
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Abs(%captured) : f32[4]
    %dead = Relu(%only_dead_inside) : f32[4]
    return %t
  }} : f32[4]
  return %z
})");
  // Relu inside the branch is dead, and with it the outer Exp only it used.
  EXPECT_EQ(eliminateDeadCode(*graph), 2);
  EXPECT_EQ(opTypes(*graph), (std::vector<std::string>{"Neg", "If"}));
  Graph* then_branch = graph->lastNode()->attr("then_branch")->asGraph().get();
  EXPECT_EQ(opTypes(*then_branch), std::vector<std::string>{"Abs"});
}

TEST(DeadCodeElimination, ErasesUnusedNodesWithSubgraphsAndWhatOnlyTheyCaptured) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %cond: bool[]) {
  %captured = Neg(%x) : f32[4]
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Abs(%captured) : f32[4]
    %u = Exp(%t) : f32[4]
    return %u
  }} : f32[4]
  return %x
})");
  // The If, the two nodes of its branch, and the Neg the branch captured.
  EXPECT_EQ(eliminateDeadCode(*graph), 4);
  EXPECT_EQ(graph->numNodes(), 0u);
}

TEST(DeadCodeElimination, ErasesALongDeadChainInOneCall) {
  Graph graph;
  TensorType type(DType::F32, Shape::ofStatic({4}));
  Value* x = graph.addInput("x", type);
  Value* value = x;
  for (int i = 0; i < 10000; ++i) value = graph.createNode("Neg", {value})->output();
  graph.addOutput(x);
  EXPECT_EQ(eliminateDeadCode(graph), 10000);
  EXPECT_EQ(graph.numNodes(), 0u);
}

TEST(DeadCodeElimination, PassIsRegisteredWithoutOptions) {
  PassInfo info = deadCodeEliminationPass();
  EXPECT_EQ(info.name, "dce");
  EXPECT_TRUE(info.options.empty());
  auto graph = parseGraph("graph @main(%x: f32[4]) {\n  %d = Neg(%x) : f32[4]\n  return %x\n}");
  PassContext context;
  EXPECT_EQ(info.factory(PassOptions())->run(*graph, context).changes, 1);
}

}  // namespace
}  // namespace estuary
