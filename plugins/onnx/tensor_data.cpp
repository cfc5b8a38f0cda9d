#include "tensor_data.h"

#include "estuary/frontend/frontend.h"

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

std::string directoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
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

TensorReader::TensorReader(const MappedFile& model, const std::string& model_path,
                           std::vector<std::string> allowed_dirs)
    : model_(model), weights_(model_path, directoryOf(model_path), std::move(allowed_dirs)) {}

Tensor TensorReader::read(const TensorProto& proto, const std::string& what) {
  const std::string& path = weights_.model();
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type);
  if (!dtype) {
    throw UnsupportedOpsError(path, {UnsupportedOp{"element type " + onnxDataTypeName(proto.data_type), "", 0, {what}}});
  }
  if (proto.has_segment) raise(path, ": ", what, " is a segment of a tensor, which ONNX models must not store");
  weights_.elementCount(proto.dims, what);
  if (proto.external()) return fromExternal(proto, *dtype, what);
  if (proto.raw_data) return weights_.fromBytes(*dtype, proto.dims, *proto.raw_data, model_.owner, what);
  return fromTypedFields(proto, *dtype, what);
}

Tensor TensorReader::fromTypedFields(const TensorProto& proto, DType dtype, const std::string& what) {
  std::vector<int64_t> dims = proto.dims;
  const uint64_t count = weights_.elementCount(dims, what);
  auto check = [&](size_t found, const char* field) {
    if (found != count) {
      raise(weights_.model(), ": ", what, " has ", found, " values in ", field, ", its shape ", dimsText(dims),
            " needs ", count);
    }
  };
  weights_.countCopy();
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
  raise(weights_.model(), ": ", what, " has no data");
}

Tensor TensorReader::fromExternal(const TensorProto& proto, DType dtype, const std::string& what) {
  const std::string& path = weights_.model();
  std::string location;
  std::optional<uint64_t> offset, length;
  auto number = [&](const StringEntry& entry) {
    std::string text(entry.value);
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || text.front() == '-') {
      raise(path, ": ", what, " has external_data ", entry.key, " '", text, "', not a byte count");
    }
    return static_cast<uint64_t>(value);
  };
  for (const StringEntry& entry : proto.external_data) {
    if (entry.key == "location") location = std::string(entry.value);
    if (entry.key == "offset") offset = number(entry);
    if (entry.key == "length") length = number(entry);
  }
  if (location.empty()) raise(path, ": ", what, " is stored externally but names no location");
  const MappedFile& file = weights_.fileBeside(location, "the external data of " + what);
  const uint64_t bytes = weights_.elementCount(proto.dims, what) * dtypeSize(dtype);
  const uint64_t start = offset.value_or(0);
  if (length && *length != bytes) {
    raise(path, ": ", what, " has external data of ", *length, " bytes, its type ", onnxDataTypeName(proto.data_type),
          dimsText(proto.dims), " needs ", bytes);
  }
  if (start > file.size || bytes > file.size - start) {
    raise(path, ": ", what, " reads bytes ", start, "..", start + bytes, " of its external data file '", location,
          "', which has only ", file.size, " bytes");
  }
  return weights_.fromBytes(dtype, proto.dims, std::string_view(file.data + start, bytes), file.owner, what);
}

Tensor TensorReader::readSparse(const SparseTensorProto& proto, const std::string& what) {
  const std::string& path = weights_.model();
  Tensor values = read(proto.values, "the values of " + what);
  Tensor indices = read(proto.indices, "the indices of " + what);
  const uint64_t count = weights_.elementCount(proto.dims, what);
  const int64_t nnz = values.shape().size() == 1 ? values.shape()[0] : -1;
  const size_t rank = proto.dims.size();
  const bool linear = indices.shape() == std::vector<int64_t>{nnz};
  const bool coordinates = indices.shape() == std::vector<int64_t>{nnz, static_cast<int64_t>(rank)};
  if (nnz < 0 || indices.dtype() != DType::I64 || !(linear || coordinates)) {
    raise(path, ": ", what, " is a sparse tensor of malformed parts: values must be 1-D ([NNZ]) and "
          "indices i64 [NNZ] or [NNZ, ", rank, "]");
  }
  DType dtype = values.dtype();
  Tensor dense = Tensor::allocate(dtype, proto.dims);
  const size_t size = dtypeSize(dtype);
  const int64_t* index = indices.data<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    uint64_t position = 0;
    bool inside = true;
    if (linear) {
      inside = index[k] >= 0 && static_cast<uint64_t>(index[k]) < count;
      position = static_cast<uint64_t>(index[k]);
    } else {
      for (size_t d = 0; d < rank; ++d) {
        int64_t coordinate = index[k * static_cast<int64_t>(rank) + static_cast<int64_t>(d)];
        inside = inside && coordinate >= 0 && coordinate < proto.dims[d];
        position = position * static_cast<uint64_t>(proto.dims[d]) + static_cast<uint64_t>(coordinate);
      }
    }
    if (!inside) {
      raise(path, ": ", what, ": index ", k, " of the sparse tensor lies outside its shape ", dimsText(proto.dims));
    }
    std::memcpy(static_cast<char*>(dense.mutableData()) + position * size, values.data<char>() + k * size, size);
  }
  return dense;
}

}  // namespace estuary::onnx_frontend
