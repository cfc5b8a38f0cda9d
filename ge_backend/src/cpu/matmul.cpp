// Matrix products: MatMul (numpy batch broadcasting), Gemm and Einsum. f32/bf16/f16 run
// on oneDNN's matmul primitive (brgemm/AMX on this CPU), with constant right-hand operands
// pre-packed into the primitive's preferred format at build time; f64 and the integer
// types run on an own GEMM.
#include <map>
#include <set>

#include "cpu/column_blocks.h"
#include "cpu/gemv.h"
#include "cpu/nn_kernels.h"
#include "cpu/nn_support.h"
#include "cpu/post_ops.h"
#include "cpu/strided.h"

namespace estuary::ge::cpu {

namespace {

bool onednnFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16; }

// Row-major strides of `dims`.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// oneDNN's implementations of `pd`'s problem, each a primitive_desc of its own, best first
// by the rules below; ref, its slow reference code, only when it is the only one.
//
// For f32, oneDNN 2.6's first choice is brgemm, which keeps f32 weights plain (format `any`
// resolves to abc, so nothing is pre-packed) and copies B's blocks on every run; its
// BLAS-style gemm:jit is faster on transformer shapes: BERT-base's FFN-in product
// (128x768 by 768x3072) takes 11.3 ms on brgemm and 5.4 ms on gemm:jit, one thread. So
// gemm:jit comes first, and a build that tunes measures the rest.
std::vector<dnnl::matmul::primitive_desc> matmulImplementations(const dnnl::matmul::primitive_desc& pd) {
  std::vector<dnnl::matmul::primitive_desc> implementations;
  // next_impl() moves the handle itself (copies share it): each one kept is a clone.
  dnnl::matmul::primitive_desc walker = pd;
  auto isReference = [](const auto& candidate) { return implName(candidate).rfind("ref", 0) == 0; };
  do {
    dnnl_primitive_desc_t clone = nullptr;
    dnnl::error::wrap_c_api(dnnl_primitive_desc_clone(&clone, walker.get()), "could not clone a primitive desc");
    implementations.emplace_back(clone);
  } while (walker.next_impl());
  if (!std::all_of(implementations.begin(), implementations.end(), isReference)) {
    implementations.erase(std::remove_if(implementations.begin(), implementations.end(), isReference),
                          implementations.end());
  }
  std::stable_partition(implementations.begin(), implementations.end(), [](const auto& candidate) {
    return candidate.src_desc().data_type() == dnnl::memory::data_type::f32 &&
           implName(candidate).rfind("gemm:jit", 0) == 0;
  });
  return implementations;
}

// Plain row-major weights whose rows are a multiple of 1 KiB apart, as a layout with each row
// padded by a cache line; nullopt for others. A BLAS kernel that reads B down its columns
// touches addresses a row apart; at multiples of 1 KiB they fall in at most 4 of the 64 sets
// of a 32 KiB 8-way L1 (at multiples of 4 KiB, in one), and evict each other. oneDNN 2.6's
// gemm:jit takes 21.9 ms for 128x768 by 768x3072 with B's rows 12 KiB apart and 17.3 ms with
// them 12 KiB + 64 bytes apart (1 thread, Zen 1; 11.2 against 9.4 ms at 2 threads). On Zen 3,
// padding BERT's 768 x 3072 weights made the whole encoder 1.25-1.33x faster; padding its
// other products too (rows 3 and 9 KiB apart) took them from 300 to 264 ms a run at 1 thread
// (3072 x 768: 8.6 -> 7.4 ms; 768 x 2304: 6.1 -> 5.5; 768 x 768: 2.05 -> 1.85). The padded copy
// is made once, at build (the mapped original's pages are released), and the rules prefer
// it; the tuner measures it beside the plain one.
//
// f32 only: 16-bit weights go to brgemm, which packs them into its own blocked layout.
std::optional<dnnl::memory::desc> paddedRows(const dnnl::memory::desc& weights) {
  constexpr int64_t kConflictingStride = 1024, kLineBytes = 64;
  if (weights.data_type() != dnnl::memory::data_type::f32) return std::nullopt;
  const dnnl::memory::dims dims = weights.dims();
  const int64_t element = static_cast<int64_t>(dnnl::memory::data_type_size(weights.data_type()));
  if (dims.size() < 2 || weights != dnnl::memory::desc(dims, weights.data_type(), stridesOf(dims))) return std::nullopt;
  const int64_t row = dims.back() * element;
  if (row % kConflictingStride != 0) return std::nullopt;
  dnnl::memory::dims strides(dims.size());
  strides.back() = 1;
  strides[dims.size() - 2] = (row + kLineBytes) / element;
  for (size_t d = dims.size() - 2; d-- > 0;) strides[d] = strides[d + 1] * dims[d + 1];
  return dnnl::memory::desc(dims, weights.data_type(), strides);
}

// A oneDNN matmul of src x weights -> dst with optional bias and post-ops, one tactic per
// implementation oneDNN has for it (none when it has none). `weights` comes from input 1
// unless `constant_weights` is given: then it is pre-packed if an implementation wants
// another format than `weights`, and the implementations for B with padded rows
// (paddedRows) are tactics too, ahead of the others.
std::vector<KernelTactic> onednnMatmulTactics(const KernelBuildContext& context, const std::string& label,
                                              const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                              const dnnl::memory::desc& dst, const Tensor* constant_weights,
                                              std::optional<OnednnArg> bias, const dnnl::post_ops& post_ops,
                                              std::vector<OnednnArg> extra_args, float output_scale = 1.f) {
  const dnnl::engine& engine = cpuOf(context).engine();
  dnnl::primitive_attr attr = scratchpadAttr();
  attr.set_post_ops(post_ops);
  if (output_scale != 1.f) attr.set_output_scales(0, {output_scale});
  std::vector<dnnl::memory::desc> weights_requests{
      constant_weights ? dnnl::memory::desc(weights.dims(), weights.data_type(), dnnl::memory::format_tag::any)
                       : weights};
  if (constant_weights) {
    if (std::optional<dnnl::memory::desc> padded = paddedRows(weights)) {
      weights_requests.insert(weights_requests.begin(), *padded);
    }
  }
  std::vector<dnnl::matmul::primitive_desc> implementations;
  for (const dnnl::memory::desc& weights_request : weights_requests) {
    try {
      dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(src, weights_request, bias->desc, dst)
                                     : dnnl::matmul::desc(src, weights_request, dst);
      for (dnnl::matmul::primitive_desc& pd : matmulImplementations(dnnl::matmul::primitive_desc(desc, attr, engine))) {
        implementations.push_back(std::move(pd));
      }
    } catch (const dnnl::error&) {
      if (implementations.empty()) return {};
    }
  }
  // Each implementation in blocks of columns on Estuary's threads (column_blocks.h), when the
  // product is worth several threads, and as one primitive on oneDNN's.
  const int blocks = threadsForWork(context);
  std::vector<KernelTactic> tactics;
  for (const dnnl::matmul::primitive_desc& pd : implementations) {
    const std::string impl =
        implName(pd) + (pd.weights_desc().get_size() > weights.get_size() ? " (B rows padded)" : "");
    const std::string tactic = "onednn:" + impl;
    auto make = [&context, label, src, weights, dst, constant_weights, bias, extra_args, engine, pd, blocks,
                 impl](bool in_blocks) -> std::unique_ptr<Kernel> {
      std::vector<OnednnArg> args{{DNNL_ARG_SRC, OnednnArg::Source::Input, 0, src},
                                  {DNNL_ARG_DST, OnednnArg::Source::Output, 0, dst},
                                  {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}};
      OwnedConstants owned;
      // A constant already in the primitive's format (gemm:jit takes f32 weights plain) is read
      // where it is stored: a copy would keep the weights resident twice.
      if (constant_weights && pd.weights_desc() != weights) {
        if (!context.probing()) {
          owned.push_back(packedConstant(context, engine, *constant_weights, weights, pd.weights_desc()));
        }
        args.push_back({DNNL_ARG_WEIGHTS, OnednnArg::Source::Constant, 1, pd.weights_desc(),
                        owned.empty() ? nullptr : owned.back()->data()});
      } else {
        args.push_back({DNNL_ARG_WEIGHTS, OnednnArg::Source::Input, 1, weights});
      }
      if (bias) args.push_back(*bias);
      for (const OnednnArg& arg : extra_args) args.push_back(arg);
      const std::string name = "onednn:" + label + " " + impl;
      if (in_blocks) {
        return makeColumnBlockMatmul(engine, name, pd, args, std::move(owned), blocks);
      }
      return std::make_unique<PackedOnednnKernel>(name, engine, dnnl::matmul(pd), pd.scratchpad_desc().get_size(),
                                                  std::move(args), std::move(owned));
    };
    if (blocks > 1) tactics.push_back({tactic + " in column blocks", [make] { return make(true); }});
    tactics.push_back({tactic, [make] { return make(false); }});
  }
  return tactics;
}

// A leading Bias step becomes the primitive's own bias argument (broadcast along the last
// axis of a rank-`rank` destination); the rest stay post-ops.
std::optional<OnednnArg> takeLeadingBias(const KernelBuildContext& context, std::vector<EpilogueStep>& steps,
                                         int64_t n, size_t rank) {
  if (steps.empty() || steps.front().kind != EpilogueStep::Kind::Bias) return std::nullopt;
  size_t input = steps.front().input;
  if (!context.hasInput(input) || context.input(input).numElements() != n ||
      !onednnFloat(context.input(input).dtype)) {
    return std::nullopt;
  }
  dnnl::memory::dims dims(rank, 1);
  dims.back() = n;
  steps.erase(steps.begin());
  return OnednnArg{DNNL_ARG_BIAS, OnednnArg::Source::Input, input, plainDesc(dims, context.input(input).dtype)};
}

// ---------------------------------------------------------------------------- MatMul

// MatMul's operands as numpy sees them: 1-D operands promoted, batch dims left-padded
// to a common rank.
struct MatMulShape {
  std::vector<int64_t> a, b, out;  // rank r each: [batch..., M, K], [batch..., K, N], [batch..., M, N]
  int64_t m = 0, n = 0, k = 0;
};

MatMulShape matmulShape(const TensorDesc& a_desc, const TensorDesc& b_desc) {
  std::vector<int64_t> a = a_desc.dimVector(), b = b_desc.dimVector();
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  MatMulShape shape;
  shape.m = a[rank - 2];
  shape.k = a[rank - 1];
  shape.n = b[rank - 1];
  shape.out.resize(rank);
  for (size_t d = 0; d + 2 < rank; ++d) shape.out[d] = std::max(a[d], b[d]) == 1 ? 1 : (a[d] == 1 ? b[d] : a[d]);
  shape.out[rank - 2] = shape.m;
  shape.out[rank - 1] = shape.n;
  shape.a = std::move(a);
  shape.b = std::move(b);
  return shape;
}

// A product whose B has no batch of its own as one 2-D product: A's batch dims become rows.
MatMulShape batchAsRows(const MatMulShape& shape) {
  MatMulShape folded = shape;
  const int64_t rows = productOf(shape.a.data(), 0, static_cast<int>(shape.a.size()) - 1);
  folded.a = {rows, shape.k};
  folded.b = {shape.k, shape.n};
  folded.out = {rows, shape.n};
  folded.m = rows;
  return folded;
}

// Offsets of each product's A and B in a broadcast batch.
void batchOffsets(const MatMulShape& shape, std::vector<int64_t>& a_offsets, std::vector<int64_t>& b_offsets) {
  size_t batch_rank = shape.out.size() - 2;
  std::vector<int64_t> a_dims(shape.a.begin(), shape.a.end() - 2), b_dims(shape.b.begin(), shape.b.end() - 2);
  std::vector<int64_t> a_strides = stridesOf(a_dims), b_strides = stridesOf(b_dims);
  int64_t batch = 1;
  for (size_t d = 0; d < batch_rank; ++d) batch *= shape.out[d];
  a_offsets.resize(batch);
  b_offsets.resize(batch);
  for (int64_t index = 0; index < batch; ++index) {
    int64_t rest = index, a_offset = 0, b_offset = 0;
    for (size_t d = batch_rank; d-- > 0;) {
      int64_t coordinate = rest % shape.out[d];
      rest /= shape.out[d];
      if (a_dims[d] != 1) a_offset += coordinate * a_strides[d];
      if (b_dims[d] != 1) b_offset += coordinate * b_strides[d];
    }
    a_offsets[index] = a_offset * shape.m * shape.k;
    b_offsets[index] = b_offset * shape.k * shape.n;
  }
}

template <typename T>
class OwnMatMulKernel final : public Kernel {
 public:
  OwnMatMulKernel(const MatMulShape& shape, bool trans_b) : shape_(shape), trans_b_(trans_b) {
    batchOffsets(shape, a_offsets_, b_offsets_);
  }
  void run(const KernelArgs& args, KernelState*) const override {
    ownBatchedGemm<T>(static_cast<int64_t>(a_offsets_.size()), a_offsets_.data(), b_offsets_.data(), shape_.m,
                      shape_.n, shape_.k, static_cast<const T*>(args.inputs[0]), shape_.k, 1,
                      static_cast<const T*>(args.inputs[1]), trans_b_ ? 1 : shape_.n, trans_b_ ? shape_.k : 1,
                      static_cast<T*>(args.outputs[0]), args.num_threads);
  }
  std::string name() const override { return "cpu:matmul"; }

 private:
  MatMulShape shape_;
  bool trans_b_;
  std::vector<int64_t> a_offsets_, b_offsets_;
};

std::unique_ptr<Kernel> ownMatMul(DType dtype, const MatMulShape& shape, bool trans_b) {
  switch (dtype) {
    case DType::F64: return std::make_unique<OwnMatMulKernel<double>>(shape, trans_b);
    case DType::I32: return std::make_unique<OwnMatMulKernel<int32_t>>(shape, trans_b);
    case DType::I64: return std::make_unique<OwnMatMulKernel<int64_t>>(shape, trans_b);
    default: return nullptr;
  }
}

// ---------------------------------------------------------------------------- Gemm

// Y = alpha * op(A) * op(B) + beta * C, own code: the product, then the C term with C's
// broadcast expressed by strides.
template <typename T>
class OwnGemmKernel final : public Kernel {
 public:
  OwnGemmKernel(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, double alpha, double beta,
                std::optional<TensorDesc> c)
      : m_(m), n_(n), k_(k), trans_a_(trans_a), trans_b_(trans_b), alpha_(alpha), beta_(beta) {
    if (c && beta != 0.0) {
      has_c_ = true;
      int64_t rows = c->rank == 2 ? c->dims[0] : 1;
      int64_t cols = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
      c_row_stride_ = rows == 1 ? 0 : cols;
      c_col_stride_ = cols == 1 ? 0 : 1;
    }
  }
  void run(const KernelArgs& args, KernelState*) const override {
    const T* a = static_cast<const T*>(args.inputs[0]);
    const T* b = static_cast<const T*>(args.inputs[1]);
    T* y = static_cast<T*>(args.outputs[0]);
    const int64_t zero = 0;
    ownBatchedGemm<T>(1, &zero, &zero, m_, n_, k_, a, trans_a_ ? 1 : k_, trans_a_ ? m_ : 1, b, trans_b_ ? 1 : n_,
                      trans_b_ ? k_ : 1, y, args.num_threads);
    if (alpha_ == 1.0 && !has_c_) return;
    const T* c = has_c_ ? static_cast<const T*>(args.inputs[2]) : nullptr;
    // Integers with a fractional alpha or beta: the integer product scaled in double and
    // truncated toward zero, as ONNX's reference computes it (the reference device too);
    // rounding alpha or beta to an integer first would make alpha = 0.5 a zero result.
    if constexpr (std::is_integral_v<T>) {
      if (alpha_ != std::trunc(alpha_) || beta_ != std::trunc(beta_)) return scaleInDouble(y, c, args.num_threads);
    }
    const T alpha = static_cast<T>(alpha_), beta = static_cast<T>(beta_);
    ge::parallelFor(m_, static_cast<double>(n_), args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        T* row = y + i * n_;
        if (!c) {
          for (int64_t j = 0; j < n_; ++j) row[j] = alpha * row[j];
          continue;
        }
        const T* c_row = c + i * c_row_stride_;
        for (int64_t j = 0; j < n_; ++j) row[j] = alpha * row[j] + beta * c_row[j * c_col_stride_];
      }
    });
  }
  std::string name() const override { return "cpu:gemm"; }

 private:
  void scaleInDouble(T* y, const T* c, int threads) const {
    ge::parallelFor(m_, static_cast<double>(n_), threads, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        T* row = y + i * n_;
        const T* c_row = c ? c + i * c_row_stride_ : nullptr;
        for (int64_t j = 0; j < n_; ++j) {
          const double term = c_row ? beta_ * static_cast<double>(c_row[j * c_col_stride_]) : 0.0;
          row[j] = static_cast<T>(alpha_ * static_cast<double>(row[j]) + term);
        }
      }
    });
  }

  int64_t m_, n_, k_;
  bool trans_a_, trans_b_;
  double alpha_, beta_;
  bool has_c_ = false;
  int64_t c_row_stride_ = 0, c_col_stride_ = 0;
};

// ---------------------------------------------------------------------------- Einsum

// An operand (or intermediate) seen through its labels: one stride per distinct label
// (a label repeated within an operand is its diagonal: the strides add up), stride 0
// where the operand broadcasts.
struct LabeledView {
  std::vector<int> labels;
  std::vector<int64_t> strides;
  int source = 0;  // >= 0: input index; < 0: intermediate ~source
};

// Reading a view into a contiguous buffer: dims/strides of the destination's axes in
// order, plus axes summed over.
struct Gather {
  int source = 0;
  std::vector<int64_t> dims, strides, sum_dims, sum_strides;
  int64_t count = 1;
};

struct Contraction {
  Gather pack_a, pack_b;  // into [batch, M, K] and [batch, K, N]
  int64_t batch = 1, m = 1, n = 1, k = 1;
  size_t a_offset = 0, b_offset = 0, out_offset = 0;  // in scratch, bytes
  std::unique_ptr<Kernel> matmul;                     // oneDNN, for f32 computation
  std::vector<int64_t> a_offsets, b_offsets;          // own GEMM, for f64 and integers
};

// The type Einsum computes elements of storage type S in: floats in f32 (f64 in f64), integers
// in i64, which wraps around when stored.
template <typename S>
using EinsumCompute = std::conditional_t<std::is_integral_v<S>, int64_t, ComputeOf<S>>;

// dst[i] = sum over the summed axes of src at the destination's coordinates i.
template <typename Src, typename Dst, typename Acc>
void runGather(const Gather& gather, const Src* src, Dst* dst, int num_threads) {
  const size_t rank = gather.dims.size(), sum_rank = gather.sum_dims.size();
  int64_t sum_count = 1;
  for (int64_t size : gather.sum_dims) sum_count *= size;
  const int64_t inner = rank ? gather.dims[rank - 1] : 1;
  const int64_t inner_stride = rank ? gather.strides[rank - 1] : 0;
  const int64_t outer = inner ? gather.count / inner : 0;
  // An index walk per summed element: a few cheap operations each.
  ge::parallelFor(outer, 4.0 * static_cast<double>(inner * sum_count), num_threads, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      int64_t base = 0, rest = row;
      for (size_t d = rank ? rank - 1 : 0; d-- > 0;) {
        base += (rest % gather.dims[d]) * gather.strides[d];
        rest /= gather.dims[d];
      }
      Dst* out = dst + row * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const Src* at = src + base + i * inner_stride;
        Acc sum = 0;
        for (int64_t s = 0; s < sum_count; ++s) {
          int64_t offset = 0, left = s;
          for (size_t d = sum_rank; d-- > 0;) {
            offset += (left % gather.sum_dims[d]) * gather.sum_strides[d];
            left /= gather.sum_dims[d];
          }
          if constexpr (std::is_integral_v<Acc>) {
            sum = static_cast<Acc>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(static_cast<Acc>(loadAs(at[offset]))));
          } else {
            sum += static_cast<Acc>(loadAs(at[offset]));
          }
        }
        out[i] = storeAs<Dst>(sum);
      }
    }
  });
}

class EinsumState final : public KernelState {
 public:
  std::vector<std::unique_ptr<KernelState>> matmuls;
};

template <typename T, typename Acc>
class EinsumKernel final : public Kernel {
 public:
  EinsumKernel(std::vector<Contraction> steps, Gather final_gather, size_t scratch, size_t matmul_scratch_offset)
      : steps_(std::move(steps)), final_(std::move(final_gather)), scratch_(scratch),
        matmul_scratch_offset_(matmul_scratch_offset) {}

  size_t scratchBytes() const override { return scratch_; }
  std::unique_ptr<KernelState> createState() const override {
    auto state = std::make_unique<EinsumState>();
    for (const Contraction& step : steps_) state->matmuls.push_back(step.matmul ? step.matmul->createState() : nullptr);
    return state;
  }

  void run(const KernelArgs& args, KernelState* raw_state) const override {
    auto* state = static_cast<EinsumState*>(raw_state);
    auto* scratch = static_cast<std::byte*>(args.scratch);
    auto intermediate = [&](int source) { return reinterpret_cast<Acc*>(scratch + steps_[~source].out_offset); };
    auto pack = [&](const Gather& gather, Acc* into) {
      if (gather.source >= 0) {
        runGather<T, Acc, Acc>(gather, static_cast<const T*>(args.inputs[gather.source]), into, args.num_threads);
      } else {
        runGather<Acc, Acc, Acc>(gather, intermediate(gather.source), into, args.num_threads);
      }
    };
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Contraction& step = steps_[i];
      auto* a = reinterpret_cast<Acc*>(scratch + step.a_offset);
      auto* b = reinterpret_cast<Acc*>(scratch + step.b_offset);
      auto* out = reinterpret_cast<Acc*>(scratch + step.out_offset);
      pack(step.pack_a, a);
      pack(step.pack_b, b);
      if (step.matmul) {
        const void* inputs[] = {a, b};
        void* outputs[] = {out};
        KernelArgs inner{inputs, outputs, scratch + matmul_scratch_offset_, args.num_threads, args.device};
        step.matmul->run(inner, state->matmuls[i].get());
      } else {
        ownBatchedGemm<Acc>(step.batch, step.a_offsets.data(), step.b_offsets.data(), step.m, step.n, step.k, a,
                            step.k, 1, b, step.n, 1, out, args.num_threads);
      }
    }
    T* output = static_cast<T*>(args.outputs[0]);
    if (final_.source >= 0) {
      runGather<T, T, Acc>(final_, static_cast<const T*>(args.inputs[final_.source]), output, args.num_threads);
    } else {
      runGather<Acc, T, Acc>(final_, intermediate(final_.source), output, args.num_threads);
    }
  }
  std::string name() const override {
    bool onednn = false;
    for (const Contraction& step : steps_) onednn |= step.matmul != nullptr;
    return onednn ? "cpu:einsum+onednn:matmul" : "cpu:einsum";
  }

 private:
  std::vector<Contraction> steps_;
  Gather final_;
  size_t scratch_;
  size_t matmul_scratch_offset_;
};

// Parses the equation into one label list per operand and the output's, ellipses
// expanded into private labels (256 + position from the right).
struct EinsumEquation {
  std::vector<std::vector<int>> operands;
  std::vector<int> output;
};

EinsumEquation parseEinsum(const KernelBuildContext& context) {
  std::string equation;
  for (char c : context.stringAttr("equation")) {
    if (c != ' ') equation += c;
  }
  size_t arrow = equation.find("->");
  std::string inputs = equation.substr(0, arrow);
  EinsumEquation parsed;
  size_t ellipsis_rank = 0;
  auto expand = [&](const std::string& term, size_t rank) {
    std::vector<int> labels;
    size_t dots = term.find("...");
    size_t letters = term.size() - (dots == std::string::npos ? 0 : 3);
    size_t broadcast = dots == std::string::npos ? 0 : rank - letters;
    for (size_t i = 0; i < term.size(); ++i) {
      if (i == dots) {
        for (size_t e = broadcast; e-- > 0;) labels.push_back(256 + static_cast<int>(e));
        i += 2;
        continue;
      }
      labels.push_back(static_cast<unsigned char>(term[i]));
    }
    return labels;
  };
  size_t start = 0;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    size_t comma = inputs.find(',', start);
    std::string term = inputs.substr(start, comma - start);
    parsed.operands.push_back(expand(term, static_cast<size_t>(context.input(i).rank)));
    start = comma + 1;
    size_t dots = term.find("...");
    if (dots != std::string::npos) {
      ellipsis_rank = std::max(ellipsis_rank, static_cast<size_t>(context.input(i).rank) - (term.size() - 3));
    }
  }
  if (arrow != std::string::npos) {
    parsed.output = expand(equation.substr(arrow + 2), static_cast<size_t>(context.output(0).rank));
  } else {
    for (size_t e = ellipsis_rank; e-- > 0;) parsed.output.push_back(256 + static_cast<int>(e));
    std::map<int, int> counts;
    for (const auto& operand : parsed.operands) {
      for (int label : operand) counts[label] += label < 256;
    }
    for (const auto& [label, count] : counts) {
      if (count == 1) parsed.output.push_back(label);
    }
  }
  return parsed;
}

std::unique_ptr<Kernel> makeEinsum(const KernelBuildContext& context) {
  ScopedOpenMpThreads threads(context.maxThreads());
  const DType dtype = context.output(0).dtype;
  EinsumEquation equation = parseEinsum(context);
  std::map<int, int64_t> sizes;
  std::vector<LabeledView> views;
  for (size_t i = 0; i < equation.operands.size(); ++i) {
    const TensorDesc& input = context.input(i);
    std::vector<int64_t> strides = stridesOf(input.dimVector());
    LabeledView view;
    view.source = static_cast<int>(i);
    for (size_t d = 0; d < equation.operands[i].size(); ++d) {
      int label = equation.operands[i][d];
      int64_t size = input.dims[d];
      int64_t stride = size == 1 ? 0 : strides[d];
      sizes[label] = std::max(sizes.count(label) ? sizes[label] : 1, size);
      auto found = std::find(view.labels.begin(), view.labels.end(), label);
      if (found != view.labels.end()) {
        view.strides[found - view.labels.begin()] += stride;
      } else {
        view.labels.push_back(label);
        view.strides.push_back(stride);
      }
    }
    views.push_back(std::move(view));
  }
  auto gatherOf = [&](const LabeledView& view, const std::vector<int>& order) {
    Gather gather;
    gather.source = view.source;
    for (int label : order) {
      auto found = std::find(view.labels.begin(), view.labels.end(), label);
      gather.dims.push_back(sizes[label]);
      gather.strides.push_back(found == view.labels.end() ? 0 : view.strides[found - view.labels.begin()]);
      gather.count *= sizes[label];
    }
    for (size_t d = 0; d < view.labels.size(); ++d) {
      if (std::find(order.begin(), order.end(), view.labels[d]) == order.end()) {
        gather.sum_dims.push_back(sizes[view.labels[d]]);
        gather.sum_strides.push_back(view.strides[d]);
      }
    }
    return gather;
  };
  auto has = [](const std::vector<int>& labels, int label) {
    return std::find(labels.begin(), labels.end(), label) != labels.end();
  };
  const size_t compute_size = dtype == DType::F64 || isInteger(dtype) ? 8 : 4;
  const bool onednn = compute_size == 4;
  std::vector<Contraction> steps;
  size_t scratch = 0, matmul_scratch = 0;
  auto reserve = [&](int64_t elements) {
    size_t offset = scratch;
    scratch += (static_cast<size_t>(elements) * compute_size + 63) / 64 * 64;
    return offset;
  };
  LabeledView current = views[0];
  for (size_t i = 1; i < views.size(); ++i) {
    const LabeledView& next = views[i];
    std::set<int> later(equation.output.begin(), equation.output.end());
    for (size_t j = i + 1; j < views.size(); ++j) later.insert(views[j].labels.begin(), views[j].labels.end());
    std::vector<int> batch, m, n, k;
    for (int label : current.labels) {
      bool kept = later.count(label) > 0;
      if (has(next.labels, label)) (kept ? batch : k).push_back(label);
      else if (kept) m.push_back(label);
    }
    for (int label : next.labels) {
      if (!has(current.labels, label) && later.count(label)) n.push_back(label);
    }
    Contraction step;
    auto product = [&](const std::vector<int>& labels) {
      int64_t count = 1;
      for (int label : labels) count *= sizes[label];
      return count;
    };
    step.batch = product(batch);
    step.m = product(m);
    step.n = product(n);
    step.k = product(k);
    std::vector<int> a_order = batch, b_order = batch, out_labels = batch;
    a_order.insert(a_order.end(), m.begin(), m.end());
    a_order.insert(a_order.end(), k.begin(), k.end());
    b_order.insert(b_order.end(), k.begin(), k.end());
    b_order.insert(b_order.end(), n.begin(), n.end());
    out_labels.insert(out_labels.end(), m.begin(), m.end());
    out_labels.insert(out_labels.end(), n.begin(), n.end());
    step.pack_a = gatherOf(current, a_order);
    step.pack_b = gatherOf(next, b_order);
    step.a_offset = reserve(step.batch * step.m * step.k);
    step.b_offset = reserve(step.batch * step.k * step.n);
    step.out_offset = reserve(step.batch * step.m * step.n);
    if (onednn && step.batch * step.m * step.n * step.k > 0) {
      std::vector<int64_t> a_dims{step.batch, step.m, step.k}, b_dims{step.batch, step.k, step.n},
          out_dims{step.batch, step.m, step.n};
      // The rules' choice: a tuner would time the Einsum node, not this product.
      for (const KernelTactic& tactic :
           onednnMatmulTactics(context, "matmul", plainDesc(a_dims, DType::F32), plainDesc(b_dims, DType::F32),
                               plainDesc(out_dims, DType::F32), nullptr, std::nullopt, dnnl::post_ops(), {})) {
        if ((step.matmul = tactic.make())) break;
      }
      if (!step.matmul) return nullptr;
      matmul_scratch = std::max(matmul_scratch, step.matmul->scratchBytes());
    } else {
      for (int64_t p = 0; p < step.batch; ++p) {
        step.a_offsets.push_back(p * step.m * step.k);
        step.b_offsets.push_back(p * step.k * step.n);
      }
    }
    LabeledView result;
    result.source = ~static_cast<int>(steps.size());
    result.labels = out_labels;
    std::vector<int64_t> dims;
    for (int label : out_labels) dims.push_back(sizes[label]);
    result.strides = stridesOf(dims);
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1) result.strides[d] = 0;
    }
    steps.push_back(std::move(step));
    current = std::move(result);
  }
  Gather final_gather = gatherOf(current, equation.output);
  size_t matmul_scratch_offset = scratch;
  scratch += matmul_scratch;
  std::unique_ptr<Kernel> kernel;
  dispatch(NumericDTypes{}, dtype, [&](auto type) {
    using T = StorageOf<decltype(type)>;
    using Acc = EinsumCompute<T>;
    kernel = std::make_unique<EinsumKernel<T, Acc>>(std::move(steps), std::move(final_gather), scratch,
                                                     matmul_scratch_offset);
  });
  return kernel;
}

std::unique_ptr<Kernel> matmulKernel(const KernelBuildContext& context, const Epilogue& epilogue) {
  const TensorDesc& a = context.input(0);
  // FusedMatMul's transB (foldTransposesIntoMatMuls): input 1 holds B with its last two
  // axes swapped, read through swapped strides.
  const Attribute* trans_b_attr = context.node().attr("transB");
  const bool trans_b = trans_b_attr && trans_b_attr->asInt() != 0;
  TensorDesc b = context.input(1);
  if (trans_b) {
    if (b.rank < 2) return nullptr;
    std::swap(b.dims[b.rank - 2], b.dims[b.rank - 1]);
  }
  const DType dtype = context.output(0).dtype;
  if (a.dtype != dtype || b.dtype != dtype) return nullptr;
  MatMulShape shape = matmulShape(a, b);
  if (context.output(0).numElements() == 0 || shape.k == 0) {
    if (!epilogue.empty()) return nullptr;
    return makeZeroFillKernel(context, "cpu:matmul (empty)");
  }
  if (!onednnFloat(dtype)) return epilogue.empty() ? ownMatMul(dtype, shape, trans_b) : nullptr;
  const bool b_is_matrix = std::all_of(shape.b.begin(), shape.b.end() - 2, [](int64_t d) { return d == 1; });
  std::vector<KernelTactic> tactics;
  if (b_is_matrix && a.numElements() <= kGemvMaxRows * shape.k) {
    tactics.push_back({"cpu:gemv", [&context, &epilogue, &shape, &a, trans_b] {
                         return makeGemvKernel(context, a.numElements() / shape.k, shape.k, shape.n, trans_b,
                                               epilogue.steps);
                       }});
  }
  // oneDNN 2.6 packs constant weights into its blocked formats (the VNNI layouts of AMX and
  // AVX512-BF16) only for 2-D products: for 3-D ones `any` resolves to plain, and brgemm
  // then reformats B on every run (oneDNN alone, BERT-base's 128 x 768 by 768 x 3072 in
  // bf16 on AMX, weights in cache: 903 us as [1, 128, 768] with B plain, 581 us as
  // [128, 768] with B packed, one thread; 470 against 319 us on two). A product whose B is
  // one matrix takes A's batch as more rows of one 2-D product: the same memory. Its
  // epilogue may not fold along (an operand broadcast over the batch alone): then it stays
  // batched.
  const bool foldable = b_is_matrix && shape.out.size() > 2;
  for (bool fold : {true, false}) {
    if (fold && !foldable) continue;
    const MatMulShape product = fold ? batchAsRows(shape) : shape;
    dnnl::memory::desc b_md = plainDesc(product.b, dtype);
    if (trans_b) {
      const size_t rank = product.b.size();
      std::vector<int64_t> stored = product.b;
      std::swap(stored[rank - 2], stored[rank - 1]);
      std::vector<int64_t> strides = stridesOf(stored);
      std::swap(strides[rank - 2], strides[rank - 1]);
      b_md = dnnl::memory::desc(product.b, dnnlType(dtype), strides);
    }
    dnnl::memory::desc dst = plainDesc(product.out, dtype);
    std::vector<EpilogueStep> steps = epilogue.steps;
    std::optional<OnednnArg> bias = takeLeadingBias(context, steps, product.n, product.out.size());
    dnnl::post_ops post_ops;
    std::vector<OnednnArg> extra;
    if (!appendEpilogue(context, steps, dst, static_cast<int>(product.out.size()) - 1, post_ops, extra)) continue;
    // A constant B is pre-packed, unless transposed: then it is read in place, so that no
    // second copy of a large weight (a tied embedding) is resident.
    const Tensor* constant_b = trans_b ? nullptr : context.constantInput(1);
    for (KernelTactic& tactic :
         onednnMatmulTactics(context, trans_b ? "matmul(transB)" : "matmul", plainDesc(product.a, dtype), b_md, dst,
                             constant_b, bias, post_ops, std::move(extra))) {
      tactics.push_back(std::move(tactic));
    }
    break;
  }
  return context.choose(tactics);
}

std::unique_ptr<Kernel> gemmKernel(const KernelBuildContext& context, const Epilogue& epilogue) {
  const TensorDesc& a = context.input(0);
  const TensorDesc& out = context.output(0);
  const DType dtype = out.dtype;
  const bool trans_a = context.intAttr("transA") != 0, trans_b = context.intAttr("transB") != 0;
  const double alpha = context.floatAttr("alpha"), beta = context.floatAttr("beta");
  const int64_t m = out.dims[0], n = out.dims[1], k = a.dims[trans_a ? 0 : 1];
  const bool has_c = context.hasInput(2) && beta != 0.0;
  std::optional<TensorDesc> c;
  if (has_c) c = context.input(2);
  if (out.numElements() == 0) return epilogue.empty() ? makeZeroFillKernel(context, "cpu:gemm (empty)") : nullptr;
  if (!onednnFloat(dtype) || k == 0) {
    if (!epilogue.empty()) return nullptr;
    switch (dtype) {
      case DType::F64: return std::make_unique<OwnGemmKernel<double>>(m, n, k, trans_a, trans_b, alpha, beta, c);
      case DType::I32: return std::make_unique<OwnGemmKernel<int32_t>>(m, n, k, trans_a, trans_b, alpha, beta, c);
      case DType::I64: return std::make_unique<OwnGemmKernel<int64_t>>(m, n, k, trans_a, trans_b, alpha, beta, c);
      case DType::F32: return std::make_unique<OwnGemmKernel<float>>(m, n, k, trans_a, trans_b, alpha, beta, c);
      default: return nullptr;  // a 16-bit float Gemm with K = 0
    }
  }
  std::vector<KernelTactic> tactics;
  if (!trans_a && m <= kGemvMaxRows && (!has_c || beta == 1.0)) {
    std::vector<EpilogueStep> gemv_steps;
    if (alpha != 1.0) gemv_steps.push_back(EpilogueStep::scale(static_cast<float>(alpha)));
    if (has_c) gemv_steps.push_back(EpilogueStep::residual(2));
    gemv_steps.insert(gemv_steps.end(), epilogue.steps.begin(), epilogue.steps.end());
    tactics.push_back({"cpu:gemv", [&context, m, k, n, trans_b, gemv_steps] {
                         return makeGemvKernel(context, m, k, n, trans_b, gemv_steps);
                       }});
  }
  // Transposed operands are the same bytes with swapped strides.
  dnnl::memory::desc a_md({m, k}, dnnlType(dtype), trans_a ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1});
  dnnl::memory::desc b_md({k, n}, dnnlType(dtype), trans_b ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
  dnnl::memory::desc dst = plainDesc(std::vector<int64_t>{m, n}, dtype);
  dnnl::post_ops post_ops;
  std::vector<OnednnArg> extra;
  std::optional<OnednnArg> bias;
  std::vector<EpilogueStep> steps;
  float output_scale = 1.f;
  const bool c_is_row = has_c && c->numElements() == n && (c->rank == 1 || c->dims[0] == 1);
  if (has_c && alpha == 1.0 && beta == 1.0 && c_is_row) {
    bias = OnednnArg{DNNL_ARG_BIAS, OnednnArg::Source::Input, 2, plainDesc(std::vector<int64_t>{1, n}, dtype)};
  } else if (has_c) {
    // alpha*AB + beta*C = beta * ((alpha/beta) * AB + C): the product's scale is the
    // primitive's output scale, C a binary post-op.
    output_scale = static_cast<float>(alpha / beta);
    steps.push_back(EpilogueStep::residual(2));
    if (beta != 1.0) steps.push_back(EpilogueStep::scale(static_cast<float>(beta)));
  } else {
    output_scale = static_cast<float>(alpha);
  }
  std::vector<EpilogueStep> user_steps = epilogue.steps;
  if (!bias && steps.empty() && output_scale == 1.f) bias = takeLeadingBias(context, user_steps, n, 2);
  steps.insert(steps.end(), user_steps.begin(), user_steps.end());
  if (appendEpilogue(context, steps, dst, 1, post_ops, extra)) {
    const Tensor* constant_b = context.constantInput(1);
    for (KernelTactic& tactic : onednnMatmulTactics(context, "gemm", a_md, b_md, dst, constant_b, bias, post_ops,
                                                    std::move(extra), output_scale)) {
      tactics.push_back(std::move(tactic));
    }
  }
  return context.choose(tactics);
}

// buildPreferringF32, except that an f16 product of a few rows runs on the GEMV as it is.
// oneDNN has no f16 kernels, so buildPreferringF32 computes f16 in f32 with the weights
// widened at build; but a product of a few rows is bound by reading its weights, and the
// GEMV reads f16 weights as they are stored, half the bytes.
std::unique_ptr<Kernel> buildProduct(const KernelBuildContext& context, const NnFactory& factory) {
  if (context.output(0).dtype == DType::F16) {
    std::unique_ptr<Kernel> kernel = factory(context);
    if (kernel && kernel->name().rfind("cpu:gemv", 0) == 0) return kernel;
  }
  return buildPreferringF32(context, factory);
}

}  // namespace

std::unique_ptr<Kernel> makeMatMulKernel(const KernelBuildContext& context, const Epilogue& epilogue) {
  return buildProduct(context, [&](const KernelBuildContext& c) { return matmulKernel(c, epilogue); });
}

std::unique_ptr<Kernel> makeGemmKernel(const KernelBuildContext& context, const Epilogue& epilogue) {
  return buildProduct(context, [&](const KernelBuildContext& c) { return gemmKernel(c, epilogue); });
}

void registerMatMulKernels(KernelRegistry& registry) {
  registry.add("MatMul", "", [](const KernelBuildContext& context) { return makeMatMulKernel(context, {}); });
  registry.add("Gemm", "", [](const KernelBuildContext& context) { return makeGemmKernel(context, {}); });
  registry.add("Einsum", "", [](const KernelBuildContext& context) { return makeEinsum(context); });
}

}  // namespace estuary::ge::cpu
