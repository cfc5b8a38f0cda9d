#pragma once
// Immutable tensor data (weights, constants). The bytes are shared, never copied on the
// way from a model file to the backend: a Tensor can wrap memory it does not own
// (an mmap'd file, a framework's buffer) together with a keep-alive handle.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "estuary/ir/dtype.h"
#include "estuary/support/error.h"

namespace estuary {

class Tensor {
 public:
  Tensor() = default;

  // Wraps `data` (byte size implied by dtype and shape) without copying; `keep_alive`
  // owns the memory and is released when the last Tensor sharing it goes away.
  static Tensor wrap(DType dtype, std::vector<int64_t> shape, const void* data,
                     std::shared_ptr<const void> keep_alive);
  // Copies `bytes` into a new, 64-byte aligned buffer.
  static Tensor copyOf(DType dtype, std::vector<int64_t> shape, const void* bytes);
  // A zero-filled tensor in a new buffer, to be filled through mutableData() by its creator
  // before it is shared.
  static Tensor allocate(DType dtype, std::vector<int64_t> shape);

  template <typename T>
  static Tensor fromVector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
    Tensor tensor = allocate(dtype, std::move(shape));
    if (values.size() * sizeof(T) != tensor.byteSize()) {
      raise("tensor data has ", values.size() * sizeof(T), " bytes, its type needs ",
            tensor.byteSize());
    }
    // An empty vector's data() may be null, which memcpy must not be given even for 0 bytes.
    if (!values.empty()) std::memcpy(tensor.mutableData(), values.data(), tensor.byteSize());
    return tensor;
  }
  template <typename T>
  static Tensor scalar(DType dtype, T value) {
    return fromVector<T>(dtype, {}, std::vector<T>{value});
  }

  bool isNull() const { return data_ == nullptr && byteSize() == 0 && dtype_ == DType::Undefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numElements() const;
  size_t byteSize() const { return static_cast<size_t>(numElements()) * dtypeSize(dtype_); }

  const void* data() const { return data_; }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }
  // Only for tensors made by allocate() that are not shared yet.
  void* mutableData() { return const_cast<void*>(data_); }

  // The owner of the bytes (for keeping them alive elsewhere, e.g. in a built model).
  const std::shared_ptr<const void>& keepAlive() const { return keep_alive_; }

  // Same dtype, shape and bytes. Identity of storage is checked first, so comparing a
  // large weight with itself is O(1).
  bool contentEquals(const Tensor& other) const;
  // Hash of dtype, shape and bytes.
  size_t contentHash() const;

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> shape_;
  const void* data_ = nullptr;
  std::shared_ptr<const void> keep_alive_;
};

}  // namespace estuary
