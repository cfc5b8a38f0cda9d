#pragma once
// What the element-wise kernels share: the storage type of each dtype and how it loads into
// and stores from the type computations use, dispatch from a runtime dtype to a template,
// splitting work over OpenMP threads, and the broadcast plan that walks an output together
// with the inputs broadcast to it.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/vector_math.h"
#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu {

// --- Element types -------------------------------------------------------------------------
// Element<T>::Compute is what a kernel computes in: f32 for the 16-bit floats (loaded exactly,
// rounded once to nearest even when stored), bool for Bool8, the type itself otherwise.
template <typename T>
struct Element {
  using Compute = T;
  static T load(T x) { return x; }
  static T store(T x) { return x; }
};
template <>
struct Element<Half> {
  using Compute = float;
  static float load(Half x) { return vm::toFloat(x); }
  static Half store(float x) { return vm::toHalf(x); }
};
template <>
struct Element<BFloat16> {
  using Compute = float;
  static float load(BFloat16 x) { return vm::toFloat(x); }
  static BFloat16 store(float x) { return vm::toBFloat16(x); }
};
template <>
struct Element<Bool8> {
  using Compute = bool;
  static bool load(Bool8 x) { return x.value != 0; }
  static Bool8 store(bool x) { return Bool8{static_cast<uint8_t>(x)}; }
};

template <typename T>
using ComputeOf = typename Element<T>::Compute;

template <typename T>
constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  if constexpr (std::is_same_v<T, Half>) return DType::F16;
  if constexpr (std::is_same_v<T, BFloat16>) return DType::BF16;
  if constexpr (std::is_same_v<T, double>) return DType::F64;
  if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  if constexpr (std::is_same_v<T, Bool8>) return DType::Bool;
  return DType::Undefined;
}

// --- Dtype dispatch ------------------------------------------------------------------------

template <typename T>
struct TypeTag {
  using type = T;
};
template <typename... Ts>
struct TypeList {};

// The sets the op schemas constrain types to (see core/src/ops/schema.cpp).
using FloatTypes = TypeList<float, Half, BFloat16, double>;
using SignedTypes = TypeList<float, Half, BFloat16, double, int8_t, int16_t, int32_t, int64_t>;
using NumericTypes = TypeList<float, Half, BFloat16, double, int8_t, int16_t, int32_t, int64_t, uint8_t>;
using AllTypes = TypeList<float, Half, BFloat16, double, int8_t, int16_t, int32_t, int64_t, uint8_t, Bool8>;
using FloatAndWideIntTypes = TypeList<float, Half, BFloat16, double, int32_t, int64_t>;

// Calls fn(TypeTag<T>{}) for the storage type T of `dtype` when the list has it; returns
// whether it did.
template <typename... Ts, typename Fn>
bool visitType(TypeList<Ts...>, DType dtype, Fn&& fn) {
  return ((dtype == dtypeOf<Ts>() ? (fn(TypeTag<Ts>{}), true) : false) || ...);
}

// The kernel make(TypeTag<T>{}) returns for the storage type T of `dtype`; nullptr (the
// factory declines) when the list lacks it.
template <typename List, typename Make>
std::unique_ptr<Kernel> dispatch(List list, DType dtype, Make&& make) {
  std::unique_ptr<Kernel> kernel;
  visitType(list, dtype, [&](auto tag) { kernel = make(tag); });
  return kernel;
}

// An unsigned integer of `bytes` bytes: the storage for ops that only move elements.
template <size_t Bytes>
using UnsignedOfSize = std::conditional_t<
    Bytes == 1, uint8_t, std::conditional_t<Bytes == 2, uint16_t, std::conditional_t<Bytes == 4, uint32_t, uint64_t>>>;

template <typename Make>
std::unique_ptr<Kernel> dispatchBySize(size_t bytes, Make&& make) {
  switch (bytes) {
    case 1: return make(TypeTag<uint8_t>{});
    case 2: return make(TypeTag<uint16_t>{});
    case 4: return make(TypeTag<uint32_t>{});
    case 8: return make(TypeTag<uint64_t>{});
    default: return nullptr;
  }
}

// "cpu:Relu f32"
std::string kernelName(const KernelBuildContext& context, DType dtype);

// The value of input `index` when it is a constant with one element (of any numeric dtype).
std::optional<double> constantScalar(const KernelBuildContext& context, size_t index);
// Reads one element of `dtype` at `data` as a double.
double readScalar(const void* data, DType dtype);

// --- Threads -------------------------------------------------------------------------------

// Elements one thread should have at least before another one helps: a fork/join costs
// about as much as streaming this many elements through a cheap operation.
inline constexpr int64_t kCheapGrain = int64_t{1} << 15;
// For operations that spend tens of instructions per element (exp, erf, sin ...): a few
// nanoseconds each, so that a half of this many is worth a parallel region's start (10 us
// when the workers sleep between regions).
inline constexpr int64_t kCostlyGrain = int64_t{1} << 13;

// Runs fn(begin, end) over contiguous ranges covering [0, n), one per thread; range bounds
// are multiples of 16 elements so that threads do not share cache lines.
template <typename Fn>
void parallelFor(int64_t n, int threads, int64_t grain, const Fn& fn) {
  int64_t chunks = std::min<int64_t>(threads, n / grain);
  if (chunks <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t index = omp_get_thread_num(), count = omp_get_num_threads();
    int64_t begin = index == 0 ? 0 : (n / count * index) & ~int64_t{15};
    int64_t end = index + 1 == count ? n : (n / count * (index + 1)) & ~int64_t{15};
    if (begin < end) fn(begin, end);
  }
}

// --- Broadcasting --------------------------------------------------------------------------

// Walks a dense row-major output and up to three inputs broadcast to it (ONNX
// multidirectional broadcasting), computed once at build time. Dims of size 1 are dropped
// and neighbouring dims merged where every input either has both or broadcasts both, so that
// x[8,16,32] + b[32] becomes rows of 32 with b read whole per row, and x[8,16,32] + y[8,1,1]
// rows of 512 with y read as one value per row.
class BroadcastPlan {
 public:
  static constexpr int kMaxInputs = 3;

  BroadcastPlan() = default;
  // `inputs` are the input shapes (at most kMaxInputs); each must broadcast to `output`
  // (shape inference made sure; a contradiction fails naming the node).
  BroadcastPlan(const KernelBuildContext& context, const std::vector<TensorDesc>& inputs, const TensorDesc& output);

  int64_t size() const { return size_; }
  // Whether input k advances along rows (else its row holds one repeated value).
  bool contiguous(int k) const { return contiguous_[k]; }
  // Every input full-sized or a single value: the whole output is one row.
  bool isFlat() const { return rank_ <= 1; }
  // Bit k set when input k is contiguous: selects a row loop's variant.
  int pattern() const;

  // Calls fn(offsets, out_offset, count) for consecutive runs of [begin, end) lying in one
  // row each: input k's elements for the run start at offsets[k] (and advance iff
  // contiguous(k)), the output's at out_offset.
  template <typename Fn>
  void forEachRun(int64_t begin, int64_t end, const Fn& fn) const {
    if (begin >= end) return;
    const int64_t inner = dims_[rank_ - 1];
    int64_t row = begin / inner, column = begin % inner;
    int64_t index[kMaxRank] = {};
    int64_t base[kMaxInputs] = {};
    for (int d = rank_ - 2; d >= 0; --d) {
      index[d] = row % dims_[d];
      row /= dims_[d];
      for (int k = 0; k < num_inputs_; ++k) base[k] += index[d] * strides_[k][d];
    }
    int64_t offsets[kMaxInputs] = {};
    while (begin < end) {
      int64_t count = std::min(inner - column, end - begin);
      for (int k = 0; k < num_inputs_; ++k) offsets[k] = base[k] + (contiguous_[k] ? column : 0);
      fn(static_cast<const int64_t*>(offsets), begin, count);
      begin += count;
      column = 0;
      for (int d = rank_ - 2; d >= 0; --d) {
        for (int k = 0; k < num_inputs_; ++k) base[k] += strides_[k][d];
        if (++index[d] < dims_[d]) break;
        for (int k = 0; k < num_inputs_; ++k) base[k] -= strides_[k][d] * dims_[d];
        index[d] = 0;
      }
    }
  }

 private:
  int num_inputs_ = 0;
  int rank_ = 1;
  int64_t size_ = 0;
  int64_t dims_[kMaxRank] = {1};
  // Element strides of each input per collapsed dim; 0 where it broadcasts. The innermost
  // dim's stride is 1 or 0 (contiguous_).
  int64_t strides_[kMaxInputs][kMaxRank] = {};
  bool contiguous_[kMaxInputs] = {};
};

}  // namespace estuary::ge::cpu
