#include "tf_tensor.h"

#include <cstring>

#include "estuary/support/error.h"

namespace estuary::tensorflow_frontend {

std::optional<DType> dtypeFromTf(int32_t dtype) {
  switch (dtype > kRefTypeOffset ? dtype - kRefTypeOffset : dtype) {
    case kDtFloat: return DType::F32;
    case kDtDouble: return DType::F64;
    case kDtInt32: return DType::I32;
    case kDtUint8: return DType::U8;
    case kDtInt16: return DType::I16;
    case kDtInt8: return DType::I8;
    case kDtInt64: return DType::I64;
    case kDtBool: return DType::Bool;
    case kDtBfloat16: return DType::BF16;
    case kDtHalf: return DType::F16;
    default: return std::nullopt;
  }
}

std::vector<int64_t> shapeDims(const std::optional<ShapeProto>& shape, const std::string& what,
                               const std::string& where) {
  std::vector<int64_t> dims;
  if (!shape) return dims;  // a scalar
  if (shape->unknown_rank) raise(where, ": ", what, " has a shape of unknown rank");
  for (const ShapeDim& dim : shape->dims) {
    if (dim.size < 0) raise(where, ": ", what, " has a dim of unknown size");
    dims.push_back(dim.size);
  }
  return dims;
}

Shape irShape(const ShapeProto& shape, SymbolTable& symbols, const std::string& hint) {
  if (shape.unknown_rank) return Shape::unranked();
  std::vector<Dim> dims;
  for (size_t d = 0; d < shape.dims.size(); ++d) {
    const ShapeDim& dim = shape.dims[d];
    if (dim.size >= 0) {
      dims.emplace_back(dim.size);
    } else if (!dim.name.empty()) {
      dims.push_back(symbols.named(dim.name));
    } else {
      dims.push_back(symbols.fresh(hint + "_dim" + std::to_string(d)));
    }
  }
  return Shape(std::move(dims));
}

namespace {

// Writes `values` converted to T into a new tensor; a list shorter than the tensor repeats
// its last value (TensorFlow's compact splat), an empty one gives zeros.
template <typename T, typename Source>
Tensor fill(DType dtype, std::vector<int64_t> dims, uint64_t count, const std::vector<Source>& values,
            const std::string& what, const std::string& where) {
  if (values.size() > count) {
    raise(where, ": ", what, " holds ", values.size(), " values, its shape ", dimsText(dims), " has ", count);
  }
  Tensor tensor = Tensor::allocate(dtype, std::move(dims));
  T* out = static_cast<T*>(tensor.mutableData());
  for (uint64_t i = 0; i < count && !values.empty(); ++i) {
    out[i] = static_cast<T>(values[i < values.size() ? i : values.size() - 1]);
  }
  return tensor;
}

}  // namespace

Tensor tensorFromProto(const TensorProto& proto, WeightSource& weights, const std::shared_ptr<const void>& owner,
                       const std::string& what) {
  const std::string& where = weights.model();
  std::optional<DType> dtype = dtypeFromTf(proto.dtype);
  if (!dtype) raise(where, ": ", what, " is ", tfDataTypeName(proto.dtype), ", which Estuary has no type for");
  std::vector<int64_t> dims = shapeDims(proto.shape, what, where);
  const uint64_t count = weights.elementCount(dims, what);
  if (!proto.tensor_content.empty()) return weights.fromBytes(*dtype, std::move(dims), proto.tensor_content, owner, what);
  weights.countCopy();
  switch (*dtype) {
    case DType::F32: return fill<float>(*dtype, std::move(dims), count, proto.float_val, what, where);
    case DType::F64: return fill<double>(*dtype, std::move(dims), count, proto.double_val, what, where);
    case DType::I64: return fill<int64_t>(*dtype, std::move(dims), count, proto.int64_val, what, where);
    case DType::I32: return fill<int32_t>(*dtype, std::move(dims), count, proto.int_val, what, where);
    case DType::I16: return fill<int16_t>(*dtype, std::move(dims), count, proto.int_val, what, where);
    case DType::I8: return fill<int8_t>(*dtype, std::move(dims), count, proto.int_val, what, where);
    case DType::U8: return fill<uint8_t>(*dtype, std::move(dims), count, proto.int_val, what, where);
    case DType::Bool: return fill<uint8_t>(*dtype, std::move(dims), count, proto.bool_val, what, where);
    case DType::F16:
    case DType::BF16: return fill<uint16_t>(*dtype, std::move(dims), count, proto.half_val, what, where);
    case DType::Undefined: break;
  }
  raise(where, ": ", what, " has no values");
}

}  // namespace estuary::tensorflow_frontend
