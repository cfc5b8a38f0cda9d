#pragma once
// Pieces the neural-network kernels (conv, matmul, pooling, normalization, softmax) share:
// element access for the half types, dtype dispatch, a oneDNN kernel that owns pre-packed
// weights, build-time reorders, and the small own GEMM used for the types oneDNN lacks.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#include "cpu/bfloat16.h"
#include "cpu/onednn_kernel.h"

namespace estuary::ge::cpu {

inline float toF32(float value) { return value; }
inline float toF32(_Float16 value) { return static_cast<float>(value); }
inline float toF32(BFloat16 value) { return toFloat(value); }

// The type an element is computed in: f32 for the 16-bit floats, itself otherwise.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, _Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
inline ComputeType<T> loadAs(const T& value) {
  if constexpr (std::is_same_v<T, _Float16> || std::is_same_v<T, BFloat16>) {
    return toF32(value);
  } else {
    return value;
  }
}

template <typename T, typename C>
inline T storeAs(C value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return toBFloat16(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// exp for f32 in a form the compiler vectorizes: exp(x) = 2^k exp(r) with k = round(x /
// ln 2) and |r| <= ln 2 / 2, exp(r) by its degree-6 Taylor polynomial (truncation error
// below 7e-8 relative: about 1 ulp). Inputs are clamped to where 2^k stays a normal float,
// so exp(-inf) is exp(-87) ~ 1.6e-38 rather than 0: callers that need an exact zero mask it.
inline float expF32(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float k = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(k, -0.693359375f, x);  // ln 2 split in two for an exact product
  r = std::fma(k, 2.12194440e-4f, r);
  float p = 1.f / 720.f;
  p = std::fma(p, r, 1.f / 120.f);
  p = std::fma(p, r, 1.f / 24.f);
  p = std::fma(p, r, 1.f / 6.f);
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.f);
  p = std::fma(p, r, 1.f);
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// Calls fn(T{}) with the C++ type of a floating-point dtype; returns false for others.
template <typename Fn>
bool dispatchFloat(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32: fn(float{}); return true;
    case DType::F16: fn(_Float16{}); return true;
    case DType::BF16: fn(BFloat16{}); return true;
    case DType::F64: fn(double{}); return true;
    default: return false;
  }
}

// An OnednnKernel that owns the constant data (pre-packed weights, folded biases) its
// Source::Constant arguments point at.
class PackedOnednnKernel final : public OnednnKernel {
 public:
  PackedOnednnKernel(std::string name, const dnnl::engine& engine, dnnl::primitive primitive,
                     size_t scratchpad_bytes, std::vector<OnednnArg> args,
                     std::vector<std::vector<std::byte>> constants)
      : OnednnKernel(std::move(name), engine, std::move(primitive), scratchpad_bytes, std::move(args)) {
    owned_ = std::move(constants);  // moving keeps each buffer's address
  }
};

// oneDNN sizes its work split to the OpenMP thread count when a primitive is created:
// a factory holds one of these so that primitives are made for the threads they run with.
class BuildThreads {
 public:
  explicit BuildThreads(int threads);
  ~BuildThreads();
  BuildThreads(const BuildThreads&) = delete;
  BuildThreads& operator=(const BuildThreads&) = delete;

 private:
  int saved_;
};

// The threads a kernel for the context's node should be built for: one when the node's work
// is below what starting a parallel region costs (about 1 us with spinning workers, 10 us
// with sleeping ones), else the build's. Work is counted in elements of a cheap element-wise
// op; a multiply-add of a matrix product or convolution counts 1/16 (vector FMAs on data in
// cache), so a 32x64x64 MatMul runs on one thread and a 128x768x768 one on all.
int threadsForWork(const KernelBuildContext& context);

// Builds a kernel with `factory` (under BuildThreads(threadsForWork)), computing in f32 where oneDNN
// cannot do better: f16 tensors (oneDNN 2.6 has no f16 primitives on this CPU, only
// reorders) and bf16 cases for which it offers only its reference implementation or that
// `factory` declines. The f32 kernel then runs on converted copies of the 16-bit inputs
// in scratch and its outputs are converted back.
using NnFactory = std::function<std::unique_ptr<Kernel>(const KernelBuildContext&)>;
std::unique_ptr<Kernel> buildPreferringF32(const KernelBuildContext& context, const NnFactory& factory);

// Reorders `data` (laid out as `from`) into a new buffer laid out as `to`, at build time;
// when `data` lies in a mapped model file, its pages are released (releaseMappedPages).
std::vector<std::byte> reorderConstant(const dnnl::engine& engine, const void* data, const dnnl::memory::desc& from,
                                       const dnnl::memory::desc& to);

// A plain desc with explicit dims (padded by the caller) and the tensor's dtype.
dnnl::memory::desc plainDesc(const dnnl::memory::dims& dims, DType dtype);

// A kernel with nothing to compute (an empty output) or that only zero-fills its outputs
// (a product over an empty axis).
std::unique_ptr<Kernel> makeZeroFillKernel(const KernelBuildContext& context, std::string name);

// The input offsets a sliding window reads (convolution, pooling): for kernel offset r
// and window position p, the flat offset within one channel of the input grid `in`, or
// -1 in the padding. Position p is at o * stride - pad_begin + k * dilation per axis.
// Stored kernel-major ([r][p], for im2col) or position-major ([p][r], for pooling).
struct WindowTable {
  std::vector<int64_t> offsets;
  int64_t kernel = 0, positions = 0;
};
WindowTable windowTable(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                        const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& dilations, const std::vector<int64_t>& pad_begin,
                        bool position_major);

// Integers multiply and add as unsigned: wrap-around instead of undefined overflow.
template <typename T, bool = std::is_integral_v<T>>
struct WrappingType {
  using type = T;
};
template <typename T>
struct WrappingType<T, true> {
  using type = std::make_unsigned_t<T>;
};

// C[b] = A[b] * B[b] for `batch` products of [M,K] x [K,N], C contiguous [batch, M, N];
// A and B are addressed by per-product offsets (broadcast batches repeat an offset) and
// row/column strides (transposed operands need no copy). Own code for the types oneDNN
// lacks: f64, and integers computed with wrap-around (as unsigned). An i-k-j loop whose
// inner loop runs over contiguous columns of B and C and vectorizes; rows of all
// products are split across threads.
template <typename T>
void ownBatchedGemm(int64_t batch, const int64_t* a_offsets, const int64_t* b_offsets, int64_t m, int64_t n,
                    int64_t k, const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t b_row, int64_t b_col,
                    T* c, int num_threads) {
  using Acc = typename WrappingType<T>::type;
  constexpr int64_t kBlockK = 256;
  const int64_t rows = batch * m;
#pragma omp parallel for num_threads(num_threads) if (rows * n * k > (1 << 16)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t product = r / m, i = r % m;
    const T* a_row_ptr = a + a_offsets[product] + i * a_row;
    const T* b_base = b + b_offsets[product];
    Acc* out = reinterpret_cast<Acc*>(c + r * n);
    for (int64_t j = 0; j < n; ++j) out[j] = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
      const int64_t k1 = std::min(k, k0 + kBlockK);
      for (int64_t p = k0; p < k1; ++p) {
        const Acc scale = static_cast<Acc>(a_row_ptr[p * a_col]);
        const T* b_row_ptr = b_base + p * b_row;
        if (b_col == 1) {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) out[j] += scale * static_cast<Acc>(b_row_ptr[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) out[j] += scale * static_cast<Acc>(b_row_ptr[j * b_col]);
        }
      }
    }
  }
}

}  // namespace estuary::ge::cpu
