#pragma once
// MindSpore's MindIR messages (package mind_ir, proto2), as structs of views into the file.
// Field numbers from mind_ir.proto as MindSpore 2.10 generates it (its wheel ships only the
// generated mind_ir_pb2.py, whose descriptor they were read from). Nothing is registered in
// protobuf's pool: MindSpore, imported beside Estuary, has its own.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "estuary/frontend/protobuf.h"

namespace estuary::mindspore_frontend {

// TensorProto.DataType: the element type of tensors and parameters.
enum MsDataType : int32_t {
  kMsUndefined = 0, kMsFloat = 1, kMsUint8 = 2, kMsInt8 = 3, kMsUint16 = 4, kMsInt16 = 5, kMsInt32 = 6,
  kMsInt64 = 7, kMsString = 8, kMsBool = 9, kMsFloat16 = 10, kMsDouble = 11, kMsUint32 = 12, kMsUint64 = 13,
  kMsComplex64 = 14, kMsComplex128 = 15, kMsBfloat16 = 16, kMsFloat64 = 17,
};

// AttributeProto.AttributeType: what an attribute, a constant or an abstract holds.
enum MsAttributeType : int32_t {
  kAttrUndefined = 0, kAttrFloat = 1, kAttrUint8 = 2, kAttrInt8 = 3, kAttrUint16 = 4, kAttrInt16 = 5,
  kAttrInt32 = 6, kAttrInt64 = 7, kAttrString = 8, kAttrBool = 9, kAttrFloat16 = 10, kAttrDouble = 11,
  kAttrUint32 = 12, kAttrUint64 = 13, kAttrTensor = 17, kAttrGraph = 18, kAttrTensors = 19, kAttrTuple = 20,
  kAttrList = 21, kAttrDict = 22, kAttrUMonad = 23, kAttrIOMonad = 24, kAttrNone = 25,
  kAttrFuncGraphClosure = 27, kAttrPartialClosure = 28, kAttrUnionFuncClosure = 29, kAttrScalar = 39,
};

struct MsExternalData {
  std::string_view location;
  int64_t offset = 0;
  int64_t length = 0;
};

struct MsTensor {
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  std::string_view name;
  std::optional<std::string_view> raw_data;
  std::optional<MsExternalData> external_data;
  std::string_view ref_key;
  int32_t compression_type = 0;
  // Values in typed fields instead of raw_data (MindSpore writes raw_data; other writers may not).
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
};

struct MsAttribute {
  std::string_view name;
  float f = 0;
  int64_t i = 0;
  double d = 0;
  std::string_view s;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<int64_t> ints;
  std::vector<std::string_view> strings;
  std::vector<MsTensor> tensors;
  int32_t type = 0;
  std::vector<MsAttribute> values;  // a tuple's or list's elements
};

struct MsValueInfo {
  std::string_view name;
  std::vector<MsTensor> tensor;
  std::string_view denotation;
  std::optional<MsAttribute> attr_info;
};

struct MsNode {
  std::vector<std::string_view> input;
  std::vector<std::string_view> output;
  std::string_view name;
  std::string_view op_type;
  std::vector<MsAttribute> attribute;
  std::string_view domain;  // the scope ("Default/conv-Conv2d/Conv2D-op0")
};

struct MsGraph {
  std::vector<MsNode> node;
  std::string_view name;
  std::vector<MsTensor> parameter;
  std::vector<MsValueInfo> input;
  std::vector<MsValueInfo> output;
  std::vector<MsAttribute> attribute;
};

struct MsPrimitive {
  std::string_view name;
  std::string_view op_type;
  std::vector<MsAttribute> attribute;
  std::string_view instance_name;
  int32_t prim_type = 1;  // 1 PRIMITIVE (attributes), 2 PRIMITIVE_FUNCTION (arguments as inputs)
};

struct MsModelProto {
  std::string_view ir_version;
  std::string_view producer_name;
  std::string_view producer_version;
  std::string_view model_version;  // the MindSpore version that wrote the file
  std::optional<MsGraph> graph;
  std::vector<MsGraph> functions;
  std::optional<bool> little_endian;
  std::vector<MsPrimitive> primitives;
  int64_t mind_ir_version = 0;
};

}  // namespace estuary::mindspore_frontend
