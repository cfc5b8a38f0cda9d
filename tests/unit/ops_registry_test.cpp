#include <gtest/gtest.h>

#include "estuary/ops/inference_helpers.h"
#include "estuary/ops/schema.h"
#include "ops_test_support.h"
#include "estuary/ir/verifier.h"
#include "estuary/text/parser.h"
#include "estuary/transforms/shape_inference.h"

namespace estuary {
namespace {

using ops_test::contains;
using estuary::errorOf;
using ops_test::OpsGraph;
using ops_test::type;

TEST(OpRegistry, GlobalHoldsTheCoreOps) {
  const OpRegistry& registry = OpRegistry::global();
  for (const char* op : {"Add", "Conv", "MatMul", "Reshape", "Attention", "RMSNormalization",
                         "RotaryEmbedding", "If", "Loop", "Cast", "Constant"}) {
    EXPECT_NE(registry.find(op), nullptr) << op;
  }
  EXPECT_EQ(registry.find("Add", "estuary"), nullptr);
  EXPECT_EQ(registry.find("NoSuchOp"), nullptr);
  EXPECT_GE(registry.size(), 120u);
}

// The ops backends' lowering makes are the core's too: IR holding them (a dump after lowering,
// an offline model's graph) parses, verifies and infers in a process with no device (this
// test binary links the core alone).
TEST(OpRegistry, GlobalHoldsTheOpsBackendsMake) {
  const OpRegistry& registry = OpRegistry::global();
  for (const char* op : {"FusedConv", "FusedConvTranspose", "FusedMatMul", "FusedGemm", "Reorder"}) {
    EXPECT_NE(registry.find(op, "estuary"), nullptr) << op;
  }
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @g(%x: f32[2,8], %w: f32[4,8]) {
  %r = estuary::Reorder(%x) {layout = "plain"}
  %y = estuary::FusedMatMul(%r, %w) {transB = 1, epilogue = graph @epilogue(%p: f32[2,4]) {
    %q = Relu(%p)
    return %q
  }}
  return %y
})");
  verifyGraph(*graph);
  inferShapes(*graph, registry);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[2,4]");
}

TEST(OpRegistry, AllIsSortedByQualifiedName) {
  std::vector<const OpSchema*> all = OpRegistry::global().all();
  ASSERT_EQ(all.size(), OpRegistry::global().size());
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_LT(all[i - 1]->qualifiedName(), all[i]->qualifiedName());
  }
}

TEST(OpRegistry, SameOpTypeInAnotherDomainIsSeparate) {
  OpRegistry registry;
  registry.add(OpSchema("Norm").input("X", "T").output("Y", "T").typeConstraint("T", floatTypes()));
  registry.add(OpSchema("Norm", "plugin").input("X", "f32").output("Y", "f32"));
  ASSERT_NE(registry.find("Norm"), nullptr);
  ASSERT_NE(registry.find("Norm", "plugin"), nullptr);
  EXPECT_EQ(registry.find("Norm", "plugin")->qualifiedName(), "plugin::Norm");
  EXPECT_EQ(registry.find("Norm")->qualifiedName(), "Norm");
  EXPECT_EQ(registry.size(), 2u);
}

TEST(OpRegistry, RefusesADuplicate) {
  OpRegistry registry;
  registry.add(OpSchema("Fused", "estuary").input("X", "f32").output("Y", "f32"));
  EXPECT_EQ(errorOf([&] { registry.add(OpSchema("Fused", "estuary").output("Y", "f32")); }),
            "op 'estuary::Fused' is already registered");
}

TEST(OpRegistry, KeepAliveLivesAsLongAsTheSchema) {
  auto owner = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owner;
  {
    OpRegistry registry;
    registry.add(OpSchema("P", "plugin").output("Y", "f32").keepAlive(owner));
    owner.reset();
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(OpSchemaCheck, RefusesInconsistentDeclarations) {
  OpRegistry registry;
  EXPECT_TRUE(contains(errorOf([&] { registry.add(OpSchema("A").input("X", "T").output("Y", "T")); }), "input 'X' has type 'T', which is neither a type constraint nor an element type"));
  EXPECT_TRUE(contains(errorOf([&] {
                registry.add(OpSchema("B")
                                 .input("xs", "f32", Arity::Variadic)
                                 .input("y", "f32")
                                 .output("z", "f32"));
              }), "variadic input 'xs' is not the last"));
  EXPECT_TRUE(contains(errorOf([&] { registry.add(OpSchema("C").attr("axis", AttrKind::Int, 1.5)); }), "attribute 'axis' is int but its default is float"));
  EXPECT_TRUE(contains(errorOf([&] { registry.add(OpSchema("D").attr("k", AttrKind::Int, 1, true)); }), "attribute 'k' is required yet has a default"));
  EXPECT_TRUE(contains(errorOf([&] {
                registry.add(OpSchema("E").input("x", "f32").input("x", "f32"));
              }), "input 'x' is declared twice"));
  EXPECT_TRUE(contains(errorOf([&] { registry.add(OpSchema("F").typeConstraint("T", {})); }), "type constraint 'T' allows no type"));
  EXPECT_EQ(registry.size(), 0u);
}

TEST(OpSchemaValidate, NamesTheNodeAndTheOffendingDtype) {
  OpsGraph g;
  Value* x = g.input("f32[1,3,8,8]");
  Value* w = g.input("i64[4,3,3,3]");
  Node* conv = g.node("Conv", {x, w}, {}, 1, "conv1");
  EXPECT_EQ(errorOf([&] { OpRegistry::global().find(*conv)->validate(*conv); }),
            "node 'conv1' (Conv): input 1 'W' has dtype i64, allowed: f32, f16, bf16, f64");
}

TEST(OpSchemaValidate, InputsSharingATypeVariableMustAgree) {
  OpsGraph g;
  EXPECT_EQ(g.run("Add", {g.input("f32[2]"), g.input("f16[2]")}),
            "node 'n' (Add): input 1 'B' has dtype f16 but input 0 'A' has f32; both are of type T "
            "and must agree");
  // Pow's exponent has its own type variable.
  EXPECT_EQ(g.run("Pow", {g.input("f32[2]"), g.input("i64[]")}), "f32[2]");
}

TEST(OpSchemaValidate, FixedElementTypes) {
  OpsGraph g;
  EXPECT_EQ(g.run("Reshape", {g.input("f32[6]"), g.input("i32[2]")}),
            "node 'n' (Reshape): input 1 'shape' has dtype i32, expected i64");
}

TEST(OpSchemaValidate, OperandCounts) {
  OpsGraph g;
  Value* x = g.input("f32[2]");
  EXPECT_EQ(g.run("Relu", {x, x}), "node 'n' (Relu): takes at most 1 input (X), got 2");
  EXPECT_EQ(g.run("Add", {x}), "node 'n' (Add): takes at least 2 inputs (A, B), got 1");
  EXPECT_EQ(g.run("Concat", {}, {{"axis", 0}}),
            "node 'n' (Concat): takes at least 1 input (inputs...), got 0");
  EXPECT_EQ(g.run("Relu", {x}, {}, 2), "node 'n' (Relu): takes at most 1 output (Y), got 2");
  EXPECT_EQ(g.run("Gemm", {x, nullptr}),
            "node 'n' (Gemm): input 1 'B' is required but absent");
  // Optional operands may be absent in the middle (nullptr) or left off at the end.
  Value* m = g.input("f32[2,3]");
  Value* n = g.input("f32[3,4]");
  EXPECT_EQ(g.run("Gemm", {m, n}), "f32[2,4]");
  EXPECT_EQ(g.run("Clip", {x, nullptr, g.input("f32[]")}), "f32[2]");
  // Optional outputs may be left off too.
  EXPECT_EQ(g.run("LayerNormalization", {m, g.input("f32[3]")}), "f32[2,3]");
}

TEST(OpSchemaValidate, Attributes) {
  OpsGraph g;
  Value* x = g.input("f32[2,3]");
  EXPECT_EQ(g.run("Softmax", {x}, {{"axes", 1}}),
            "node 'n' (Softmax): unknown attribute 'axes'; Softmax takes: axis");
  EXPECT_EQ(g.run("Relu", {x}, {{"alpha", 1.0}}),
            "node 'n' (Relu): unknown attribute 'alpha'; Relu takes no attributes");
  EXPECT_EQ(g.run("Softmax", {x}, {{"axis", 1.0}}),
            "node 'n' (Softmax): attribute 'axis' must be int, got float");
  EXPECT_EQ(g.run("Concat", {x, x}),
            "node 'n' (Concat): missing required attribute 'axis' (int)");
  EXPECT_EQ(g.run("Cast", {x}, {{"to", 10}}), "node 'n' (Cast): attribute 'to' must be type, got int");
}

TEST(OpSchemaValidate, HeterogeneousVariadicOperandsNeedNotAgree) {
  OpsGraph g;
  Value* m = g.input("i64[]");
  Value* a = g.input("f32[2]");
  Value* b = g.input("i32[3]");
  auto body = std::make_shared<Graph>("body");
  body->addInput("i", type("i64[]"));
  Value* cond = body->addInput("cond", type("bool[]"));
  Value* first = body->addInput("a", type("f32[2]"));
  Value* second = body->addInput("b", type("i32[3]"));
  body->addOutput(cond);
  body->addOutput(first);
  body->addOutput(second);
  Node* loop = g.node("Loop", {m, nullptr, a, b}, {{"body", body}}, 2);
  EXPECT_EQ(errorOf([&] { OpRegistry::global().find(*loop)->validate(*loop); }), "");
}

TEST(InferenceContext, AttributesFallBackToSchemaDefaults) {
  OpsGraph g;
  Node* node = g.node("LeakyRelu", {g.input("f32[2]")});
  const OpSchema& schema = *OpRegistry::global().find(*node);
  InferenceContext context(*node, schema);
  EXPECT_DOUBLE_EQ(context.floatAttr("alpha"), 0.01);
  node->setAttr("alpha", 0.5);
  EXPECT_DOUBLE_EQ(context.floatAttr("alpha"), 0.5);
  EXPECT_EQ(context.attr("nonexistent"), nullptr);
  EXPECT_EQ(errorOf([&] { context.intAttr("nonexistent"); }),
            "node 'n' (LeakyRelu): attribute 'nonexistent' is required");
}

TEST(InferenceContext, AbsentInputsHaveAnUnknownType) {
  OpsGraph g;
  Node* node = g.node("Clip", {g.input("f32[2]"), nullptr});
  InferenceContext context(*node, *OpRegistry::global().find(*node));
  EXPECT_FALSE(context.hasInput(1));
  EXPECT_FALSE(context.hasInput(2));
  EXPECT_EQ(context.inputType(1).str(), "?[*]");
  EXPECT_EQ(context.inputType(5).str(), "?[*]");
  EXPECT_FALSE(context.knownValues(1));
}

TEST(InferenceContext, SettingAnOutputTheNodeLacksIsANoOp) {
  OpsGraph g;
  Node* node = g.node("Relu", {g.input("f32[2]")});
  InferenceContext context(*node, *OpRegistry::global().find(*node));
  context.setOutputShape(3, Shape({Dim(1)}));
  context.setOutputValues(3, {SymInt(1)});
  EXPECT_EQ(context.outputTypes().size(), 1u);
  EXPECT_EQ(context.outputValues().size(), 1u);
}

TEST(InferenceContext, OutputDTypeComesFromTheConstraints) {
  OpsGraph g;
  EXPECT_EQ(g.run("Equal", {g.input("i64[3]"), g.input("i64[3]")}), "bool[3]");
  EXPECT_EQ(g.run("Shape", {g.input("f16[3]")}), "i64[1]");
  EXPECT_EQ(g.run("Relu", {g.input("?[3]")}), "?[3]");
}

TEST(MergeTypes, KeepsTheMostPreciseAndRejectsContradictions) {
  auto merge = [](const char* existing, const char* inferred) {
    std::optional<TensorType> merged = mergeTypes(type(existing), type(inferred));
    return merged ? merged->str() : std::string("conflict");
  };
  EXPECT_EQ(merge("?[*]", "f32[2,batch]"), "f32[2,batch]");
  EXPECT_EQ(merge("f32[2,batch]", "?[*]"), "f32[2,batch]");
  EXPECT_EQ(merge("f32[?,4]", "f32[3,?]"), "f32[3,4]");
  EXPECT_EQ(merge("f32[3,n]", "f32[batch,batch*seq]"), "f32[3,batch*seq]");
  EXPECT_EQ(merge("f32[batch]", "f32[?]"), "f32[batch]");
  EXPECT_EQ(merge("f32[3]", "f32[4]"), "conflict");
  EXPECT_EQ(merge("f32[3]", "f16[3]"), "conflict");
  EXPECT_EQ(merge("f32[3]", "f32[3,1]"), "conflict");
}

TEST(InferNode, ReportsWhetherTypesChanged) {
  OpsGraph g;
  Node* relu = g.node("Relu", {g.input("f32[batch,4]")});
  EXPECT_EQ(inferNode(*relu, g.known), InferStatus::Changed);
  EXPECT_EQ(relu->output()->type().str(), "f32[batch,4]");
  EXPECT_EQ(inferNode(*relu, g.known), InferStatus::Unchanged);
  Node* unknown = g.node("FancyOp", {relu->output()}, {}, 1, "fancy");
  unknown->output()->setType(type("f32[7]"));
  EXPECT_EQ(inferNode(*unknown, g.known), InferStatus::NoSchema);
  EXPECT_EQ(unknown->output()->type().str(), "f32[7]");
}

TEST(InferNode, KeepsDeclaredDetailAndRejectsContradictions) {
  OpsGraph g;
  Node* relu = g.node("Relu", {g.input("f32[?,4]")}, {}, 1, "act");
  relu->output()->setType(type("f32[8,4]"));
  EXPECT_EQ(inferNode(*relu, g.known), InferStatus::Unchanged);
  EXPECT_EQ(relu->output()->type().str(), "f32[8,4]");
  relu->output()->setType(type("f32[8,5]"));
  relu->output()->setName("y");
  EXPECT_EQ(errorOf([&] { inferNode(*relu, g.known); }),
            "node 'act' (Relu): output 0 'y' is declared f32[8,5] but inference gives f32[?,4]");
}

TEST(InferNode, PluginOpWithOwnInference) {
  OpRegistry registry;
  registry.add(OpSchema("AddNorm", "plugin")
                   .input("X", "T")
                   .input("R", "T")
                   .output("Y", "T")
                   .output("Sum", "T")
                   .typeConstraint("T", floatTypes())
                   .inference([](InferenceContext& context) {
                     Shape shape = broadcastShapes(context, {context.inputShape(0), context.inputShape(1)});
                     context.setOutputShape(0, shape);
                     context.setOutputShape(1, shape);
                   }));
  OpsGraph g;
  Node* node = g.graph.createNode("AddNorm", {g.input("bf16[batch,1,64]"), g.input("bf16[seq,64]")},
                                  2, "plugin");
  KnownValueMap known;
  EXPECT_EQ(inferNode(*node, known, registry), InferStatus::Changed);
  EXPECT_EQ(node->output(0)->type().str(), "bf16[batch,seq,64]");
  EXPECT_EQ(node->output(1)->type().str(), "bf16[batch,seq,64]");
  // The global registry does not know the plugin's op.
  EXPECT_EQ(inferNode(*node, known), InferStatus::NoSchema);
}

}  // namespace
}  // namespace estuary
