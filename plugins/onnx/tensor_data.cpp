#include "tensor_data.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "estuary/support/error.h"

namespace estuary::onnx_frontend {

std::optional<DType> dtypeFromOnnx(int32_t data_type) {
  switch (data_type) {
    case kFloat: return DType::F32;
    case kUint8: return DType::U8;
    case kInt8: return DType::I8;
    case kInt16: return DType::I16;
    case kInt32: return DType::I32;
    case kInt64: return DType::I64;
    case kBool: return DType::Bool;
    case kFloat16: return DType::F16;
    case kDouble: return DType::F64;
    case kBfloat16: return DType::BF16;
    default: return std::nullopt;
  }
}

namespace {

// The element count of `dims`, refusing negative dims; overflow is refused by Tensor itself.
uint64_t elementCount(const std::vector<int64_t>& dims, const std::string& what, const std::string& path) {
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) raise(path, ": ", what, " has a negative dimension (", dim, ")");
    count *= static_cast<uint64_t>(dim);
  }
  return count;
}

// Copies `values` into a new tensor, converting each to the element type `T`.
template <typename T, typename Source>
Tensor convertInto(DType dtype, std::vector<int64_t> dims, const std::vector<Source>& values) {
  Tensor tensor = Tensor::allocate(dtype, std::move(dims));
  T* out = static_cast<T*>(tensor.mutableData());
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
  return tensor;
}

}  // namespace

Tensor TensorReader::read(const TensorProto& proto, const std::string& what) {
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type);
  if (!dtype) {
    raise(model_path_, ": ", what, " has element type ", onnxDataTypeName(proto.data_type),
          ", which Estuary does not support");
  }
  if (proto.has_segment) raise(model_path_, ": ", what, " is a segment of a tensor, which ONNX models must not store");
  uint64_t count = elementCount(proto.dims, what, model_path_);
  if (proto.external) return fromExternal(proto, *dtype, proto.dims, what);
  if (proto.has_raw_data) {
    uint64_t expected = count * dtypeSize(*dtype);
    if (proto.raw_data.size() != expected) {
      raise(model_path_, ": ", what, " has ", proto.raw_data.size(), " bytes of raw_data, its type ",
            onnxDataTypeName(proto.data_type), shapeText(proto.dims), " needs ", expected);
    }
    return fromBytes(*dtype, proto.dims, proto.raw_data.data(), model_.owner);
  }
  return fromTypedFields(proto, *dtype, proto.dims, what);
}

std::string TensorReader::shapeText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

Tensor TensorReader::fromBytes(DType dtype, std::vector<int64_t> dims, const char* data,
                               const std::shared_ptr<const void>& owner) {
  if (reinterpret_cast<uintptr_t>(data) % dtypeSize(dtype) == 0) {
    ++wrapped_;
    return Tensor::wrap(dtype, std::move(dims), data, owner);
  }
  ++copied_;
  return Tensor::copyOf(dtype, std::move(dims), data);
}

Tensor TensorReader::fromTypedFields(const TensorProto& proto, DType dtype, std::vector<int64_t> dims,
                                     const std::string& what) {
  const uint64_t count = elementCount(dims, what, model_path_);
  auto check = [&](size_t found, const char* field) {
    if (found != count) {
      raise(model_path_, ": ", what, " has ", found, " values in ", field, ", its shape ", shapeText(dims),
            " needs ", count);
    }
  };
  ++copied_;
  switch (dtype) {
    case DType::F32:
      check(proto.float_data.size(), "float_data");
      return convertInto<float>(dtype, std::move(dims), proto.float_data);
    case DType::F64:
      check(proto.double_data.size(), "double_data");
      return convertInto<double>(dtype, std::move(dims), proto.double_data);
    case DType::I64:
      check(proto.int64_data.size(), "int64_data");
      return convertInto<int64_t>(dtype, std::move(dims), proto.int64_data);
    case DType::I32:
      check(proto.int32_data.size(), "int32_data");
      return convertInto<int32_t>(dtype, std::move(dims), proto.int32_data);
    case DType::I16:
      check(proto.int32_data.size(), "int32_data");
      return convertInto<int16_t>(dtype, std::move(dims), proto.int32_data);
    case DType::I8:
      check(proto.int32_data.size(), "int32_data");
      return convertInto<int8_t>(dtype, std::move(dims), proto.int32_data);
    case DType::U8:
    case DType::Bool:
      check(proto.int32_data.size(), "int32_data");
      return convertInto<uint8_t>(dtype, std::move(dims), proto.int32_data);
    case DType::F16:
    case DType::BF16:
      // The 16-bit patterns, one per int32_data entry.
      check(proto.int32_data.size(), "int32_data");
      return convertInto<uint16_t>(dtype, std::move(dims), proto.int32_data);
    case DType::Undefined: break;
  }
  raise(model_path_, ": ", what, " has no data");
}

const MappedFile& TensorReader::externalFile(const std::string& location, const std::string& what) {
  auto found = external_files_.find(location);
  if (found != external_files_.end()) return found->second;
  // ONNX resolves locations against the model's directory and refuses paths leaving it.
  if (location.empty() || location.front() == '/' || location.find("..") != std::string::npos) {
    raise(model_path_, ": ", what, " has external data at '", location,
          "', which is not a path inside the model's directory");
  }
  std::string path = directory_.empty() ? location : directory_ + "/" + location;
  MappedFile file;
  try {
    file = mapFile(path, "external data file");
  } catch (const Error& error) {
    raise(model_path_, ": ", what, " has its data in an external file that cannot be read: ", error.what());
  }
  return external_files_.emplace(location, std::move(file)).first->second;
}

Tensor TensorReader::fromExternal(const TensorProto& proto, DType dtype, std::vector<int64_t> dims,
                                  const std::string& what) {
  std::string location;
  std::optional<uint64_t> offset, length;
  auto number = [&](const StringEntry& entry) {
    std::string text(entry.value);
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || text.front() == '-') {
      raise(model_path_, ": ", what, " has external_data ", entry.key, " '", text, "', not a byte count");
    }
    return static_cast<uint64_t>(value);
  };
  for (const StringEntry& entry : proto.external_data) {
    if (entry.key == "location") location = std::string(entry.value);
    if (entry.key == "offset") offset = number(entry);
    if (entry.key == "length") length = number(entry);
  }
  if (location.empty()) raise(model_path_, ": ", what, " is stored externally but names no location");
  const MappedFile& file = externalFile(location, what);
  const uint64_t bytes = elementCount(dims, what, model_path_) * dtypeSize(dtype);
  const uint64_t start = offset.value_or(0);
  if (length && *length != bytes) {
    raise(model_path_, ": ", what, " has external data of ", *length, " bytes, its type ",
          onnxDataTypeName(proto.data_type), shapeText(dims), " needs ", bytes);
  }
  if (start > file.size || bytes > file.size - start) {
    raise(model_path_, ": ", what, " reads bytes ", start, "..", start + bytes, " of its external data file '",
          location, "', which has only ", file.size, " bytes");
  }
  return fromBytes(dtype, std::move(dims), file.data + start, file.owner);
}

}  // namespace estuary::onnx_frontend
