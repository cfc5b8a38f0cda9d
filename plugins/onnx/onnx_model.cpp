#include "onnx_model.h"

#include <string>

#include "estuary/support/error.h"

namespace estuary::onnx_frontend {

std::string onnxDataTypeName(int32_t data_type) {
  static const char* const kNames[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",   "UINT16",    "INT16",
                                       "INT32",     "INT64",  "STRING", "BOOL",   "FLOAT16",   "DOUBLE",
                                       "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
                                       "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                       "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2",
                                       "FLOAT6E2M3", "FLOAT6E3M2"};
  if (data_type >= 0 && static_cast<size_t>(data_type) < std::size(kNames)) return kNames[data_type];
  return "data type " + std::to_string(data_type);
}

std::string_view onnxAttrTypeName(OnnxAttrType type) {
  switch (type) {
    case OnnxAttrType::Undefined: return "UNDEFINED";
    case OnnxAttrType::Float: return "FLOAT";
    case OnnxAttrType::Int: return "INT";
    case OnnxAttrType::String: return "STRING";
    case OnnxAttrType::Tensor: return "TENSOR";
    case OnnxAttrType::Graph: return "GRAPH";
    case OnnxAttrType::Floats: return "FLOATS";
    case OnnxAttrType::Ints: return "INTS";
    case OnnxAttrType::Strings: return "STRINGS";
    case OnnxAttrType::Tensors: return "TENSORS";
    case OnnxAttrType::Graphs: return "GRAPHS";
    case OnnxAttrType::SparseTensor: return "SPARSE_TENSOR";
    case OnnxAttrType::SparseTensors: return "SPARSE_TENSORS";
    case OnnxAttrType::TypeProto: return "TYPE_PROTO";
    case OnnxAttrType::TypeProtos: return "TYPE_PROTOS";
  }
  return "INVALID";
}

}  // namespace estuary::onnx_frontend

namespace estuary::proto {

using namespace onnx_frontend;

// Field numbers from onnx/onnx.proto (onnx 1.23). Fields the frontend does not use
// (doc strings, training info, quantization annotations) are left out and skipped.

template <>
const MessageTable<StringEntry>& tableOf<StringEntry>() {
  static const MessageTable<StringEntry> table{"StringStringEntryProto", {
      field<&StringEntry::key>(1, "key"),
      field<&StringEntry::value>(2, "value"),
  }};
  return table;
}

template <>
const MessageTable<OperatorSetId>& tableOf<OperatorSetId>() {
  static const MessageTable<OperatorSetId> table{"OperatorSetIdProto", {
      field<&OperatorSetId::domain>(1, "domain"),
      field<&OperatorSetId::version>(2, "version"),
  }};
  return table;
}

template <>
const MessageTable<TensorProto>& tableOf<TensorProto>() {
  static const MessageTable<TensorProto> table{"TensorProto", {
      field<&TensorProto::dims>(1, "dims"),
      field<&TensorProto::data_type>(2, "data_type"),
      custom<TensorProto>(3, "segment", [](TensorProto& tensor, const WireField& wire, const WireReader& reader,
                                           Decoder&, std::string_view name) {
        reader.asBytes(wire, name);
        tensor.has_segment = true;
      }),
      field<&TensorProto::float_data>(4, "float_data"),
      field<&TensorProto::int32_data>(5, "int32_data"),
      field<&TensorProto::string_data>(6, "string_data"),
      field<&TensorProto::int64_data>(7, "int64_data"),
      field<&TensorProto::name>(8, "name"),
      field<&TensorProto::raw_data>(9, "raw_data"),
      field<&TensorProto::double_data>(10, "double_data"),
      field<&TensorProto::uint64_data>(11, "uint64_data"),
      field<&TensorProto::external_data>(13, "external_data"),
      field<&TensorProto::data_location>(14, "data_location"),
  }};
  return table;
}

template <>
const MessageTable<SparseTensorProto>& tableOf<SparseTensorProto>() {
  static const MessageTable<SparseTensorProto> table{"SparseTensorProto", {
      field<&SparseTensorProto::values>(1, "values"),
      field<&SparseTensorProto::indices>(2, "indices"),
      field<&SparseTensorProto::dims>(3, "dims"),
  }};
  return table;
}

template <>
const MessageTable<DimProto>& tableOf<DimProto>() {
  static const MessageTable<DimProto> table{"TensorShapeProto.Dimension", {
      field<&DimProto::value>(1, "dim_value"),
      field<&DimProto::param>(2, "dim_param"),
  }};
  return table;
}

template <>
const MessageTable<ShapeProto>& tableOf<ShapeProto>() {
  static const MessageTable<ShapeProto> table{"TensorShapeProto", {
      field<&ShapeProto::dims>(1, "dim"),
  }};
  return table;
}

// TypeProto.Tensor and TypeProto.SparseTensor: the element type and shape land in the
// TypeProto itself.
struct TensorTypeProto {
  TypeProto* type = nullptr;
};

template <>
const MessageTable<TensorTypeProto>& tableOf<TensorTypeProto>() {
  static const MessageTable<TensorTypeProto> table{"TypeProto.Tensor", {
      custom<TensorTypeProto>(1, "elem_type", [](TensorTypeProto& tensor, const WireField& wire,
                                                 const WireReader& reader, Decoder&, std::string_view name) {
        tensor.type->elem_type = static_cast<int32_t>(static_cast<uint32_t>(reader.asVarint(wire, name)));
      }),
      custom<TensorTypeProto>(2, "shape", [](TensorTypeProto& tensor, const WireField& wire, const WireReader& reader,
                                             Decoder& decoder, std::string_view name) {
        if (!tensor.type->shape) tensor.type->shape.emplace();
        decoder.decodeInto(*tensor.type->shape, reader.asBytes(wire, name));
      }),
  }};
  return table;
}

// One member of TypeProto's `value` oneof: its kind, and for tensors their element type and shape.
template <size_t KindIndex>
void typeMember(TypeProto& type, const WireField& wire, const WireReader& reader, Decoder& decoder,
                std::string_view name) {
  static constexpr std::string_view kKinds[] = {"tensor", "sequence", "map", "opaque", "sparse_tensor", "optional"};
  type.kind = kKinds[KindIndex];
  std::string_view bytes = reader.asBytes(wire, name);
  if (type.kind == "tensor" || type.kind == "sparse_tensor") {
    TensorTypeProto tensor{&type};
    decoder.decodeInto(tensor, bytes);
  }
}

template <>
const MessageTable<TypeProto>& tableOf<TypeProto>() {
  static const MessageTable<TypeProto> table{"TypeProto", {
      custom<TypeProto>(1, "tensor_type", typeMember<0>),
      custom<TypeProto>(4, "sequence_type", typeMember<1>),
      custom<TypeProto>(5, "map_type", typeMember<2>),
      custom<TypeProto>(7, "opaque_type", typeMember<3>),
      custom<TypeProto>(8, "sparse_tensor_type", typeMember<4>),
      custom<TypeProto>(9, "optional_type", typeMember<5>),
  }};
  return table;
}

template <>
const MessageTable<ValueInfoProto>& tableOf<ValueInfoProto>() {
  static const MessageTable<ValueInfoProto> table{"ValueInfoProto", {
      field<&ValueInfoProto::name>(1, "name"),
      field<&ValueInfoProto::type>(2, "type"),
  }};
  return table;
}

template <>
const MessageTable<AttributeProto>& tableOf<AttributeProto>() {
  static const MessageTable<AttributeProto> table{"AttributeProto", {
      field<&AttributeProto::name>(1, "name"),
      field<&AttributeProto::f>(2, "f"),
      field<&AttributeProto::i>(3, "i"),
      field<&AttributeProto::s>(4, "s"),
      field<&AttributeProto::t>(5, "t"),
      field<&AttributeProto::g>(6, "g"),
      field<&AttributeProto::floats>(7, "floats"),
      field<&AttributeProto::ints>(8, "ints"),
      field<&AttributeProto::strings>(9, "strings"),
      field<&AttributeProto::tensors>(10, "tensors"),
      field<&AttributeProto::graphs>(11, "graphs"),
      field<&AttributeProto::type>(20, "type"),
      field<&AttributeProto::ref_attr_name>(21, "ref_attr_name"),
      field<&AttributeProto::sparse_tensor>(22, "sparse_tensor"),
  }};
  return table;
}

template <>
const MessageTable<NodeProto>& tableOf<NodeProto>() {
  static const MessageTable<NodeProto> table{"NodeProto", {
      field<&NodeProto::inputs>(1, "input"),
      field<&NodeProto::outputs>(2, "output"),
      field<&NodeProto::name>(3, "name"),
      field<&NodeProto::op_type>(4, "op_type"),
      field<&NodeProto::attributes>(5, "attribute"),
      field<&NodeProto::domain>(7, "domain"),
  }};
  return table;
}

template <>
const MessageTable<GraphProto>& tableOf<GraphProto>() {
  static const MessageTable<GraphProto> table{"GraphProto", {
      field<&GraphProto::nodes>(1, "node"),
      field<&GraphProto::name>(2, "name"),
      field<&GraphProto::initializers>(5, "initializer"),
      field<&GraphProto::inputs>(11, "input"),
      field<&GraphProto::outputs>(12, "output"),
      field<&GraphProto::value_infos>(13, "value_info"),
      field<&GraphProto::sparse_initializers>(15, "sparse_initializer"),
  }};
  return table;
}

template <>
const MessageTable<FunctionProto>& tableOf<FunctionProto>() {
  static const MessageTable<FunctionProto> table{"FunctionProto", {
      field<&FunctionProto::name>(1, "name"),
      field<&FunctionProto::inputs>(4, "input"),
      field<&FunctionProto::outputs>(5, "output"),
      field<&FunctionProto::attributes>(6, "attribute"),
      field<&FunctionProto::nodes>(7, "node"),
      field<&FunctionProto::opset_imports>(9, "opset_import"),
      field<&FunctionProto::domain>(10, "domain"),
      field<&FunctionProto::attribute_defaults>(11, "attribute_proto"),
  }};
  return table;
}

template <>
const MessageTable<ModelProto>& tableOf<ModelProto>() {
  static const MessageTable<ModelProto> table{"ModelProto", {
      field<&ModelProto::ir_version>(1, "ir_version"),
      field<&ModelProto::producer_name>(2, "producer_name"),
      field<&ModelProto::producer_version>(3, "producer_version"),
      field<&ModelProto::domain>(4, "domain"),
      field<&ModelProto::model_version>(5, "model_version"),
      field<&ModelProto::doc_string>(6, "doc_string"),
      field<&ModelProto::graph>(7, "graph"),
      field<&ModelProto::opset_imports>(8, "opset_import"),
      field<&ModelProto::metadata>(14, "metadata_props"),
      field<&ModelProto::functions>(25, "functions"),
  }};
  return table;
}

}  // namespace estuary::proto

namespace estuary::onnx_frontend {

ModelProto decodeModel(const proto::Source& source, std::string_view bytes) {
  return proto::decode<ModelProto>(source, bytes);
}

}  // namespace estuary::onnx_frontend
