// The shared frontend layer on a framework written down in structs (fake_decoder.h): node
// order, the node view's attribute access and errors, the census across subgraphs and
// functions, function inlining under name scopes, If and Loop from function bodies, input
// shapes fixed before translation, conversion extensions, and --mode info.
#include "estuary/frontend/graph_translator.h"

#include <gtest/gtest.h>

#include "estuary/frontend/node_context.h"
#include "estuary/frontend/translation_helpers.h"
#include "estuary/text/printer.h"
#include "error_of.h"
#include "fake_decoder.h"

namespace estuary {
namespace {

using testing::f32;
using testing::FakeGraph;
using testing::FakeNode;

// A table in the style of a real frontend's: ops copied to their core counterpart, with
// attributes read through the context.
const TranslatorTable& table() {
  static const TranslatorTable* translators = [] {
    auto* t = new TranslatorTable;
    for (const char* op : {"Relu", "Neg", "Add", "Mul", "Less", "Identity"}) {
      t->add(op, [op](NodeContext& node) { return node.emit(op, node.inputs())->outputs(); });
    }
    t->add("Scale", [](NodeContext& node) -> std::vector<Value*> {
      double factor = node.attr<double>("factor");
      return {node.emitValue("Mul", {node.requiredInput(0), node.scalar(DType::F32, factor)})};
    });
    // Only versions 2 and later of "Versioned" translate.
    t->add("Versioned", [](NodeContext& node) { return node.emit("Relu", node.inputs())->outputs(); }, 2);
    // A translator with a bug of its own: a vector read out of range.
    t->add("Buggy", [](NodeContext& node) -> std::vector<Value*> {
      return {node.inputs().at(7)};
    });
    t->add("Call", [](NodeContext& node) {
      return node.inlineFunction(*node.attr<AttrValue::GraphRef>("f"), node.inputs());
    });
    t->add("Cond", [](NodeContext& node) {
      std::vector<Value*> inputs = node.inputs();
      std::vector<Value*> arguments(inputs.begin() + 1, inputs.end());
      return node.translator().buildIf(node.requiredInput(0), *node.attr<AttrValue::GraphRef>("then"),
                                       *node.attr<AttrValue::GraphRef>("else"), arguments, node.name());
    });
    t->add("While", [](NodeContext& node) {
      return node.translator().buildWhile(node.attr<AttrValue::GraphRef>("cond").get(),
                                          *node.attr<AttrValue::GraphRef>("body"), node.inputs(), node.name());
    });
    return t;
  }();
  return *translators;
}

std::unique_ptr<Graph> translate(const FakeGraph& graph, const FrontendOptions& options = {}) {
  TranslationSession session("fake", "model.fake", table(), options);
  return session.translate(graph);
}

std::string translationError(const FakeGraph& graph, const FrontendOptions& options = {}) {
  return errorOf([&] { translate(graph, options); });
}

FakeGraph reluChain() {
  FakeGraph g;
  g.ins = {{"x", f32({2})}};
  // Out of order: the translator sorts them.
  g.nodes = {FakeNode("Neg", {"a"}, {"y"}, "second"), FakeNode("Relu", {"x"}, {"a"}, "first")};
  g.outs = {"y"};
  return g;
}

TEST(GraphTranslator, PutsNodesInOrderAndNamesThem) {
  EXPECT_EQ(printGraph(*translate(reluChain())),
            "graph @g(%x: f32[2]) {\n"
            "  %a = Relu(%x) : f32[2] loc(\"first\")\n"
            "  %y = Neg(%a) : f32[2] loc(\"second\")\n"
            "  return %y\n"
            "}\n");
}

TEST(GraphTranslator, ControlInputsOrderTranslation) {
  FakeGraph g;
  g.ins = {{"x", f32({2})}};
  g.nodes = {FakeNode("Neg", {"x"}, {"late"}, "late"), FakeNode("Relu", {"x"}, {"early"}, "early")};
  g.nodes[0].controls = {"early"};
  g.outs = {"late", "early"};
  std::unique_ptr<Graph> graph = translate(g);
  EXPECT_EQ(graph->firstNode()->name(), "early");
}

TEST(GraphTranslator, CyclesUndefinedNamesAndTwiceDefinedValuesAreNamed) {
  FakeGraph cycle;
  cycle.ins = {{"x", f32({2})}};
  cycle.nodes = {FakeNode("Add", {"x", "b"}, {"a"}, "first"), FakeNode("Neg", {"a"}, {"b"}, "second")};
  cycle.outs = {"b"};
  EXPECT_EQ(translationError(cycle),
            "model.fake: graph 'g' has a cycle: 2 nodes cannot be put in an order where every input is defined "
            "before its use, among them node 'first' (Add), node 'second' (Neg)");
  FakeGraph dangling = reluChain();
  dangling.nodes[1].ins = {"nowhere"};
  EXPECT_EQ(translationError(dangling),
            "model.fake: node 'first' (Relu): input 0 'nowhere' is not defined by any node, weight or graph input");
  FakeGraph twice = reluChain();
  twice.nodes[0].ins = {"x"};
  twice.nodes[0].outs = {"a"};
  twice.outs = {"a"};
  EXPECT_EQ(translationError(twice),
            "model.fake: graph 'g': value 'a' is defined twice (again by node 'first' (Relu)); a value is defined once");
}

TEST(GraphTranslator, ATranslatorsOwnExceptionIsAnErrorNamingTheNode) {
  FakeGraph g = reluChain();
  g.nodes[0].op = "Buggy";
  const std::string error = translationError(g);
  EXPECT_EQ(error.rfind("model.fake: node 'second' (Buggy): internal error while translating: ", 0), 0u) << error;
}

TEST(NodeContext, AttributesAreTypedWithOneErrorForm) {
  FakeGraph g;
  g.ins = {{"x", f32({2})}};
  g.nodes = {FakeNode("Scale", {"x"}, {"y"}, "scale")};
  g.outs = {"y"};
  EXPECT_EQ(translationError(g), "model.fake: node 'scale' (Scale): attribute 'factor' is missing");
  g.nodes[0].attr("factor", std::string("two"), "STRING");
  EXPECT_EQ(translationError(g), "model.fake: node 'scale' (Scale): attribute 'factor' is STRING, expected a number");
  // Integers widen to numbers.
  g.nodes[0].attr("factor", int64_t{3}, "INT");
  std::unique_ptr<Graph> graph = translate(g);
  EXPECT_EQ(graph->output(0)->producer()->opType(), "Mul");
}

TEST(NodeContext, TypedAccessConverts) {
  AttrValue integer{int64_t{1}, "INT"};
  EXPECT_EQ(attrAs<bool>(integer), true);
  EXPECT_EQ(attrAs<double>(integer), 1.0);
  EXPECT_EQ(attrAs<std::string>(integer), std::nullopt);
  AttrValue flags{std::vector<bool>{true, false}, "list(bool)"};
  EXPECT_EQ(attrAs<std::vector<int64_t>>(flags), (std::vector<int64_t>{1, 0}));
  AttrValue unread{std::monostate{}, "TYPE_PROTO"};
  EXPECT_EQ(attrAs<int64_t>(unread), std::nullopt);
}

TEST(TranslationSession, CensusListsEveryOpAcrossSubgraphsAndFunctions) {
  auto branch = std::make_shared<FakeGraph>();
  branch->nodes = {FakeNode("Mystery", {"x"}, {"t"}, "in_branch"), FakeNode("Sort", {"t"}, {"u"}, "sort")};
  branch->outs = {"u"};
  auto function = std::make_shared<FakeGraph>();
  function->ins = {{"p", TensorType()}};
  function->nodes = {FakeNode("Mystery", {"p"}, {"q"}, "in_function")};
  function->outs = {"q"};
  FakeGraph g;
  g.ins = {{"x", f32({2})}};
  g.nodes = {FakeNode("Mystery", {"x"}, {"a"}, "m1"), FakeNode("Versioned", {"a"}, {"b"}, "old"),
             FakeNode("Holder", {"b"}, {"c"}, "holder"), FakeNode("Call", {"c"}, {"d"}, "call")};
  g.nodes[2].attr("body", AttrValue::GraphRef(branch), "GRAPH");
  g.outs = {"d"};
  // "Call" nodes call a function of the model, as ONNX nodes do (not through an attribute).
  TranslationSession session("fake", "model.fake", table(), {});
  session.setFunctionResolver([&](const NodeDecoder& node) -> std::shared_ptr<const GraphDecoder> {
    return node.opType() == "Call" ? function : nullptr;
  });
  std::vector<UnsupportedOp> ops = session.unsupportedOps(g);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].op_type, "Mystery");
  EXPECT_EQ(ops[0].nodes, (std::vector<std::string>{"m1", "in_branch", "in_function"}));
  EXPECT_EQ(ops[1].op_type, "Versioned");  // version 1 has no translator, 2 would
  EXPECT_EQ(ops[1].opset, 1);
  EXPECT_EQ(ops[2].op_type, "Holder");
  EXPECT_EQ(ops[3].op_type, "Sort");
  try {
    session.translate(g);
    FAIL() << "translated";
  } catch (const UnsupportedOpsError& error) {
    EXPECT_EQ(error.ops().size(), 4u);
    EXPECT_NE(std::string(error.what()).find("model.fake: 4 ops have no translation (6 nodes)"), std::string::npos)
        << error.what();
  }
}

TEST(GraphTranslator, InlinesFunctionBodiesUnderNameScopes) {
  auto function = std::make_shared<FakeGraph>();
  function->graph_name = "twice";
  function->ins = {{"p", TensorType()}};
  function->nodes = {FakeNode("Add", {"p", "p"}, {"s"}, "add"), FakeNode("Relu", {"s"}, {"r"})};
  function->outs = {"r"};
  FakeGraph g;
  g.ins = {{"x", f32({2})}};
  g.nodes = {FakeNode("Call", {"x"}, {"y"}, "first"), FakeNode("Call", {"y"}, {"z"}, "first")};
  for (FakeNode& node : g.nodes) node.attr("f", AttrValue::GraphRef(function), "func");
  g.nodes[1].outs = {"z"};
  g.outs = {"z"};
  // Two calls of one name get scopes of their own; the caller names the results.
  EXPECT_EQ(printGraph(*translate(g)),
            "graph @g(%x: f32[2]) {\n"
            "  %first/s = Add(%x, %x) : f32[2] loc(\"first/add\")\n"
            "  %y = Relu(%first/s) : f32[2] loc(\"first/Relu\")\n"
            "  %first_1/s = Add(%y, %y) : f32[2] loc(\"first_1/add\")\n"
            "  %z = Relu(%first_1/s) : f32[2] loc(\"first_1/Relu\")\n"
            "  return %z\n"
            "}\n");
}

TEST(GraphTranslator, BuildsIfFromFunctionBodies) {
  auto then_body = std::make_shared<FakeGraph>();
  then_body->ins = {{"v", TensorType()}};
  then_body->nodes = {FakeNode("Neg", {"v"}, {"n"})};
  then_body->outs = {"n"};
  auto else_body = std::make_shared<FakeGraph>();
  else_body->ins = {{"v", TensorType()}};
  else_body->nodes = {FakeNode("Relu", {"v"}, {"r"})};
  else_body->outs = {"r"};
  FakeGraph g;
  g.ins = {{"c", TensorType(DType::Bool, Shape(std::vector<Dim>{1}))}, {"x", f32({Dim::symbol("n")})}};
  g.nodes = {FakeNode("Cond", {"c", "x"}, {"y"}, "branch")};
  g.nodes[0].attr("then", AttrValue::GraphRef(then_body), "func").attr("else", AttrValue::GraphRef(else_body), "func");
  g.outs = {"y"};
  std::unique_ptr<Graph> graph = translate(g);
  Node* node = graph->output(0)->producer();
  ASSERT_TRUE(node->is("If"));
  EXPECT_EQ(graph->output(0)->type().str(), "f32[n]");
  // The condition became a bool scalar; the branches read the outer value they were given.
  EXPECT_EQ(node->input(0)->type().str(), "bool[]");
  Graph* then_branch = node->attr("then_branch")->asGraph().get();
  EXPECT_EQ(then_branch->firstNode()->input(0), graph->input(1));
}

TEST(GraphTranslator, BuildsLoopsFromWhileBodiesAndRelaxesDimsThatChange) {
  // while (i < limit) { i = i + one; acc = acc * two }: TensorFlow's While over functions.
  auto cond = std::make_shared<FakeGraph>();
  cond->ins = {{"i", TensorType()}, {"acc", TensorType()}};
  cond->weights = {{"limit", Tensor::scalar<float>(DType::F32, 5)}};
  cond->nodes = {FakeNode("Less", {"i", "limit"}, {"go"})};
  cond->outs = {"go"};
  auto body = std::make_shared<FakeGraph>();
  body->ins = {{"i", TensorType()}, {"acc", TensorType()}};
  body->weights = {{"one", Tensor::scalar<float>(DType::F32, 1)}, {"two", Tensor::scalar<float>(DType::F32, 2)}};
  body->nodes = {FakeNode("Add", {"i", "one"}, {"next_i"}), FakeNode("Mul", {"acc", "two"}, {"next_acc"})};
  body->outs = {"next_i", "next_acc"};
  FakeGraph g;
  g.ins = {{"i0", f32({})}, {"acc0", f32({3})}};
  g.nodes = {FakeNode("While", {"i0", "acc0"}, {"i", "acc"}, "loop")};
  g.nodes[0].attr("cond", AttrValue::GraphRef(cond), "func").attr("body", AttrValue::GraphRef(body), "func");
  g.outs = {"i", "acc"};
  std::unique_ptr<Graph> graph = translate(g);
  Node* loop = graph->output(0)->producer();
  ASSERT_TRUE(loop->is("Loop"));
  EXPECT_EQ(loop->input(0), nullptr);  // no trip count
  EXPECT_EQ(graph->output(1)->type().str(), "f32[3]");
  const Graph& loop_body = *loop->attr("body")->asGraph();
  EXPECT_EQ(loop_body.inputs().size(), 4u);
  EXPECT_EQ(loop_body.numOutputs(), 3u);
  EXPECT_EQ(loop_body.output(0)->type().str(), "bool[]");

  // A loop variable that grows (acc = concat(acc, acc)) gets an unknown dim.
  body->nodes[1] = FakeNode("Concat2", {"acc"}, {"next_acc"});
  TranslatorTable growing = table();
  growing.add("Concat2", [](NodeContext& node) -> std::vector<Value*> {
    Value* x = node.requiredInput(0);
    return {node.emitValue("Concat", {x, x}, {{"axis", int64_t{0}}})};
  });
  TranslationSession session("fake", "model.fake", growing, {});
  std::unique_ptr<Graph> grown = session.translate(g);
  const Graph& grown_body = *grown->output(1)->producer()->attr("body")->asGraph();
  EXPECT_EQ(grown_body.input(3)->type().str(), "f32[?]");
}

TEST(TranslationSession, InputShapesAreFixedBeforeNodesAreTranslated) {
  // Scale reads no shapes, but Reshape-like translators do; the input's type is what they see.
  FakeGraph g;
  g.ins = {{"x", f32({Dim::symbol("batch"), 2})}};
  g.nodes = {FakeNode("Relu", {"x"}, {"y"}, "relu")};
  g.outs = {"y"};
  FrontendOptions options;
  options.input_shapes = {{"x", {8, -1}}};
  EXPECT_EQ(translate(g, options)->output(0)->type().str(), "f32[8,2]");
  options.input_shapes = {{"nope", {8, 2}}};
  EXPECT_NE(translationError(g, options).find("model.fake: input shapes: the graph has no input 'nope'"),
            std::string::npos);
}

TEST(ConversionExtensions, OverrideAndAddTranslations) {
  FakeGraph g;
  g.ins = {{"x", f32({2})}};
  g.nodes = {FakeNode("Relu", {"x"}, {"a"}, "relu"), FakeNode("Custom", {"a"}, {"y"}, "custom")};
  g.nodes[1].op_domain = "my.ops";
  g.nodes[1].out_types = {f32({})};
  g.outs = {"y"};
  ASSERT_EQ(translate(reluChain())->firstNode()->opType(), "Relu");
  FrontendOptions options;
  // Adds the custom op; overrides Relu (for this frontend only).
  options.extensions.push_back({"", "my.ops", "Custom",
                                [](NodeContext& node) -> std::vector<Value*> {
                                  return {node.emitValue("Neg", {node.requiredInput(0)})};
                                },
                                "test extension"});
  options.extensions.push_back({"fake", "", "Relu",
                                [](NodeContext& node) { return node.emit("Abs", node.inputs())->outputs(); },
                                "test override"});
  std::unique_ptr<Graph> graph = translate(g, options);
  EXPECT_EQ(graph->firstNode()->opType(), "Abs");
  EXPECT_EQ(graph->output(0)->producer()->opType(), "Neg");

  // An extension returning the wrong type, or too few values, is named with its op.
  options.extensions[0].translate = [](NodeContext& node) -> std::vector<Value*> {
    return {node.cast(node.requiredInput(0), DType::I64)};
  };
  EXPECT_EQ(translationError(g, options),
            "model.fake: node 'custom' (my.ops::Custom): the conversion extension (test extension) returned i64 for "
            "output 0 'y', the model declares f32");
  options.extensions[0].translate = [](NodeContext&) { return std::vector<Value*>{}; };
  EXPECT_EQ(translationError(g, options),
            "model.fake: node 'custom' (my.ops::Custom): the conversion extension (test extension) returned 0 values, "
            "output 0 'y' is used");
  options.extensions[0].translate = [](NodeContext&) -> std::vector<Value*> { throw Error("no luck"); };
  EXPECT_EQ(translationError(g, options),
            "model.fake: node 'custom' (my.ops::Custom): the conversion extension (test extension) failed: no luck");
}

TEST(ConversionExtensions, RegistryFindsByFrontendAndRefusesDuplicates) {
  ConversionExtensions registry;
  auto translate = [](NodeContext& node) { return node.inputs(); };
  registry.add({"", "", "Op", translate, "plugin a"});
  registry.add({"onnx", "", "Op", translate, "plugin b"});
  EXPECT_EQ(registry.find("onnx", "", "Op")->origin, "plugin b");
  EXPECT_EQ(registry.find("tensorflow", "", "Op")->origin, "plugin a");
  EXPECT_EQ(registry.find("onnx", "other", "Op"), nullptr);
  EXPECT_EQ(registry.ops("onnx"), (std::vector<std::string>{"Op", "Op"}));
  EXPECT_EQ(errorOf([&] { registry.add({"onnx", "", "Op", translate, "plugin c"}); }),
            "a conversion extension for 'Op' of frontend 'onnx' is already registered (by plugin b); plugin c "
            "registers another");
}

TEST(TranslatorTable, KeysByDomainOpAndVersionRange) {
  TranslatorTable t;
  auto none = [](NodeContext&) { return std::vector<Value*>{}; };
  t.add("Op", none, 1, 10).add("Op", none, 11).add("my", "Op", none);
  EXPECT_NE(t.find("", "Op", 1), nullptr);
  EXPECT_NE(t.find("", "Op", 12), t.find("", "Op", 5));
  EXPECT_EQ(t.find("", "Op", 0), nullptr);
  EXPECT_NE(t.find("my", "Op", 3), nullptr);
  EXPECT_EQ(t.ops(), (std::vector<std::string>{"Op", "my::Op"}));
  EXPECT_NE(errorOf([&] { t.add("Op", none, 5, 12); }).find("overlapping versions"), std::string::npos);
}

TEST(DescribeGraph, CountsOpsAcrossSubgraphsAndWeights) {
  auto branch = std::make_shared<FakeGraph>();
  branch->nodes = {FakeNode("Relu", {"x"}, {"t"})};
  branch->outs = {"t"};
  branch->weights = {{"bias", Tensor::fromVector<float>(DType::F32, {3}, {1, 2, 3})}};
  FakeGraph g;
  g.ins = {{"x", f32({Dim::symbol("batch"), 3})}, {"w", f32({3})}};
  g.weights = {{"w", Tensor::fromVector<float>(DType::F32, {3}, {1, 2, 3})}};
  g.nodes = {FakeNode("Holder", {"x"}, {"y"})};
  g.nodes[0].op_domain = "my";
  g.nodes[0].attr("body", AttrValue::GraphRef(branch), "GRAPH");
  g.outs = {"y"};
  ModelInfo info = describeGraph(g, "model.fake");
  ASSERT_EQ(info.inputs.size(), 1u);  // a weight listed as input is a weight
  EXPECT_EQ(info.inputs[0].type, "f32[batch,3]");
  EXPECT_EQ(info.op_counts, (std::map<std::string, int64_t>{{"Relu", 1}, {"my::Holder", 1}}));
  EXPECT_EQ(info.parameter_count, 6);
  EXPECT_EQ(info.parameter_bytes, 24);
}

TEST(TranslationHelpers, PaddingRulesLayoutsAndTransposes) {
  EXPECT_EQ(parsePaddingRule("same"), PaddingRule::SameUpper);
  EXPECT_EQ(parsePaddingRule("SAME_LOWER"), PaddingRule::SameLower);
  EXPECT_EQ(parsePaddingRule("bogus"), std::nullopt);
  // TensorFlow's SAME: 8 wide, kernel 3, stride 2 -> 4 outputs, one pad, at the end.
  EXPECT_EQ(samePads(8, 3, 2, 1, true), std::make_pair(int64_t{0}, int64_t{1}));
  EXPECT_EQ(samePads(8, 3, 2, 1, false), std::make_pair(int64_t{1}, int64_t{0}));
  EXPECT_EQ(samePads(7, 3, 1, 2, true), std::make_pair(int64_t{2}, int64_t{2}));
  NodeContext::Attributes pads = paddingAttributes(PaddingRule::Explicit, {{1, 2}, {3, 4}});
  EXPECT_EQ(pads.at(0).second.asInts(), (std::vector<int64_t>{1, 3, 2, 4}));
  EXPECT_EQ(paddingAttributes(PaddingRule::SameUpper).at(0).second.asString(), "SAME_UPPER");
  EXPECT_EQ(parseLayout("NHWC"), Layout::ChannelsLast);
  EXPECT_EQ(channelsFirstPermutation(4), (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(channelsLastPermutation(4), (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(spatialLastToFirstWeights(4), (std::vector<int64_t>{3, 2, 0, 1}));
  Tensor matrix = Tensor::fromVector<float>(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor transposed = transposeTensor(matrix, {1, 0});
  EXPECT_EQ(transposed.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(std::vector<float>(transposed.data<float>(), transposed.data<float>() + 6),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(TranslationHelpers, TranslatorsFoldWeightLayoutsAndAlignBroadcasts) {
  // An NHWC convolution with HWIO weights and SAME padding, then a bias added along axis 1
  // of the NCHW result, written the way a TensorFlow or Paddle translator would.
  TranslatorTable t;
  t.add("NhwcConv", [](NodeContext& node) -> std::vector<Value*> {
    Value* x = permute(node, node.requiredInput(0), channelsFirstPermutation(4));
    Value* w = permute(node, node.requiredInput(1), spatialLastToFirstWeights(4));
    NodeContext::Attributes attributes = paddingAttributes(*parsePaddingRule(node.attr<std::string>("padding")));
    attributes.emplace_back("strides", std::vector<int64_t>{2, 2});
    return {node.emitValue("Conv", {x, w}, std::move(attributes))};
  });
  t.add("AxisAdd", [](NodeContext& node) -> std::vector<Value*> {
    Value* x = node.requiredInput(0);
    Value* y = alignForBroadcast(node, node.requiredInput(1), x->shape().rank(), node.attr<int64_t>("axis"));
    return {node.emitValue("Add", {x, y})};
  });
  std::vector<float> hwio(3 * 3 * 2 * 4);
  for (size_t i = 0; i < hwio.size(); ++i) hwio[i] = static_cast<float>(i);
  FakeGraph g;
  g.ins = {{"x", f32({1, 8, 8, 2})}};
  g.weights = {{"w", Tensor::fromVector<float>(DType::F32, {3, 3, 2, 4}, hwio)},
               {"b", Tensor::fromVector<float>(DType::F32, {4}, {1, 2, 3, 4})}};
  g.nodes = {FakeNode("NhwcConv", {"x", "w"}, {"y"}, "conv"), FakeNode("AxisAdd", {"y", "b"}, {"z"}, "bias")};
  g.nodes[0].attr("padding", std::string("SAME"));
  g.nodes[1].attr("axis", int64_t{1});
  g.outs = {"z"};
  TranslationSession session("fake", "model.fake", t, {});
  std::unique_ptr<Graph> graph = session.translate(g);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[1,4,4,4]");
  Node* conv = graph->output(0)->producer()->input(0)->producer();
  ASSERT_TRUE(conv->is("Conv"));
  // The weight became an OIHW constant at translation; only the activation is transposed.
  const Tensor* weight = constantTensor(conv->input(1));
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->shape(), (std::vector<int64_t>{4, 2, 3, 3}));
  EXPECT_EQ(weight->data<float>()[1], hwio[2 * 4]);  // O=0, I=0, H=0, W=1 is HWIO [0][1][0][0]
  EXPECT_TRUE(conv->input(0)->producer()->is("Transpose"));
  EXPECT_EQ(graph->output(0)->producer()->input(1)->type().str(), "f32[4,1,1]");
}

TEST(TranslationHelpers, FoldsShapeArithmeticWhileTranslating) {
  // A frontend whose reshape target comes from a computed shape (TensorFlow's Shape ->
  // StridedSlice -> Pack chains) reads it as integers once the input's dims are static.
  TranslatorTable t;
  std::optional<std::vector<int64_t>> seen;
  t.add("Shape", [](NodeContext& node) { return node.emit("Shape", node.inputs())->outputs(); });
  t.add("Twice", [](NodeContext& node) -> std::vector<Value*> {
    return {node.emitValue("Mul", {node.requiredInput(0), node.constantInts({2})})};
  });
  t.add("Read", [&seen](NodeContext& node) -> std::vector<Value*> {
    seen = foldedInts(node, node.requiredInput(0));
    return {node.requiredInput(0)};
  });
  FakeGraph g;
  g.ins = {{"x", f32({Dim::symbol("n"), 3})}};
  g.nodes = {FakeNode("Shape", {"x"}, {"s"}), FakeNode("Twice", {"s"}, {"t"}), FakeNode("Read", {"t"}, {"r"})};
  g.outs = {"r"};
  TranslationSession symbolic("fake", "model.fake", t, {});
  symbolic.translate(g);
  EXPECT_EQ(seen, std::nullopt);  // n is not known
  FrontendOptions options;
  options.input_shapes = {{"x", {4, 3}}};
  TranslationSession fixed("fake", "model.fake", t, options);
  fixed.translate(g);
  EXPECT_EQ(seen, (std::vector<int64_t>{8, 6}));
}

}  // namespace
}  // namespace estuary
