#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "estuary/transforms/cse.h"

namespace estuary {
namespace {

int64_t cse(Graph& graph) { return eliminateCommonSubexpressions(graph, OpRegistry::global()); }

std::vector<std::string> opTypes(const Graph& graph) {
  std::vector<std::string> ops;
  for (Node* node : graph.nodes()) ops.push_back(node->qualifiedOpType());
  return ops;
}

TEST(CommonSubexpressionElimination, MergesDuplicatesAndWhatBecomesDuplicate) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %y: f32[4]) {
  %a = Add(%x, %y) : f32[4]
  %b = Add(%x, %y) : f32[4]
  %ea = Exp(%a) : f32[4]
  %eb = Exp(%b) : f32[4]
  %swapped = Add(%y, %x) : f32[4]
  %m = Mul(%ea, %eb) : f32[4]
  return %m, %swapped
})");
  EXPECT_EQ(cse(*graph), 2);
  EXPECT_EQ(opTypes(*graph), (std::vector<std::string>{"Add", "Exp", "Add", "Mul"}));
  Node* mul = graph->lastNode();
  EXPECT_EQ(mul->input(0), mul->input(1));
  EXPECT_EQ(cse(*graph), 0);
}

TEST(CommonSubexpressionElimination, AttributesMustMatch) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[2,3,4]) {
  %a = Transpose(%x) {perm = [0, 2, 1]} : f32[2,4,3]
  %b = Transpose(%x) {perm = [1, 0, 2]} : f32[3,2,4]
  %c = Transpose(%x) {perm = [0, 2, 1]} : f32[2,4,3]
  %s1 = ReduceSum(%x) {keepdims = 0} : f32[]
  %s2 = ReduceSum(%x) : f32[1,1,1]
  return %a, %b, %c, %s1, %s2
})");
  EXPECT_EQ(cse(*graph), 1);
  EXPECT_EQ(graph->output(2), graph->output(0));
  EXPECT_NE(graph->output(1), graph->output(0));
  EXPECT_NE(graph->output(3), graph->output(4));
}

TEST(CommonSubexpressionElimination, ConstantsMergeByContent) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[2]) {
  %c1 = Constant() {value = tensor<f32[2]> [1.0, 2.0]} : f32[2]
  %c2 = Constant() {value = tensor<f32[2]> [1.0, 2.0]} : f32[2]
  %c3 = Constant() {value = tensor<f32[2]> [1.0, 3.0]} : f32[2]
  %c4 = Constant() {value = tensor<i32[2]> [1065353216, 1073741824]} : i32[2]
  %c5 = Constant() {value = tensor<f32[1,2]> [1.0, 2.0]} : f32[1,2]
  %a = Add(%x, %c1) : f32[2]
  %b = Add(%x, %c2) : f32[2]
  %d = Add(%x, %c3) : f32[2]
  return %a, %b, %d, %c4, %c5
})");
  // c2 folds into c1, and then b into a. c3 differs in content; c4 has c1's bytes but
  // another dtype; c5 another shape.
  EXPECT_EQ(cse(*graph), 2);
  EXPECT_EQ(graph->output(0), graph->output(1));
  EXPECT_EQ(opTypes(*graph),
            (std::vector<std::string>{"Constant", "Constant", "Constant", "Constant", "Add", "Add"}));
}

TEST(CommonSubexpressionElimination, LargeEqualWeightsMerge) {
  Graph graph;
  std::vector<float> data(100000, 0.5f);
  data.back() = 2.0f;  // equal heads, so the content comparison has to look at the tail
  std::vector<float> other = data;
  other[50000] = 1.0f;
  auto constant = [&](const std::vector<float>& values) {
    Node* node = graph.createNode("Constant", {});
    node->setAttr("value", Tensor::fromVector(DType::F32, {100000}, values));
    node->output()->setType(TensorType(DType::F32, Shape::ofStatic({100000})));
    return node->output();
  };
  Value* a = constant(data);
  Value* b = constant(data);
  Value* c = constant(other);
  graph.addOutput(a);
  graph.addOutput(b);
  graph.addOutput(c);
  EXPECT_EQ(cse(graph), 1);
  EXPECT_EQ(graph.output(1), graph.output(0));
  EXPECT_NE(graph.output(2), graph.output(0));
}

TEST(CommonSubexpressionElimination, NeverMergesRandomOpsOrOpsWithoutSchema) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4]) {
  %r1 = RandomUniformLike(%x) : f32[4]
  %r2 = RandomUniformLike(%x) : f32[4]
  %d1 = Dropout(%x) : f32[4]
  %d2 = Dropout(%x) : f32[4]
  %u1 = acme::Sample(%x) : f32[4]
  %u2 = acme::Sample(%x) : f32[4]
  return %r1, %r2, %d1, %d2, %u1, %u2
})");
  EXPECT_EQ(cse(*graph), 0);
  EXPECT_EQ(graph->numNodes(), 6u);
}

TEST(CommonSubexpressionElimination, IsPure) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %cond: bool[]) {
  %a = Add(%x, %x) : f32[4]
  %r = RandomNormalLike(%x) : f32[4]
  %u = acme::Sample(%x) : f32[4]
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    return %x
  }} : f32[4]
  return %a, %r, %u, %z
})");
  std::vector<Node*> nodes = graph->nodeList();
  const OpRegistry& ops = OpRegistry::global();
  EXPECT_TRUE(isPure(*nodes[0], ops));
  EXPECT_FALSE(isPure(*nodes[1], ops));
  EXPECT_FALSE(isPure(*nodes[2], ops));
  EXPECT_FALSE(isPure(*nodes[3], ops));
}

TEST(CommonSubexpressionElimination, SubgraphsMayReuseEarlierOuterNodesOnly) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %cond: bool[]) {
  %outer = Neg(%x) : f32[4]
  %z = If(%cond) {else_branch = graph @else() {
    %e = Exp(%x) : f32[4]
    return %e
  }, then_branch = graph @then() {
    %inner = Neg(%x) : f32[4]
    %t = Exp(%x) : f32[4]
    %s = Add(%inner, %t) : f32[4]
    return %s
  }} : f32[4]
  %after = Exp(%x) : f32[4]
  return %z, %outer, %after
})");
  // Only the branch's Neg goes (it reuses the outer one). The Exps of the two branches are
  // not visible to each other, and the outer Exp after the If cannot reuse a branch's.
  EXPECT_EQ(cse(*graph), 1);
  Node* if_node = graph->nodeList()[1];
  Graph* then_branch = if_node->attr("then_branch")->asGraph().get();
  EXPECT_EQ(opTypes(*then_branch), (std::vector<std::string>{"Exp", "Add"}));
  EXPECT_EQ(then_branch->lastNode()->input(0), graph->firstNode()->output());
  EXPECT_EQ(graph->numNodes(), 3u);
}

TEST(CommonSubexpressionElimination, MergedValueKeepsTheKnownType) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4]) {
  %a = Neg(%x) : ?[*]
  %b = Neg(%x) : f32[4]
  return %a, %b
})");
  EXPECT_EQ(cse(*graph), 1);
  EXPECT_EQ(graph->output(1)->type().str(), "f32[4]");
}

TEST(CommonSubexpressionElimination, MergesEveryPairOfAWideGraphInOneCall) {
  // 200k nodes in 100k duplicate pairs over 1000 inputs: one walk merges every pair.
  Graph graph;
  TensorType type(DType::F32, Shape::ofStatic({4}));
  std::vector<Value*> inputs;
  for (int i = 0; i < 1000; ++i) inputs.push_back(graph.addInput("x" + std::to_string(i), type));
  for (int i = 0; i < 100000; ++i) {
    Value* a = inputs[i % 1000];
    Value* b = inputs[(i / 1000) % 1000];
    for (int copy = 0; copy < 2; ++copy) graph.addOutput(graph.createNode("Mul", {a, b})->output());
  }
  EXPECT_EQ(cse(graph), 100000);
  EXPECT_EQ(graph.numNodes(), 100000u);
}

}  // namespace
}  // namespace estuary
