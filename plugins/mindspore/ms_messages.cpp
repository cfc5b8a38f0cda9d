#include "ms_messages.h"

namespace estuary::proto {

using namespace mindspore_frontend;

template <>
const MessageTable<MsExternalData>& tableOf<MsExternalData>() {
  static const MessageTable<MsExternalData> table{"TensorProto.ExternalDataProto", {
      field<&MsExternalData::location>(1, "location"),
      field<&MsExternalData::offset>(2, "offset"),
      field<&MsExternalData::length>(3, "length"),
  }};
  return table;
}

template <>
const MessageTable<MsTensor>& tableOf<MsTensor>() {
  static const MessageTable<MsTensor> table{"TensorProto", {
      field<&MsTensor::dims>(1, "dims"),
      field<&MsTensor::data_type>(2, "data_type"),
      field<&MsTensor::float_data>(3, "float_data"),
      field<&MsTensor::int32_data>(4, "int32_data"),
      field<&MsTensor::int64_data>(6, "int64_data"),
      field<&MsTensor::name>(7, "name"),
      field<&MsTensor::raw_data>(9, "raw_data"),
      field<&MsTensor::double_data>(10, "double_data"),
      field<&MsTensor::external_data>(12, "external_data"),
      field<&MsTensor::ref_key>(13, "ref_key"),
      field<&MsTensor::compression_type>(16, "compression_type"),
  }};
  return table;
}

template <>
const MessageTable<MsAttribute>& tableOf<MsAttribute>() {
  static const MessageTable<MsAttribute> table{"AttributeProto", {
      field<&MsAttribute::name>(1, "name"),
      field<&MsAttribute::f>(2, "f"),
      field<&MsAttribute::i>(3, "i"),
      field<&MsAttribute::d>(4, "d"),
      field<&MsAttribute::s>(5, "s"),
      field<&MsAttribute::floats>(8, "floats"),
      field<&MsAttribute::doubles>(9, "doubles"),
      field<&MsAttribute::ints>(10, "ints"),
      field<&MsAttribute::strings>(11, "strings"),
      field<&MsAttribute::tensors>(12, "tensors"),
      field<&MsAttribute::type>(16, "type"),
      field<&MsAttribute::values>(17, "values"),
  }};
  return table;
}

template <>
const MessageTable<MsValueInfo>& tableOf<MsValueInfo>() {
  static const MessageTable<MsValueInfo> table{"ValueInfoProto", {
      field<&MsValueInfo::name>(1, "name"),
      field<&MsValueInfo::tensor>(2, "tensor"),
      field<&MsValueInfo::denotation>(4, "denotation"),
      field<&MsValueInfo::attr_info>(5, "attr_info"),
  }};
  return table;
}

template <>
const MessageTable<MsNode>& tableOf<MsNode>() {
  static const MessageTable<MsNode> table{"NodeProto", {
      field<&MsNode::input>(1, "input"),
      field<&MsNode::output>(2, "output"),
      field<&MsNode::name>(3, "name"),
      field<&MsNode::op_type>(4, "op_type"),
      field<&MsNode::attribute>(5, "attribute"),
      field<&MsNode::domain>(7, "domain"),
  }};
  return table;
}

template <>
const MessageTable<MsGraph>& tableOf<MsGraph>() {
  static const MessageTable<MsGraph> table{"GraphProto", {
      field<&MsGraph::node>(1, "node"),
      field<&MsGraph::name>(2, "name"),
      field<&MsGraph::parameter>(3, "parameter"),
      field<&MsGraph::input>(5, "input"),
      field<&MsGraph::output>(6, "output"),
      field<&MsGraph::attribute>(8, "attribute"),
  }};
  return table;
}

template <>
const MessageTable<MsPrimitive>& tableOf<MsPrimitive>() {
  static const MessageTable<MsPrimitive> table{"PrimitiveProto", {
      field<&MsPrimitive::name>(1, "name"),
      field<&MsPrimitive::op_type>(2, "op_type"),
      field<&MsPrimitive::attribute>(3, "attribute"),
      field<&MsPrimitive::instance_name>(4, "instance_name"),
      field<&MsPrimitive::prim_type>(5, "prim_type"),
  }};
  return table;
}

template <>
const MessageTable<MsModelProto>& tableOf<MsModelProto>() {
  static const MessageTable<MsModelProto> table{"ModelProto", {
      field<&MsModelProto::ir_version>(1, "ir_version"),
      field<&MsModelProto::producer_name>(2, "producer_name"),
      field<&MsModelProto::producer_version>(3, "producer_version"),
      field<&MsModelProto::model_version>(5, "model_version"),
      field<&MsModelProto::graph>(7, "graph"),
      field<&MsModelProto::functions>(8, "functions"),
      field<&MsModelProto::little_endian>(10, "little_endian"),
      field<&MsModelProto::primitives>(12, "primitives"),
      field<&MsModelProto::mind_ir_version>(13, "mind_ir_version"),
  }};
  return table;
}

}  // namespace estuary::proto
