#include "estuary/ir/tensor.h"

#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

namespace estuary {

namespace {

constexpr size_t kAlignment = 64;

// Element counts are bounded so that the byte size of any element type fits in int64.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;

int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) raise("tensor shape has a negative dimension (", dim, ")");
    if (dim != 0 && count > kMaxElements / dim) {
      std::string dims;
      for (int64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      raise("tensor shape [", dims, "] has more elements than a tensor can hold");
    }
    count *= dim;
  }
  return count;
}

}  // namespace

int64_t Tensor::numElements() const { return dtype_ == DType::Undefined ? 0 : elementCount(shape_); }

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> shape, const void* data,
                    std::shared_ptr<const void> keep_alive) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  elementCount(tensor.shape_);
  tensor.data_ = data;
  tensor.keep_alive_ = std::move(keep_alive);
  return tensor;
}

Tensor Tensor::allocate(DType dtype, std::vector<int64_t> shape) {
  size_t bytes = static_cast<size_t>(elementCount(shape)) * dtypeSize(dtype);
  // Round up so the allocation is a multiple of the alignment, as aligned_alloc requires.
  size_t padded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = std::aligned_alloc(kAlignment, padded == 0 ? kAlignment : padded);
  if (!memory) raise("out of memory allocating a tensor of ", bytes, " bytes");
  std::memset(memory, 0, padded == 0 ? kAlignment : padded);
  std::shared_ptr<const void> owner(memory, [](const void* p) { std::free(const_cast<void*>(p)); });
  return wrap(dtype, std::move(shape), memory, std::move(owner));
}

Tensor Tensor::copyOf(DType dtype, std::vector<int64_t> shape, const void* bytes) {
  Tensor tensor = allocate(dtype, std::move(shape));
  if (tensor.byteSize()) std::memcpy(tensor.mutableData(), bytes, tensor.byteSize());
  return tensor;
}

bool Tensor::contentEquals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (data_ == other.data_) return true;
  return std::memcmp(data_, other.data_, byteSize()) == 0;
}

size_t Tensor::contentHash() const {
  size_t hash = std::hash<int>()(static_cast<int>(dtype_));
  for (int64_t dim : shape_) hash = hash * 31 + std::hash<int64_t>()(dim);
  std::string_view bytes(static_cast<const char*>(data_), byteSize());
  return hash ^ (std::hash<std::string_view>()(bytes) + 0x9e3779b97f4a7c15ULL + (hash << 6));
}

}  // namespace estuary
