#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "estuary/transforms/canonicalize.h"

namespace estuary {
namespace {

std::vector<std::string> opTypes(const Graph& graph) {
  std::vector<std::string> ops;
  for (Node* node : graph.nodes()) ops.push_back(node->opType());
  return ops;
}

// Canonicalizes `text` and returns the number of rewrites and the op types left.
std::pair<int64_t, std::vector<std::string>> run(const std::string& text,
                                                 CanonicalizeOptions options = {}) {
  auto graph = parseGraph(text);
  int64_t changes = canonicalize(*graph, options);
  return {changes, opTypes(*graph)};
}

using Ops = std::vector<std::string>;

TEST(Canonicalize, RemovesIdentityChainsAndKeepsTheOutputName) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4]) {
  %n = Neg(%x) : f32[4]
  %i1 = Identity(%n) : f32[4]
  %y = Identity(%i1) : f32[4]
  return %y
})");
  EXPECT_EQ(canonicalize(*graph), 2);
  EXPECT_EQ(opTypes(*graph), Ops{"Neg"});
  EXPECT_EQ(graph->output(0)->name(), "y");
  EXPECT_EQ(graph->output(0)->producer()->opType(), "Neg");
}

TEST(Canonicalize, LeavesNodesWithoutResultsAlone) {
  // Unverified input: each of these ops has a result; without one, nothing is rewritten.
  auto [changes, ops] = run(R"(
graph @main(%x: f32[4], %s: i64[1]) {
  Dropout(%x)
  Cast(%x) {to = f32}
  Transpose(%x) {perm = [0]}
  Reshape(%x, %s)
  Expand(%x, %s)
  Unsqueeze(%x, %s)
  return %x
})");
  EXPECT_EQ(changes, 0);
  EXPECT_EQ(ops, (Ops{"Dropout", "Cast", "Transpose", "Reshape", "Expand", "Unsqueeze"}));
}

TEST(Canonicalize, DropoutOnlyInInferenceModeAndWithUnusedMask) {
  EXPECT_EQ(run(R"(
graph @main(%x: f32[4]) {
  %t = Constant() {value = tensor<bool[]> [false]} : bool[]
  %d1 = Dropout(%x) : f32[4]
  %d2 = Dropout(%d1, _, %t) : f32[4]
  return %d2
})").second, Ops{});
  EXPECT_EQ(run(R"(
graph @main(%x: f32[4], %training: bool[]) {
  %t = Constant() {value = tensor<bool[]> [true]} : bool[]
  %d1 = Dropout(%x, _, %t) : f32[4]
  %d2 = Dropout(%d1, _, %training) : f32[4]
  %d3, %mask = Dropout(%d2) : f32[4], bool[4]
  return %d3, %mask
})").second, (Ops{"Constant", "Dropout", "Dropout", "Dropout"}));
}

TEST(Canonicalize, CastToTheSameTypeOnly) {
  auto result = run(R"(
graph @main(%x: f32[4], %u: ?[*]) {
  %a = Cast(%x) {to = f32} : f32[4]
  %b = Cast(%a) {to = f16} : f16[4]
  %c = Cast(%u) {to = f32} : f32[*]
  return %b, %c
})");
  EXPECT_EQ(result.first, 1);
  EXPECT_EQ(result.second, (Ops{"Cast", "Cast"}));
}

TEST(Canonicalize, TransposePairs) {
  // Inverse permutations cancel; others compose into one Transpose.
  auto graph = parseGraph(R"(
graph @main(%x: f32[2,3,4]) {
  %a = Transpose(%x) {perm = [0, 2, 1]} : f32[2,4,3]
  %b = Transpose(%a) {perm = [0, 2, 1]} : f32[2,3,4]
  %c = Transpose(%x) {perm = [1, 0, 2]} : f32[3,2,4]
  %d = Transpose(%c) {perm = [0, 2, 1]} : f32[3,4,2]
  %e = Transpose(%x) {perm = [0, 1, 2]} : f32[2,3,4]
  return %b, %d, %e
})");
  EXPECT_EQ(canonicalize(*graph), 3);
  EXPECT_EQ(graph->output(0), graph->input(0));
  EXPECT_EQ(graph->output(2), graph->input(0));
  Node* composed = graph->output(1)->producer();
  EXPECT_EQ(composed->input(0), graph->input(0));
  EXPECT_EQ(composed->attr("perm")->asInts(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(graph->numNodes(), 1u);
}

TEST(Canonicalize, DefaultTransposeReversesTheKnownRank) {
  auto result = run(R"(
graph @main(%x: f32[2,3], %u: ?[*]) {
  %a = Transpose(%x) : f32[3,2]
  %b = Transpose(%a) : f32[2,3]
  %c = Transpose(%u) : ?[*]
  %d = Transpose(%c) : ?[*]
  return %b, %d
})");
  EXPECT_EQ(result.first, 1);
  EXPECT_EQ(result.second, (Ops{"Transpose", "Transpose"}));
}

TEST(Canonicalize, ReshapeChainsFoldWhenTheLastShapeIsSelfContained) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[2,3,4]) {
  %s1 = Constant() {value = tensor<i64[2]> [6, 4]} : i64[2]
  %s2 = Constant() {value = tensor<i64[3]> [4, -1, 2]} : i64[3]
  %s3 = Constant() {value = tensor<i64[2]> [0, 6]} : i64[2]
  %a = Reshape(%x, %s1) : f32[6,4]
  %b = Reshape(%a, %s2) : f32[4,3,2]
  %c = Reshape(%b, %s3) : f32[4,6]
  return %c
})");
  // b skips a (a goes, and s1 with it). c's shape has a 0, which copies a dim of b, so c
  // stays on b.
  EXPECT_EQ(canonicalize(*graph), 1);
  Node* c = graph->output(0)->producer();
  Node* b = c->input(0)->producer();
  EXPECT_EQ(b->opType(), "Reshape");
  EXPECT_EQ(b->input(0), graph->input(0));
  EXPECT_EQ(opTypes(*graph), (Ops{"Constant", "Constant", "Reshape", "Reshape"}));
}

TEST(Canonicalize, ReshapeChainWithAllowZeroFolds) {
  // With allowzero=1 a 0 is a literal size, not a copy of the input's dim.
  auto result = run(R"(
graph @main(%x: f32[0,6]) {
  %s1 = Constant() {value = tensor<i64[2]> [6, 0]} : i64[2]
  %s2 = Constant() {value = tensor<i64[3]> [0, 2, 3]} : i64[3]
  %a = Reshape(%x, %s1) {allowzero = 1} : f32[6,0]
  %b = Reshape(%a, %s2) {allowzero = 1} : f32[0,2,3]
  return %b
})");
  EXPECT_EQ(result.first, 1);
  EXPECT_EQ(result.second, (Ops{"Constant", "Reshape"}));
}

TEST(Canonicalize, ReshapeAndExpandToTheSameShapeGo) {
  auto result = run(R"(
graph @main(%x: f32[batch,4], %y: f32[2,4]) {
  %s = Constant() {value = tensor<i64[2]> [2, 4]} : i64[2]
  %z = Constant() {value = tensor<i64[2]> [0, 4]} : i64[2]
  %e = Constant() {value = tensor<i64[2]> [1, 4]} : i64[2]
  %big = Constant() {value = tensor<i64[3]> [3, 1, 4]} : i64[3]
  %a = Reshape(%x, %z) : f32[batch,4]
  %b = Reshape(%y, %s) : ?[*]
  %c = Expand(%y, %e) : ?[*]
  %d = Expand(%x, %big) : f32[3,batch,4]
  return %a, %b, %c, %d
})");
  EXPECT_EQ(result.first, 3);
  EXPECT_EQ(result.second, (Ops{"Constant", "Expand"}));
}

TEST(Canonicalize, SqueezeUnsqueezePairsCancelOnTheSameAxes) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[2,1,4], %y: f32[2,4]) {
  %ax1 = Constant() {value = tensor<i64[1]> [1]} : i64[1]
  %axm2 = Constant() {value = tensor<i64[1]> [-2]} : i64[1]
  %ax0 = Constant() {value = tensor<i64[1]> [0]} : i64[1]
  %s = Squeeze(%x, %ax1) : f32[2,4]
  %u = Unsqueeze(%s, %axm2) : f32[2,1,4]
  %v = Unsqueeze(%y, %ax1) : f32[2,1,4]
  %w = Squeeze(%v, %ax1) : f32[2,4]
  %p = Unsqueeze(%y, %ax0) : f32[1,2,4]
  %q = Squeeze(%p, %ax1) : ?[*]
  return %u, %w, %q
})");
  EXPECT_EQ(canonicalize(*graph), 2);
  EXPECT_EQ(graph->output(0), graph->input(0));
  EXPECT_EQ(graph->output(1), graph->input(1));
  EXPECT_EQ(graph->output(2)->producer()->opType(), "Squeeze");
}

TEST(Canonicalize, SqueezeAxesAsAttributeOfOlderOpsets) {
  auto result = run(R"(
graph @main(%x: f32[2,4]) {
  %v = Unsqueeze(%x) {axes = [0]} : f32[1,2,4]
  %w = Squeeze(%v) {axes = [0]} : f32[2,4]
  return %w
})");
  EXPECT_EQ(result.first, 1);
  EXPECT_EQ(result.second, Ops{});
}

TEST(Canonicalize, WorksInsideSubgraphs) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4], %cond: bool[]) {
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %i = Identity(%x) : f32[4]
    %t = Neg(%i) : f32[4]
    return %t
  }} : f32[4]
  return %z
})");
  EXPECT_EQ(canonicalize(*graph), 1);
  Graph* then_branch = graph->firstNode()->attr("then_branch")->asGraph().get();
  EXPECT_EQ(opTypes(*then_branch), Ops{"Neg"});
  EXPECT_EQ(then_branch->firstNode()->input(0), graph->input(0));
}

TEST(Canonicalize, DisabledRulesAreSkipped) {
  std::string text = R"(
graph @main(%x: f32[4]) {
  %i = Identity(%x) : f32[4]
  %c = Cast(%i) {to = f32} : f32[4]
  return %c
})";
  EXPECT_EQ(run(text, {{"identity"}}).second, Ops{"Identity"});
  EXPECT_EQ(run(text, {{"identity", "cast"}}).second, (Ops{"Identity", "Cast"}));
  EXPECT_EQ(run(text).second, Ops{});
}

TEST(Canonicalize, UnknownRuleNameListsTheRules) {
  auto graph = parseGraph("graph @main(%x: f32[4]) {\n  return %x\n}");
  try {
    canonicalize(*graph, {{"identity", "transpose_pairs"}});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), testing::HasSubstr(
                                  "canonicalize: unknown rule 'transpose_pairs' in option 'disable'; "
                                  "rules: identity, dropout, reshape_chain, transpose, cast, "
                                  "squeeze_unsqueeze, same_shape"));
  }
}

TEST(Canonicalize, LeavesOtherDomainsAlone) {
  EXPECT_EQ(run(R"(
graph @main(%x: f32[4]) {
  %i = acme::Identity(%x) : f32[4]
  return %i
})").first, 0);
}

}  // namespace
}  // namespace estuary
