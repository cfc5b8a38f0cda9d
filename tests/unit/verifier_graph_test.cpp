// The verifier reports every problem of a graph, each naming its graph and node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estuary/ir/verifier.h"
#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"

namespace estuary {
namespace {

std::vector<std::string> messages(const Graph& graph, const VerifyOptions& options = {}) {
  std::vector<std::string> result;
  for (const VerifierDiagnostic& diagnostic : diagnoseGraph(graph, options)) result.push_back(diagnostic.message);
  return result;
}

std::vector<std::string> messages(const std::string& text, const VerifyOptions& options = {}) {
  return messages(*parseGraph(text), options);
}

using Messages = std::vector<std::string>;

TEST(Verifier, AcceptsAValidGraph) {
  auto graph = parseGraph(R"(graph @main(%x: f32[batch,16], %w: f32[16], %cache: f32[4,16] mutable, %cond: bool[]) {
  %s = Add(%x, %x) : f32[batch,16]
  %n = Neg(%s) : f32[batch,16]
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Neg(%n) : f32[batch,16]
    return %t
  }} : f32[batch,16]
  %new_cache = Identity(%cache) : f32[4,16]
  return %z, %w
  update %cache = %new_cache
})");
  VerifyOptions strict;
  strict.require_known_ops = true;
  strict.check_inferred_types = true;
  EXPECT_EQ(messages(*graph, strict), Messages{});
  EXPECT_NO_THROW(verifyGraph(*graph, strict));
}

TEST(Verifier, ReportsCyclesWithTheirNodes) {
  EXPECT_EQ(messages(R"(graph @main(%x: f32[4]) {
  %a = Add(%x, %c) : f32[4]
  %b = Neg(%a) : f32[4]
  %c = Relu(%b) : f32[4]
  %d = Sub(%d, %x) : f32[4]
  return %d
})"),
            (Messages{"graph 'main': node #0 (Add): is on a cycle of 3 nodes: node #0 (Add) -> node #1 (Neg) -> "
                      "node #2 (Relu) -> node #0 (Add)",
                      "graph 'main': node #3 (Sub): uses its own result (a cycle)"}));
}

TEST(Verifier, ReportsACycleThroughASubgraph) {
  // The If's branch uses the If's own result.
  EXPECT_EQ(messages(R"(graph @main(%c: bool[], %x: f32[4]) {
  %z = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Neg(%z) : f32[4]
    return %t
  }} : f32[4]
  return %z
})"),
            Messages{"graph 'main': node #0 (If): uses its own result (a cycle)"});
}

TEST(Verifier, ReportsUsesBeforeDefinitions) {
  EXPECT_EQ(messages(R"(graph @main(%c: bool[], %x: f32[4]) {
  %b = Neg(%a) : f32[4]
  %a = Relu(%x) : f32[4]
  %z = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Neg(%later) : f32[4]
    return %t
  }} : f32[4]
  %later = Relu(%x) : f32[4]
  return %b, %z
})"),
            (Messages{"graph 'main': node #0 (Neg): operand 0 uses %a before its definition by node #1 (Relu) (the "
                      "node list is not in topological order)",
                      "graph 'main' > node #2 (If) > graph 'then': node #0 (Neg): operand 0 uses %later before its "
                      "definition by node #3 (Relu) (the node list is not in topological order)"}));
}

TEST(Verifier, ReportsValuesThatAreNotVisible) {
  auto graph = parseGraph(R"(graph @main(%c: bool[], %x: f32[4]) {
  %z = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Neg(%x) : f32[4]
    return %t
  }} : f32[4]
  return %z
})");
  Graph* branch = graph->firstNode()->subgraphs()[1];
  Value* inner = branch->firstNode()->output();
  Node* outer_user = graph->createNode("Relu", {inner});  // the outer graph cannot see %t
  outer_user->output()->setType(TensorType(DType::F32, Shape({4})));
  Graph unrelated("other");
  Value* foreign = unrelated.addInput("foreign", TensorType(DType::F32, Shape({4})));
  graph->createNode("Abs", {foreign});
  EXPECT_EQ(messages(*graph),
            (Messages{"graph 'main': node #1 (Relu): operand 0 uses %t of graph 'then', which is not this graph "
                      "or an enclosing one",
                      "graph 'main': node #2 (Abs): operand 0 uses %foreign, which is not defined in this graph or "
                      "an enclosing one"}));
  // The unrelated graph sees a use of its input by a node that is not in it.
  EXPECT_EQ(messages(unrelated),
            Messages{"graph 'other': %foreign has a use by a node that is not in the graph (a dangling use)"});
  // The graphs do not own these cross-graph uses: drop them before the graphs go.
  graph->eraseNode(graph->lastNode());
  graph->eraseNode(outer_user);
}

TEST(Verifier, ASubgraphAloneMayCaptureValuesOfItsParents) {
  auto graph = parseGraph(R"(graph @main(%c: bool[], %x: f32[4]) {
  %z = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Neg(%x) : f32[4]
    return %t
  }} : f32[4]
  return %z
})");
  EXPECT_EQ(messages(*graph->firstNode()->subgraphs()[1]), Messages{});
}

TEST(Verifier, ChecksNodesAgainstTheirSchemas) {
  EXPECT_EQ(messages(R"(graph @main(%x: f32[4], %i: i64[4]) {
  %a = Add(%x, %i) : f32[4]
  %b = Add(%x, %x) : i64[4]
  %c = Add(%i, %i) : bool[4]
  %s = Shape(%x) : f32[1]
  %n = Neg(%x) {alpha = 1.0} : f32[4]
  %r = Relu() : f32[4]
  Unknown(%x)
  return %a, %b, %c, %s, %n, %r
})"),
            (Messages{"graph 'main': node #0 (Add): input 1 'B' has dtype i64 but input 0 'A' has f32; both are of "
                      "type T and must agree",
                      "graph 'main': node #1 (Add): output 0 'C' has dtype i64 but input 0 'A' has f32; both are of "
                      "type T and must agree",
                      "graph 'main': node #2 (Add): output 0 'C' has dtype bool, allowed: f32, f16, bf16, f64, i8, "
                      "i16, i32, i64, u8",
                      "graph 'main': node #3 (Shape): output 0 'shape' has dtype f32, expected i64",
                      "graph 'main': node #4 (Neg): unknown attribute 'alpha'; Neg takes no attributes",
                      "graph 'main': node #5 (Relu): takes at least 1 input (X), got 0"}));
}

TEST(Verifier, UnknownOpsOnlyWhenAsked) {
  const std::string text = "graph @main(%x: f32[4]) {\n  %y = my::Thing(%x) : f32[4]\n  return %y\n}";
  EXPECT_EQ(messages(text), Messages{});
  VerifyOptions options;
  options.require_known_ops = true;
  EXPECT_EQ(messages(text, options),
            Messages{"graph 'main': node #0 (my::Thing): no op schema is registered for my::Thing"});
}

TEST(Verifier, DeclaredTypesAgainstInferenceWhenAsked) {
  const std::string text = R"(graph @main(%x: f32[4], %y: f32[3,1]) {
  %a = Add(%x, %y) : f32[3,5]
  %b = Neg(%x) : f32[batch]
  return %a, %b
})";
  EXPECT_EQ(messages(text), Messages{});
  VerifyOptions options;
  options.check_inferred_types = true;
  EXPECT_EQ(messages(text, options),
            Messages{"graph 'main': node #0 (Add): output 0 is declared f32[3,5] but shape inference gives f32[3,4]"});
}

TEST(Verifier, ChecksOutputsAndUpdates) {
  Graph graph;
  Value* cache = graph.addInput("cache", TensorType(DType::F32, Shape({4})), true);
  Value* other = graph.addInput("other", TensorType(DType::F32, Shape({4})), true);
  Node* wrong = graph.createNode("Cast", {cache});
  wrong->setAttr("to", DType::I64);
  wrong->output()->setType(TensorType(DType::I64, Shape({4})));
  Node* longer = graph.createNode("Identity", {cache});
  longer->output()->setType(TensorType(DType::F32, Shape({5})));
  // Graph::addOutput refuses an absent value; the terminator's operands can still be
  // cleared directly, and the verifier reports that.
  graph.addOutput(cache);
  graph.returnNode()->setInput(0, nullptr);
  graph.setInputUpdate(cache, wrong->output());
  graph.setInputUpdate(other, longer->output());
  EXPECT_EQ(messages(graph),
            (Messages{"graph 'main': output 0 is absent",
                      "graph 'main': the update of %cache (f32[4]) is output 0 of node #0 (Cast) of type i64[4]",
                      "graph 'main': the update of %other (f32[4]) is output 0 of node #1 (Identity) of type f32[5]"}));
}

TEST(Verifier, AnUpdateWithoutValue) {
  Graph graph;
  Value* cache = graph.addInput("cache", TensorType(DType::F32, Shape({4})), true);
  graph.setInputUpdate(cache, cache);
  graph.returnNode()->setInput(0, nullptr);
  EXPECT_EQ(messages(graph), Messages{"graph 'main': the update of %cache has no value"});
}

TEST(Verifier, NamesUnnamedValuesByTheirDefinition) {
  Graph graph;
  Value* x = graph.addInput("", TensorType(DType::F32, Shape({4})));
  Node* neg = graph.createNode("Neg", {x});
  neg->output()->setType(TensorType(DType::F32, Shape({4})));
  Node* add = graph.createNode("Add", {neg->output(), neg->output()});
  add->output()->setType(TensorType(DType::F32, Shape({4})));
  add->setInput(0, add->output());
  neg->setName("first");
  EXPECT_EQ(messages(graph), Messages{"graph 'main': node #1 (Add): uses its own result (a cycle)"});
  graph.createNode("Neg", {graph.firstNode()->output(), x});
  EXPECT_EQ(messages(graph).size(), 2u);
  EXPECT_EQ(messages(graph)[1], "graph 'main': node #2 (Neg): takes at most 1 input (X), got 2");
}

TEST(Verifier, VerifyGraphListsEveryProblem) {
  auto graph = parseGraph(R"(graph @main(%x: f32[4]) {
  %a = Neg(%a) : f32[4]
  %b = Relu() : f32[4]
  return %a, %b
})");
  try {
    verifyGraph(*graph);
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "graph 'main' failed verification with 2 problems:\n"
              "  graph 'main': node #0 (Neg): uses its own result (a cycle)\n"
              "  graph 'main': node #1 (Relu): takes at least 1 input (X), got 0");
  }
}

TEST(Verifier, VerifyGraphShortensVeryLongLists) {
  Graph graph;
  for (int i = 0; i < 150; ++i) graph.createNode("Relu", {});
  try {
    verifyGraph(graph);
    FAIL();
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind("graph 'main' failed verification with 150 problems:\n", 0), 0u) << message;
    EXPECT_NE(message.find("\n  ... and 50 more (diagnoseGraph() lists them all)"), std::string::npos);
  }
  EXPECT_EQ(diagnoseGraph(graph).size(), 150u);
}

TEST(Verifier, DiagnosticsPointAtTheirGraphAndNode) {
  auto graph = parseGraph(R"(graph @main(%c: bool[], %x: f32[4]) {
  %z = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Relu() : f32[4]
    return %t
  }} : f32[4]
  return %z
})");
  std::vector<VerifierDiagnostic> diagnostics = diagnoseGraph(*graph);
  ASSERT_EQ(diagnostics.size(), 1u);
  Graph* branch = graph->firstNode()->subgraphs()[1];
  EXPECT_EQ(diagnostics[0].graph, branch);
  EXPECT_EQ(diagnostics[0].node, branch->firstNode());
  EXPECT_EQ(diagnostics[0].message,
            "graph 'main' > node #0 (If) > graph 'then': node #0 (Relu): takes at least 1 input (X), got 0");
}

}  // namespace
}  // namespace estuary
