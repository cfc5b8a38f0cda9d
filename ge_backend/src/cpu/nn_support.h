#pragma once
// Pieces the neural-network kernels (conv, matmul, pooling, normalization, softmax) share:
// exp for f32, dispatch over the float dtypes, a oneDNN kernel that owns pre-packed
// weights, build-time reorders, and the own blocked GEMM used for the types oneDNN lacks.

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "cpu/bfloat16.h"
#include "cpu/onednn_kernel.h"
#include "estuary/ge/kernel_helpers.h"
#include "worker_pool.h"

namespace estuary::ge::cpu {

// exp for f32 in a form the compiler vectorizes: exp(x) = 2^k exp(r) with k = round(x /
// ln 2) and |r| <= ln 2 / 2, exp(r) by its degree-6 Taylor polynomial (truncation error
// below 7e-8 relative: about 1 ulp). Inputs are clamped to where 2^k stays a normal float,
// and below -87 (exp(-87) ~ 1.6e-38, near the least normal float) the result is 0, as with
// flush-to-zero: softmax weights of masked positions (a mask of -3.4e38) are then 0, not
// subnormal. Subnormal operands cost Intel cores a microcode assist per multiply-add: the
// attention products after such weights ran 9x slower (BERT-base, 128 tokens, a padding
// mask, Xeon with AMX: 73 against 8.3 ms for its 12 attention nodes, one thread).
inline float expF32(float x) {
  const bool underflows = x < -87.0f;
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
  return underflows ? 0.f : p * scale;
}

// An OnednnKernel that owns the constant data (pre-packed weights, folded biases) its
// Source::Constant arguments point at.
class PackedOnednnKernel final : public OnednnKernel {
 public:
  PackedOnednnKernel(std::string name, const dnnl::engine& engine, dnnl::primitive primitive,
                     size_t scratchpad_bytes, std::vector<OnednnArg> args,
                     OwnedConstants constants)
      : OnednnKernel(std::move(name), engine, std::move(primitive), scratchpad_bytes, std::move(args)) {
    owned_ = std::move(constants);
  }
};

// The threads a kernel for the context's node should be built for: one when the node's work
// is below what starting a parallel region costs (kParallelRegionCost), else the build's.
// Work is counted in elements of a cheap element-wise op; a multiply-add of a matrix product
// or convolution counts 1/16 (vector FMAs on data in cache), so a 32x64x64 MatMul runs on
// one thread and a 128x768x768 one on all.
int threadsForWork(const KernelBuildContext& context);

// Builds a kernel with `factory` (under ScopedOpenMpThreads(threadsForWork)), computing in
// f32 where oneDNN cannot do better: f16 tensors (oneDNN 2.6 has no f16 primitives on this
// CPU, only reorders) and bf16 cases for which it offers only its reference implementation or that
// `factory` declines. The f32 kernel then runs on converted copies of the 16-bit inputs
// in scratch and its outputs are converted back.
using NnFactory = std::function<std::unique_ptr<Kernel>(const KernelBuildContext&)>;
std::unique_ptr<Kernel> buildPreferringF32(const KernelBuildContext& context, const NnFactory& factory);

// `constant` (laid out as `from`) reordered into a buffer laid out as `to`, at build time,
// and once per model: the model's plans for other input shapes get the same buffer
// (KernelBuildContext::sharedAcrossPlans). When the constant lies in a mapped model file,
// its pages are released (releaseMappedPages).
std::shared_ptr<const ConstantBytes> packedConstant(const KernelBuildContext& context, const dnnl::engine& engine,
                                                    const Tensor& constant, const dnnl::memory::desc& from,
                                                    const dnnl::memory::desc& to);

// `weights` as pack() lays them out for one of Estuary's own kernels, made once per model as
// packedConstant's are, under `packing`, which names the layout pack() makes.
std::shared_ptr<const std::vector<float>> packedWeights(const KernelBuildContext& context, const Tensor& weights,
                                                        const char* packing,
                                                        const std::function<std::vector<float>()>& pack);

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

// The own GEMM below, in the style of BLIS/GotoBLAS: C is computed in MR x NR tiles held in
// registers by a micro-kernel the compiler vectorizes over NR (four 256-bit vectors per
// row, 24 accumulators for MR = 6), reading A and B packed into slivers it walks
// contiguously: A in blocks of MC x KC (a sliver of MR rows, 6 KiB of f64, stays in L1
// with a B sliver of KC x NR, 16 KiB), B in panels of KC x NC (512 KiB of f64, in L2).
template <typename T>
struct GemmBlocking {
  static constexpr int64_t kMr = 6, kNr = 128 / sizeof(T);
  static constexpr int64_t kKc = 128, kMc = 16 * kMr, kNc = 512;
};

// C[mr x nr] (+)= A sliver x B sliver over kc: `a` holds kc columns of MR rows, `b` kc rows of
// NR columns. Only the first `rows` x `cols` of the tile are written (the packs pad edges
// with zeros); `accumulate` adds to C instead of overwriting it.
template <typename T>
inline void gemmMicroKernel(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, int64_t rows, int64_t cols,
                            bool accumulate) {
  constexpr int64_t mr = GemmBlocking<T>::kMr, nr = GemmBlocking<T>::kNr;
  T tile[mr][nr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t i = 0; i < mr; ++i) {
      const T scale = a[p * mr + i];
#pragma omp simd
      for (int64_t j = 0; j < nr; ++j) tile[i][j] += scale * b[p * nr + j];
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    T* out = c + i * ldc;
    if (accumulate) {
      for (int64_t j = 0; j < cols; ++j) out[j] += tile[i][j];
    } else {
      for (int64_t j = 0; j < cols; ++j) out[j] = tile[i][j];
    }
  }
}

// Packs rows [0, rows) x columns [0, depth) of a strided matrix into slivers of `width`
// rows, each stored column after column (`width` values per column), zero-padded to whole
// slivers. For B, "rows" are its columns: packing B is packing B^T.
template <typename Acc, typename T>
void packSlivers(const T* source, int64_t row_stride, int64_t column_stride, int64_t rows, int64_t depth,
                 int64_t width, Acc* packed) {
  for (int64_t first = 0; first < rows; first += width) {
    const int64_t valid = std::min(width, rows - first);
    for (int64_t p = 0; p < depth; ++p) {
      Acc* out = packed + first * depth + p * width;
      const T* in = source + first * row_stride + p * column_stride;
      for (int64_t r = 0; r < valid; ++r) out[r] = static_cast<Acc>(loadAs(in[r * row_stride]));
      for (int64_t r = valid; r < width; ++r) out[r] = Acc(0);
    }
  }
}

inline int64_t roundUp(int64_t value, int64_t step) { return (value + step - 1) / step * step; }

// A left-hand operand packed once (convolution weights, at build): per block of kMc rows and
// kKc columns, the slivers of kMr rows that packSlivers makes, blocks in row-major order.
template <typename Acc>
class PackedGemmA {
  using Blocking = GemmBlocking<Acc>;

 public:
  template <typename T>
  PackedGemmA(const T* a, int64_t row_stride, int64_t column_stride, int64_t rows, int64_t depth)
      : rows_(rows), depth_(depth), padded_rows_(roundUp(rows, Blocking::kMr)),
        data_(static_cast<size_t>(padded_rows_ * depth)) {
    for (int64_t i0 = 0; i0 < rows; i0 += Blocking::kMc) {
      for (int64_t p0 = 0; p0 < depth; p0 += Blocking::kKc) {
        packSlivers(a + i0 * row_stride + p0 * column_stride, row_stride, column_stride,
                    std::min(Blocking::kMc, rows - i0), std::min(Blocking::kKc, depth - p0), Blocking::kMr,
                    data_.data() + offset(i0, p0));
      }
    }
  }
  int64_t rows() const { return rows_; }
  int64_t depth() const { return depth_; }
  // The block of rows from i0 (a multiple of kMc) and columns from p0 (a multiple of kKc).
  const Acc* block(int64_t i0, int64_t p0) const { return data_.data() + offset(i0, p0); }

 private:
  // Every block before row i0 holds kMc rows (a multiple of kMr) of all columns.
  int64_t offset(int64_t i0, int64_t p0) const { return i0 * depth_ + std::min(Blocking::kMc, padded_rows_ - i0) * p0; }

  int64_t rows_, depth_, padded_rows_;
  std::vector<Acc> data_;
};

// The blocked loop shared by ownBatchedGemm and ownGemm: `packA(product, i0, p0, rows,
// depth, buffer)` returns the packed block of A at (i0, p0), packing it into `buffer` (of
// `a_buffer` elements) unless A is pre-packed. The tiles of C (an MC x NC block of one
// product each) are split across threads, each packing its own operands, so that a single
// product with few rows (a convolution's output channels) still uses every thread.
template <typename Acc, typename T, typename PackA>
void blockedGemm(int64_t batch, const int64_t* b_offsets, int64_t m, int64_t n, int64_t k, size_t a_buffer,
                 const PackA& packA, const T* b, int64_t b_row, int64_t b_col, Acc* c, int num_threads) {
  using Blocking = GemmBlocking<Acc>;
  const int64_t row_blocks = (m + Blocking::kMc - 1) / Blocking::kMc;
  const int64_t column_blocks = (n + Blocking::kNc - 1) / Blocking::kNc;
  // A multiply-add counts 1/16 of a cheap element-wise operation (threadsForWork).
  const double cost = static_cast<double>(Blocking::kMc) * Blocking::kNc * std::max<int64_t>(k, 1) / 16;
  const auto b_buffer = static_cast<size_t>(std::min(Blocking::kNc, roundUp(n, Blocking::kNr)) *
                                            std::min(Blocking::kKc, k));
  ge::parallelFor(batch * row_blocks * column_blocks, cost, num_threads, [&](int64_t begin, int64_t end) {
    // Packing writes every element it reads: no need to zero the buffers.
    std::unique_ptr<Acc[]> packed_a(a_buffer ? new Acc[a_buffer] : nullptr), packed_b(new Acc[b_buffer]);
    for (int64_t tile = begin; tile < end; ++tile) {
      const int64_t product = tile / (row_blocks * column_blocks);
      const int64_t i0 = tile / column_blocks % row_blocks * Blocking::kMc;
      const int64_t j0 = tile % column_blocks * Blocking::kNc;
      const int64_t rows = std::min(Blocking::kMc, m - i0), columns = std::min(Blocking::kNc, n - j0);
      Acc* out = c + product * m * n + i0 * n + j0;
      if (k == 0) {
        for (int64_t i = 0; i < rows; ++i) std::fill(out + i * n, out + i * n + columns, Acc(0));
      }
      for (int64_t p0 = 0; p0 < k; p0 += Blocking::kKc) {
        const int64_t depth = std::min(Blocking::kKc, k - p0);
        const Acc* a_block = packA(product, i0, p0, rows, depth, packed_a.get());
        packSlivers(b + b_offsets[product] + p0 * b_row + j0 * b_col, b_col, b_row, columns, depth, Blocking::kNr,
                    packed_b.get());
        for (int64_t j = 0; j < columns; j += Blocking::kNr) {
          for (int64_t i = 0; i < rows; i += Blocking::kMr) {
            gemmMicroKernel(depth, a_block + i * depth, packed_b.get() + j * depth, out + i * n + j, n,
                            std::min(Blocking::kMr, rows - i), std::min(Blocking::kNr, columns - j), p0 > 0);
          }
        }
      }
    }
  });
}

// C[b] = A[b] * B[b] for `batch` products of [M,K] x [K,N], C contiguous [batch, M, N];
// A and B are addressed by per-product offsets (broadcast batches repeat an offset) and
// row/column strides (transposed operands need no copy). Own code for the types oneDNN
// lacks: f64, and integers computed with wrap-around (as unsigned). Blocked as
// GemmBlocking describes.
template <typename T>
void ownBatchedGemm(int64_t batch, const int64_t* a_offsets, const int64_t* b_offsets, int64_t m, int64_t n,
                    int64_t k, const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t b_row, int64_t b_col,
                    T* c, int num_threads) {
  using Acc = typename WrappingType<T>::type;
  using Blocking = GemmBlocking<Acc>;
  auto packA = [&](int64_t product, int64_t i0, int64_t p0, int64_t rows, int64_t depth, Acc* buffer) {
    packSlivers(a + a_offsets[product] + i0 * a_row + p0 * a_col, a_row, a_col, rows, depth, Blocking::kMr, buffer);
    return static_cast<const Acc*>(buffer);
  };
  const auto a_buffer = static_cast<size_t>(std::min(Blocking::kMc, roundUp(m, Blocking::kMr)) *
                                            std::min(Blocking::kKc, k));
  blockedGemm(batch, b_offsets, m, n, k, a_buffer, packA, b, b_row, b_col, reinterpret_cast<Acc*>(c), num_threads);
}

// C = A * B for a pre-packed A ([M, K]) and B [K, N] read through strides; C contiguous.
template <typename Acc>
void ownGemm(const PackedGemmA<Acc>& a, const Acc* b, int64_t b_row, int64_t b_col, int64_t n, Acc* c,
             int num_threads) {
  const int64_t zero = 0;
  auto packA = [&](int64_t, int64_t i0, int64_t p0, int64_t, int64_t, Acc*) { return a.block(i0, p0); };
  blockedGemm(1, &zero, a.rows(), n, a.depth(), 0, packA, b, b_row, b_col, c, num_threads);
}

}  // namespace estuary::ge::cpu
