// Parse errors: each names source:line:column and what was expected versus found.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

namespace estuary {
namespace {

std::string parseError(const std::string& text) {
  try {
    parseGraph(text, "model.est");
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// Wraps statements in a graph with inputs %x: f32[4] and %m: f32[4] mutable; the
// statements start on line 2, column 3.
std::string bodyError(const std::string& statements) {
  return parseError("graph @main(%x: f32[4], %m: f32[4] mutable) {\n  " + statements + "\n}\n");
}

TEST(TextParser, ReportsTheExampleMessage) {
  EXPECT_EQ(parseError("graph @main(%x: f32[4]) {\n"
                       "  %a = Add(%x, %x : f32[4]\n"
                       "  return %a\n"
                       "}\n"),
            "model.est:2:19: expected ')' after operands of node 'Add', found ':'");
  EXPECT_EQ(bodyError("%a = Add(%x, %x }"),
            "model.est:2:19: expected ')' after operands of node 'Add', found '}'");
}

TEST(TextParser, GraphHeaderErrors) {
  EXPECT_EQ(parseError("grph @main() {}"), "model.est:1:1: expected 'graph' at the start of the text, found 'grph'");
  EXPECT_EQ(parseError(""), "model.est:1:1: expected 'graph' at the start of the text, found end of input");
  EXPECT_EQ(parseError("graph main() {}"), "model.est:1:7: expected '@' and a graph name after 'graph', found 'main'");
  EXPECT_EQ(parseError("graph @() {}"), "model.est:1:8: expected a graph name after '@', found '('");
  EXPECT_EQ(parseError("graph @main {}"), "model.est:1:13: expected '(' after graph @main, found '{'");
  EXPECT_EQ(parseError("graph @main(x: f32[4]) {}"),
            "model.est:1:13: expected an input (%name: type) of graph @main, found 'x'");
  EXPECT_EQ(parseError("graph @main(%x f32[4]) {}"), "model.est:1:16: expected ':' after input %x, found 'f32'");
  EXPECT_EQ(parseError("graph @main(%x: f32[4] %y: f32[4]) {}"),
            "model.est:1:24: expected ')' after the inputs of graph @main, found '%'");
  EXPECT_EQ(parseError("graph @main(%x: f32[4])\n  return\n}"),
            "model.est:2:3: expected '{' to open the body of graph @main, found 'return'");
  EXPECT_EQ(parseError("graph @main() {\n  return\n}\ngraph @second() {\n  return\n}\n"),
            "model.est:4:1: expected end of input after graph @main, found 'graph'");
  EXPECT_EQ(parseError("graph @main() {\n  return\n"), "model.est:3:1: expected '}' to close graph @main, found end of input");
}

TEST(TextParser, TypeErrors) {
  EXPECT_EQ(parseError("graph @main(%x: f33[4]) {}"),
            "model.est:1:17: unknown element type 'f33' for input %x (known: f32 f16 bf16 f64 i8 i16 i32 i64 "
            "u8 bool, or ? when unknown)");
  EXPECT_EQ(parseError("graph @main(%x: f32[4,) {}"),
            "model.est:1:17: expected a type like f32[batch,16] for input %x, found 'f32'");
  EXPECT_EQ(parseError("graph @main(%x: f32[4,*]) {}"),
            "model.est:1:17: bad type 'f32[4,*]' for input %x: dims are integers, ?, or symbolic expressions "
            "like batch*seq+1");
  EXPECT_EQ(parseError("graph @main(%x: f32) {}"),
            "model.est:1:17: expected a type like f32[batch,16] for input %x, found 'f32'");
  EXPECT_EQ(bodyError("%a = Neg(%x) : f32"),
            "model.est:2:18: expected a type like f32[batch,16] for result 0 of node 'Neg', found 'f32'");
  EXPECT_EQ(bodyError("%a, %b = Split(%x) : f32[2]\n  return"),
            "model.est:3:3: expected ',' and a type for result 1 of node 'Split', found 'return'");
  EXPECT_EQ(bodyError("%a = Neg(%x) : f32[4], f32[4]"),
            "model.est:2:24: node 'Neg' has 1 result but more types");
  EXPECT_EQ(bodyError("Print(%x) : f32[4]"),
            "model.est:2:13: node 'Print' has no results, so it takes no ':' and types");
}

TEST(TextParser, StatementErrors) {
  EXPECT_EQ(bodyError("}"), "model.est:2:3: expected 'return' before '}' closing graph @main");
  EXPECT_EQ(bodyError("update %m = %x\n  return"), "model.est:2:9: 'update' lines must follow 'return' in graph @main");
  EXPECT_EQ(bodyError("= Neg(%x)"), "model.est:2:3: expected a node, 'return' or '}' in graph @main, found '='");
  EXPECT_EQ(bodyError("%a Neg(%x)"), "model.est:2:6: expected '=' after the results of a node, found 'Neg'");
  EXPECT_EQ(bodyError("%a, = Neg(%x)"), "model.est:2:7: expected a result name (%name), found '='");
  EXPECT_EQ(bodyError("%a = (%x)"), "model.est:2:8: expected an op name, found '('");
  EXPECT_EQ(bodyError("%a = dom::(%x)"), "model.est:2:13: expected an op name after '::', found '('");
  EXPECT_EQ(bodyError("%a = Neg %x"), "model.est:2:12: expected '(' after op name Neg, found '%'");
  EXPECT_EQ(bodyError("%a = Neg(x)"), "model.est:2:12: expected a value (%name or _ for an absent operand) as an "
                                      "operand of node Neg, found 'x'");
  EXPECT_EQ(bodyError("%a = Neg(%)"), "model.est:2:12: expected a value name after '%', found ')'");
  EXPECT_EQ(bodyError("%a = Neg(%\"\")"),
            "model.est:2:12: a value name cannot be empty: write %0, %1, ... for unnamed values");
  EXPECT_EQ(bodyError("%a = Neg(%x) loc"), "model.est:3:1: expected '(' after 'loc', found '}'");
  EXPECT_EQ(bodyError("%a = Neg(%x) loc(name)"), "model.est:2:20: expected a quoted node name in loc(...), found 'name'");
  EXPECT_EQ(bodyError("%a = Neg(%x) loc(\"n\""),
            "model.est:3:1: expected ')' after the node name in loc(...), found '}'");
}

TEST(TextParser, ReturnAndUpdateErrors) {
  EXPECT_EQ(bodyError("return _"), "model.est:2:10: expected a value (%name) as an output of graph @main, found '_'");
  EXPECT_EQ(bodyError("return %x,"), "model.est:3:1: expected a value (%name) as an output of graph @main, found '}'");
  EXPECT_EQ(bodyError("return\n  update x = %x"),
            "model.est:3:10: expected a mutable input (%name) after 'update', found 'x'");
  EXPECT_EQ(bodyError("%a = Neg(%x) : f32[4]\n  return\n  update %a = %x"),
            "model.est:4:10: update target %a is not an input of graph @main");
  EXPECT_EQ(bodyError("return\n  update %x = %x"),
            "model.est:3:10: update target %x is not a mutable input of graph @main (declare it with 'mutable')");
  EXPECT_EQ(bodyError("return\n  update %m %x"), "model.est:3:13: expected '=' after 'update %m', found '%'");
  EXPECT_EQ(bodyError("return\n  update %m = _"),
            "model.est:3:15: expected a value (%name) as the new value of %m, found '_'");
  EXPECT_EQ(bodyError("return\n  update %m = %x\n  update %m = %x"), "model.est:4:10: input %m is updated twice");
  EXPECT_EQ(bodyError("return\n  update %m = %nothing"), "model.est:3:15: undefined value %nothing");
  EXPECT_EQ(parseError("graph @main(%c: bool[], %m: f32[4] mutable) {\n"
                       "  %z = If(%c) {then_branch = graph @then() {\n"
                       "    return\n"
                       "    update %m = %m\n"
                       "  }}\n"
                       "  return\n"
                       "}\n"),
            "model.est:4:12: update target %m is not an input of graph @then");
}

TEST(TextParser, DefinitionErrors) {
  EXPECT_EQ(bodyError("%x = Neg(%m) : f32[4]\n  return"),
            "model.est:2:3: duplicate definition of %x (first defined at 1:13)");
  EXPECT_EQ(bodyError("%a, %a = Split(%x)\n  return"),
            "model.est:2:7: duplicate definition of %a (first defined at 2:3)");
  EXPECT_EQ(bodyError("%0 = Neg(%x)\n  %0 = Neg(%x)\n  return"),
            "model.est:3:3: duplicate definition of %0 (first defined at 2:3)");
  EXPECT_EQ(bodyError("%\"a b\" = Neg(%x)\n  %\"a b\" = Neg(%x)\n  return"),
            "model.est:3:3: duplicate definition of %\"a b\" (first defined at 2:3)");
  // A subgraph may not redefine a value it can see.
  EXPECT_EQ(parseError("graph @main(%c: bool[]) {\n"
                       "  %z = If(%c) {then_branch = graph @then() {\n"
                       "    %c = Not(%c) : bool[]\n"
                       "    return %c\n"
                       "  }} : bool[]\n"
                       "  return %z\n"
                       "}\n"),
            "model.est:3:5: duplicate definition of %c (first defined at 1:13)");
  EXPECT_EQ(parseError("graph @main(%c: bool[], %c: bool[]) {\n  return\n}"),
            "model.est:1:25: duplicate definition of %c (first defined at 1:13)");
}

TEST(TextParser, UndefinedValues) {
  EXPECT_EQ(bodyError("%a = Neg(%y) : f32[4]\n  %b = Neg(%y) : f32[4]\n  return %a"),
            "model.est:2:12: undefined value %y");
  EXPECT_EQ(bodyError("return %nowhere"), "model.est:2:10: undefined value %nowhere");
  EXPECT_EQ(bodyError("%a = Neg(%7) : f32[4]\n  return %a"), "model.est:2:12: undefined value %7");
  EXPECT_EQ(bodyError("%a = Neg(%\"7\") : f32[4]\n  %7 = Neg(%x) : f32[4]\n  return %a"),
            "model.est:2:12: undefined value %\"7\"");
  // A value defined inside a branch is not visible outside it, nor in a sibling branch.
  EXPECT_EQ(parseError("graph @main(%c: bool[]) {\n"
                       "  %z = If(%c) {else_branch = graph @else() {\n"
                       "    return %t\n"
                       "  }, then_branch = graph @then() {\n"
                       "    %t = Not(%c) : bool[]\n"
                       "    return %t\n"
                       "  }} : bool[]\n"
                       "  return %z, %t\n"
                       "}\n"),
            "model.est:3:12: undefined value %t");
}

TEST(TextParser, AttributeErrors) {
  EXPECT_EQ(bodyError("Op() {a = 1, a = 2}"), "model.est:2:16: duplicate attribute 'a' on node 'Op'");
  EXPECT_EQ(bodyError("Op() {a 1}"), "model.est:2:11: expected '=' after attribute name 'a', found '1'");
  EXPECT_EQ(bodyError("Op() {= 1}"), "model.est:2:9: expected an attribute name, found '='");
  EXPECT_EQ(bodyError("Op() {a = 1 b = 2}"), "model.est:2:15: expected '}' after the attributes of node 'Op', found 'b'");
  EXPECT_EQ(bodyError("Op() {a = }"),
            "model.est:2:13: expected a value for attribute 'a' (number, string, list, element type, tensor<...> "
            "or graph), found '}'");
  EXPECT_EQ(bodyError("Op() {a = f33}"),
            "model.est:2:13: expected a value for attribute 'a' (number, string, list, element type, tensor<...> "
            "or graph), found 'f33'");
  EXPECT_EQ(bodyError("Op() {a = 1.2.3}"), "model.est:2:13: bad number '1.2.3' in attribute 'a'");
  EXPECT_EQ(bodyError("Op() {a = 99999999999999999999}"),
            "model.est:2:13: integer 99999999999999999999 in attribute 'a' is out of the int64 range");
  EXPECT_EQ(bodyError("Op() {a = []}"),
            "model.est:2:13: an empty list needs its kind: write ints[], floats[] or strings[] for attribute 'a'");
  EXPECT_EQ(bodyError("Op() {a = [1.5, -99999999999999999999]}"),
            "model.est:2:19: integer -99999999999999999999 in attribute 'a' is out of the int64 range");
  EXPECT_EQ(bodyError("Op() {a = [1, x]}"), "model.est:2:17: expected a number in the list of attribute 'a', found 'x'");
  EXPECT_EQ(bodyError("Op() {a = [\"s\", 1]}"), "model.est:2:19: expected a string in the list of attribute 'a', found '1'");
  EXPECT_EQ(bodyError("Op() {a = [1, 2}"), "model.est:2:18: expected ']' to close the list of attribute 'a', found '}'");
  EXPECT_EQ(bodyError("Op() {a = ints[1]}"),
            "model.est:2:18: expected ']' after 'ints[' (only empty lists are spelled with their kind), found '1'");
  EXPECT_EQ(bodyError("Op() {a = \"open}"), "model.est:2:13: unterminated string (missing closing '\"')");
  EXPECT_EQ(bodyError("Op() {a = \"bad \\q\"}"),
            "model.est:2:18: unknown escape '\\q' in a string (known: \\\" \\\\ \\n \\t \\r \\xHH)");
  EXPECT_EQ(bodyError("Op() {a = \"\\x4\"}"), "model.est:2:14: expected two hex digits after '\\x' in a string");
}

TEST(TextParser, ParsesLiteralForms) {
  auto graph = parseGraph(R"(graph @main() {
  Op() {a = -3, b = 1e3, c = -inf, d = [1, 2.5], e = ["x", "\x41\n"], f = ?, g = .5, h = [nan, 1]}
  return
})");
  const Node* node = graph->firstNode();
  EXPECT_EQ(node->attr("a")->asInt(), -3);
  EXPECT_EQ(node->attr("b")->kind(), AttrKind::Float);
  EXPECT_EQ(node->attr("b")->asFloat(), 1000.0);
  EXPECT_EQ(node->attr("c")->asFloat(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(node->attr("d")->asFloats(), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(node->attr("e")->asStrings(), (std::vector<std::string>{"x", "A\n"}));
  EXPECT_EQ(node->attr("f")->asType(), DType::Undefined);
  EXPECT_EQ(node->attr("g")->asFloat(), 0.5);
  EXPECT_TRUE(std::isnan(node->attr("h")->asFloats()[0]));
  EXPECT_EQ(node->attr("h")->asFloats()[1], 1.0);
}

TEST(TextParser, TensorErrors) {
  EXPECT_EQ(bodyError("Op() {t = tensor<f33[2]> [1, 2]}"),
            "model.est:2:20: expected the element type of a tensor (f32, i64, ...), found 'f33'");
  EXPECT_EQ(bodyError("Op() {t = tensor<?[2]> [1, 2]}"),
            "model.est:2:20: expected the element type of a tensor (f32, i64, ...), found '?'");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[batch]> [1]}"),
            "model.est:2:24: expected a static dimension (an integer >= 0) in a tensor type, found 'batch'");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[-1]> [1]}"),
            "model.est:2:24: expected a static dimension (an integer >= 0) in a tensor type, found '-1'");
  EXPECT_EQ(bodyError("Op() {t = tensor f32[2]> [1]}"), "model.est:2:20: expected '<' after 'tensor' in attribute 't', found 'f32'");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[2] [1]}"), "model.est:2:27: expected '>' after the type of a tensor, found '['");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[64,3,7,7]> elided}"),
            "model.est:2:35: the data of tensor<f32[64,3,7,7]> in attribute 't' was elided when this text was "
            "printed and cannot be read back; print the graph without eliding tensors");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[3]> [1.0, 2.0]}"),
            "model.est:2:37: tensor<f32[3]> has 3 elements, found 2");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[1]> [1.0, 2.0]}"),
            "model.est:2:34: tensor<f32[1]> has 1 elements, found more");
  EXPECT_EQ(bodyError("Op() {t = tensor<i8[1]> [128]}"),
            "model.est:2:28: expected an element of type i8 in tensor<i8[1]>, found '128'");
  EXPECT_EQ(bodyError("Op() {t = tensor<i32[1]> [1.5]}"),
            "model.est:2:29: expected an element of type i32 in tensor<i32[1]>, found '1.5'");
  EXPECT_EQ(bodyError("Op() {t = tensor<u8[1]> [-1]}"),
            "model.est:2:28: expected an element of type u8 in tensor<u8[1]>, found '-1'");
  EXPECT_EQ(bodyError("Op() {t = tensor<bool[1]> [1]}"),
            "model.est:2:30: expected an element of type bool in tensor<bool[1]>, found '1'");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[1]> [1e99]}"),
            "model.est:2:29: expected an element of type f32 in tensor<f32[1]>, found '1e99'");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[1]> 0x0000}"),
            "model.est:2:30: tensor<f32[1]> needs 4 bytes (8 hex digits), found 4 hex digits");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[1]> 1.0}"),
            "model.est:2:28: expected '[' or 0x... with the data of tensor<f32[1]>, found '1.0'");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[1000000,1000000]> 0x00}"),
            "model.est:2:42: tensor<f32[1000000,1000000]> has 1000000000000 elements but the text is shorter "
            "than that");
  EXPECT_EQ(bodyError("Op() {t = tensor<f32[4294967296,4294967296,4294967296]> 0x00}"),
            "model.est:2:20: tensor<f32[4294967296,4294967296,4294967296]> has too many elements");
}

TEST(TextParser, ParsesHexAndEmptyTensors) {
  auto graph = parseGraph(R"(graph @main() {
  Op() {a = tensor<i32[0]> 0x, b = tensor<i16[2]> 0x0100FFff, c = tensor<f32[0,2]> []}
  return
})");
  const Node* node = graph->firstNode();
  EXPECT_EQ(node->attr("a")->asTensor().byteSize(), 0u);
  const Tensor& b = node->attr("b")->asTensor();
  EXPECT_EQ(b.data<int16_t>()[0], 1);
  EXPECT_EQ(b.data<int16_t>()[1], -1);
  EXPECT_EQ(node->attr("c")->asTensor().shape(), (std::vector<int64_t>{0, 2}));
}

TEST(TextParser, TypesAreOptional) {
  auto graph = parseGraph("graph @main(%x: f32[4]) {\n  %a = Neg(%x)\n  return %a\n}");
  EXPECT_EQ(graph->firstNode()->output()->type(), TensorType());
}

TEST(TextParser, RefusesGraphsNestedTooDeeply) {
  std::string text = "graph @main(%c: bool[]) {\n";
  for (int i = 0; i < 300; ++i) text += "If(%c) {g = graph @g() {\n";
  std::string error = parseError(text);
  EXPECT_NE(error.find("subgraphs nested deeper than 200 levels"), std::string::npos) << error;
}

// Every one-character change of a valid text either parses (into a graph that prints) or
// raises an Error; none crashes.
TEST(TextParser, MutatedTextsNeverCrash) {
  const std::string text = R"(graph @main(%x: f32[b,4], %m: i64[2] mutable, %c: bool[]) {
  %k = Constant() {value = tensor<i64[2]> [1, -2], f = [1.5, nan], s = ["a\n"], t = f16} : i64[2]
  %a, %b = Split(%x, _) {axis = 0} : f32[b,2], f32[b,2] loc("split")
  %z = If(%c) {else_branch = graph @e() {
    return %a
  }, then_branch = graph @t(%i: i64[] mutable) {
    %n = Neg(%later) : f32[b,2]
    return %n
    update %i = %i
  }} : f32[b,2]
  %later = Relu(%b) : f32[b,2]
  Print(%z)
  %0 = Tail(%0) : ?[*]
  return %z, %0
  update %m = %k
})";
  ASSERT_NO_THROW(parseGraph(text));
  size_t parsed = 0, refused = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    for (const char* replacement : {"", "%", "\"", "{", "}", ",", "0", "x", "(", "#"}) {
      std::string mutated = text.substr(0, i) + replacement + text.substr(i + 1);
      try {
        printGraph(*parseGraph(mutated));
        ++parsed;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(parsed, 0u);
  EXPECT_GT(refused, 0u);
}

TEST(TextParser, SourceNameAndFileErrors) {
  try {
    parseGraph("graph @main() {", "my/model.est");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "my/model.est:1:16: expected a node, 'return' or '}' in graph @main, found end of input");
  }
  try {
    parseGraphFile("/nonexistent/model.est");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "/nonexistent/model.est: cannot open: No such file or directory");
  }
}

}  // namespace
}  // namespace estuary
