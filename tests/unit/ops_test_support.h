#pragma once
// Shared by the ops_*_test.cpp files: builds single nodes or small graphs, infers them
// with the global registry and reports types and errors as text.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "estuary/ir/graph.h"
#include "estuary/ops/schema.h"
#include "error_of.h"

namespace estuary::ops_test {

// "f32[batch,16]" -> TensorType; fails the test on bad text.
inline TensorType type(std::string_view text) {
  std::optional<TensorType> parsed = TensorType::parse(text);
  EXPECT_TRUE(parsed) << "bad type text " << text;
  return parsed.value_or(TensorType());
}

// Whether `text` contains `part`; the message shows both when not.
inline ::testing::AssertionResult contains(const std::string& text, std::string_view part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// A graph under construction plus the known values of one inference run over it.
class OpsGraph {
 public:
  Value* input(std::string_view type_text, std::string name = "") {
    if (name.empty()) name = "in" + std::to_string(graph.inputs().size());
    return graph.addInput(std::move(name), type(type_text));
  }

  // A Constant node holding an i64 tensor (1-D, or a scalar when `scalar`), inferred.
  Value* ints(const std::vector<int64_t>& values, bool scalar = false) {
    std::vector<int64_t> shape;
    if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
    Node* constant = graph.createNode("Constant", {});
    constant->setAttr("value", Tensor::fromVector<int64_t>(DType::I64, shape, values));
    inferNode(*constant, known);
    return constant->output();
  }

  Value* floats(const std::vector<float>& values) {
    Node* constant = graph.createNode("Constant", {});
    constant->setAttr("value", Tensor::fromVector<float>(
                                   DType::F32, {static_cast<int64_t>(values.size())}, values));
    inferNode(*constant, known);
    return constant->output();
  }

  // Creates a node named `name` (so errors read "node '<name>' (Op)"), sets attributes.
  Node* node(std::string_view op_type, const std::vector<Value*>& inputs,
             std::vector<std::pair<std::string, Attribute>> attrs = {}, size_t num_outputs = 1,
             std::string name = "n") {
    Node* created = graph.createNode(op_type, inputs, num_outputs);
    created->setName(std::move(name));
    for (auto& [attr_name, value] : attrs) created->setAttr(attr_name, std::move(value));
    return created;
  }

  // Infers `node` and returns its first output's type as text.
  std::string infer(Node* node) {
    inferNode(*node, known);
    return node->output()->type().str();
  }

  // Creates, infers and returns the node's first output (for chains).
  Value* apply(std::string_view op_type, const std::vector<Value*>& inputs,
               std::vector<std::pair<std::string, Attribute>> attrs = {}) {
    Node* created = node(op_type, inputs, std::move(attrs), 1, std::string(op_type));
    inferNode(*created, known);
    return created->output();
  }

  // Builds and infers a node; returns its output types as text ("f32[2,3]", joined by
  // "; ") or the error message.
  std::string run(std::string_view op_type, const std::vector<Value*>& inputs,
                  std::vector<std::pair<std::string, Attribute>> attrs = {}, size_t num_outputs = 1) {
    Node* created = node(op_type, inputs, std::move(attrs), num_outputs);
    std::string error = errorOf([&] { inferNode(*created, known); });
    if (!error.empty()) return error;
    std::string text;
    for (size_t i = 0; i < created->numOutputs(); ++i) {
      if (i) text += "; ";
      text += created->output(i)->type().str();
    }
    return text;
  }

  // The known values of `value` as text ("[batch, 768]"), or "unknown".
  std::string values(const Value* value) const {
    auto found = known.find(value);
    if (found == known.end()) return "unknown";
    std::string text = "[";
    for (size_t i = 0; i < found->second.size(); ++i) {
      if (i) text += ", ";
      text += found->second[i].str();
    }
    return text + "]";
  }

  Graph graph;
  KnownValueMap known;
};

// Shorthand for attribute lists.
using Attrs = std::vector<std::pair<std::string, Attribute>>;
inline std::vector<int64_t> ints(std::initializer_list<int64_t> values) { return values; }

}  // namespace estuary::ops_test
