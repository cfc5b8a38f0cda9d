// Reductions (ReduceSum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare) and
// ArgMax / ArgMin.
//
// At build time the reduced axes are folded into a [outer, reduced, inner] view: size-1
// axes are dropped and neighbouring axes of the same kind merged. With inner == 1 each
// output reduces one contiguous row (lane-parallel accumulators, so the compiler emits
// vector code); with inner > 1 a block of outputs accumulates row after row of the input
// (vectorized along inner). Reduced axes that are not neighbours (axes 0 and 2 of 3) are
// first moved innermost with a tiled permute into scratch memory.
#include <cmath>

#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// exp for f32 that vectorizes: Cody-Waite range reduction to |r| <= ln2/2, Cephes'
// degree-6 polynomial (about 1 ulp), and the power of two assembled in the exponent bits.
inline float vectorExp(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.0f ? 88.0f : x);
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

inline float expOf(float x) { return vectorExp(x); }
inline double expOf(double x) { return std::exp(x); }

// The accumulator of a reduction over storage type S: f32 for the 32- and 16-bit floats,
// f64 for f64; integers keep their type for Max/Min and widen to i64 otherwise.
template <typename S, ReduceOp Op>
using AccOf = std::conditional_t<std::is_floating_point_v<ComputeOf<S>>, ComputeOf<S>,
                                 std::conditional_t<Op == ReduceOp::Max || Op == ReduceOp::Min, S, int64_t>>;

template <ReduceOp Op, typename A>
constexpr A identityOf() {
  if constexpr (Op == ReduceOp::Prod) return A(1);
  if constexpr (Op == ReduceOp::Max) {
    return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  if constexpr (Op == ReduceOp::Min) {
    return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  }
  return A(0);
}

// What each element contributes (LogSumExp's exp is applied by its own second pass).
template <ReduceOp Op, typename A>
inline A mapOf(A x) {
  if constexpr (Op == ReduceOp::L1) return x < A(0) ? A(-x) : x;
  if constexpr (Op == ReduceOp::L2 || Op == ReduceOp::SumSquare) return x * x;
  return x;
}

template <ReduceOp Op, typename A>
inline A combineOf(A a, A b) {
  if constexpr (Op == ReduceOp::Max) return a > b ? a : b;
  if constexpr (Op == ReduceOp::Min) return a < b ? a : b;
  if constexpr (Op == ReduceOp::Prod) return a * b;
  return a + b;
}

template <ReduceOp Op, typename A>
inline A finishOf(A acc, int64_t count) {
  if constexpr (Op == ReduceOp::Mean) {
    if constexpr (std::is_integral_v<A>) return count ? acc / count : A(0);
    return acc / static_cast<A>(count);
  }
  if constexpr (Op == ReduceOp::L2) return static_cast<A>(std::sqrt(static_cast<double>(acc)));
  if constexpr (Op == ReduceOp::LogSum) return std::log(acc);
  return acc;
}

template <typename A, typename S>
inline A loadAcc(S value) {
  return static_cast<A>(loadAs(value));
}

template <typename S, typename A>
inline S storeAcc(A value) {
  if constexpr (std::is_integral_v<S>) return static_cast<S>(value);
  return storeAs<S>(static_cast<ComputeOf<S>>(value));
}

// Reduces one contiguous row with map `Map` and combine `Op`, in 2 x 64 bytes of
// independent lanes so the loop becomes vector code; `shift` is subtracted before exp
// when `Exp` (LogSumExp's second pass).
template <ReduceOp Op, bool Exp, typename A, typename S>
A reduceRow(const S* x, int64_t n, A shift = A(0)) {
  constexpr int kLanes = 128 / static_cast<int>(sizeof(A));
  A lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = identityOf<Op, A>();
  auto value = [&](S element) {
    A v = loadAcc<A>(element);
    if constexpr (Exp) return expOf(v - shift);
    return mapOf<Op, A>(v);
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = combineOf<Op, A>(lanes[l], value(x[i + l]));
  }
  A acc = identityOf<Op, A>();
  for (int l = 0; l < kLanes; ++l) acc = combineOf<Op, A>(acc, lanes[l]);
  for (; i < n; ++i) acc = combineOf<Op, A>(acc, value(x[i]));
  return acc;
}

// The [outer, reduced, inner] view of the input, and the permute that makes it when the
// reduced axes are scattered.
struct ReduceView {
  int64_t outer = 1, reduced = 1, inner = 1;
  bool permuted = false;
  PermuteCopy permute;
};

ReduceView reduceView(const TensorDesc& in, const std::vector<bool>& reduce) {
  ReduceView view;
  struct Group {
    int64_t size;
    bool reduced;
  };
  std::vector<Group> groups;
  for (int d = 0; d < in.rank; ++d) {
    if (in.dims[d] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduce[d]) {
      groups.back().size *= in.dims[d];
    } else {
      groups.push_back({in.dims[d], reduce[d]});
    }
  }
  int reduced_groups = 0;
  for (const Group& group : groups) reduced_groups += group.reduced;
  if (reduced_groups <= 1) {
    bool after = false;
    for (const Group& group : groups) {
      if (group.reduced) {
        view.reduced = group.size;
        after = true;
      } else {
        (after ? view.inner : view.outer) *= group.size;
      }
    }
    return view;
  }
  std::vector<int> perm;
  for (int d = 0; d < in.rank; ++d) {
    if (!reduce[d]) perm.push_back(d);
  }
  for (int d = 0; d < in.rank; ++d) {
    if (reduce[d]) perm.push_back(d);
  }
  for (int d = 0; d < in.rank; ++d) (reduce[d] ? view.reduced : view.outer) *= in.dims[d];
  view.permuted = true;
  view.permute = PermuteCopy(in.dimVector(), perm, dtypeSize(in.dtype));
  return view;
}

const char* opName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::L1: return "l1";
    case ReduceOp::L2: return "l2";
    case ReduceOp::LogSum: return "log_sum";
    case ReduceOp::LogSumExp: return "log_sum_exp";
    case ReduceOp::SumSquare: return "sum_square";
  }
  return "?";
}

template <typename S, ReduceOp Op>
class ReduceKernel final : public Kernel {
  using A = AccOf<S, Op>;
  // LogSumExp: a max pass, then a sum of shifted exps.
  static constexpr bool kLse = Op == ReduceOp::LogSumExp;
  static constexpr ReduceOp kFirst = kLse ? ReduceOp::Max : Op;
  // Outputs per block of a column reduction: their accumulators stay in registers/L1.
  static constexpr int64_t kBlock = 256 / static_cast<int64_t>(sizeof(A)) * 4;
  // Most partial results of one row split across threads.
  static constexpr int64_t kMaxPartials = 256;

 public:
  ReduceKernel(ReduceView view, size_t input_bytes) : view_(std::move(view)), input_bytes_(input_bytes) {}

  size_t scratchBytes() const override { return view_.permuted ? input_bytes_ : 0; }

  void run(const KernelArgs& args, KernelState*) const override {
    const S* x = static_cast<const S*>(args.inputs[0]);
    if (view_.permuted) {
      view_.permute.run(x, args.scratch, args.num_threads);
      x = static_cast<const S*>(args.scratch);
    }
    S* out = static_cast<S*>(args.outputs[0]);
    if (view_.inner == 1) {
      rows(x, out, args.num_threads);
    } else {
      columns(x, out, args.num_threads);
    }
  }

  std::string name() const override {
    return std::string("cpu:reduce_") + opName(Op) + (view_.permuted ? " permuted" : "") +
           (view_.inner == 1 ? " rows" : " columns");
  }

 private:
  A finishRow(const S* row, int64_t n, A first) const {
    if constexpr (kLse) {
      A sum = reduceRow<ReduceOp::Sum, true, A>(row, n, first);
      return std::log(sum) + first;
    }
    return finishOf<Op, A>(first, n);
  }

  void rows(const S* x, S* out, int threads) const {
    const int64_t outer = view_.outer, n = view_.reduced;
    const int64_t row_bytes = n * static_cast<int64_t>(sizeof(S));
    // Whole rows per thread, unless the work wants more threads than there are rows.
    if (outer >= threadsFor(outer, kCostPerByte * static_cast<double>(row_bytes), threads)) {
      parallelRanges(outer, row_bytes, threads, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const S* row = x + k * n;
          out[k] = storeAcc<S>(finishRow(row, n, reduceRow<kFirst, false, A>(row, n)));
        }
      });
      return;
    }
    // Few long rows: each row is cut into pieces reduced by different threads.
    const int64_t pieces = std::min<int64_t>(kMaxPartials, std::max<int64_t>(threads, n / 4096));
    for (int64_t k = 0; k < outer; ++k) {
      const S* row = x + k * n;
      A first = splitRow<kFirst, false>(row, n, pieces, threads, A(0));
      A result;
      if constexpr (kLse) {
        result = std::log(splitRow<ReduceOp::Sum, true>(row, n, pieces, threads, first)) + first;
      } else {
        result = finishOf<Op, A>(first, n);
      }
      out[k] = storeAcc<S>(result);
    }
  }

  template <ReduceOp R, bool Exp>
  A splitRow(const S* row, int64_t n, int64_t pieces, int threads, A shift) const {
    A partial[kMaxPartials];
    parallelRanges(pieces, n / pieces * static_cast<int64_t>(sizeof(S)), threads, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        int64_t from = n * p / pieces, to = n * (p + 1) / pieces;
        partial[p] = reduceRow<R, Exp, A>(row + from, to - from, shift);
      }
    });
    A acc = identityOf<R, A>();
    for (int64_t p = 0; p < pieces; ++p) acc = combineOf<R, A>(acc, partial[p]);
    return acc;
  }

  void columns(const S* x, S* out, int threads) const {
    const int64_t outer = view_.outer, n = view_.reduced, inner = view_.inner;
    const int64_t blocks = (inner + kBlock - 1) / kBlock;
    parallelRanges(outer * blocks, n * std::min(inner, kBlock) * static_cast<int64_t>(sizeof(S)), threads,
                   [&](int64_t begin, int64_t end) {
                     A acc[kBlock];
                     A shift[kLse ? kBlock : 1];
                     for (int64_t item = begin; item < end; ++item) {
                       const int64_t k = item / blocks, i0 = (item % blocks) * kBlock;
                       const int64_t width = std::min(kBlock, inner - i0);
                       const S* base = x + k * n * inner + i0;
                       S* dst = out + k * inner + i0;
                       for (int64_t b = 0; b < width; ++b) acc[b] = identityOf<kFirst, A>();
                       for (int64_t r = 0; r < n; ++r) {
                         const S* row = base + r * inner;
                         for (int64_t b = 0; b < width; ++b) {
                           acc[b] = combineOf<kFirst, A>(acc[b], mapOf<kFirst, A>(loadAcc<A>(row[b])));
                         }
                       }
                       if constexpr (kLse) {
                         for (int64_t b = 0; b < width; ++b) {
                           shift[b] = acc[b];
                           acc[b] = A(0);
                         }
                         for (int64_t r = 0; r < n; ++r) {
                           const S* row = base + r * inner;
                           for (int64_t b = 0; b < width; ++b) acc[b] += expOf(loadAcc<A>(row[b]) - shift[b]);
                         }
                         for (int64_t b = 0; b < width; ++b) dst[b] = storeAcc<S>(A(std::log(acc[b]) + shift[b]));
                       } else {
                         for (int64_t b = 0; b < width; ++b) dst[b] = storeAcc<S>(finishOf<Op, A>(acc[b], n));
                       }
                     }
                   });
  }

  ReduceView view_;
  size_t input_bytes_;
};

// noop_with_empty_axes with no axes: the output is the input.
class ReduceNoopKernel final : public Kernel {
 public:
  explicit ReduceNoopKernel(size_t bytes) : bytes_(bytes) {}
  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  void run(const KernelArgs& args, KernelState*) const override {
    copyBytes(args.outputs[0], args.inputs[0], bytes_, args.num_threads);
  }
  std::string name() const override { return "cpu:reduce_noop"; }

 private:
  size_t bytes_;
};

template <ReduceOp Op>
std::unique_ptr<Kernel> reduce(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  std::vector<int64_t> axes;
  if (context.hasInput(1)) {
    const Tensor* constant = context.constantInput(1);
    if (!constant) {
      context.fail("input 'axes' is computed at run time; the CPU backend needs the reduced axes when it builds the "
                   "plan (make them a constant)");
    }
    for (int64_t i = 0; i < constant->numElements(); ++i) axes.push_back(elementAsInt(constant->dtype(), constant->data(), i));
  }
  // noop_with_empty_axes reduces over no axis: each element alone, which leaves it as it is,
  // but L1, L2, SumSquare and LogSum still take |x|, |x|, x^2 and log x of it.
  const bool over_no_axis = axes.empty() && context.intAttr("noop_with_empty_axes") != 0;
  constexpr bool kAloneIsIdentity =
      Op != ReduceOp::L1 && Op != ReduceOp::L2 && Op != ReduceOp::SumSquare && Op != ReduceOp::LogSum;
  if (over_no_axis && kAloneIsIdentity) return std::make_unique<ReduceNoopKernel>(in.byteSize());
  std::vector<bool> reduce(in.rank, axes.empty() && !over_no_axis);
  for (int64_t axis : axes) reduce[normalizedAxis(context, axis, in.rank, "an axis in 'axes'")] = true;
  ReduceView view = reduceView(in, reduce);
  std::unique_ptr<Kernel> kernel;
  dispatch(AllDTypes{}, in.dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    if constexpr (Op == ReduceOp::LogSum || Op == ReduceOp::LogSumExp) {
      if constexpr (std::is_floating_point_v<ComputeOf<S>>) kernel = std::make_unique<ReduceKernel<S, Op>>(view, in.byteSize());
    } else {
      kernel = std::make_unique<ReduceKernel<S, Op>>(view, in.byteSize());
    }
  });
  return kernel;
}

// ---- ArgMax / ArgMin -----------------------------------------------------------------------

template <typename S, bool kMax>
class ArgReduceKernel final : public Kernel {
  using C = ComputeOf<S>;
  static constexpr int64_t kBlock = 256;

 public:
  ArgReduceKernel(int64_t outer, int64_t n, int64_t inner, bool last)
      : outer_(outer), n_(n), inner_(inner), last_(last) {}

  void run(const KernelArgs& args, KernelState*) const override {
    const S* x = static_cast<const S*>(args.inputs[0]);
    auto* out = static_cast<int64_t*>(args.outputs[0]);
    if (inner_ == 1) {
      parallelRanges(outer_, n_ * static_cast<int64_t>(sizeof(S)), args.num_threads, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) out[k] = rowArg(x + k * n_);
      });
      return;
    }
    const int64_t blocks = (inner_ + kBlock - 1) / kBlock;
    parallelRanges(outer_ * blocks, n_ * std::min(inner_, kBlock) * static_cast<int64_t>(sizeof(S)), args.num_threads,
                   [&](int64_t begin, int64_t end) {
                     C best[kBlock];
                     for (int64_t item = begin; item < end; ++item) {
                       const int64_t k = item / blocks, i0 = (item % blocks) * kBlock;
                       const int64_t width = std::min(kBlock, inner_ - i0);
                       const S* base = x + k * n_ * inner_ + i0;
                       int64_t* dst = out + k * inner_ + i0;
                       for (int64_t b = 0; b < width; ++b) {
                         best[b] = loadAs(base[b]);
                         dst[b] = 0;
                       }
                       for (int64_t r = 1; r < n_; ++r) {
                         const S* row = base + r * inner_;
                         for (int64_t b = 0; b < width; ++b) {
                           C v = loadAs(row[b]);
                           bool better = kMax ? (last_ ? v >= best[b] : v > best[b]) : (last_ ? v <= best[b] : v < best[b]);
                           best[b] = better ? v : best[b];
                           dst[b] = better ? r : dst[b];
                         }
                       }
                     }
                   });
  }
  std::string name() const override { return kMax ? "cpu:arg_max" : "cpu:arg_min"; }

 private:
  // Two vector passes: the extreme value, then where it first (or last) occurs.
  int64_t rowArg(const S* row) const {
    constexpr ReduceOp op = kMax ? ReduceOp::Max : ReduceOp::Min;
    using A = AccOf<S, op>;
    A extreme = reduceRow<op, false, A>(row, n_);
    if (last_) {
      for (int64_t i = n_ - 1; i >= 0; --i) {
        if (loadAcc<A>(row[i]) == extreme) return i;
      }
    } else {
      for (int64_t i = 0; i < n_; ++i) {
        if (loadAcc<A>(row[i]) == extreme) return i;
      }
    }
    return 0;  // only NaNs: the first element
  }

  int64_t outer_, n_, inner_;
  bool last_;
};

template <bool kMax>
std::unique_ptr<Kernel> argReduce(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  int axis = normalizedAxis(context, context.intAttr("axis"), in.rank, "attribute 'axis'");
  if (in.dims[axis] == 0) context.fail("cannot take the arg", kMax ? "max" : "min", " of an empty axis in ", in.str());
  bool last = context.intAttr("select_last_index") != 0;
  std::unique_ptr<Kernel> kernel;
  dispatch(AllDTypes{}, in.dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    kernel = std::make_unique<ArgReduceKernel<S, kMax>>(outerSize(in, axis), in.dims[axis], innerSize(in, axis), last);
  });
  return kernel;
}

}  // namespace

void registerReductionKernels(KernelRegistry& registry) {
  registry.add("ReduceSum", "", reduce<ReduceOp::Sum>);
  registry.add("ReduceMean", "", reduce<ReduceOp::Mean>);
  registry.add("ReduceMax", "", reduce<ReduceOp::Max>);
  registry.add("ReduceMin", "", reduce<ReduceOp::Min>);
  registry.add("ReduceProd", "", reduce<ReduceOp::Prod>);
  registry.add("ReduceL1", "", reduce<ReduceOp::L1>);
  registry.add("ReduceL2", "", reduce<ReduceOp::L2>);
  registry.add("ReduceLogSum", "", reduce<ReduceOp::LogSum>);
  registry.add("ReduceLogSumExp", "", reduce<ReduceOp::LogSumExp>);
  registry.add("ReduceSumSquare", "", reduce<ReduceOp::SumSquare>);
  registry.add("ArgMax", "", argReduce<true>);
  registry.add("ArgMin", "", argReduce<false>);
}

}  // namespace estuary::ge::cpu
