#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "estuary/ops/inference_helpers.h"
#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/transforms/shape_inference.h"

namespace estuary {
namespace {

using testing::HasSubstr;

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ShapeInference, InfersInOrderAndCountsChangedNodes) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[batch,1,16], %y: f32[4,16]) {
  %a = Add(%x, %y) : ?[*]
  %r = Relu(%a) : ?[*]
  %known = Neg(%y) : f32[4,16]
  return %r, %known
})");
  EXPECT_EQ(inferShapes(*graph, OpRegistry::global()), 2);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[batch,4,16]");
  EXPECT_EQ(inferShapes(*graph, OpRegistry::global()), 0);
}

TEST(ShapeInference, KnownValuesFlowBetweenNodes) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[batch,seq,64]) {
  %shape = Shape(%x) : ?[*]
  %tail = Constant() {value = tensor<i64[1]> [-1]} : i64[1]
  %start = Constant() {value = tensor<i64[1]> [0]} : i64[1]
  %end = Constant() {value = tensor<i64[1]> [2]} : i64[1]
  %lead = Slice(%shape, %start, %end) : ?[*]
  %target = Concat(%lead, %tail) {axis = 0} : ?[*]
  %y = Reshape(%x, %target) : ?[*]
  return %y
})");
  inferShapes(*graph, OpRegistry::global());
  EXPECT_EQ(graph->output(0)->type().str(), "f32[batch,seq,64]");
}

TEST(ShapeInference, ContradictionNamesTheNode) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4]) {
  %a = Add(%x, %x) : f32[3] loc("residual")
  return %a
})");
  EXPECT_THAT(errorOf([&] { inferShapes(*graph, OpRegistry::global()); }),
              HasSubstr("node 'residual' (Add)"));
}

TEST(ShapeInference, OpsWithoutSchemaAreSkippedUnlessStrict) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[4]) {
  %a = acme::Gelu(%x) : f32[4] loc("gelu")
  %b = Neg(%a) : ?[*]
  return %b
})");
  EXPECT_EQ(inferShapes(*graph, OpRegistry::global()), 1);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[4]");
  EXPECT_THAT(errorOf([&] { inferShapes(*graph, OpRegistry::global(), {true}); }),
              HasSubstr("node 'gelu' (acme::Gelu): no schema is registered for acme::Gelu"));
}

TEST(ShapeInference, PassUsesTheContextsRegistry) {
  OpRegistry ops;
  ops.add(OpSchema("Gelu", "acme")
              .input("X", "T")
              .output("Y", "T")
              .typeConstraint("T", floatTypes())
              .inference([](InferenceContext& context) { propagateShape(context, 0, 0); }));
  auto graph = parseGraph(R"(
graph @main(%x: f32[2,5]) {
  %a = acme::Gelu(%x) : ?[*]
  return %a
})");
  PassInfo info = shapeInferencePass();
  EXPECT_EQ(info.name, "infer_shapes");
  PassOptions options;
  options.set("strict", true);
  std::unique_ptr<Pass> pass = info.factory(options);
  PassContext context;
  context.ops = &ops;
  EXPECT_EQ(pass->run(*graph, context).changes, 1);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[2,5]");
  // The global registry does not know acme::Gelu, and the pass is strict.
  context.ops = nullptr;
  EXPECT_THAT(errorOf([&] { pass->run(*graph, context); }), HasSubstr("no schema is registered"));
}

TEST(ShapeInference, InfersSubgraphsWithTheirOwner) {
  auto graph = parseGraph(R"(
graph @main(%x: f32[2,8], %cond: bool[]) {
  %n = Neg(%x) : ?[*]
  %z = If(%cond) {else_branch = graph @else() {
    return %n
  }, then_branch = graph @then() {
    %t = Abs(%n) : ?[*]
    return %t
  }} : ?[*]
  return %z
})");
  inferShapes(*graph, OpRegistry::global());
  EXPECT_EQ(graph->output(0)->type().str(), "f32[2,8]");
  Graph* then_branch = graph->lastNode()->attr("then_branch")->asGraph().get();
  EXPECT_EQ(then_branch->firstNode()->output()->type().str(), "f32[2,8]");
}

}  // namespace
}  // namespace estuary
