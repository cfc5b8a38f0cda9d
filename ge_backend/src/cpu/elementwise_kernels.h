#pragma once
// Kernel templates of the element-wise family: a unary map, a broadcasting binary map, and
// the SIMD loops they run. Ops instantiate them with a functor from elementwise_functors.h.
#include <optional>
#include <string>
#include <utility>

#include "cpu/elementwise_loops.h"

namespace estuary::ge::cpu {

// --- Loops ---------------------------------------------------------------------------------

template <typename Op, typename = void>
struct HasVectorLimit : std::false_type {};
template <typename Op>
struct HasVectorLimit<Op, std::void_t<decltype(Op::kVectorLimit)>> : std::true_type {};

// out[i] = op(in[i]) for n elements; `out` may be `in`. The functor is taken by value: a
// reference could alias `out`, and its fields would then be reloaded every iteration.
template <typename In, typename Out, typename Op>
void unaryLoop(const In* in, Out* out, int64_t n, const Op op) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = Element<Out>::store(op(Element<In>::load(in[i])));
}

// unaryLoop for ops whose f32 approximation holds up to |x| <= Op::kVectorLimit (sin, cos,
// tan): blocks holding a larger argument (or Inf/NaN) are computed with Op::exact instead.
template <typename In, typename Out, typename Op>
void limitedUnaryLoop(const In* in, Out* out, int64_t n, const Op op) {
  constexpr int64_t kBlock = 256;
  for (int64_t start = 0; start < n; start += kBlock) {
    int64_t count = std::min(kBlock, n - start);
    bool beyond = false;
#pragma omp simd reduction(| : beyond)
    for (int64_t i = start; i < start + count; ++i) {
      beyond |= !(std::fabs(Element<In>::load(in[i])) <= Op::kVectorLimit);
    }
    if (beyond) {
      for (int64_t i = start; i < start + count; ++i) out[i] = Element<Out>::store(Op::exact(Element<In>::load(in[i])));
    } else {
      unaryLoop(in + start, out + start, count, op);
    }
  }
}

// out[i] = op(a[i or 0], b[i or 0]): an input that is not Vector repeats its one value.
template <bool AVector, bool BVector, typename A, typename B, typename Out, typename Op>
void binaryLoop(const A* a, const B* b, Out* out, int64_t n, const Op op) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    out[i] = Element<Out>::store(op(Element<A>::load(a[AVector ? i : 0]), Element<B>::load(b[BVector ? i : 0])));
  }
}

// One row of a broadcast plan; `pattern` is BroadcastPlan::pattern().
template <typename A, typename B, typename Out, typename Op>
void binaryRow(const A* a, const B* b, Out* out, int64_t n, int pattern, const Op& op) {
  switch (pattern) {
    case 1: binaryLoop<true, false>(a, b, out, n, op); break;
    case 2: binaryLoop<false, true>(a, b, out, n, op); break;
    default: binaryLoop<true, true>(a, b, out, n, op); break;
  }
}

// --- Kernels -------------------------------------------------------------------------------

// The input output `output` may share a buffer with: the first of `candidates` with the
// output's dtype and shape.
std::optional<size_t> sameDescInput(const KernelBuildContext& context, std::initializer_list<size_t> candidates);

// Y = op(X) element by element.
template <typename In, typename Out, typename Op>
class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(std::string name, int64_t size, Op op, double cost)
      : name_(std::move(name)), size_(size), op_(op), cost_(cost) {}

  std::optional<size_t> inPlaceInput(size_t) const override {
    return sizeof(In) == sizeof(Out) ? std::optional<size_t>(0) : std::nullopt;
  }
  void run(const KernelArgs& args, KernelState*) const override {
    const auto* in = static_cast<const In*>(args.inputs[0]);
    auto* out = static_cast<Out*>(args.outputs[0]);
    parallelForElements(size_, cost_, args.num_threads, [&](int64_t begin, int64_t end) {
      if constexpr (HasVectorLimit<Op>::value && std::is_same_v<ComputeOf<In>, float>) {
        limitedUnaryLoop(in + begin, out + begin, end - begin, op_);
      } else {
        unaryLoop(in + begin, out + begin, end - begin, op_);
      }
    });
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  int64_t size_;
  Op op_;
  double cost_;
};

template <typename In, typename Out, typename Op>
std::unique_ptr<Kernel> makeUnary(const KernelBuildContext& context, Op op, double cost) {
  return std::make_unique<UnaryKernel<In, Out, Op>>(kernelName(context, context.input(0).dtype),
                                                     context.output(0).numElements(), op, cost);
}

// C = op(A, B) with A and B broadcast to C.
template <typename A, typename B, typename Out, typename Op>
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(std::string name, BroadcastPlan plan, Op op, double cost, std::optional<size_t> in_place)
      : name_(std::move(name)), plan_(plan), op_(op), cost_(cost), in_place_(in_place) {}

  std::optional<size_t> inPlaceInput(size_t) const override { return in_place_; }
  void run(const KernelArgs& args, KernelState*) const override {
    const auto* a = static_cast<const A*>(args.inputs[0]);
    const auto* b = static_cast<const B*>(args.inputs[1]);
    auto* out = static_cast<Out*>(args.outputs[0]);
    const int pattern = plan_.pattern();
    parallelForElements(plan_.size(), cost_, args.num_threads, [&](int64_t begin, int64_t end) {
      plan_.forEachRun(begin, end, [&](const int64_t* offsets, int64_t at, int64_t count) {
        binaryRow(a + offsets[0], b + offsets[1], out + at, count, pattern, op_);
      });
    });
  }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  BroadcastPlan plan_;
  Op op_;
  double cost_;
  std::optional<size_t> in_place_;
};

template <typename A, typename B, typename Out, typename Op>
std::unique_ptr<Kernel> makeBinary(const KernelBuildContext& context, Op op, double cost) {
  BroadcastPlan plan(context, {context.input(0), context.input(1)}, context.output(0));
  return std::make_unique<BinaryKernel<A, B, Out, Op>>(kernelName(context, context.input(0).dtype), plan, op, cost,
                                                       sameDescInput(context, {0, 1}));
}

}  // namespace estuary::ge::cpu
