#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "ops_test_support.h"

namespace estuary {
namespace {

using ops_test::OpsGraph;
using ops_test::type;

// A branch returning Neg(x) or x itself, with untyped intermediate values: inference of
// the If node infers them.
std::shared_ptr<Graph> branch(std::string name, Value* captured, bool negate) {
  auto graph = std::make_shared<Graph>(std::move(name));
  if (negate) {
    Node* neg = graph->createNode("Neg", {captured});
    graph->addOutput(neg->output());
  } else {
    graph->addOutput(captured);
  }
  return graph;
}

TEST(If, OutputsFromBothBranches) {
  OpsGraph g;
  Value* cond = g.input("bool[]");
  Value* x = g.input("f32[batch,16]");
  Node* node = g.node("If", {cond}, {{"then_branch", branch("then", x, true)},
                                     {"else_branch", branch("else", x, false)}});
  EXPECT_EQ(inferNode(*node, g.known), InferStatus::Changed);
  EXPECT_EQ(node->output()->type().str(), "f32[batch,16]");
  // The branch's own node was inferred in place.
  Graph* then_branch = node->attr("then_branch")->asGraph().get();
  EXPECT_EQ(then_branch->output(0)->type().str(), "f32[batch,16]");
}

TEST(If, AKnownConditionInfersOnlyTheTakenBranch) {
  OpsGraph g;
  Value* x = g.input("f32[5]");
  // The else branch splits a 5-vector into 4 equal parts: invalid, but never taken.
  auto invalid = std::make_shared<Graph>("else");
  Node* split = invalid->createNode("Split", {x}, 4);
  split->setAttr("num_outputs", int64_t{4});
  invalid->addOutput(split->output(0));
  Node* condition = g.graph.createNode("Constant", {});
  condition->setAttr("value", Tensor::fromVector<uint8_t>(DType::Bool, {}, {1}));
  inferNode(*condition, g.known);
  Node* node = g.node("If", {condition->output()},
                      {{"then_branch", branch("then", x, true)}, {"else_branch", invalid}});
  EXPECT_EQ(inferNode(*node, g.known), InferStatus::Changed);
  EXPECT_EQ(node->output()->type().str(), "f32[5]");
  // Values the taken branch computes stay known after the If (sizes split out of a shape).
  Node* sized = g.node("If", {condition->output()},
                       {{"then_branch", branch("then", g.ints({7, 8}), false)},
                        {"else_branch", std::shared_ptr<Graph>(invalid->clone())}});
  inferNode(*sized, g.known);
  EXPECT_EQ(g.known.at(sized->output()), (std::vector<SymInt>{SymInt(7), SymInt(8)}));
  // With the condition unknown, the invalid branch is an error.
  EXPECT_NE(g.run("If", {g.input("bool[]")}, {{"then_branch", branch("then", x, true)}, {"else_branch", std::shared_ptr<Graph>(invalid->clone())}})
                .find("cannot split"),
            std::string::npos);
}

TEST(If, DifferingDimsBecomeUnknown) {
  OpsGraph g;
  Value* cond = g.input("bool[]");
  Value* a = g.input("f32[batch,16]");
  Value* b = g.input("f32[batch,8]");
  EXPECT_EQ(g.run("If", {cond}, {{"then_branch", branch("then", a, true)},
                                 {"else_branch", branch("else", b, true)}}),
            "f32[batch,?]");
  Value* c = g.input("f32[4]");
  EXPECT_EQ(g.run("If", {cond}, {{"then_branch", branch("then", a, false)},
                                 {"else_branch", branch("else", c, false)}}),
            "f32[*]");
}

TEST(If, BranchMismatchesFail) {
  OpsGraph g;
  Value* cond = g.input("bool[]");
  Value* a = g.input("f32[4]");
  Value* b = g.input("i64[4]");
  EXPECT_EQ(g.run("If", {cond}, {{"then_branch", branch("then", a, false)},
                                 {"else_branch", branch("else", b, false)}}),
            "node 'n' (If): output 0 is f32 in then_branch but i64 in else_branch");
  EXPECT_EQ(g.run("If", {cond},
                  {{"then_branch", branch("then", a, false)}, {"else_branch", branch("else", a, false)}},
                  2),
            "node 'n' (If): has 2 outputs but then_branch returns 1 and else_branch 1");
  EXPECT_EQ(g.run("If", {g.input("bool[2]")}, {{"then_branch", branch("then", a, false)},
                                               {"else_branch", branch("else", a, false)}}),
            "node 'n' (If): input 0 'cond' must hold one element, got [2]");
  EXPECT_EQ(g.run("If", {cond}, {{"then_branch", branch("then", a, false)}}),
            "node 'n' (If): missing required attribute 'else_branch' (graph)");
}

TEST(If, ErrorsInsideABranchNameTheInnerNode) {
  OpsGraph g;
  Value* cond = g.input("bool[]");
  Value* a = g.input("f32[2,3]");
  auto bad = std::make_shared<Graph>("then");
  Node* add = bad->createNode("Add", {a, g.input("f32[4]")});
  add->setName("inner_add");
  bad->addOutput(add->output());
  EXPECT_EQ(g.run("If", {cond}, {{"then_branch", bad}, {"else_branch", branch("else", a, false)}}),
            "node 'inner_add' (Add): cannot broadcast shapes [2,3] and [4]: sizes 3 and 4 meet at "
            "axis 1 of the result");
}

// A body that adds `step` to a carried f32 value and emits it as a scan output too.
std::shared_ptr<Graph> accumulateBody(Value* step) {
  auto body = std::make_shared<Graph>("body");
  body->addInput("i", TensorType());
  Value* cond = body->addInput("cond_in", TensorType());
  Value* total = body->addInput("total", TensorType());
  Node* add = body->createNode("Add", {total, step});
  add->setName("accumulate");
  Node* keep = body->createNode("Identity", {cond});
  body->addOutput(keep->output());
  body->addOutput(add->output());
  body->addOutput(add->output());
  return body;
}

TEST(Loop, CarriedAndScannedOutputs) {
  OpsGraph g;
  Value* trip_count = g.input("i64[]");
  Value* initial = g.input("f32[4]");
  Value* step = g.input("f32[4]");
  Node* loop = g.node("Loop", {trip_count, g.input("bool[]"), initial}, {{"body", accumulateBody(step)}}, 2);
  inferNode(*loop, g.known);
  // The body sees the iteration number, the condition and the carried value's type.
  Graph* body = loop->attr("body")->asGraph().get();
  EXPECT_EQ(body->input(0)->type().str(), "i64[]");
  EXPECT_EQ(body->input(1)->type().str(), "bool[]");
  EXPECT_EQ(body->input(2)->type().str(), "f32[*]");
  EXPECT_EQ(loop->output(0)->type().str(), "f32[*]");
  EXPECT_EQ(loop->output(1)->type().str(), "f32[*]");
}

TEST(Loop, DeclaredBodyTypesCarryShapes) {
  OpsGraph g;
  Value* step = g.input("f32[4]");
  std::shared_ptr<Graph> body = accumulateBody(step);
  body->input(2)->setType(type("f32[4]"));
  Node* loop = g.node("Loop", {g.input("i64[]"), nullptr, g.input("f32[4]")}, {{"body", body}}, 2);
  inferNode(*loop, g.known);
  EXPECT_EQ(loop->output(0)->type().str(), "f32[4]");
  EXPECT_EQ(loop->output(1)->type().str(), "f32[?,4]");
}

TEST(Loop, TripCountHoldsOneElement) {
  OpsGraph g;
  Value* step = g.input("f32[4]");
  EXPECT_EQ(g.run("Loop", {g.input("i64[1]"), nullptr, g.input("f32[4]")}, {{"body", accumulateBody(step)}}, 2),
            "f32[*]; f32[*]");
  EXPECT_EQ(g.run("Loop", {g.input("i64[3]"), nullptr, g.input("f32[4]")}, {{"body", accumulateBody(step)}}, 2),
            "node 'n' (Loop): input 0 'M' must hold one element, got [3]");
}

TEST(Loop, CountMismatchesFail) {
  OpsGraph g;
  Value* step = g.input("f32[4]");
  EXPECT_EQ(g.run("Loop", {g.input("i64[]"), nullptr}, {{"body", accumulateBody(step)}}),
            "node 'n' (Loop): carries 0 values, so its body must take 2 inputs (iteration number, "
            "condition, carried values), it takes 3");
  EXPECT_EQ(g.run("Loop", {g.input("i64[]"), nullptr, g.input("f32[4]")}, {{"body", accumulateBody(step)}}, 3),
            "node 'n' (Loop): has 3 outputs but its body yields 1 carried and 1 scanned values");
  EXPECT_EQ(g.run("Loop", {g.input("i64[]"), nullptr, g.input("i64[4]")}, {{"body", accumulateBody(step)}}, 2),
            "node 'accumulate' (Add): input 1 'B' has dtype f32 but input 0 'A' has i64; both are of type T "
            "and must agree");
}

}  // namespace
}  // namespace estuary
