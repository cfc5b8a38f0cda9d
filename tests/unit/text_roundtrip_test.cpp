// Print -> parse -> print gives the same bytes, for every construct of the text form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

namespace estuary {
namespace {

std::string reprint(const std::string& text, const PrintOptions& options = {}) {
  return printGraph(*parseGraph(text), options);
}

// The text is already in printed form: parsing and printing it changes nothing.
void expectFixedPoint(const std::string& text) { EXPECT_EQ(reprint(text), text); }

// A graph built through the API prints to a text that reads back to the same text.
void expectRoundTrip(const Graph& graph, const PrintOptions& options = {}) {
  std::string printed = printGraph(graph, options);
  EXPECT_EQ(reprint(printed, options), printed);
}

TensorType f32(std::initializer_list<Dim> dims) { return TensorType(DType::F32, Shape(dims)); }

TEST(TextRoundTrip, ExampleOfTheSpec) {
  expectFixedPoint(R"(graph @main(%x: f32[batch,16], %w: f32[16], %cache: f32[4,16] mutable, %cond: bool[]) {
  %c = Constant() {value = tensor<f32[2]> [1.0, 2.5]} : f32[2]
  %s = Add(%x, %x) : f32[batch,16]
  %y, %sum = estuary::AddRMSNorm(%x, %s, %w) {epsilon = 1e-06} : f32[batch,16], f32[batch,16] loc("layer0/norm")
  %r = Resize(%x, _, %c) : ?[*]
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    %t = Neg(%x) : f32[batch,16]
    return %t
  }} : f32[batch,16]
  %new_cache = Identity(%cache) : f32[4,16]
  return %y, %sum
  update %cache = %new_cache
}
)");
}

TEST(TextRoundTrip, ParsesTheGraphStructure) {
  auto graph = parseGraph(R"(
# a comment line
graph @main(%x: f32[batch,seq], %cache: f32[4] mutable) {   # trailing comment
  %a, %b = Split(%x) {axis = 1} : f32[batch,?], f32[batch,?]
  Print(%a)
  %n = Neg(%cache) : f32[4]
  return %b
  update %cache = %n
})");
  EXPECT_EQ(graph->name(), "main");
  ASSERT_EQ(graph->inputs().size(), 2u);
  EXPECT_TRUE(graph->input(1)->isMutableInput());
  EXPECT_FALSE(graph->input(0)->isMutableInput());
  EXPECT_EQ(graph->input(0)->type().str(), "f32[batch,seq]");
  ASSERT_EQ(graph->numNodes(), 3u);
  Node* split = graph->firstNode();
  EXPECT_EQ(split->opType(), "Split");
  EXPECT_EQ(split->numOutputs(), 2u);
  EXPECT_EQ(split->intAttr("axis", 0), 1);
  EXPECT_EQ(split->output(1)->name(), "b");
  Node* print = split->next();
  EXPECT_EQ(print->numOutputs(), 0u);
  EXPECT_EQ(print->input(0), split->output(0));
  EXPECT_EQ(graph->output(0), split->output(1));
  EXPECT_EQ(graph->inputUpdate(graph->input(1)), graph->lastNode()->output(0));
  EXPECT_EQ(split->output(0)->uses().size(), 1u);
}

TEST(TextRoundTrip, EveryAttributeKind) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2}));
  Node* node = graph.createNode("Everything", {x}, 1, "test");
  node->setAttr("i", int64_t{-7});
  node->setAttr("f", 0.1);
  node->setAttr("f_whole", 3.0);
  node->setAttr("f_big", 1e300);
  node->setAttr("f_neg_zero", -0.0);
  node->setAttr("f_inf", std::numeric_limits<double>::infinity());
  node->setAttr("f_ninf", -std::numeric_limits<double>::infinity());
  node->setAttr("f_nan", std::numeric_limits<double>::quiet_NaN());
  node->setAttr("s", std::string("tab\there \"quoted\" back\\slash\nnew \x01 ünïcode"));
  node->setAttr("t", DType::BF16);
  node->setAttr("t_unknown", DType::Undefined);
  node->setAttr("ints", std::vector<int64_t>{1, -2, INT64_MAX, INT64_MIN});
  node->setAttr("floats", std::vector<double>{1.0, 2.5, -1e-30});
  node->setAttr("strings", std::vector<std::string>{"a", "", "b c"});
  node->setAttr("no_ints", std::vector<int64_t>{});
  node->setAttr("no_floats", std::vector<double>{});
  node->setAttr("no_strings", std::vector<std::string>{});
  node->setAttr("tensor", Tensor::fromVector<int64_t>(DType::I64, {2}, {3, -4}));
  auto body = std::make_shared<Graph>("body");
  Value* i = body->addInput("i", TensorType(DType::I64, Shape()));
  body->addOutput(body->createNode("Neg", {i})->output());
  node->setAttr("g", body);
  graph.addOutput(node->output());
  std::string printed = printGraph(graph);
  EXPECT_NE(printed.find("f = 0.1,"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f_whole = 3.0,"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f_big = 1e+300,"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f_neg_zero = -0.0,"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f_inf = inf, f_nan = nan, f_neg_zero"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f_ninf = -inf"), std::string::npos) << printed;
  EXPECT_NE(printed.find("no_floats = floats[], no_ints = ints[], no_strings = strings[]"),
            std::string::npos) << printed;
  EXPECT_NE(printed.find(R"(s = "tab\there \"quoted\" back\\slash\nnew \x01 ünïcode")"),
            std::string::npos) << printed;
  EXPECT_NE(printed.find("t = bf16, t_unknown = ?, tensor = tensor<i64[2]> [3, -4]"),
            std::string::npos) << printed;
  expectRoundTrip(graph);

  auto parsed = parseGraph(printed);
  const Node* copy = parsed->firstNode();
  EXPECT_EQ(copy->domain(), "test");
  EXPECT_EQ(copy->attributes().size(), node->attributes().size());
  for (const auto& [name, attr] : node->attributes()) {
    const Attribute* other = copy->attr(name);
    ASSERT_NE(other, nullptr) << name;
    if (attr.kind() == AttrKind::Graph) {
      EXPECT_EQ(printGraph(*other->asGraph()), printGraph(*attr.asGraph()));
    } else {
      EXPECT_TRUE(*other == attr) << name;
    }
  }
}

TEST(TextRoundTrip, FloatsPrintShortestAndExact) {
  const double values[] = {0.1, 1.0 / 3.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                           123456789.0, 1e16, 0.5, -2.75, 1e-06};
  for (double value : values) {
    Graph graph;
    graph.createNode("Op", {}, 0)->setAttr("v", value);
    auto parsed = parseGraph(printGraph(graph));
    double back = parsed->firstNode()->attr("v")->asFloat();
    EXPECT_EQ(std::memcmp(&back, &value, sizeof value), 0) << printGraph(graph);
    expectRoundTrip(graph);
  }
  Graph graph;
  graph.createNode("Op", {}, 0)->setAttr("v", std::vector<double>{0.1, 1e-06, 100.0});
  EXPECT_NE(printGraph(graph).find("{v = [0.1, 1e-06, 100.0]}"), std::string::npos)
      << printGraph(graph);
}

template <typename T>
Tensor tensorOf(DType dtype, const std::vector<T>& values) {
  return Tensor::fromVector<T>(dtype, {static_cast<int64_t>(values.size())}, values);
}

Tensor tensorOfBits16(DType dtype, const std::vector<uint16_t>& bits) {
  return tensorOf<uint16_t>(dtype, bits);
}

// Prints a graph holding `tensor`, parses it and checks the bytes came back unchanged.
std::string checkTensorRoundTrip(const Tensor& tensor, const PrintOptions& options = {}) {
  Graph graph;
  graph.createNode("Constant", {}, 1)->setAttr("value", tensor);
  graph.addOutput(graph.firstNode()->output());
  std::string printed = printGraph(graph, options);
  auto parsed = parseGraph(printed);
  const Tensor& back = parsed->firstNode()->attr("value")->asTensor();
  EXPECT_EQ(back.dtype(), tensor.dtype());
  EXPECT_EQ(back.shape(), tensor.shape());
  EXPECT_EQ(back.byteSize(), tensor.byteSize());
  EXPECT_EQ(std::memcmp(back.data(), tensor.data(), tensor.byteSize()), 0) << printed;
  EXPECT_EQ(printGraph(*parsed, options), printed);
  return printed;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TextRoundTrip, TensorsOfEveryDtypeInDecimal) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<float>(DType::F32, {1.0f, 0.1f, -0.0f, inf, -inf, nan,
                                                                         1e-45f, 3.4028235e38f})),
                       "tensor<f32[8]> [1.0, 0.1, -0.0, inf, -inf, nan, 1e-45, 3.4028235e+38]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<double>(DType::F64, {0.1, -1e-300, 2.0})),
                       "tensor<f64[3]> [0.1, -1e-300, 2.0]"));
  // f16: 1.0, 0.1 (0x2e66), max 65504, smallest subnormal, -2, inf, nan.
  EXPECT_TRUE(contains(
      checkTensorRoundTrip(tensorOfBits16(DType::F16, {0x3c00, 0x2e66, 0x7bff, 0x0001, 0xc000, 0x7c00, 0x7e00})),
      "tensor<f16[7]> [1.0, 0.1, 65500.0, 6e-08, -2.0, inf, nan]"));
  // bf16: 1.0, 0.1 (0x3dcd), 3.0, largest finite, tiny.
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOfBits16(DType::BF16, {0x3f80, 0x3dcd, 0x4040, 0x7f7f, 0x0001})),
                       "tensor<bf16[5]> [1.0, 0.1, 3.0, 3.39e+38, 9e-41]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<int8_t>(DType::I8, {-128, 127, 0})),
                       "tensor<i8[3]> [-128, 127, 0]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<int16_t>(DType::I16, {-32768, 32767})),
                       "tensor<i16[2]> [-32768, 32767]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<int32_t>(DType::I32, {INT32_MIN, INT32_MAX})),
                       "tensor<i32[2]> [-2147483648, 2147483647]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<int64_t>(DType::I64, {INT64_MIN, INT64_MAX})),
                       "tensor<i64[2]> [-9223372036854775808, 9223372036854775807]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<uint8_t>(DType::U8, {0, 255})),
                       "tensor<u8[2]> [0, 255]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<uint8_t>(DType::Bool, {1, 0})),
                       "tensor<bool[2]> [true, false]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(Tensor::scalar<float>(DType::F32, 2.5f)),
                       "tensor<f32[]> [2.5]"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(Tensor::allocate(DType::F32, {0, 3})),
                       "tensor<f32[0,3]> []"));
}

// Every f16 and bf16 bit pattern that has a decimal form reads back to the same bits.
TEST(TextRoundTrip, EverySixteenBitFloatReadsBackExactly) {
  for (DType dtype : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    Tensor tensor = tensorOf<uint16_t>(dtype, all);
    PrintOptions options;
    options.max_decimal_elements = all.size();
    // NaNs other than the canonical one force the hex form, so check the rest in decimal.
    std::vector<uint16_t> printable;
    for (uint16_t bits : all) {
      bool is_nan = dtype == DType::F16 ? (bits & 0x7fff) > 0x7c00 : (bits & 0x7fff) > 0x7f80;
      if (!is_nan) printable.push_back(bits);
    }
    std::string printed = checkTensorRoundTrip(tensorOf<uint16_t>(dtype, printable), options);
    EXPECT_FALSE(contains(printed, "0x"));
    EXPECT_TRUE(contains(checkTensorRoundTrip(tensor, options), "0x"));
  }
}

TEST(TextRoundTrip, TensorsThatNeedHex) {
  // Large tensors, NaN payloads, negative NaN and bools other than 0/1 print as hex bytes.
  std::vector<float> large(17);
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<float>(i) * 0.5f;
  std::string printed = checkTensorRoundTrip(tensorOf<float>(DType::F32, large));
  EXPECT_TRUE(contains(printed, "tensor<f32[17]> 0x000000000000003f0000803f")) << printed;
  float payload_nan;
  uint32_t bits = 0x7fc00001u;
  std::memcpy(&payload_nan, &bits, 4);
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<float>(DType::F32, {payload_nan})),
                       "tensor<f32[1]> 0x0100c07f"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<float>(DType::F32, {-std::numeric_limits<float>::quiet_NaN()})),
                       "tensor<f32[1]> 0x0000c0ff"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOfBits16(DType::F16, {0xfe00})), "tensor<f16[1]> 0x00fe"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOfBits16(DType::BF16, {0x7fc1})), "tensor<bf16[1]> 0xc17f"));
  double nan64;
  uint64_t bits64 = 0x7ff8000000000001ull;
  std::memcpy(&nan64, &bits64, 8);
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<double>(DType::F64, {nan64})),
                       "tensor<f64[1]> 0x010000000000f87f"));
  EXPECT_TRUE(contains(checkTensorRoundTrip(tensorOf<uint8_t>(DType::Bool, {2})), "tensor<bool[1]> 0x02"));
  PrintOptions all_hex;
  all_hex.max_decimal_elements = 0;
  EXPECT_TRUE(contains(checkTensorRoundTrip(Tensor::allocate(DType::I32, {1}), all_hex),
                       "tensor<i32[1]> 0x00000000}"));
}

TEST(TextRoundTrip, ElidedTensorsPrintTheirType) {
  Graph graph;
  graph.createNode("Constant", {}, 1)->setAttr("value", Tensor::allocate(DType::F32, {64, 3, 7, 7}));
  graph.firstNode()->setAttr("small", Tensor::allocate(DType::F32, {2}));
  graph.addOutput(graph.firstNode()->output());
  PrintOptions options;
  options.elide_tensors_above_bytes = 8;
  std::string printed = printGraph(graph, options);
  EXPECT_TRUE(contains(printed, "{small = tensor<f32[2]> [0.0, 0.0], value = tensor<f32[64,3,7,7]> elided}"))
      << printed;
}

TEST(TextRoundTrip, ValueNames) {
  Graph graph;
  Value* plain = graph.addInput("x", f32({2}));
  Value* quoted = graph.addInput("a b\"c", f32({2}));
  Value* numeric = graph.addInput("12", f32({2}));
  Value* odd = graph.addInput("a.b:c/d-e_f", f32({2}));
  Node* unnamed = graph.createNode("Add", {plain, quoted});
  Node* also_unnamed = graph.createNode("Add", {unnamed->output(), numeric}, 2);
  Node* dup1 = graph.createNode("Neg", {odd});
  dup1->output()->setName("x");  // same name as the input
  Node* dup2 = graph.createNode("Neg", {dup1->output()});
  dup2->output()->setName("x");
  Node* taken = graph.createNode("Neg", {dup2->output()});
  taken->output()->setName("x.1");  // the name the first duplicate would get
  graph.addOutput(also_unnamed->output(1));
  graph.addOutput(taken->output());
  EXPECT_EQ(printGraph(graph), R"(graph @main(%x: f32[2], %"a b\"c": f32[2], %"12": f32[2], %a.b:c/d-e_f: f32[2]) {
  %0 = Add(%x, %"a b\"c") : ?[*]
  %1, %2 = Add(%0, %"12") : ?[*], ?[*]
  %x.2 = Neg(%a.b:c/d-e_f) : ?[*]
  %x.3 = Neg(%x.2) : ?[*]
  %x.1 = Neg(%x.3) : ?[*]
  return %2, %x.1
}
)");
  expectRoundTrip(graph);
  auto parsed = parseGraph(printGraph(graph));
  EXPECT_EQ(parsed->input(1)->name(), "a b\"c");
  EXPECT_EQ(parsed->input(2)->name(), "12");
  EXPECT_EQ(parsed->firstNode()->output()->name(), "");
}

TEST(TextRoundTrip, ManyValuesOfOneNameGetDistinctSuffixes) {
  Graph graph;
  Value* x = graph.addInput("h", f32({2}));
  Node* taken = graph.createNode("Neg", {x});
  taken->output()->setName("h.2");
  Value* last = taken->output();
  for (int i = 0; i < 2000; ++i) {
    Node* node = graph.createNode("Neg", {last});
    node->output()->setName("h");
    last = node->output();
  }
  graph.addOutput(last);
  std::string text = printGraph(graph);
  EXPECT_NE(text.find("  %h.1 = Neg(%h.2)"), std::string::npos);
  EXPECT_NE(text.find("  %h.3 = Neg(%h.1)"), std::string::npos);
  EXPECT_NE(text.find("  return %h.2001\n"), std::string::npos);
  auto parsed = parseGraph(text);
  EXPECT_EQ(parsed->numNodes(), 2001u);
}

TEST(TextRoundTrip, QuotedOpTypesDomainsAndAttributeNames) {
  Graph graph;
  Node* node = graph.createNode("My Op", {}, 0, "my-domain");
  node->setAttr("odd name", int64_t{1});
  graph.createNode("loc", {}, 0);
  graph.createNode("return", {}, 0);
  graph.createNode("update", {}, 0, "loc");
  graph.createNode("Conv2D", {}, 0, "com.microsoft");
  EXPECT_EQ(printGraph(graph), R"(graph @main() {
  "my-domain"::"My Op"() {"odd name" = 1}
  "loc"()
  "return"()
  "loc"::"update"()
  com.microsoft::Conv2D()
  return
}
)");
  expectRoundTrip(graph);
}

TEST(TextRoundTrip, GraphNamesAndLocations) {
  Graph graph("my model");
  Node* node = graph.createNode("Relu", {graph.addInput("x", f32({1}))});
  node->setName("block \"1\"/relu");
  graph.addOutput(node->output());
  EXPECT_EQ(printGraph(graph), R"(graph @"my model"(%x: f32[1]) {
  %0 = Relu(%x) : ?[*] loc("block \"1\"/relu")
  return %0
}
)");
  expectRoundTrip(graph);
}

TEST(TextRoundTrip, NestedSubgraphsCaptureOuterValues) {
  expectFixedPoint(R"(graph @main(%x: f32[n], %n: i64[], %c: bool[]) {
  %y = Loop(%n, _, %x) {body = graph @body(%i: i64[], %cond: bool[], %acc: f32[n]) {
    %z = If(%c) {else_branch = graph @else() {
      %e = Sub(%acc, %x) : f32[n]
      return %e
    }, then_branch = graph @then() {
      %t = Add(%acc, %x) : f32[n]
      return %t
    }} : f32[n]
    return %cond, %z
  }} : f32[n]
  return %y
}
)");
}

TEST(TextRoundTrip, SymbolicAndUnknownShapes) {
  expectFixedPoint(R"(graph @main(%x: f32[batch*seq,?], %y: i64[*], %s: f16[]) {
  %a = Reshape(%x, %y) : f32[2*seq+1,past+1]
  %b = Cast(%a) {to = f16} : f16[batch,seq,?]
  return %a, %b, %s
}
)");
}

TEST(TextRoundTrip, AbsentOperandsAndZeroOutputNodes) {
  expectFixedPoint(R"(graph @main(%x: f32[4]) {
  %a = Clip(%x, _, _) : f32[4]
  Print(_, %a)
  Barrier()
  return
}
)");
}

TEST(TextRoundTrip, ForwardReferencesAndCycles) {
  // Uses before definitions parse, keep their order, and print back the same.
  expectFixedPoint(R"(graph @main(%x: f32[4]) {
  %a = Add(%x, %b) : f32[4]
  %b = Neg(%a) : f32[4]
  %c = If(%x) {then_branch = graph @then() {
    %t = Mul(%d, %later) : f32[4]
    %later = Neg(%x) : f32[4]
    return %t
  }} : f32[4]
  %d = Relu(%c) : f32[4]
  %self = Sub(%self, %0) : f32[4]
  %0 = Relu(%x) : f32[4]
  return %d
}
)");
  auto graph = parseGraph(R"(graph @g(%x: f32[4]) {
  %a = Add(%x, %b) : f32[4]
  %b = Neg(%a) : f32[4]
  return %b
})");
  Node* add = graph->firstNode();
  Node* neg = add->next();
  EXPECT_EQ(add->input(1), neg->output());
  EXPECT_EQ(neg->output()->uses().size(), 2u);
  EXPECT_EQ(graph->output(0), neg->output());
}

TEST(TextRoundTrip, SiblingSubgraphsMayReuseNames) {
  // Each branch has its own scope; printing makes the names distinct again.
  auto graph = parseGraph(R"(graph @main(%c: bool[]) {
  %z = If(%c) {else_branch = graph @else() {
    %t = Zero() : f32[]
    return %t
  }, then_branch = graph @then() {
    %t = One() : f32[]
    return %t
  }} : f32[]
  return %z
})");
  std::string printed = printGraph(*graph);
  EXPECT_TRUE(contains(printed, "%t.1 = One()")) << printed;
  EXPECT_EQ(reprint(printed), printed);
}

TEST(TextRoundTrip, PrintingASubgraphAloneNamesCapturedValues) {
  auto graph = parseGraph(R"(graph @main(%c: bool[], %x: f32[2]) {
  %z = If(%c) {then_branch = graph @then() {
    %t = Neg(%x) : f32[2]
    return %t
  }} : f32[2]
  return %z
})");
  Graph* then_branch = graph->firstNode()->subgraphs()[0];
  EXPECT_EQ(printGraph(*then_branch), R"(graph @then() {
  %t = Neg(%x) : f32[2]
  return %t
}
)");
}

TEST(TextRoundTrip, FilesRoundTrip) {
  const std::string path = std::string(ESTUARY_BINARY_DIR) + "/text_roundtrip_test.est";
  auto graph = parseGraph("graph @main(%x: f32[2]) {\n  %y = Relu(%x) : f32[2]\n  return %y\n}\n");
  printGraphToFile(*graph, path);
  auto back = parseGraphFile(path);
  EXPECT_EQ(printGraph(*back), printGraph(*graph));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace estuary
