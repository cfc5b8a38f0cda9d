#pragma once
// ONNX's ModelProto and the messages below it, decoded by the frontend layer's field tables
// (estuary/frontend/protobuf.h) into plain structs whose strings and byte fields are views
// of the model file. The file's mapping must outlive them. Field numbers and meanings follow
// onnx/onnx.proto; onnx_model.cpp holds the tables.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "estuary/frontend/protobuf.h"

namespace estuary::onnx_frontend {

// TensorProto.DataType values that matter to the frontend.
enum OnnxDataType : int32_t {
  kUndefined = 0, kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kString = 8, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13, kComplex64 = 14,
  kComplex128 = 15, kBfloat16 = 16,
};
// "FLOAT", "INT64", ... or the number for types past the list.
std::string onnxDataTypeName(int32_t data_type);

// Whether `domain` names the default ONNX domain ("" or its alias "ai.onnx").
inline bool isDefaultDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

struct StringEntry {
  std::string_view key;
  std::string_view value;
};

struct TensorProto {
  std::string_view name;
  int32_t data_type = kUndefined;
  std::vector<int64_t> dims;
  std::optional<std::string_view> raw_data;
  // The typed fields, decoded (they hold small tensors; large ones use raw_data).
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  std::vector<std::string_view> string_data;
  int32_t data_location = 0;  // 1: EXTERNAL
  std::vector<StringEntry> external_data;
  bool has_segment = false;

  bool external() const { return data_location == 1; }
};

struct SparseTensorProto {
  TensorProto values;
  TensorProto indices;
  std::vector<int64_t> dims;
};

struct DimProto {
  std::optional<int64_t> value;  // dim_value
  std::string_view param;        // dim_param
};

struct ShapeProto {
  std::vector<DimProto> dims;
};

struct TypeProto {
  // Which member of the oneof is set: "tensor", "sequence", "map", "optional", "sparse_tensor",
  // "opaque", or empty when none is.
  std::string_view kind;
  int32_t elem_type = kUndefined;
  std::optional<ShapeProto> shape;  // without a shape the rank is unknown
};

struct ValueInfoProto {
  std::string_view name;
  std::optional<TypeProto> type;
};

struct GraphProto;

enum class OnnxAttrType : int32_t {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, Floats = 6, Ints = 7,
  Strings = 8, Tensors = 9, Graphs = 10, SparseTensor = 11, SparseTensors = 12, TypeProto = 13,
  TypeProtos = 14,
};
std::string_view onnxAttrTypeName(OnnxAttrType type);

struct AttributeProto {
  std::string_view name;
  std::string_view ref_attr_name;  // set only inside functions
  OnnxAttrType type = OnnxAttrType::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string_view s;
  std::optional<TensorProto> t;
  std::shared_ptr<GraphProto> g;
  std::optional<SparseTensorProto> sparse_tensor;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string_view> strings;
  std::vector<TensorProto> tensors;
  std::vector<std::shared_ptr<GraphProto>> graphs;
};

struct NodeProto {
  std::vector<std::string_view> inputs;
  std::vector<std::string_view> outputs;
  std::string_view name;
  std::string_view op_type;
  std::string_view domain;
  std::vector<AttributeProto> attributes;
};

struct GraphProto {
  std::string_view name;
  std::vector<NodeProto> nodes;
  std::vector<TensorProto> initializers;
  std::vector<SparseTensorProto> sparse_initializers;
  std::vector<ValueInfoProto> inputs;
  std::vector<ValueInfoProto> outputs;
  std::vector<ValueInfoProto> value_infos;
};

struct OperatorSetId {
  std::string_view domain;
  int64_t version = 0;
};

// A model-local function (ModelProto.functions), called by nodes of its (domain, name).
struct FunctionProto {
  std::string_view name;
  std::string_view domain;
  std::vector<std::string_view> inputs;
  std::vector<std::string_view> outputs;
  std::vector<std::string_view> attributes;            // attributes without default
  std::vector<AttributeProto> attribute_defaults;      // attribute_proto: with default
  std::vector<NodeProto> nodes;
  std::vector<OperatorSetId> opset_imports;
};

struct ModelProto {
  int64_t ir_version = 0;
  std::vector<OperatorSetId> opset_imports;
  std::string_view producer_name;
  std::string_view producer_version;
  std::string_view domain;
  int64_t model_version = 0;
  std::string_view doc_string;
  std::optional<GraphProto> graph;
  std::vector<StringEntry> metadata;
  std::vector<FunctionProto> functions;
};

// Decodes a whole model. Raises an Error naming the file on malformed bytes.
ModelProto decodeModel(const proto::Source& source, std::string_view bytes);

}  // namespace estuary::onnx_frontend
