#pragma once
// What kernels share, Estuary's own and plugins' alike: the C++ storage type of each DType and
// the type arithmetic happens in (the 16-bit floats compute in f32), the one dispatch from a
// runtime DType to a kernel template instantiated for it, and one parallel-for with one
// threading policy.
//
//   return dispatch(FloatDTypes{}, context.input(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
//     using S = StorageOf<decltype(type)>;
//     ... a kernel for elements of type S ...
//   });
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "estuary/ir/dtype.h"
#include "estuary/ir/float16.h"
#include "estuary/support/error.h"

namespace estuary::ge {

// Storage type S computes in Compute<S>: f32 for the 16-bit floats, itself otherwise.
template <typename S>
struct ElementTraits {
  using Compute = S;
  static Compute load(S value) { return value; }
  static S store(Compute value) { return value; }
};
template <>
struct ElementTraits<Float16> {
  using Compute = float;
  static float load(Float16 value) { return toFloat(value); }
  static Float16 store(float value) { return toFloat16(value); }
};
template <>
struct ElementTraits<BFloat16> {
  using Compute = float;
  static float load(BFloat16 value) { return toFloat(value); }
  static BFloat16 store(float value) { return toBFloat16(value); }
};

template <typename S>
using ComputeOf = typename ElementTraits<S>::Compute;

template <typename S>
inline ComputeOf<S> loadAs(S value) {
  return ElementTraits<S>::load(value);
}
template <typename S>
inline S storeAs(ComputeOf<S> value) {
  return ElementTraits<S>::store(value);
}

// A value computed in floating point written to storage type S: integers round to nearest
// and saturate to S's range, so interpolation on integer tensors behaves like image code.
template <typename S, typename F>
inline S storeRounded(F value) {
  if constexpr (std::is_integral_v<S>) {
    F rounded = std::nearbyint(value);
    constexpr F low = static_cast<F>(std::numeric_limits<S>::lowest());
    constexpr F high = static_cast<F>(std::numeric_limits<S>::max());
    if (!(rounded >= low)) return std::numeric_limits<S>::lowest();  // also NaN
    if (rounded >= high) return std::numeric_limits<S>::max();
    return static_cast<S>(rounded);
  } else {
    return storeAs<S>(static_cast<ComputeOf<S>>(value));
  }
}

// --- Dtype dispatch --------------------------------------------------------------------------

// The C++ type elements of dtype D are stored as. Bool is one byte, 0 or 1.
template <DType D>
struct StorageFor;
template <> struct StorageFor<DType::F32> { using type = float; };
template <> struct StorageFor<DType::F16> { using type = Float16; };
template <> struct StorageFor<DType::BF16> { using type = BFloat16; };
template <> struct StorageFor<DType::F64> { using type = double; };
template <> struct StorageFor<DType::I8> { using type = int8_t; };
template <> struct StorageFor<DType::I16> { using type = int16_t; };
template <> struct StorageFor<DType::I32> { using type = int32_t; };
template <> struct StorageFor<DType::I64> { using type = int64_t; };
template <> struct StorageFor<DType::U8> { using type = uint8_t; };
template <> struct StorageFor<DType::Bool> { using type = uint8_t; };

// A dtype known at compile time, as dispatch hands it to a kernel template. Kernels that keep
// an element type of their own for a dtype (the element-wise loops' Bool8 for bool) map the
// tag, not the storage type, since u8 and bool share uint8_t.
template <DType D>
struct DTypeTag {
  static constexpr DType dtype = D;
  using Storage = typename StorageFor<D>::type;
};
template <typename Tag>
using StorageOf = typename Tag::Storage;

// A set of dtypes a kernel template is instantiated for.
template <DType... Ds>
struct DTypeSet {};

// The sets the op schemas constrain types to (see core/src/ops/schema.cpp).
using FloatDTypes = DTypeSet<DType::F32, DType::F16, DType::BF16, DType::F64>;
using SignedDTypes =
    DTypeSet<DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64>;
using NumericDTypes = DTypeSet<DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16,
                               DType::I32, DType::I64, DType::U8>;
using AllDTypes = DTypeSet<DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32,
                           DType::I64, DType::U8, DType::Bool>;
using FloatAndWideIntDTypes = DTypeSet<DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64>;

// Calls fn(DTypeTag<D>{}) for the member D of the set that `dtype` is, and returns what fn
// returns; when the set lacks `dtype`, returns a value-initialised result (a kernel factory's
// nullptr: it declines). When fn returns nothing, returns whether it was called.
template <DType... Ds, typename Fn>
auto dispatch(DTypeSet<Ds...>, DType dtype, Fn&& fn) {
  using Result = std::common_type_t<decltype(fn(DTypeTag<Ds>{}))...>;
  if constexpr (std::is_void_v<Result>) {
    return ((dtype == Ds ? (fn(DTypeTag<Ds>{}), true) : false) || ...);
  } else {
    Result result{};
    ((dtype == Ds ? (result = fn(DTypeTag<Ds>{}), true) : false) || ...);
    return result;
  }
}

// Calls fn(U{}) with an unsigned integer of `bytes` bytes: kernels that only move elements
// are specialised by element size, not by type.
template <typename Fn>
decltype(auto) dispatchBySize(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: return fn(uint8_t{});
    case 2: return fn(uint16_t{});
    case 4: return fn(uint32_t{});
    case 8: return fn(uint64_t{});
    default: break;
  }
  raise("no element mover for ", bytes, "-byte elements");
}

// Calls fn(I{}) with the C++ type of an index tensor (i32 or i64).
template <typename Fn>
decltype(auto) dispatchIndex(DType dtype, Fn&& fn) {
  if (dtype == DType::I32) return fn(int32_t{});
  if (dtype == DType::I64) return fn(int64_t{});
  raise("index tensors are i32 or i64, not ", dtypeName(dtype));
}

// The i-th element of an integer or floating-point tensor as int64 (shape operands, K,
// axis, depth, ...).
inline int64_t elementAsInt(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::I64: return static_cast<const int64_t*>(data)[i];
    case DType::I32: return static_cast<const int32_t*>(data)[i];
    case DType::I16: return static_cast<const int16_t*>(data)[i];
    case DType::I8: return static_cast<const int8_t*>(data)[i];
    case DType::U8:
    case DType::Bool: return static_cast<const uint8_t*>(data)[i];
    case DType::F32: return static_cast<int64_t>(static_cast<const float*>(data)[i]);
    case DType::F64: return static_cast<int64_t>(static_cast<const double*>(data)[i]);
    case DType::F16: return static_cast<int64_t>(toFloat(static_cast<const Float16*>(data)[i]));
    case DType::BF16: return static_cast<int64_t>(toFloat(static_cast<const BFloat16*>(data)[i]));
    default: break;
  }
  raise("no integer value for dtype ", dtypeName(dtype));
}

// The i-th element of a numeric tensor as double.
inline double elementAsDouble(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(data)[i];
    case DType::F64: return static_cast<const double*>(data)[i];
    case DType::F16: return toFloat(static_cast<const Float16*>(data)[i]);
    case DType::BF16: return toFloat(static_cast<const BFloat16*>(data)[i]);
    default: return static_cast<double>(elementAsInt(dtype, data, i));
  }
}

// A reference to a callable for a call that does not keep it. Unlike std::function it never
// allocates, so that kernels can hand lambdas with any captures to parallelFor on every run.
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& callable)  // NOLINT: converts implicitly, as std::function does
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// Work, in units of a cheap element-wise operation on one element, that a parallel region
// costs to start: about 1 us when the workers spin, 10 us when they sleep.
inline constexpr double kParallelRegionCost = 32768;

// Runs body(begin, end) over [0, count) split into contiguous ranges, on up to `max_threads`
// threads: as many as the work pays for. `cost_per_item` is the work of one item in units of
// a cheap element-wise operation on one element; each thread must get at least
// kParallelRegionCost of it, so small loops run on the calling thread alone. Ranges go to
// whichever thread is free (a few per thread), so a thread another process holds up delays
// only the range it is in; the calling thread always takes part.
void parallelFor(int64_t count, double cost_per_item, int max_threads,
                 FunctionRef<void(int64_t begin, int64_t end)> body);

// parallelFor whose body also gets the index of its range, in [0, maxParallelRanges(max_threads)):
// no two ranges with the same index run at once, so it can select a piece of per-range
// scratch memory.
void parallelForRanges(int64_t count, double cost_per_item, int max_threads,
                       FunctionRef<void(int64_t range, int64_t begin, int64_t end)> body);

// The most ranges parallelFor splits work into on `max_threads` threads.
int64_t maxParallelRanges(int max_threads);

// The threads parallelFor would use for this much work.
int threadsFor(int64_t count, double cost_per_item, int max_threads);

}  // namespace estuary::ge
