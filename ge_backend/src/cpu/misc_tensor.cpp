// Ops that replicate, pad, mask, scan or select: Expand, Tile, Pad, Trilu, CumSum, TopK,
// NonZero.
#include <cmath>

#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// ---- Expand and Tile: strided copies with stride-0 axes -----------------------------------

class StridedCopyKernel final : public Kernel {
 public:
  StridedCopyKernel(std::string op, StridedCopy copy, size_t element_size)
      : op_(std::move(op)), copy_(copy), element_size_(element_size) {}
  void run(const KernelArgs& args, KernelState*) const override {
    dispatchBySize(element_size_, [&](auto element) {
      using E = decltype(element);
      copy_.run(static_cast<const E*>(args.inputs[0]), static_cast<E*>(args.outputs[0]), args.num_threads);
    });
  }
  std::string name() const override { return "cpu:" + op_ + " rank " + std::to_string(copy_.rank()); }

 private:
  std::string op_;
  StridedCopy copy_;
  size_t element_size_;
};

// Expand: every output axis reads the input axis it aligns with (from the right), or
// repeats it (stride 0) where the input has size 1 or no axis at all.
std::unique_ptr<Kernel> expand(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  const TensorDesc& out = context.output(0);
  std::array<int64_t, kMaxRank> in_strides = stridesOf(in), strides{};
  const int pad = out.rank - in.rank;
  if (pad < 0) context.fail("output ", out.str(), " has a lower rank than input ", in.str());
  for (int d = 0; d < out.rank; ++d) {
    int from = d - pad;
    if (from < 0) continue;
    if (in.dims[from] == out.dims[d]) {
      strides[d] = in_strides[from];
    } else if (in.dims[from] != 1) {
      context.fail("input ", in.str(), " does not broadcast to ", out.str());
    }
  }
  return std::make_unique<StridedCopyKernel>("expand", StridedCopy(out.dims.data(), strides.data(), out.rank),
                                             dtypeSize(in.dtype));
}

// Tile: output axis d of size repeats * n is viewed as two axes [repeats, n] with strides
// [0, stride of d], which makes tiling a broadcast of twice the rank.
std::unique_ptr<Kernel> tile(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  const TensorDesc& out = context.output(0);
  if (in.rank != out.rank) context.fail("output ", out.str(), " and input ", in.str(), " differ in rank");
  std::array<int64_t, kMaxRank> in_strides = stridesOf(in);
  std::array<int64_t, kMaxLoopRank> dims{}, strides{};
  for (int d = 0; d < in.rank; ++d) {
    int64_t repeats = in.dims[d] == 0 ? 0 : out.dims[d] / in.dims[d];
    if (repeats * in.dims[d] != out.dims[d]) context.fail("output ", out.str(), " is not a tiling of ", in.str());
    dims[2 * d] = repeats;
    dims[2 * d + 1] = in.dims[d];
    strides[2 * d + 1] = in_strides[d];
  }
  return std::make_unique<StridedCopyKernel>("tile", StridedCopy(dims.data(), strides.data(), 2 * in.rank),
                                             dtypeSize(in.dtype));
}

// ---- Pad -----------------------------------------------------------------------------------

enum class PadMode { Constant, Reflect, Edge, Wrap };

// The input coordinate output coordinate `i` (relative to the begin pad) reads, or -1 for
// the constant. n > 0 except in constant mode.
inline int64_t padSource(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return i < 0 ? 0 : n - 1;
    case PadMode::Wrap: return ((i % n) + n) % n;
    case PadMode::Reflect: {
      if (n == 1) return 0;
      int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

class PadKernel final : public Kernel {
 public:
  explicit PadKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        in_(context.input(0)),
        out_(context.output(0)),
        pads_(context, 1, "input 'pads'"),
        axes_(context, 3, "input 'axes'"),
        has_value_(context.hasInput(2)) {
    std::string mode = context.stringAttr("mode");
    if (mode == "constant") {
      mode_ = PadMode::Constant;
    } else if (mode == "reflect") {
      mode_ = PadMode::Reflect;
    } else if (mode == "edge") {
      mode_ = PadMode::Edge;
    } else if (mode == "wrap") {
      mode_ = PadMode::Wrap;
    } else {
      context.fail("attribute 'mode' is '", mode, "', expected constant, reflect, edge or wrap");
    }
    if (has_value_ && context.input(2).numElements() != 1) context.fail("input 'constant_value' must be one element");
    constant_ = pads_.isConstant() && (!axes_.present() || axes_.isConstant());
    if (constant_) {
      if (const char* error = resolve(pads_.constantValues(), axes_.present() ? axes_.constantValues() : nullptr, begin_)) {
        context.fail(error);
      }
    }
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const int64_t* begin = begin_.data();
    std::array<int64_t, kMaxRank> resolved{};
    if (!constant_) {
      std::array<int64_t, SmallIntOperand::kMaxValues> pads{}, axes{};
      pads_.read(args, pads.data());
      if (axes_.present()) axes_.read(args, axes.data());
      if (const char* error = resolve(pads.data(), axes_.present() ? axes.data() : nullptr, resolved)) {
        raise(node_, ": ", error);
      }
      begin = resolved.data();
    }
    dispatchBySize(dtypeSize(in_.dtype), [&](auto element) {
      using E = decltype(element);
      E value{};
      if (has_value_ && args.inputs[2]) std::memcpy(&value, args.inputs[2], sizeof(E));
      pad(static_cast<const E*>(args.inputs[0]), static_cast<E*>(args.outputs[0]), begin, value, args.num_threads);
    });
  }
  std::string name() const override { return "cpu:pad"; }

 private:
  // The begin pad of every axis; returns an error (static text) or nullptr.
  const char* resolve(const int64_t* pads, const int64_t* axes, std::array<int64_t, kMaxRank>& begin) const {
    const int count = axes ? axes_.count() : in_.rank;
    if (pads_.count() != 2 * count) return "input 'pads' must hold a begin and an end pad per axis";
    begin.fill(0);
    std::array<int64_t, kMaxRank> end{};
    for (int k = 0; k < count; ++k) {
      int64_t axis = axes ? axes[k] : k;
      if (axis < -in_.rank || axis >= in_.rank) return "an axis in 'axes' is out of range";
      if (axis < 0) axis += in_.rank;
      begin[axis] = pads[k];
      end[axis] = pads[k + count];
    }
    for (int d = 0; d < in_.rank; ++d) {
      if (in_.dims[d] + begin[d] + end[d] != out_.dims[d]) {
        return "the pads give a shape other than the output shape planned at build time";
      }
      if (mode_ != PadMode::Constant && in_.dims[d] == 0 && out_.dims[d] > 0) {
        return "reflect, edge and wrap padding need a non-empty input along every padded axis";
      }
    }
    return nullptr;
  }

  // Row by row of the output: the outer coordinates map to a source row (or the constant),
  // the innermost axis copies its middle part and maps its pads element by element.
  template <typename E>
  void pad(const E* in, E* out, const int64_t* begin, E value, int threads) const {
    const int rank = in_.rank;
    if (out_.numElements() == 0) return;
    if (rank == 0) {
      *out = *in;
      return;
    }
    const int last = rank - 1;
    const int64_t out_inner = out_.dims[last], in_inner = in_.dims[last], lead = begin[last];
    const int64_t rows = out_.numElements() / out_inner;
    const std::array<int64_t, kMaxRank> in_strides = stridesOf(in_);
    // The part of an output row that copies input elements unchanged.
    const int64_t copy_from = std::clamp<int64_t>(lead, 0, out_inner);
    const int64_t copy_to = std::clamp<int64_t>(lead + in_inner, 0, out_inner);
    parallelRanges(rows, out_inner * static_cast<int64_t>(sizeof(E)), threads, [&](int64_t first, int64_t end) {
      std::array<int64_t, kMaxRank> index{};
      int64_t rest = first;
      for (int d = last - 1; d >= 0; --d) {
        index[d] = rest % out_.dims[d];
        rest /= out_.dims[d];
      }
      for (int64_t row = first; row < end; ++row) {
        E* dst = out + row * out_inner;
        int64_t offset = 0;
        bool padding_row = false;
        for (int d = 0; d < last; ++d) {
          int64_t source = padSource(index[d] - begin[d], in_.dims[d], mode_);
          padding_row |= source < 0;
          offset += source * in_strides[d];
        }
        if (padding_row) {
          std::fill(dst, dst + out_inner, value);
        } else {
          const E* src = in + offset;
          for (int64_t j = 0; j < copy_from; ++j) {
            int64_t source = padSource(j - lead, in_inner, mode_);
            dst[j] = source < 0 ? value : src[source];
          }
          if (copy_to > copy_from) std::memcpy(dst + copy_from, src + (copy_from - lead), (copy_to - copy_from) * sizeof(E));
          for (int64_t j = std::max(copy_to, copy_from); j < out_inner; ++j) {
            int64_t source = padSource(j - lead, in_inner, mode_);
            dst[j] = source < 0 ? value : src[source];
          }
        }
        for (int d = last - 1; d >= 0; --d) {
          if (++index[d] < out_.dims[d]) break;
          index[d] = 0;
        }
      }
    });
  }

  std::string node_;
  TensorDesc in_, out_;
  SmallIntOperand pads_, axes_;
  bool has_value_;
  PadMode mode_ = PadMode::Constant;
  bool constant_ = false;
  std::array<int64_t, kMaxRank> begin_{};
};

// ---- Trilu -------------------------------------------------------------------------------

class TriluKernel final : public Kernel {
 public:
  explicit TriluKernel(const KernelBuildContext& context)
      : k_(context, 1, "input 'k'"), upper_(context.intAttr("upper") != 0), element_size_(dtypeSize(context.input(0).dtype)) {
    const TensorDesc& in = context.input(0);
    if (in.rank < 2) context.fail("input ", in.str(), " has rank below 2");
    if (k_.present() && k_.count() != 1) context.fail("input 'k' must hold one value");
    rows_ = in.dims[in.rank - 2];
    cols_ = in.dims[in.rank - 1];
    matrices_ = productOf(in.dims.data(), 0, in.rank - 2);
  }

  // Each element is read before the same element is written.
  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }

  void run(const KernelArgs& args, KernelState*) const override {
    int64_t k = 0;
    if (k_.present()) k_.read(args, &k);
    const bool in_place = args.inputs[0] == args.outputs[0];
    dispatchBySize(element_size_, [&](auto element) {
      using E = decltype(element);
      const E* in = static_cast<const E*>(args.inputs[0]);
      E* out = static_cast<E*>(args.outputs[0]);
      parallelRanges(matrices_ * rows_, cols_ * static_cast<int64_t>(sizeof(E)), args.num_threads,
                     [&](int64_t begin, int64_t end) {
                       for (int64_t row = begin; row < end; ++row) {
                         const int64_t i = row % rows_;
                         // Columns [keep_from, keep_to) survive.
                         int64_t keep_from = upper_ ? std::clamp<int64_t>(i + k, 0, cols_) : 0;
                         int64_t keep_to = upper_ ? cols_ : std::clamp<int64_t>(i + k + 1, 0, cols_);
                         E* dst = out + row * cols_;
                         const E* src = in + row * cols_;
                         std::fill(dst, dst + keep_from, E{});
                         if (!in_place && keep_to > keep_from) {
                           std::memcpy(dst + keep_from, src + keep_from, (keep_to - keep_from) * sizeof(E));
                         }
                         std::fill(dst + std::max(keep_from, keep_to), dst + cols_, E{});
                       }
                     });
    });
  }
  std::string name() const override { return "cpu:trilu"; }

 private:
  SmallIntOperand k_;
  bool upper_;
  size_t element_size_;
  int64_t rows_ = 0, cols_ = 0, matrices_ = 0;
};

// ---- CumSum --------------------------------------------------------------------------------

template <typename S>
class CumSumKernel final : public Kernel {
  using C = ComputeOf<S>;
  static constexpr int64_t kBlock = 256;

 public:
  explicit CumSumKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        in_(context.input(0)),
        axis_(context, 1, "input 'axis'"),
        exclusive_(context.intAttr("exclusive") != 0),
        reverse_(context.intAttr("reverse") != 0) {
    if (axis_.count() != 1) context.fail("input 'axis' must hold one value");
    if (axis_.isConstant()) normalizedAxis(context, axis_.constantValues()[0], in_.rank, "input 'axis'");
  }

  void run(const KernelArgs& args, KernelState*) const override {
    int64_t axis = 0;
    axis_.read(args, &axis);
    if (axis < -in_.rank || axis >= in_.rank) raise(node_, ": input 'axis' is ", axis, ", out of range for rank ", in_.rank);
    if (axis < 0) axis += in_.rank;
    const int64_t outer = outerSize(in_, static_cast<int>(axis)), n = in_.dims[axis];
    const int64_t inner = innerSize(in_, static_cast<int>(axis));
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* y = static_cast<S*>(args.outputs[0]);
    const int64_t step = reverse_ ? -inner : inner;
    const int64_t first = reverse_ ? (n - 1) * inner : 0;
    const int64_t blocks = (inner + kBlock - 1) / kBlock;
    // Each work item scans a block of up to kBlock neighbouring lines at once, so the
    // additions run across the lines (vector code) even though each line is sequential.
    parallelRanges(outer * blocks, n * std::min(inner, kBlock) * static_cast<int64_t>(sizeof(S)), args.num_threads,
                   [&](int64_t begin, int64_t end) {
                     C acc[kBlock];
                     for (int64_t item = begin; item < end; ++item) {
                       const int64_t o = item / blocks, i0 = (item % blocks) * kBlock;
                       const int64_t width = std::min(kBlock, inner - i0);
                       const S* src = x + o * n * inner + i0 + first;
                       S* dst = y + o * n * inner + i0 + first;
                       for (int64_t b = 0; b < width; ++b) acc[b] = C(0);
                       for (int64_t r = 0; r < n; ++r, src += step, dst += step) {
                         if (exclusive_) {
                           for (int64_t b = 0; b < width; ++b) {
                             C value = loadAs(src[b]);
                             dst[b] = storeAs<S>(acc[b]);
                             acc[b] += value;
                           }
                         } else {
                           for (int64_t b = 0; b < width; ++b) {
                             acc[b] += loadAs(src[b]);
                             dst[b] = storeAs<S>(acc[b]);
                           }
                         }
                       }
                     }
                   });
  }
  std::string name() const override { return "cpu:cumsum"; }

 private:
  std::string node_;
  TensorDesc in_;
  SmallIntOperand axis_;
  bool exclusive_, reverse_;
};

// ---- TopK ------------------------------------------------------------------------------------

template <typename S>
class TopKKernel final : public Kernel {
  using C = ComputeOf<S>;
  struct Entry {
    C value;
    int64_t index;
  };

 public:
  explicit TopKKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        k_operand_(context, 1, "input 'K'"),
        largest_(context.intAttr("largest") != 0),
        sorted_(context.intAttr("sorted") != 0),
        max_threads_(std::max(1, context.maxThreads())) {
    const TensorDesc& in = context.input(0);
    int axis = normalizedAxis(context, context.intAttr("axis"), in.rank, "attribute 'axis'");
    outer_ = outerSize(in, axis);
    n_ = in.dims[axis];
    inner_ = innerSize(in, axis);
    k_ = context.output(0).dims[axis];
    if (k_operand_.count() != 1) context.fail("input 'K' must hold one value");
    if (k_operand_.isConstant() && k_operand_.constantValues()[0] != k_) {
      context.fail("input 'K' is ", k_operand_.constantValues()[0], " but the outputs have ", k_);
    }
    if (k_ > n_) context.fail("K = ", k_, " exceeds the axis size ", n_);
  }

  size_t scratchBytes() const override {
    return static_cast<size_t>(ge::maxParallelRanges(max_threads_) * n_) * sizeof(Entry);
  }

  void run(const KernelArgs& args, KernelState*) const override {
    if (!k_operand_.isConstant()) {
      int64_t k = 0;
      k_operand_.read(args, &k);
      if (k != k_) raise(node_, ": input 'K' is ", k, " but the outputs were planned with ", k_);
    }
    if (k_ == 0) return;
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* values = static_cast<S*>(args.outputs[0]);
    auto* indices = static_cast<int64_t*>(args.outputs[1]);
    Entry* scratch = static_cast<Entry*>(args.scratch);
    const int threads = std::min(args.num_threads, max_threads_);
    // Selecting among a line's n values: a few operations per value.
    const double cost = 4.0 * static_cast<double>(n_);
    ge::parallelForRanges(outer_ * inner_, cost, threads, [&](int64_t range, int64_t begin, int64_t end) {
      Entry* entries = scratch + range * n_;
      for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / inner_, i = line % inner_;
        const S* src = x + o * n_ * inner_ + i;
        for (int64_t j = 0; j < n_; ++j) entries[j] = Entry{loadAs(src[j * inner_]), j};
        if (largest_) {
          select(entries, [](const Entry& a, const Entry& b) { return before(a, b, true); });
        } else {
          select(entries, [](const Entry& a, const Entry& b) { return before(a, b, false); });
        }
        S* value_dst = values + o * k_ * inner_ + i;
        int64_t* index_dst = indices + o * k_ * inner_ + i;
        for (int64_t j = 0; j < k_; ++j) {
          value_dst[j * inner_] = storeAs<S>(entries[j].value);
          index_dst[j * inner_] = entries[j].index;
        }
      }
    });
  }
  std::string name() const override { return "cpu:topk"; }

 private:
  // The order of the output: by value (NaN counts as the largest value, as in NumPy's
  // sort), ties by the lower index.
  static bool before(const Entry& a, const Entry& b, bool largest) {
    bool a_nan = isNaN(a.value), b_nan = isNaN(b.value);
    if (a_nan != b_nan) return largest ? a_nan : b_nan;
    if (!a_nan && a.value != b.value) return largest ? a.value > b.value : a.value < b.value;
    return a.index < b.index;
  }
  static bool isNaN(C value) {
    if constexpr (std::is_floating_point_v<C>) return std::isnan(value);
    return false;
  }

  // Moves the first K entries in output order to the front.
  template <typename Less>
  void select(Entry* entries, Less less) const {
    if (k_ < n_) std::nth_element(entries, entries + k_, entries + n_, less);
    if (sorted_) std::sort(entries, entries + k_, less);
  }

  std::string node_;
  SmallIntOperand k_operand_;
  bool largest_, sorted_;
  int max_threads_;
  int64_t outer_ = 0, n_ = 0, inner_ = 0, k_ = 0;
};

// ---- NonZero ---------------------------------------------------------------------------------

// NonZero's output shape depends on the values of its input (see data_dependent.h). With a
// constant input the build knows the count and folds the node. Otherwise the output is
// planned at [rank, elements] and a second output receives the count: the indices are
// written as [rank, count] at the start of the buffer. One pass counts, one writes.
template <typename S>
class NonZeroKernel final : public Kernel {
 public:
  explicit NonZeroKernel(const KernelBuildContext& context)
      : node_(context.node().describe()), in_(context.input(0)), planned_(context.output(0).dims[1]),
        runtime_count_(context.numOutputs() == 2) {}

  void run(const KernelArgs& args, KernelState*) const override {
    const S* x = static_cast<const S*>(args.inputs[0]);
    const int64_t total = in_.numElements();
    int64_t count = 0;
#pragma omp simd reduction(+ : count)
    for (int64_t i = 0; i < total; ++i) count += loadAs(x[i]) != ComputeOf<S>(0);
    if (runtime_count_) {
      *static_cast<int64_t*>(args.outputs[1]) = count;
    } else if (count != planned_) {
      raise(node_, ": the input has ", count, " non-zero elements, the output was planned for ", planned_);
    }
    auto* out = static_cast<int64_t*>(args.outputs[0]);
    const std::array<int64_t, kMaxRank> strides = stridesOf(in_);
    int64_t column = 0;
    for (int64_t i = 0; i < total; ++i) {
      if (loadAs(x[i]) == ComputeOf<S>(0)) continue;
      for (int d = 0; d < in_.rank; ++d) out[d * count + column] = (i / strides[d]) % in_.dims[d];
      ++column;
    }
  }
  std::string name() const override { return runtime_count_ ? "cpu:nonzero (runtime count)" : "cpu:nonzero"; }

 private:
  std::string node_;
  TensorDesc in_;
  int64_t planned_;
  bool runtime_count_;
};

std::unique_ptr<Kernel> nonZero(const KernelBuildContext& context) {
  const TensorDesc& out = context.output(0);
  if (out.rank != 2 || out.dims[0] != context.input(0).rank) {
    context.fail("output ", out.str(), " is not [rank, count] for input ", context.input(0).str());
  }
  if (context.numOutputs() == 2 && out.dims[1] != context.input(0).numElements()) {
    context.fail("output ", out.str(), " with a runtime count must be planned for every element of ",
                 context.input(0).str());
  }
  std::unique_ptr<Kernel> kernel;
  return dispatch(AllDTypes{}, context.input(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
    return std::make_unique<NonZeroKernel<StorageOf<decltype(type)>>>(context);
  });
}

template <template <typename> class K>
KernelFactory typedFactory() {
  return [](const KernelBuildContext& context) {
    return dispatch(AllDTypes{}, context.input(0).dtype, [&](auto type) -> std::unique_ptr<Kernel> {
      return std::make_unique<K<StorageOf<decltype(type)>>>(context);
    });
  };
}

}  // namespace

void registerMiscTensorKernels(KernelRegistry& registry) {
  registry.add("Expand", "", expand);
  registry.add("Tile", "", tile);
  registry.add("Pad", "", [](const KernelBuildContext& context) { return std::make_unique<PadKernel>(context); });
  registry.add("Trilu", "", [](const KernelBuildContext& context) { return std::make_unique<TriluKernel>(context); });
  registry.add("CumSum", "", typedFactory<CumSumKernel>());
  registry.add("TopK", "", typedFactory<TopKKernel>());
  registry.add("NonZero", "", nonZero);
}

}  // namespace estuary::ge::cpu
