#pragma once
// A framework written down in structs, for testing the frontend layer without one: graphs of
// nodes with named inputs, outputs and attributes, decoded by the layer's interfaces exactly
// as a real frontend's messages are.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "estuary/frontend/decoder.h"

namespace estuary::testing {

struct FakeNode : NodeDecoder {
  std::string op;
  std::string op_domain;
  std::string node_name;
  int64_t op_version = 1;
  std::vector<std::string> ins;
  std::vector<std::string> outs;
  std::vector<std::string> controls;
  std::map<std::string, AttrValue> attrs;
  std::vector<TensorType> out_types;

  FakeNode(std::string op_type, std::vector<std::string> inputs, std::vector<std::string> outputs,
           std::string name = {})
      : op(std::move(op_type)), node_name(std::move(name)), ins(std::move(inputs)), outs(std::move(outputs)) {}

  FakeNode& attr(const std::string& name, AttrValue::Data data, std::string_view type_name = "attr") {
    attrs[name] = AttrValue{std::move(data), type_name};
    return *this;
  }

  std::string_view opType() const override { return op; }
  std::string_view domain() const override { return op_domain; }
  int64_t version() const override { return op_version; }
  std::string_view name() const override { return node_name; }
  size_t numInputs() const override { return ins.size(); }
  std::string_view inputName(size_t i) const override { return ins[i]; }
  std::vector<std::string_view> controlInputs() const override { return {controls.begin(), controls.end()}; }
  size_t numOutputs() const override { return outs.size(); }
  std::string_view outputName(size_t i) const override { return outs[i]; }
  TensorType outputType(size_t i) const override { return i < out_types.size() ? out_types[i] : TensorType(); }
  std::vector<std::string_view> attributeNames() const override {
    std::vector<std::string_view> names;
    for (const auto& entry : attrs) names.push_back(entry.first);
    return names;
  }
  std::optional<AttrValue> attribute(std::string_view name) const override {
    auto found = attrs.find(std::string(name));
    if (found == attrs.end()) return std::nullopt;
    return found->second;
  }
  std::vector<AttrValue::GraphRef> subgraphs() const override {
    std::vector<AttrValue::GraphRef> graphs;
    for (const auto& entry : attrs) {
      if (const auto* graph = std::get_if<AttrValue::GraphRef>(&entry.second.data)) graphs.push_back(*graph);
    }
    return graphs;
  }
};

struct FakeGraph : GraphDecoder {
  std::string graph_name = "g";
  std::vector<std::pair<std::string, TensorType>> ins;
  std::vector<std::pair<std::string, Tensor>> weights;
  std::vector<FakeNode> nodes;
  std::vector<std::string> outs;

  std::string name() const override { return graph_name; }
  size_t numInputs() const override { return ins.size(); }
  std::string_view inputName(size_t i) const override { return ins[i].first; }
  TensorType inputType(size_t i, SymbolTable&) const override { return ins[i].second; }
  size_t numWeights() const override { return weights.size(); }
  std::string_view weightName(size_t i) const override { return weights[i].first; }
  TensorType weightType(size_t i) const override {
    return TensorType(weights[i].second.dtype(), Shape::ofStatic(weights[i].second.shape()));
  }
  Tensor weight(size_t i) const override { return weights[i].second; }
  size_t numNodes() const override { return nodes.size(); }
  const NodeDecoder& node(size_t i) const override { return nodes[i]; }
  size_t numOutputs() const override { return outs.size(); }
  std::string_view outputName(size_t i) const override { return outs[i]; }
};

inline TensorType f32(std::vector<Dim> dims) { return TensorType(DType::F32, Shape(std::move(dims))); }

}  // namespace estuary::testing
