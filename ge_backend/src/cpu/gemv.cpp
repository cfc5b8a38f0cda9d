#include "cpu/gemv.h"

#include <algorithm>
#include <cstring>

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

// partial (R x n) += A[:, k0:k1] B[k0:k1, :] for B stored K x N: reads rows k0..k1 of B
// once, front to back, four at a time.
template <int R>
void accumulateRows(const float* a, int64_t k, const float* b, int64_t n, int64_t k0, int64_t k1, float* partial) {
  int64_t row = k0;
  for (; row + 4 <= k1; row += 4) {
    const float* w0 = b + row * n;
    const float* w1 = w0 + n;
    const float* w2 = w1 + n;
    const float* w3 = w2 + n;
    for (int r = 0; r < R; ++r) {
      const float* x = a + r * k + row;
      const float x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
      float* p = partial + r * n;
      int64_t j = 0;
      for (; j + kLanes <= n; j += kLanes) {
        storeVec(p + j, loadVec(p + j) + x0 * loadVec(w0 + j) + x1 * loadVec(w1 + j) + x2 * loadVec(w2 + j) +
                            x3 * loadVec(w3 + j));
      }
      for (; j < n; ++j) p[j] += x0 * w0[j] + x1 * w1[j] + x2 * w2[j] + x3 * w3[j];
    }
  }
  for (; row < k1; ++row) {
    const float* w = b + row * n;
    for (int r = 0; r < R; ++r) {
      const float x = a[r * k + row];
      float* p = partial + r * n;
      for (int64_t j = 0; j < n; ++j) p[j] += x * w[j];
    }
  }
}

// y[:, n0:n1] = A B[:, n0:n1] for B stored N x K: each output is a dot product of A's row
// with a row of storage, read once. C rows of storage are read side by side: one sequential
// stream keeps too few reads in flight to reach the memory's bandwidth. Returns the first
// column not done (fewer than C were left).
template <int R, int C>
int64_t dotColumns(const float* a, int64_t k, const float* bt, int64_t n, int64_t n0, int64_t n1, float* y) {
  int64_t col = n0;
  for (; col + C <= n1; col += C) {
    const float* w = bt + col * k;
    Vec acc[R][C] = {};
    int64_t i = 0;
    for (; i + kLanes <= k; i += kLanes) {
      for (int c = 0; c < C; ++c) {
        const Vec wc = loadVec(w + c * k + i);
        for (int r = 0; r < R; ++r) acc[r][c] += loadVec(a + r * k + i) * wc;
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        float sum = sumLanes(acc[r][c]);
        for (int64_t j = i; j < k; ++j) sum += a[r * k + j] * w[c * k + j];
        y[r * n + col + c] = sum;
      }
    }
  }
  return col;
}

template <int R>
void dotRows(const float* a, int64_t k, const float* bt, int64_t n, int64_t n0, int64_t n1, float* y) {
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
};

class GemvKernel final : public Kernel {
 public:
  GemvKernel(int rows, int64_t k, int64_t n, bool b_transposed, std::vector<GemvStep> steps, int max_threads)
      : rows_(rows), k_(k), n_(n), b_transposed_(b_transposed), steps_(std::move(steps)), max_threads_(max_threads) {
    per_shard_ = b_transposed ? unitsPerShard(n, k * 4, 1) : unitsPerShard(k, n * 4, kMinRowsPerShard);
    shards_ = ((b_transposed ? n : k) + per_shard_ - 1) / per_shard_;
  }

  size_t scratchBytes() const override {
    // Stored K x N, every shard but the first accumulates into a partial result of its own.
    return b_transposed_ ? 0 : static_cast<size_t>(shards_ - 1) * rows_ * n_ * sizeof(float);
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const int threads = threadsFor(k_ * n_, 1.0, std::min(args.num_threads, max_threads_));
    switch (rows_) {
      case 1: return runRows<1>(args, threads);
      case 2: return runRows<2>(args, threads);
      case 3: return runRows<3>(args, threads);
      default: return runRows<4>(args, threads);
    }
  }

  std::string name() const override { return b_transposed_ ? "cpu:gemv(transB)" : "cpu:gemv"; }

 private:
  template <int R>
  void runRows(const KernelArgs& args, int threads) const {
    const float* a = static_cast<const float*>(args.inputs[0]);
    const float* b = static_cast<const float*>(args.inputs[1]);
    float* y = static_cast<float*>(args.outputs[0]);
    if (b_transposed_) {
      runShards(shards_, threads - 1, [&](int64_t shard) {
        const int64_t n0 = shard * per_shard_, n1 = std::min(n_, n0 + per_shard_);
        dotRows<R>(a, k_, b, n_, n0, n1, y);
        applySteps(args, y, n0, n1);
      });
      return;
    }
    // The first shard sums into y, every other one into a partial result of its own; the
    // partials are added in shard order once all of B has been read.
    float* partials = static_cast<float*>(args.scratch);
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
    applySteps(args, y, 0, n_);
  }

  // The epilogue on columns [n0, n1) of every row of y.
  void applySteps(const KernelArgs& args, float* y, int64_t n0, int64_t n1) const {
    for (const GemvStep& step : steps_) {
      const float* operand = static_cast<const float*>(args.inputs[step.input]);
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
            } else {
              for (int64_t j = n0; j < n1; ++j) row[j] = step.alpha * row[j] + step.beta;
            }
            break;
        }
      }
    }
  }

  int rows_;
  int64_t k_, n_;
  bool b_transposed_;
  std::vector<GemvStep> steps_;
  int max_threads_;
  int64_t per_shard_;  // columns (stored N x K) or rows (K x N) of B per shard
  int64_t shards_;
};

// An epilogue operand of `desc` applied to a rows x n output of dims `out`: per column
// (n values, broadcast over rows) or of the output's own shape; nullopt otherwise.
std::optional<bool> perColumn(const TensorDesc& desc, const TensorDesc& out, int64_t rows, int64_t n) {
  if (desc.dtype != DType::F32 || desc.layout != Layout::Plain || desc.rank > out.rank) return std::nullopt;
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
    if (context.input(i).dtype != DType::F32 || context.input(i).layout != Layout::Plain) return nullptr;
  }
  if (out.dtype != DType::F32 || out.layout != Layout::Plain || out.numElements() != rows * n) return nullptr;
  std::vector<GemvStep> resolved;
  for (const EpilogueStep& step : steps) {
    GemvStep gemv{step.kind, step.activation, step.alpha, step.beta, step.input};
    if (step.kind == EpilogueStep::Kind::Activation) {
      if (step.activation != dnnl::algorithm::eltwise_relu && step.activation != dnnl::algorithm::eltwise_linear) {
        return nullptr;
      }
    } else if (step.kind != EpilogueStep::Kind::Scale) {
      if (!context.hasInput(step.input)) return nullptr;
      std::optional<bool> per_column = perColumn(context.input(step.input), out, rows, n);
      if (!per_column) return nullptr;
      gemv.per_column = *per_column;
    }
    resolved.push_back(gemv);
  }
  return std::make_unique<GemvKernel>(static_cast<int>(rows), k, n, b_transposed, std::move(resolved),
                                      std::max(1, context.maxThreads()));
}

}  // namespace estuary::ge::cpu
