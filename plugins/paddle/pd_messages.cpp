#include "pd_messages.h"

namespace estuary::paddle_frontend {

std::optional<DType> dtypeFromPd(int32_t type) {
  switch (type) {
    case kPdBool: return DType::Bool;
    case kPdInt16: return DType::I16;
    case kPdInt32: return DType::I32;
    case kPdInt64: return DType::I64;
    case kPdFp16: return DType::F16;
    case kPdFp32: return DType::F32;
    case kPdFp64: return DType::F64;
    case kPdUint8: return DType::U8;
    case kPdInt8: return DType::I8;
    case kPdBf16: return DType::BF16;
    default: return std::nullopt;
  }
}

std::string pdTypeName(int32_t type) {
  switch (type) {
    case kPdBool: return "BOOL";
    case kPdInt16: return "INT16";
    case kPdInt32: return "INT32";
    case kPdInt64: return "INT64";
    case kPdFp16: return "FP16";
    case kPdFp32: return "FP32";
    case kPdFp64: return "FP64";
    case kPdUint8: return "UINT8";
    case kPdInt8: return "INT8";
    case kPdBf16: return "BF16";
    case 23: return "COMPLEX64";
    case 24: return "COMPLEX128";
    case 36: return "UINT16";
    case 37: return "UINT32";
    case 38: return "UINT64";
    default: return "type " + std::to_string(type);
  }
}

}  // namespace estuary::paddle_frontend

namespace estuary::proto {

using namespace paddle_frontend;

template <>
const MessageTable<TensorDesc>& tableOf<TensorDesc>() {
  static const MessageTable<TensorDesc> table{"VarType.TensorDesc", {
      field<&TensorDesc::data_type>(1, "data_type"),
      field<&TensorDesc::dims>(2, "dims"),
  }};
  return table;
}

template <>
const MessageTable<DenseTensorDesc>& tableOf<DenseTensorDesc>() {
  static const MessageTable<DenseTensorDesc> table{"VarType.DenseTensorDesc", {
      field<&DenseTensorDesc::tensor>(1, "tensor"),
  }};
  return table;
}

template <>
const MessageTable<VarTypeDesc>& tableOf<VarTypeDesc>() {
  static const MessageTable<VarTypeDesc> table{"VarType", {
      field<&VarTypeDesc::type>(1, "type"),
      field<&VarTypeDesc::dense_tensor>(3, "dense_tensor"),
      field<&VarTypeDesc::tensor_array>(4, "tensor_array"),
  }};
  return table;
}

template <>
const MessageTable<VarDesc>& tableOf<VarDesc>() {
  static const MessageTable<VarDesc> table{"VarDesc", {
      field<&VarDesc::name>(1, "name"),
      field<&VarDesc::type>(2, "type"),
      field<&VarDesc::persistable>(3, "persistable"),
      field<&VarDesc::is_parameter>(5, "is_parameter"),
  }};
  return table;
}

template <>
const MessageTable<PdScalar>& tableOf<PdScalar>() {
  static const MessageTable<PdScalar> table{"Scalar", {
      field<&PdScalar::type>(1, "type"),
      field<&PdScalar::b>(2, "b"),
      field<&PdScalar::i>(3, "i"),
      field<&PdScalar::r>(4, "r"),
  }};
  return table;
}

template <>
const MessageTable<OpAttr>& tableOf<OpAttr>() {
  static const MessageTable<OpAttr> table{"OpDesc.Attr", {
      field<&OpAttr::name>(1, "name"),
      field<&OpAttr::type>(2, "type"),
      field<&OpAttr::i>(3, "i"),
      field<&OpAttr::f>(4, "f"),
      field<&OpAttr::s>(5, "s"),
      field<&OpAttr::ints>(6, "ints"),
      field<&OpAttr::floats>(7, "floats"),
      field<&OpAttr::strings>(8, "strings"),
      field<&OpAttr::b>(10, "b"),
      field<&OpAttr::bools>(11, "bools"),
      field<&OpAttr::block_idx>(12, "block_idx"),
      field<&OpAttr::l>(13, "l"),
      field<&OpAttr::blocks_idx>(14, "blocks_idx"),
      field<&OpAttr::longs>(15, "longs"),
      field<&OpAttr::float64s>(16, "float64s"),
      field<&OpAttr::var_name>(17, "var_name"),
      field<&OpAttr::vars_name>(18, "vars_name"),
      field<&OpAttr::float64>(19, "float64"),
      field<&OpAttr::scalar>(20, "scalar"),
      field<&OpAttr::scalars>(21, "scalars"),
  }};
  return table;
}

template <>
const MessageTable<OpSlot>& tableOf<OpSlot>() {
  static const MessageTable<OpSlot> table{"OpDesc.Var", {
      field<&OpSlot::parameter>(1, "parameter"),
      field<&OpSlot::arguments>(2, "arguments"),
  }};
  return table;
}

template <>
const MessageTable<OpDesc>& tableOf<OpDesc>() {
  static const MessageTable<OpDesc> table{"OpDesc", {
      field<&OpDesc::inputs>(1, "inputs"),
      field<&OpDesc::outputs>(2, "outputs"),
      field<&OpDesc::type>(3, "type"),
      field<&OpDesc::attrs>(4, "attrs"),
  }};
  return table;
}

template <>
const MessageTable<BlockDesc>& tableOf<BlockDesc>() {
  static const MessageTable<BlockDesc> table{"BlockDesc", {
      field<&BlockDesc::idx>(1, "idx"),
      field<&BlockDesc::parent_idx>(2, "parent_idx"),
      field<&BlockDesc::vars>(3, "vars"),
      field<&BlockDesc::ops>(4, "ops"),
  }};
  return table;
}

template <>
const MessageTable<PdVersion>& tableOf<PdVersion>() {
  static const MessageTable<PdVersion> table{"Version", {
      field<&PdVersion::version>(1, "version"),
  }};
  return table;
}

template <>
const MessageTable<ProgramDesc>& tableOf<ProgramDesc>() {
  static const MessageTable<ProgramDesc> table{"ProgramDesc", {
      field<&ProgramDesc::blocks>(1, "blocks"),
      field<&ProgramDesc::version>(4, "version"),
  }};
  return table;
}

}  // namespace estuary::proto
