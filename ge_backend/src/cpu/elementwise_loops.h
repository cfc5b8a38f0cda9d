#pragma once
// What the element-wise kernels share: the storage type of each dtype and how it loads into
// and stores from the type computations use, dispatch from a runtime dtype to a template,
// splitting work over threads, and the broadcast plan that walks an output together
// with the inputs broadcast to it.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/vector_math.h"
#include "estuary/ge/kernel.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge::cpu {

// --- Element types -------------------------------------------------------------------------
// Element<T>::Compute is what a kernel computes in: the kernel helpers' ElementTraits (f32
// for the 16-bit floats, loaded exactly and rounded once to nearest even when stored), for
// the element-wise kernels' own storage type of bool (Bool8) too.
template <typename T>
struct Element : ElementTraits<T> {};
template <>
struct Element<Bool8> {
  using Compute = bool;
  static bool load(Bool8 x) { return x.value != 0; }
  static Bool8 store(bool x) { return Bool8{static_cast<uint8_t>(x)}; }
};

template <typename T>
using ComputeOf = typename Element<T>::Compute;

// The type the element-wise loops store dtype D's elements as, for the dispatch tag of D: the
// storage type, but Bool8 for bool, which computes in bool where u8 computes in integers.
template <typename Tag>
struct LoopStorageFor {
  using type = StorageOf<Tag>;
};
template <>
struct LoopStorageFor<DTypeTag<DType::Bool>> {
  using type = Bool8;
};
template <typename Tag>
using LoopStorage = typename LoopStorageFor<Tag>::type;

// A C++ type as a value, for templates that take the type a kernel computes in.
template <typename T>
struct TypeTag {
  using type = T;
};

// "cpu:Relu f32"
std::string kernelName(const KernelBuildContext& context, DType dtype);

// The value of input `index` when it is a constant with one element (of any numeric dtype).
std::optional<double> constantScalar(const KernelBuildContext& context, size_t index);
// Reads one element of `dtype` at `data` as a double.
double readScalar(const void* data, DType dtype);

// --- Threads -------------------------------------------------------------------------------

// The work of one element in parallelFor's unit (kernel_helpers.h): a cheap operation (add,
// max, a copy) is one; those that spend tens of instructions per element (exp, erf, sin ...)
// four.
inline constexpr double kCheapCost = 1;
inline constexpr double kCostlyCost = 4;

// parallelFor over elements [0, n): fn(begin, end) on contiguous ranges whose bounds are
// multiples of 16 elements, so that threads do not share cache lines.
template <typename Fn>
void parallelForElements(int64_t n, double cost, int threads, const Fn& fn) {
  constexpr int64_t kLine = 16;
  ge::parallelFor((n + kLine - 1) / kLine, cost * kLine, threads,
                  [&](int64_t begin, int64_t end) { fn(begin * kLine, std::min(end * kLine, n)); });
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
