// The frontend layer's JSON reader: values as views, escapes, numbers, and errors that name
// the line and column.
#include "estuary/frontend/json.h"

#include <gtest/gtest.h>

#include "error_of.h"

namespace estuary {
namespace {

TEST(Json, ReadsATreeOfViews) {
  const std::string text = R"({"program": {"ops": [{"#": "p", "A": [0, 1, true, "w_0"]}, null],
  "version": 4, "eps": 1e-06, "neg": -12, "empty": {}, "none": []}})";
  json::Document document = json::Document::parse(text, "m.json");
  const json::Value& program = *document.root().find("program");
  ASSERT_TRUE(program.isObject());
  EXPECT_EQ(program.key(0), "ops");
  const json::Value& ops = *program.find("ops");
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_TRUE(ops[1].isNull());
  const json::Value& attrs = *ops[0].find("A");
  EXPECT_EQ(attrs[0].integer(), 0);
  EXPECT_TRUE(attrs[2].isBool() && attrs[2].boolean());
  EXPECT_EQ(attrs[3].string(), "w_0");
  EXPECT_EQ(attrs[3].string().data(), text.data() + text.find("w_0"));  // a view, not a copy
  EXPECT_EQ(program.find("version")->integer(), 4);
  EXPECT_FALSE(program.find("eps")->integer().has_value());
  EXPECT_DOUBLE_EQ(program.find("eps")->number(), 1e-06);
  EXPECT_EQ(program.find("neg")->integer(), -12);
  EXPECT_EQ(program.find("empty")->size(), 0u);
  EXPECT_TRUE(program.find("none")->isArray());
  EXPECT_EQ(program.find("none")->line(), 2u);
  EXPECT_EQ(program.find("missing"), nullptr);
}

TEST(Json, UnescapesStrings) {
  json::Document document = json::Document::parse(R"(["a\"b\\c\/\n", "\u00e9\u4e2d", "\ud83d\ude00"])", "s.json");
  EXPECT_EQ(document.root()[0].string(), "a\"b\\c/\n");
  EXPECT_EQ(document.root()[1].string(), "\xc3\xa9\xe4\xb8\xad");
  EXPECT_EQ(document.root()[2].string(), "\xf0\x9f\x98\x80");
}

TEST(Json, ErrorsNameTheLineAndColumn) {
  EXPECT_EQ(errorOf([] { json::Document::parse("{\"a\": [1, 2,\n  3 4]}", "m.json"); }),
            "m.json: line 2, column 5: expected ',' or ']' in an array");
  EXPECT_EQ(errorOf([] { json::Document::parse("{\"a\": [1, 2", "cut.json"); }),
            "cut.json: line 1, column 12: the text ends inside an array");
  EXPECT_EQ(errorOf([] { json::Document::parse("{\"a\": tru}", "m.json"); }),
            "m.json: line 1, column 7: expected a JSON value");
  EXPECT_EQ(errorOf([] { json::Document::parse("[1] [2]", "m.json"); }),
            "m.json: line 1, column 5: more text after the document's value");
  EXPECT_EQ(errorOf([] { json::Document::parse("\"\\q\"", "m.json"); }),
            "m.json: line 1, column 5: an unknown escape '\\q' in a string");
  EXPECT_NE(errorOf([] { json::Document::parse(std::string(1000, '['), "deep.json"); }).find("nested more than 512"),
            std::string::npos);
}

}  // namespace
}  // namespace estuary
