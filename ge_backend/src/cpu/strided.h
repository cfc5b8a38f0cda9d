#pragma once
// Building blocks of Estuary's own tensor kernels: work counted in bytes for parallelFor,
// strided copies with dims simplified at build time, axis helpers, and small integer
// operands (Slice's starts, Pad's pads, CumSum's axis) that are constants at build time or
// read from their input buffer at run time.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "cpu/bfloat16.h"
#include "estuary/ge/kernel_helpers.h"
#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu {

// parallelFor (kernel_helpers.h) for work counted in bytes moved: moving one f32 element
// is one cheap element-wise operation, parallelFor's unit of work.
inline constexpr double kCostPerByte = 0.25;

template <typename Body>
void parallelRanges(int64_t count, int64_t bytes_per_item, int threads, const Body& body) {
  ge::parallelFor(count, kCostPerByte * static_cast<double>(bytes_per_item), threads, body);
}

// memcpy split across threads for large copies.
inline void copyBytes(void* dst, const void* src, size_t bytes, int threads) {
  if (dst == src || bytes == 0) return;
  constexpr int64_t kChunk = 16 << 10;
  int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  parallelRanges(chunks, kChunk, threads, [&](int64_t begin, int64_t end) {
    size_t from = static_cast<size_t>(begin * kChunk);
    size_t to = std::min(bytes, static_cast<size_t>(end * kChunk));
    std::memcpy(static_cast<std::byte*>(dst) + from, static_cast<const std::byte*>(src) + from, to - from);
  });
}

// Fills `count` elements with one value, split across threads.
template <typename T>
void fillElements(T* dst, int64_t count, T value, int threads) {
  parallelRanges(count, sizeof(T), threads, [&](int64_t begin, int64_t end) {
    std::fill(dst + begin, dst + end, value);
  });
}

inline int64_t productOf(const int64_t* dims, int from, int to) {
  int64_t product = 1;
  for (int d = from; d < to; ++d) product *= dims[d];
  return product;
}

// Elements before and after `axis` of a tensor: the [outer, dims[axis], inner] view.
inline int64_t outerSize(const TensorDesc& desc, int axis) { return productOf(desc.dims.data(), 0, axis); }
inline int64_t innerSize(const TensorDesc& desc, int axis) {
  return productOf(desc.dims.data(), axis + 1, desc.rank);
}

// Row-major strides (in elements) of a desc.
inline std::array<int64_t, kMaxRank> stridesOf(const TensorDesc& desc) {
  std::array<int64_t, kMaxRank> strides{};
  int64_t stride = 1;
  for (int d = desc.rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= desc.dims[d];
  }
  return strides;
}

// An attribute or operand axis in [-rank, rank) made non-negative; raises naming the node.
inline int normalizedAxis(const KernelBuildContext& context, int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    context.fail(what, " is ", axis, ", out of range for rank ", rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Loop nests over up to twice the tensor rank (Tile views each axis as repeats x size).
inline constexpr int kMaxLoopRank = 2 * kMaxRank;

// Walks a row-major index space of `rank` dims, keeping one offset into a strided
// operand; used to visit the rows of an output in order.
struct StridedWalk {
  int rank = 0;
  std::array<int64_t, kMaxLoopRank> dims{};
  std::array<int64_t, kMaxLoopRank> strides{};
  std::array<int64_t, kMaxLoopRank> index{};
  int64_t offset = 0;

  // Positions the walk at linear index `start` of the index space.
  void seek(int64_t start) {
    offset = 0;
    for (int d = rank - 1; d >= 0; --d) {
      index[d] = dims[d] ? start % dims[d] : 0;
      start = dims[d] ? start / dims[d] : 0;
      offset += index[d] * strides[d];
    }
  }
  void next() {
    for (int d = rank - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < dims[d]) return;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
};

// Copies a strided view into a contiguous destination: destination element (i0, ..., ik)
// comes from source element sum(i_d * src_strides[d]). Size-1 dims are dropped and
// adjacent dims that are one run in the source are merged at build time, so a slice of
// whole rows is one memcpy per row and a broadcast row (stride 0) a fill.
class StridedCopy {
 public:
  StridedCopy() = default;
  StridedCopy(const int64_t* dims, const int64_t* src_strides, int rank) {
    count_ = productOf(dims, 0, rank);
    for (int d = 0; d < rank; ++d) {
      if (dims[d] == 1) continue;
      if (rank_ > 0 && strides_[rank_ - 1] == src_strides[d] * dims[d]) {
        dims_[rank_ - 1] *= dims[d];
        strides_[rank_ - 1] = src_strides[d];
        continue;
      }
      dims_[rank_] = dims[d];
      strides_[rank_] = src_strides[d];
      ++rank_;
    }
    if (rank_ == 0) {
      dims_[0] = 1;
      strides_[0] = 1;
      rank_ = 1;
    }
  }

  int64_t count() const { return count_; }
  // The simplified loop nest, for kernel names and tests of the simplification.
  int rank() const { return rank_; }
  int64_t innerStride() const { return strides_[rank_ - 1]; }

  // `src` points at the view's first element.
  template <typename T>
  void run(const T* src, T* dst, int threads) const {
    if (count_ == 0) return;
    const int64_t inner = dims_[rank_ - 1];
    const int64_t stride = strides_[rank_ - 1];
    const int64_t rows = count_ / inner;
    parallelRanges(rows, inner * static_cast<int64_t>(sizeof(T)), threads, [&](int64_t begin, int64_t end) {
      StridedWalk walk;
      walk.rank = rank_ - 1;
      std::copy(dims_.begin(), dims_.begin() + walk.rank, walk.dims.begin());
      std::copy(strides_.begin(), strides_.begin() + walk.rank, walk.strides.begin());
      walk.seek(begin);
      T* out = dst + begin * inner;
      for (int64_t row = begin; row < end; ++row, out += inner) {
        const T* in = src + walk.offset;
        if (stride == 1) {
          if (inner * static_cast<int64_t>(sizeof(T)) >= 64) {
            std::memcpy(out, in, static_cast<size_t>(inner) * sizeof(T));
          } else {
            for (int64_t i = 0; i < inner; ++i) out[i] = in[i];
          }
        } else if (stride == 0) {
          std::fill(out, out + inner, *in);
        } else {
          for (int64_t i = 0; i < inner; ++i) out[i] = in[i * stride];
        }
        walk.next();
      }
    });
  }

 private:
  int64_t count_ = 0;
  int rank_ = 0;
  std::array<int64_t, kMaxLoopRank> dims_{};
  std::array<int64_t, kMaxLoopRank> strides_{};
};

// A small 1-D (or scalar) integer operand: known at build time when the input is a
// constant (the usual case after folding), otherwise read from its buffer at run time.
class SmallIntOperand {
 public:
  static constexpr int kMaxValues = 2 * kMaxRank;

  SmallIntOperand() = default;
  // Binds input `input` of the node, which must hold at most kMaxValues integers.
  SmallIntOperand(const KernelBuildContext& context, size_t input, const char* what) {
    if (!context.hasInput(input)) return;
    const TensorDesc& desc = context.input(input);
    present_ = true;
    input_ = input;
    dtype_ = desc.dtype;
    int64_t count = desc.numElements();
    if (count > kMaxValues) context.fail(what, " has ", count, " values, at most ", kMaxValues, " are supported");
    count_ = static_cast<int>(count);
    if (const Tensor* constant = context.constantInput(input)) {
      constant_ = true;
      for (int i = 0; i < count_; ++i) values_[i] = elementAsInt(dtype_, constant->data(), i);
    }
  }

  bool present() const { return present_; }
  bool isConstant() const { return constant_; }
  int count() const { return count_; }
  // The values known at build time (isConstant() only).
  const int64_t* constantValues() const { return values_.data(); }

  // Fills values[0, count()).
  void read(const KernelArgs& args, int64_t* values) const {
    if (constant_) {
      std::copy(values_.begin(), values_.begin() + count_, values);
      return;
    }
    for (int i = 0; i < count_; ++i) values[i] = elementAsInt(dtype_, args.inputs[input_], i);
  }

 private:
  bool present_ = false;
  bool constant_ = false;
  size_t input_ = 0;
  DType dtype_ = DType::I64;
  int count_ = 0;
  std::array<int64_t, kMaxValues> values_{};
};

}  // namespace estuary::ge::cpu
