// Graphs built by hand with the typed op classes: the built graph equals one written in IR
// text, types are inferred as nodes are made, and mistakes are refused at the line that made
// them, naming the op and the input or attribute.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "estuary/sdk/build.h"
#include "estuary/sdk/ops.h"
#include "estuary/sdk/session.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

namespace estuary::sdk {
namespace {

std::string errorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(GraphBuilderTest, BuildsTheGraphTheTextFormDescribes) {
  GraphBuilder g("block");
  Output x = g.input("x", DType::F32, {Dim::symbol("batch"), 8});
  Output w = g.constant(Tensor::fromVector(DType::F32, {8, 4}, std::vector<float>(32, 0.5f)), "w");
  Output h = ops::MatMul(g, "proj").set_input_A(x).set_input_B(w);
  Output y = ops::Relu(g, "act").set_input_X(h);
  EXPECT_EQ(h.type().str(), "f32[batch,4]") << "types are inferred as nodes are made";
  g.output(y, "y");
  std::unique_ptr<Graph> built = g.finish();

  std::unique_ptr<Graph> reference = parseGraph(printGraph(*built));
  EXPECT_EQ(printGraph(*built), printGraph(*reference));
  std::string text = printGraph(*built);
  EXPECT_NE(text.find("%y = Relu("), std::string::npos) << text;
  EXPECT_NE(text.find("MatMul(%x, %w) : f32[batch,4] loc"), std::string::npos) << text;
}

TEST(GraphBuilderTest, VariadicInputsOptionalInputsAndMultipleResults) {
  GraphBuilder g;
  Output a = g.input("a", DType::F32, {2, 3});
  Output b = g.input("b", DType::F32, {2, 5});
  Output joined = ops::Concat(g, "join").set_input_inputs({a, b}).set_attr_axis(1);
  EXPECT_EQ(joined.type().str(), "f32[2,8]");
  Output split_sizes = g.constant(Tensor::fromVector(DType::I64, {2}, std::vector<int64_t>{6, 2}));
  ops::Split split(g, "split");
  split.set_input_input(joined).set_input_split(split_sizes).set_attr_axis(1).results(2);
  std::vector<Output> parts = split.output_outputs();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].type().str(), "f32[2,6]");
  EXPECT_EQ(parts[1].type().str(), "f32[2,2]");
  g.output(parts[1], "tail");
  EXPECT_NO_THROW(g.finish());
}

TEST(GraphBuilderTest, AShapeMismatchIsReportedWhereTheNodeIsMade) {
  GraphBuilder g;
  Output x = g.input("x", DType::F32, {2, 8});
  Output w = g.input("w", DType::F32, {4, 3});
  std::string message = errorOf([&] { ops::MatMul(g, "proj").set_input_A(x).set_input_B(w).output_Y(); });
  EXPECT_NE(message.find("node 'proj' (MatMul)"), std::string::npos) << message;
  // The failed node is not left in the graph.
  EXPECT_EQ(g.graph().numNodes(), 0u);
}

TEST(GraphBuilderTest, MissingInputsAndWrongAttributesNameTheOpAndTheName) {
  GraphBuilder g;
  Output x = g.input("x", DType::F32, {1, 3, 8, 8});
  EXPECT_NE(errorOf([&] { ops::Conv(g, "conv1").set_input_X(x).output_Y(); }).find(
                "node 'conv1' (Conv): required input 'W' was not set"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { OpBuilder(g, "Conv", "", "conv2").attr("strides", Attribute(int64_t{2})); })
                .find("node 'conv2' (Conv): attribute 'strides' is ints, the value given is int"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { OpBuilder(g, "Relu").attr("alpha", Attribute(0.1)); }).find("has no attribute 'alpha'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { OpBuilder(g, "Relu").input("Y", x); }).find("has no input 'Y' (its inputs: 'X')"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { OpBuilder(g, "NoSuchOp", "nowhere"); }).find("no op nowhere::NoSuchOp is registered"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { g.finish(); }).find("has no outputs"), std::string::npos);
}

TEST(GraphBuilderTest, OpsWithoutAClassAreBuiltByNameWithTheGenericBuilder) {
  // As a plugin's op would be: by op type and domain, operands and attributes by name.
  GraphBuilder g;
  Output x = g.input("x", DType::F32, {2, 4});
  Output y = ops::Neg(g).set_input_X(x);
  Output z = OpBuilder(g, "Abs", "", "abs").input("X", y).output();
  g.output(z, "z");
  std::unique_ptr<Graph> graph = g.finish();
  Session session;
  session.addGraph(1, *graph);
  std::vector<float> values = {-1, 2, -3, 4, 5, -6, 7, -8};
  std::vector<NamedTensor> outputs =
      session.runGraph(1, {{"x", ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {2, 4}), values.data()), nullptr}});
  const float* result = static_cast<const float*>(outputs[0].tensor.data);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(result[i], std::fabs(values[i]));
}

}  // namespace
}  // namespace estuary::sdk
