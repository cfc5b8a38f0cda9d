#pragma once
// Writes ONNX protobuf messages byte by byte, for tests that need exact control over a
// model file: field order and offsets (alignment of raw_data), wrong wire types, truncation.
// Field numbers as in onnx/onnx.proto.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto_writer.h"

namespace estuary::onnx_test {

using Proto = test::ProtoWriter;

// TensorProto.DataType values used by the tests.
enum : int { kFloat = 1, kInt32 = 6, kInt64 = 7, kString = 8, kFloat16 = 10, kDouble = 11 };

// A dim: a size, a dim_param name, or nothing (an unnamed dynamic dim).
using DimSpec = std::variant<int64_t, std::string, std::monostate>;

inline Proto valueInfo(std::string_view name, int elem_type, const std::vector<DimSpec>& dims) {
  Proto shape;
  for (const DimSpec& dim : dims) {
    Proto d;
    if (auto* size = std::get_if<int64_t>(&dim)) d.varint(1, static_cast<uint64_t>(*size));
    if (auto* param = std::get_if<std::string>(&dim)) d.bytes(2, *param);
    shape.message(1, d);
  }
  Proto tensor_type;
  tensor_type.varint(1, static_cast<uint64_t>(elem_type)).message(2, shape);
  Proto type;
  type.message(1, tensor_type);
  Proto info;
  info.bytes(1, name).message(2, type);
  return info;
}

inline Proto attrInt(std::string_view name, int64_t value) {
  Proto attr;
  attr.bytes(1, name).varint(3, static_cast<uint64_t>(value)).varint(20, 2);
  return attr;
}

inline Proto attrGraph(std::string_view name, const Proto& graph) {
  Proto attr;
  attr.bytes(1, name).message(6, graph).varint(20, 5);
  return attr;
}

inline Proto node(std::string_view op_type, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs, std::string_view name,
                  const std::vector<Proto>& attributes = {}, std::string_view domain = "") {
  Proto n;
  for (const std::string& input : inputs) n.bytes(1, input);
  for (const std::string& output : outputs) n.bytes(2, output);
  n.bytes(3, name).bytes(4, op_type);
  for (const Proto& attr : attributes) n.message(5, attr);
  if (!domain.empty()) n.bytes(7, domain);
  return n;
}

// A tensor header (name, type, dims) to which the test adds its data fields.
inline Proto tensorHeader(std::string_view name, int data_type, const std::vector<int64_t>& dims) {
  Proto t;
  for (int64_t dim : dims) t.varint(1, static_cast<uint64_t>(dim));
  t.varint(2, static_cast<uint64_t>(data_type)).bytes(8, name);
  return t;
}

inline std::string floatBytes(const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

inline Proto graph(std::string_view name, const std::vector<Proto>& nodes, const std::vector<Proto>& initializers,
                   const std::vector<Proto>& inputs, const std::vector<Proto>& outputs) {
  Proto g;
  for (const Proto& n : nodes) g.message(1, n);
  g.bytes(2, name);
  for (const Proto& t : initializers) g.message(5, t);
  for (const Proto& i : inputs) g.message(11, i);
  for (const Proto& o : outputs) g.message(12, o);
  return g;
}

// A model importing `opset` of the default domain (and `extra_domains`, at version 1); the
// graph is the last field. `doc_padding` bytes of doc_string come before it, to move the
// graph's bytes (and its raw_data) to a chosen offset.
inline Proto model(int64_t opset, const Proto& graph_proto, size_t doc_padding = 0,
                   const std::vector<std::string>& extra_domains = {}) {
  Proto m;
  m.varint(1, 8);
  Proto default_opset;
  default_opset.bytes(1, "").varint(2, static_cast<uint64_t>(opset));
  m.message(8, default_opset);
  for (const std::string& domain : extra_domains) {
    Proto id;
    id.bytes(1, domain).varint(2, 1);
    m.message(8, id);
  }
  m.bytes(2, "onnx_writer");
  if (doc_padding) m.bytes(6, std::string(doc_padding, ' '));
  m.message(7, graph_proto);
  return m;
}

}  // namespace estuary::onnx_test
