#include "cpu/gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/bfloat16.h"
#include "cpu/vector_math.h"
#include "estuary/ge/kernel_helpers.h"
#include "worker_pool.h"

namespace estuary::ge::cpu {

namespace {

// One register of floats of the widest vector unit -march gives. (GCC keeps arrays of wider
// vectors than the unit has in memory, not in registers.)
#if defined(__AVX512F__)
constexpr int64_t kLanes = 16;
#elif defined(__AVX__)
constexpr int64_t kLanes = 8;
#else
constexpr int64_t kLanes = 4;
#endif
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));

inline Vec loadVec(const float* from) {
  Vec v;
  std::memcpy(&v, from, sizeof v);
  return v;
}
inline void storeVec(float* to, Vec v) { std::memcpy(to, &v, sizeof v); }

// Weights of bf16 or f16, which the kernel reads as they are stored.
template <typename W>
constexpr bool kSixteenBit = sizeof(W) == 2;

template <typename W>
inline float weightAt(const W* w, int64_t i) {
  if constexpr (kSixteenBit<W>) {
    return toFloat(w[i]);
  } else {
    return w[i];
  }
}
// One vector of weights widened lane by lane, for CPUs without the conversion instructions.
template <typename W>
inline Vec widenLanes(const W* from) {
  Vec v;
  for (int64_t i = 0; i < kLanes; ++i) v[i] = weightAt(from, i);
  return v;
}

// B's elements widened to f32 in registers. 16-bit weights are read as they are stored, half
// the bytes of f32, which is what a product bound by reading B gains from them (a decode
// step in bf16 or f16 on a CPU without 16-bit dot products, where oneDNN has only reference
// kernels for bf16 and none for f16).
inline Vec loadWeights(const float* from) { return loadVec(from); }
inline Vec loadWeights(const BFloat16* from) {
  static_assert(sizeof(BFloat16) == sizeof(uint16_t));
#if defined(__AVX512F__)
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  const __m512i widened = _mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16);
  return reinterpret_cast<Vec>(_mm512_castsi512_ps(widened));
#elif defined(__AVX2__)
  // One vpmovzxwd: GCC 12 splits __builtin_convertvector's 8 x u16 -> 8 x u32 into two
  // halves and an insert, which made the loop compute-bound at half the memory's rate.
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
  const __m256i widened = _mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16);
  return reinterpret_cast<Vec>(_mm256_castsi256_ps(widened));
#else
  return widenLanes(from);
#endif
}
inline Vec loadWeights(const Float16* from) {
  static_assert(sizeof(Float16) == sizeof(uint16_t));
#if defined(__AVX512F__)
  return reinterpret_cast<Vec>(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from))));
#elif defined(__F16C__) && defined(__AVX__)
  return reinterpret_cast<Vec>(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from))));
#else
  return widenLanes(from);
#endif
}

// Prefetches the Elements weights at `from`, in the block that a loop reads next: C columns
// stored N x K, or a pass's rows stored K x N, into L2 (in L1 they would wait for fill
// buffers the loop's own loads need). Such a block is read as interleaved runs of k or n
// values, and in 16 bits runs of a few KB are too short for the hardware prefetchers to reach
// the memory's rate: the LM head's 50257 x 768 bf16 weights came in at 9-11 GB/s without
// this and 12-15 with it, f32's rate (Zen 3). f32's runs are twice as long, and prefetching
// them measured no gain.
template <int64_t Elements, typename W>
inline void prefetchNext(const W* from) {
  if constexpr (kSixteenBit<W>) {
    constexpr int64_t bytes = Elements * static_cast<int64_t>(sizeof(W));
    const char* first = reinterpret_cast<const char*>(from);
    if constexpr (bytes >= 64) {
      for (int64_t byte = 0; byte < bytes; byte += 64) __builtin_prefetch(first + byte, 0, 2);
    } else if (reinterpret_cast<uintptr_t>(first) % 64 < bytes) {
      __builtin_prefetch(first, 0, 2);  // once per line: steps of `bytes` land once in each
    }
  }
}

inline float sumLanes(Vec v) {
  float sum = 0.f;
  for (int64_t i = 0; i < kLanes; ++i) sum += v[i];
  return sum;
}

// Bytes of B a shard reads at least: enough that taking one costs nothing next to it and
// that the hardware prefetchers get long runs. And at most kMaxShards shards, so that a
// thread that stalls holds up a small part. The split depends on the shape alone, never on
// the threads a run gets (they follow the machine's load, worker_pool.h's threadsToUse), so
// a result is the same bits whoever computes it.
constexpr int64_t kShardBytes = 64 * 1024;
constexpr int64_t kMaxShards = 64;
// Stored K x N, a shard's rows are at least this many: every shard's partial result is
// added once more, so the partials stay a small fraction of the bytes of B.
constexpr int64_t kMinRowsPerShard = 32;

int64_t unitsPerShard(int64_t units, int64_t bytes_per_unit, int64_t at_least) {
  const int64_t per_shard = std::max(at_least, kShardBytes / std::max<int64_t>(1, bytes_per_unit));
  return std::max(per_shard, (units + kMaxShards - 1) / kMaxShards);
}

// Rows of B stored K x N a pass over the partial sums reads: 4 of f32; 8 of 16 bits, the same
// bytes per partial sum loaded and stored, with the next pass's rows prefetched. One thread
// of Zen 3, GB/s, f32 / bf16 4 rows / bf16 8 rows / bf16 8 rows prefetched: 768 x 3072:
// 17-20 / 13-14 / 15-18 / 16.6; 3072 x 768: 15 / 9 / 10-11 / 14-15.
template <typename W>
constexpr int kRowsPerPass = kSixteenBit<W> ? 8 : 4;

// partial (R x n) += A[:, k0:k1] B[k0:k1, :] for B stored K x N: reads rows k0..k1 of B
// once, front to back, kPass at a time.
template <int R, typename W>
void accumulateRows(const float* a, int64_t k, const W* b, int64_t n, int64_t k0, int64_t k1, float* partial) {
  constexpr int kPass = kRowsPerPass<W>;
  int64_t row = k0;
  for (; row + kPass <= k1; row += kPass) {
    const W* w = b + row * n;
    for (int r = 0; r < R; ++r) {
      float x[kPass];
      for (int i = 0; i < kPass; ++i) x[i] = a[r * k + row + i];
      float* p = partial + r * n;
      int64_t j = 0;
      for (; j + kLanes <= n; j += kLanes) {
        if (r == 0 && row + 2 * kPass <= k1) prefetchNext<kPass * kLanes>(w + kPass * n + kPass * j);
        Vec sum = loadVec(p + j);
        for (int i = 0; i < kPass; ++i) sum += x[i] * loadWeights(w + i * n + j);
        storeVec(p + j, sum);
      }
      for (; j < n; ++j) {
        float sum = p[j];
        for (int i = 0; i < kPass; ++i) sum += x[i] * weightAt(w, i * n + j);
        p[j] = sum;
      }
    }
  }
  for (; row < k1; ++row) {
    const W* w = b + row * n;
    for (int r = 0; r < R; ++r) {
      const float x = a[r * k + row];
      float* p = partial + r * n;
      for (int64_t j = 0; j < n; ++j) p[j] += x * weightAt(w, j);
    }
  }
}

// y[:, n0:n1] = A B[:, n0:n1] for B stored N x K: each output is a dot product of A's row
// with a row of storage, read once. C rows of storage are read side by side: one sequential
// stream keeps too few reads in flight to reach the memory's bandwidth. Returns the first
// column not done (fewer than C were left).
template <int R, int C, typename W>
int64_t dotColumns(const float* a, int64_t k, const W* bt, int64_t n, int64_t n0, int64_t n1, float* y) {
  int64_t col = n0;
  for (; col + C <= n1; col += C) {
    const W* w = bt + col * k;
    Vec acc[R][C] = {};
    int64_t i = 0;
    for (; i + kLanes <= k; i += kLanes) {
      if (col + 2 * C <= n1) prefetchNext<C * kLanes>(w + C * k + C * i);
      for (int c = 0; c < C; ++c) {
        const Vec wc = loadWeights(w + c * k + i);
        for (int r = 0; r < R; ++r) acc[r][c] += loadVec(a + r * k + i) * wc;
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        float sum = sumLanes(acc[r][c]);
        for (int64_t j = i; j < k; ++j) sum += a[r * k + j] * weightAt(w, c * k + j);
        y[r * n + col + c] = sum;
      }
    }
  }
  return col;
}

template <int R, typename W>
void dotRows(const float* a, int64_t k, const W* bt, int64_t n, int64_t n0, int64_t n1, float* y) {
  constexpr int C = R == 1 ? 4 : R == 2 ? 2 : 1;  // R x C accumulators fit the registers
  const int64_t done = dotColumns<R, C>(a, k, bt, n, n0, n1, y);
  if constexpr (C > 1) dotColumns<R, 1>(a, k, bt, n, done, n1, y);
}

// One epilogue step resolved against the output: operands broadcast along rows (one value
// per column) or have the output's shape.
struct GemvStep {
  EpilogueStep::Kind kind;
  dnnl::algorithm activation = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
  size_t input = 0;
  bool per_column = false;  // the operand holds n values, one per column
  DType dtype = DType::F32;  // bf16 or f16: widened into the scratch memory on each run
  int64_t widened = 0;      // where, in floats from the scratch memory's start
};

// The dtypes of A and y. The kernel widens a 16-bit A and 16-bit step operands into its
// scratch memory first (a few rows: nothing next to B), computes y in f32 there and rounds
// it at the end, so that only B, the bytes that bound it, stays 16-bit.
struct GemvTypes {
  DType a = DType::F32, out = DType::F32;
};

template <typename W>
class GemvKernel final : public Kernel {
 public:
  GemvKernel(int rows, int64_t k, int64_t n, bool b_transposed, std::vector<GemvStep> steps, GemvTypes types,
             int max_threads)
      : rows_(rows), k_(k), n_(n), b_transposed_(b_transposed), steps_(std::move(steps)), types_(types),
        max_threads_(max_threads) {
    const int64_t bytes = static_cast<int64_t>(sizeof(W));
    per_shard_ = b_transposed ? unitsPerShard(n, k * bytes, 1) : unitsPerShard(k, n * bytes, kMinRowsPerShard);
    if (!b_transposed) per_shard_ = (per_shard_ + kRowsPerPass<W> - 1) / kRowsPerPass<W> * kRowsPerPass<W>;
    shards_ = ((b_transposed ? n : k) + per_shard_ - 1) / per_shard_;
    // Scratch, in floats: stored K x N, every shard but the first accumulates into a partial
    // result of its own; then A, y and the operands widened from 16 bits.
    int64_t floats = b_transposed ? 0 : (shards_ - 1) * rows_ * n_;
    a_widened_ = floats;
    if (types_.a != DType::F32) floats += rows_ * k_;
    y_widened_ = floats;
    if (types_.out != DType::F32) floats += rows_ * n_;
    for (GemvStep& step : steps_) {
      if (step.dtype == DType::F32) continue;
      step.widened = floats;
      floats += step.per_column ? n_ : rows_ * n_;
    }
    scratch_floats_ = floats;
  }

  size_t scratchBytes() const override { return static_cast<size_t>(scratch_floats_) * sizeof(float); }

  void run(const KernelArgs& args, KernelState*) const override {
    const int threads = threadsFor(k_ * n_, 1.0, std::min(args.num_threads, max_threads_));
    switch (rows_) {
      case 1: return runRows<1>(args, threads);
      case 2: return runRows<2>(args, threads);
      case 3: return runRows<3>(args, threads);
      default: return runRows<4>(args, threads);
    }
  }

  std::string name() const override {
    return std::string(b_transposed_ ? "cpu:gemv(transB)" : "cpu:gemv") +
           (std::is_same_v<W, BFloat16> ? " bf16 weights" : std::is_same_v<W, Float16> ? " f16 weights" : "");
  }

 private:
  template <int R>
  void runRows(const KernelArgs& args, int threads) const {
    auto* scratch = static_cast<float*>(args.scratch);
    const float* a = static_cast<const float*>(args.inputs[0]);
    if (types_.a != DType::F32) {
      widenToF32(types_.a, args.inputs[0], scratch + a_widened_, rows_ * k_);
      a = scratch + a_widened_;
    }
    for (const GemvStep& step : steps_) {
      if (step.dtype != DType::F32) {
        widenToF32(step.dtype, args.inputs[step.input], scratch + step.widened, step.per_column ? n_ : rows_ * n_);
      }
    }
    const W* b = static_cast<const W*>(args.inputs[1]);
    float* y = types_.out != DType::F32 ? scratch + y_widened_ : static_cast<float*>(args.outputs[0]);
    if (b_transposed_) {
      runShards(shards_, threads - 1, [&](int64_t shard) {
        const int64_t n0 = shard * per_shard_, n1 = std::min(n_, n0 + per_shard_);
        dotRows<R>(a, k_, b, n_, n0, n1, y);
        finish(args, y, n0, n1);
      });
      return;
    }
    // The first shard sums into y, every other one into a partial result of its own; the
    // partials are added in shard order once all of B has been read.
    float* partials = scratch;
    const int64_t result = static_cast<int64_t>(rows_) * n_;
    runShards(shards_, threads - 1, [&](int64_t shard) {
      float* partial = shard == 0 ? y : partials + (shard - 1) * result;
      std::fill(partial, partial + result, 0.f);
      const int64_t k0 = shard * per_shard_;
      accumulateRows<R>(a, k_, b, n_, k0, std::min(k_, k0 + per_shard_), partial);
    });
    for (int64_t shard = 1; shard < shards_; ++shard) {
      const float* partial = partials + (shard - 1) * result;
      for (int64_t i = 0; i < result; ++i) y[i] += partial[i];
    }
    finish(args, y, 0, n_);
  }

  // The epilogue on columns [n0, n1) of every row of y, then those columns rounded into a
  // 16-bit output.
  void finish(const KernelArgs& args, float* y, int64_t n0, int64_t n1) const {
    const auto* scratch = static_cast<const float*>(args.scratch);
    for (const GemvStep& step : steps_) {
      const float* operand =
          step.dtype != DType::F32 ? scratch + step.widened : static_cast<const float*>(args.inputs[step.input]);
      for (int r = 0; r < rows_; ++r) {
        float* row = y + r * n_;
        const float* values = step.per_column ? operand : operand ? operand + r * n_ : nullptr;
        switch (step.kind) {
          case EpilogueStep::Kind::Bias:
          case EpilogueStep::Kind::Residual:
            for (int64_t j = n0; j < n1; ++j) row[j] += values[j];
            break;
          case EpilogueStep::Kind::Product:
            for (int64_t j = n0; j < n1; ++j) row[j] *= values[j];
            break;
          case EpilogueStep::Kind::Scale:
            for (int64_t j = n0; j < n1; ++j) row[j] *= step.alpha;
            break;
          case EpilogueStep::Kind::Activation:
            if (step.activation == dnnl::algorithm::eltwise_relu) {
              for (int64_t j = n0; j < n1; ++j) row[j] = row[j] > 0.f ? row[j] : step.alpha * row[j];
            } else if (step.activation == dnnl::algorithm::eltwise_gelu_erf) {
              for (int64_t j = n0; j < n1; ++j) row[j] = vm::geluErf(row[j]);
            } else if (step.activation == dnnl::algorithm::eltwise_gelu_tanh) {
              for (int64_t j = n0; j < n1; ++j) row[j] = vm::geluTanh(row[j]);
            } else {
              for (int64_t j = n0; j < n1; ++j) row[j] = step.alpha * row[j] + step.beta;
            }
            break;
        }
      }
    }
    if (types_.out == DType::F32) return;
    for (int r = 0; r < rows_; ++r) {
      narrowFromF32(types_.out, y + r * n_ + n0, static_cast<uint16_t*>(args.outputs[0]) + r * n_ + n0, n1 - n0);
    }
  }

  int rows_;
  int64_t k_, n_;
  bool b_transposed_;
  std::vector<GemvStep> steps_;
  GemvTypes types_;
  int max_threads_;
  int64_t per_shard_;  // columns (stored N x K) or rows (K x N) of B per shard
  int64_t shards_;
  int64_t a_widened_ = 0, y_widened_ = 0, scratch_floats_ = 0;  // in floats
};

bool isGemvFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16; }

// An epilogue operand of `desc` applied to a rows x n output of dims `out`: per column
// (n values, broadcast over rows) or of the output's own shape; nullopt otherwise.
std::optional<bool> perColumn(const TensorDesc& desc, const TensorDesc& out, int64_t rows, int64_t n) {
  if (!isGemvFloat(desc.dtype) || desc.layout != Layout::Plain || desc.rank > out.rank) return std::nullopt;
  for (int i = 1; i <= desc.rank; ++i) {
    const int64_t d = desc.dims[desc.rank - i];
    if (d != 1 && d != out.dims[out.rank - i]) return std::nullopt;
  }
  if (desc.numElements() == rows * n) return rows == 1;
  if (desc.numElements() == n && desc.rank >= 1 && desc.dims[desc.rank - 1] == n) return true;
  return std::nullopt;
}

}  // namespace

std::unique_ptr<Kernel> makeGemvKernel(const KernelBuildContext& context, int64_t rows, int64_t k, int64_t n,
                                       bool b_transposed, const std::vector<EpilogueStep>& steps) {
  if (rows < 1 || rows > kGemvMaxRows || k < 1 || n < 1) return nullptr;
  const TensorDesc& out = context.output(0);
  for (size_t i : {size_t{0}, size_t{1}}) {
    if (!isGemvFloat(context.input(i).dtype) || context.input(i).layout != Layout::Plain) return nullptr;
  }
  if (!isGemvFloat(out.dtype) || out.layout != Layout::Plain || out.numElements() != rows * n) return nullptr;
  std::vector<GemvStep> resolved;
  for (const EpilogueStep& step : steps) {
    GemvStep gemv{step.kind, step.activation, step.alpha, step.beta, step.input};
    if (step.kind == EpilogueStep::Kind::Activation) {
      // Gelu comes with 16-bit products (fusesAccurately); here it is the own exact one.
      const dnnl::algorithm handled[] = {dnnl::algorithm::eltwise_relu, dnnl::algorithm::eltwise_linear,
                                         dnnl::algorithm::eltwise_gelu_erf, dnnl::algorithm::eltwise_gelu_tanh};
      if (std::find(std::begin(handled), std::end(handled), step.activation) == std::end(handled)) return nullptr;
    } else if (step.kind != EpilogueStep::Kind::Scale) {
      if (!context.hasInput(step.input)) return nullptr;
      std::optional<bool> per_column = perColumn(context.input(step.input), out, rows, n);
      if (!per_column) return nullptr;
      gemv.per_column = *per_column;
      gemv.dtype = context.input(step.input).dtype;
    }
    resolved.push_back(gemv);
  }
  const GemvTypes types{context.input(0).dtype, out.dtype};
  const int max_threads = std::max(1, context.maxThreads());
  if (context.input(1).dtype == DType::BF16) {
    return std::make_unique<GemvKernel<BFloat16>>(static_cast<int>(rows), k, n, b_transposed, std::move(resolved),
                                                  types, max_threads);
  }
  if (context.input(1).dtype == DType::F16) {
    return std::make_unique<GemvKernel<Float16>>(static_cast<int>(rows), k, n, b_transposed, std::move(resolved),
                                                 types, max_threads);
  }
  return std::make_unique<GemvKernel<float>>(static_cast<int>(rows), k, n, b_transposed, std::move(resolved), types,
                                             max_threads);
}

}  // namespace estuary::ge::cpu
