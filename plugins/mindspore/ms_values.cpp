#include "ms_values.h"

#include <cstring>

#include "estuary/frontend/weights.h"
#include "estuary/support/error.h"

namespace estuary::mindspore_frontend {

std::optional<DType> dtypeFromMs(int32_t data_type) {
  switch (data_type) {
    case kMsFloat: return DType::F32;
    case kMsUint8: return DType::U8;
    case kMsInt8: return DType::I8;
    case kMsInt16: return DType::I16;
    case kMsInt32: return DType::I32;
    case kMsInt64: return DType::I64;
    case kMsBool: return DType::Bool;
    case kMsFloat16: return DType::F16;
    case kMsDouble:
    case kMsFloat64: return DType::F64;
    case kMsBfloat16: return DType::BF16;
    default: return std::nullopt;
  }
}

std::string msTypeName(int32_t data_type) {
  static const char* const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                      "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
                                      "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT64", "QINT4X2"};
  if (data_type >= 0 && data_type < static_cast<int32_t>(std::size(names))) return names[data_type];
  return "data type " + std::to_string(data_type);
}

std::optional<DType> dtypeFromTypeId(int64_t type_id) {
  // MindSpore's TypeId (mindapi/base/type_id.h): kNumberTypeBool = 30 and the numbers after it.
  switch (type_id) {
    case 30: return DType::Bool;
    case 32: return DType::I8;
    case 33: return DType::I16;
    case 34: return DType::I32;
    case 35: return DType::I64;
    case 37: return DType::U8;
    case 42: return DType::F16;
    case 43: return DType::F32;
    case 44: return DType::F64;
    case 45: return DType::BF16;
    default: return std::nullopt;
  }
}

namespace {

bool isIntegerType(int32_t type) {
  return type == kAttrInt64 || type == kAttrInt32 || type == kAttrInt16 || type == kAttrInt8 || type == kAttrUint8 ||
         type == kAttrUint16 || type == kAttrUint32 || type == kAttrUint64;
}

// A tensor constant: raw_data in the file's byte order (little-endian, checked by the model),
// copied: constants are small, and a copy keeps them independent of the mapping's alignment.
Tensor constantTensor(const MsTensor& tensor, const std::string& where) {
  std::optional<DType> dtype = dtypeFromMs(tensor.data_type);
  if (!dtype) raise(where, ": a constant of type ", msTypeName(tensor.data_type), ", which Estuary has no tensor for");
  uint64_t count = 1;
  for (int64_t dim : tensor.dims) {
    if (dim < 0) raise(where, ": a constant with dim ", dim);
    count *= static_cast<uint64_t>(dim);
  }
  std::string_view bytes = tensor.raw_data.value_or(std::string_view());
  if (bytes.size() != count * dtypeSize(*dtype)) {
    raise(where, ": the constant holds ", bytes.size(), " bytes, but ", dimsText(tensor.dims), " ",
          msTypeName(tensor.data_type), " needs ", count * dtypeSize(*dtype));
  }
  return Tensor::copyOf(*dtype, tensor.dims, bytes.data());
}

// One element of a tuple, which keeps its value in the repeated field of its type.
AttrValue elementOf(const MsAttribute& element, const std::string& where) {
  if (isIntegerType(element.type) || element.type == kAttrBool) {
    int64_t value = !element.ints.empty() ? element.ints[0] : element.i;
    if (element.type == kAttrBool) return {value != 0, "BOOL"};
    return {value, "INT64"};
  }
  if (element.type == kAttrFloat) return {static_cast<double>(!element.floats.empty() ? element.floats[0] : element.f), "FLOAT"};
  if (element.type == kAttrDouble) return {!element.doubles.empty() ? element.doubles[0] : element.d, "DOUBLE"};
  if (element.type == kAttrString) {
    return {std::string(!element.strings.empty() ? element.strings[0] : element.s), "STRING"};
  }
  return attrValueOf(element, where);
}

}  // namespace

AttrValue attrValueOf(const MsAttribute& attribute, const std::string& where) {
  const int32_t type = attribute.type;
  if (isIntegerType(type)) return {attribute.i, "INT64"};
  switch (type) {
    case kAttrBool: return {attribute.i != 0, "BOOL"};
    case kAttrFloat: return {static_cast<double>(attribute.f), "FLOAT"};
    case kAttrDouble: return {attribute.d, "DOUBLE"};
    case kAttrString: return {std::string(attribute.s), "STRING"};
    case kAttrTensors:
    case kAttrTensor: {
      if (attribute.tensors.empty()) raise(where, ": a TENSORS value with no tensor");
      const MsTensor& tensor = attribute.tensors[0];
      if (!tensor.raw_data) {  // without data, a TENSORS value is an element type (a dtype argument)
        std::optional<DType> dtype = dtypeFromMs(tensor.data_type);
        if (!dtype) raise(where, ": the type ", msTypeName(tensor.data_type), " has no Estuary element type");
        return {*dtype, "TYPE"};
      }
      return {constantTensor(tensor, where), "TENSOR"};
    }
    case kAttrTuple:
    case kAttrList: {
      // Tuples of numbers read as lists of one kind; a tuple of anything else is not read.
      std::vector<AttrValue> elements;
      for (const MsAttribute& element : attribute.values) elements.push_back(elementOf(element, where));
      bool all_ints = true;
      bool all_numbers = true;
      bool all_strings = true;
      for (const AttrValue& element : elements) {
        all_ints = all_ints && (std::holds_alternative<int64_t>(element.data) || std::holds_alternative<bool>(element.data));
        all_numbers = all_numbers && (all_ints || std::holds_alternative<double>(element.data));
        all_strings = all_strings && std::holds_alternative<std::string>(element.data);
      }
      if (all_ints) {
        std::vector<int64_t> values;
        for (const AttrValue& element : elements) {
          values.push_back(std::holds_alternative<bool>(element.data) ? std::get<bool>(element.data)
                                                                      : std::get<int64_t>(element.data));
        }
        return {std::move(values), "TUPLE(INT64)"};
      }
      if (all_numbers) {
        std::vector<double> values;
        for (const AttrValue& element : elements) {
          values.push_back(std::holds_alternative<double>(element.data) ? std::get<double>(element.data)
                                                                        : static_cast<double>(std::get<int64_t>(element.data)));
        }
        return {std::move(values), "TUPLE(FLOAT)"};
      }
      if (all_strings) {
        std::vector<std::string> values;
        for (AttrValue& element : elements) values.push_back(std::get<std::string>(element.data));
        return {std::move(values), "TUPLE(STRING)"};
      }
      return {std::monostate(), "TUPLE"};
    }
    case kAttrNone: return {std::monostate(), "NONE"};
    default: return {std::monostate(), "an AttributeProto type Estuary does not read"};
  }
}

const MsAttribute* abstractOf(const MsNode& node) {
  for (const MsAttribute& attribute : node.attribute) {
    if (attribute.name == "shape") return &attribute;
  }
  return nullptr;
}

AbstractKind abstractKind(const MsAttribute* abstract) {
  if (!abstract) return AbstractKind::Other;
  switch (abstract->type) {
    case kAttrTensors: return AbstractKind::Tensor;
    case kAttrTuple:
    case kAttrList: return AbstractKind::Tuple;
    case kAttrUMonad:
    case kAttrIOMonad: return AbstractKind::Monad;
    default: return isIntegerType(abstract->type) || abstract->type == kAttrScalar || abstract->type == kAttrBool ||
                            abstract->type == kAttrFloat
                        ? AbstractKind::Scalar
                        : AbstractKind::Other;
  }
}

size_t tupleArity(const MsAttribute* abstract) {
  return abstractKind(abstract) == AbstractKind::Tuple ? abstract->values.size() : 0;
}

bool isScalarTuple(const MsAttribute* abstract) {
  if (abstractKind(abstract) != AbstractKind::Tuple) return false;
  for (const MsAttribute& element : abstract->values) {
    if (abstractKind(&element) != AbstractKind::Scalar) return false;
  }
  return true;
}

bool isMonad(const MsValueInfo& info) {
  return info.denotation == "UMonadType" || info.denotation == "IOMonadType" ||
         (info.attr_info && abstractKind(&*info.attr_info) == AbstractKind::Monad);
}

TensorType valueInfoType(const MsValueInfo& info, SymbolTable& symbols, const std::string& hint,
                         const std::string& where) {
  if (info.tensor.empty()) {
    // A scalar (a Python int or float the graph takes): a 0-d tensor of its type.
    if (info.attr_info && abstractKind(&*info.attr_info) == AbstractKind::Scalar && !info.attr_info->tensors.empty()) {
      if (std::optional<DType> dtype = dtypeFromMs(info.attr_info->tensors[0].data_type)) {
        return TensorType(*dtype, Shape(std::vector<Dim>{}));
      }
    }
    raise(where, ": input '", info.name, "' is a ", info.denotation.empty() ? std::string("value") : std::string(info.denotation),
          ", not a tensor");
  }
  const MsTensor& tensor = info.tensor[0];
  std::optional<DType> dtype = dtypeFromMs(tensor.data_type);
  if (!dtype) raise(where, ": input '", info.name, "' is ", msTypeName(tensor.data_type), ", which Estuary has no tensor for");
  if (tensor.dims.size() == 1 && tensor.dims[0] == -2) return TensorType(*dtype, Shape::unranked());
  std::vector<Dim> dims;
  for (size_t d = 0; d < tensor.dims.size(); ++d) {
    dims.push_back(tensor.dims[d] >= 0 ? Dim(tensor.dims[d]) : symbols.fresh(hint + "_dim" + std::to_string(d)));
  }
  return TensorType(*dtype, Shape(std::move(dims)));
}

}  // namespace estuary::mindspore_frontend
