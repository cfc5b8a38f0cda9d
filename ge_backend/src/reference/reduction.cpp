// Reference kernels for the reductions (ReduceSum ... ReduceLogSumExp, opset 18: axes as an
// optional input), ArgMax/ArgMin, TopK, CumSum and Softmax/LogSoftmax/Hardmax (opset 13: one
// axis), written from the ONNX specification. Where the spec leaves a detail open (NaN in
// ArgMax or TopK, integer means) they follow ONNX's reference implementation, which is numpy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "reference/reference_kernels.h"

namespace estuary::ge::reference {

namespace {

template <typename W>
bool isNaN(W value) {
  if constexpr (std::is_floating_point_v<W>) {
    return std::isnan(value);
  } else {
    return false;
  }
}

// Integer sums and products wrap around (two's complement), as numpy's do, without the
// undefined behaviour of signed overflow in C++.
template <typename W>
W add(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    return static_cast<W>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <typename W>
W multiply(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    return static_cast<W>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

// The elements along one axis of a tensor: `count` lines of `length` elements, `stride`
// apart. Line l is the l-th index of the tensor with the axis taken out, so it is also the
// output offset of an op that reduces the axis away.
struct Lines {
  int64_t count = 1;
  int64_t length = 0;
  int64_t stride = 1;

  Lines(const TensorDesc& desc, int64_t axis) : length(desc.dims[axis]) {
    for (int d = 0; d < desc.rank; ++d) {
      if (d != axis) count *= desc.dims[d];
      if (d > axis) stride *= desc.dims[d];
    }
  }
  // The offset of element j of line `line`.
  int64_t at(int64_t line, int64_t j) const { return (line / stride) * length * stride + line % stride + j * stride; }
};

// ---- Reductions -------------------------------------------------------------------------------

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

// The sum of f(v) over a group.
template <typename W, typename F>
W sumOf(const std::vector<W>& group, F f) {
  W sum = 0;
  for (W v : group) sum = add(sum, f(v));
  return sum;
}

// One output element of a reduction: the reduction of `group`, the input elements it covers.
// An empty group (an empty reduced axis) yields the spec's identity: 0 for the sums, 1 for
// the product, -inf (or the type's lowest) for max, +inf (or the type's largest; true for
// bool) for min, -inf for the log-sums; the mean of nothing is undefined (NaN, or 0 for
// integers). W is double for floats and the element type for integers, whose mean truncates
// toward zero as numpy's mean cast back to the integer type does.
template <typename W>
W reduceGroup(Reduce op, const std::vector<W>& group, DType dtype) {
  auto identity = [](W v) { return v; };
  auto square = [](W v) { return multiply(v, v); };
  switch (op) {
    case Reduce::Sum: return sumOf(group, identity);
    case Reduce::Mean:
      if constexpr (std::is_integral_v<W>) {
        if (group.empty()) return 0;
        return static_cast<W>(static_cast<int64_t>(sumOf(group, identity)) / static_cast<int64_t>(group.size()));
      } else {
        return sumOf(group, identity) / static_cast<W>(group.size());
      }
    case Reduce::Max:
    case Reduce::Min: {
      const bool is_max = op == Reduce::Max;
      W result;
      if constexpr (std::is_floating_point_v<W>) {
        result = is_max ? -std::numeric_limits<W>::infinity() : std::numeric_limits<W>::infinity();
      } else {
        result = is_max ? std::numeric_limits<W>::lowest() : (dtype == DType::Bool ? 1 : std::numeric_limits<W>::max());
      }
      for (W v : group) {
        if (isNaN(v)) return v;  // NaN propagates
        result = is_max ? std::max(result, v) : std::min(result, v);
      }
      return result;
    }
    case Reduce::Prod: {
      W product = 1;
      for (W v : group) product = multiply(product, v);
      return product;
    }
    case Reduce::L1: return sumOf(group, [](W v) { return v < 0 ? multiply(v, static_cast<W>(-1)) : v; });
    case Reduce::L2: return static_cast<W>(std::sqrt(static_cast<double>(sumOf(group, square))));  // integers truncate
    case Reduce::SumSquare: return sumOf(group, square);
    case Reduce::LogSum: return static_cast<W>(std::log(static_cast<double>(sumOf(group, identity))));
    case Reduce::LogSumExp: {
      // Stable: m + log(sum(exp(x - m))) with m the largest finite element; infinities are
      // left to exp and log (+inf gives +inf, all -inf gives -inf).
      double m = -std::numeric_limits<double>::infinity();
      for (W v : group) {
        if (std::isfinite(static_cast<double>(v))) m = std::max(m, static_cast<double>(v));
      }
      if (std::isinf(m)) m = 0;  // no finite element
      double shifted = 0;
      for (W v : group) shifted += std::exp(static_cast<double>(v) - m);
      return static_cast<W>(m + std::log(shifted));
    }
  }
  return 0;
}

// Which axes the run-time 'axes' operand reduces: every axis when it is empty (not given, or
// given with no values), unless noop_with_empty_axes, which reduces none.
std::vector<bool> reducedAxes(const void* axes, DType axes_dtype, int64_t axes_count, int64_t rank, bool noop,
                              const std::string& node) {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes_count == 0 && !noop);
  for (int64_t k = 0; k < axes_count; ++k) {
    const int64_t axis = loadInt(axes_dtype, axes, k);
    if (axis < -rank || axis >= rank) raise(node, ": input 'axes' holds ", axis, ", out of range for rank ", rank);
    reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  }
  return reduced;
}

// Input offsets of a reduction: where the group of each output element starts (in output
// order), and where each element of a group sits relative to that start.
struct Groups {
  std::vector<int64_t> starts;
  std::vector<int64_t> members;
};

Groups groupsOf(const TensorDesc& input, const std::vector<bool>& reduced) {
  const std::vector<int64_t> strides = stridesOf(input);
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
  for (int d = 0; d < input.rank; ++d) {
    (reduced[d] ? reduced_dims : kept_dims).push_back(input.dims[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(strides[d]);
  }
  auto offsets = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& dim_strides) {
    const int64_t count = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<int64_t>());
    std::vector<int64_t> result;
    for (int64_t flat = 0; flat < count; ++flat) {
      const std::vector<int64_t> index = unravel(flat, dims);
      int64_t offset = 0;
      for (size_t d = 0; d < dims.size(); ++d) offset += index[d] * dim_strides[d];
      result.push_back(offset);
    }
    return result;
  };
  return {offsets(kept_dims, kept_strides), offsets(reduced_dims, reduced_strides)};
}

template <typename S>
std::unique_ptr<Kernel> makeReduction(const KernelBuildContext& context, Reduce op) {
  using W = Wide<S>;
  const TensorDesc input = context.input(0);
  const int64_t output_count = context.output(0).numElements();
  const bool has_axes = context.hasInput(1);
  const DType axes_dtype = has_axes ? context.input(1).dtype : DType::I64;
  const int64_t axes_count = has_axes ? context.input(1).numElements() : 0;
  const bool noop = context.intAttr("noop_with_empty_axes") != 0;
  const std::string node = context.node().describe();
  return makeKernel(context, [=](const KernelArgs& args) {
    const void* axes = has_axes ? args.inputs[1] : nullptr;
    const std::vector<bool> reduced = reducedAxes(axes, axes_dtype, axes_count, input.rank, noop, node);
    const Groups groups = groupsOf(input, reduced);
    if (static_cast<int64_t>(groups.starts.size()) != output_count) {
      raise(node, ": the axes give ", groups.starts.size(), " output elements, the plan has ", output_count);
    }
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* y = static_cast<S*>(args.outputs[0]);
    std::vector<W> group;
    for (int64_t o = 0; o < output_count; ++o) {
      group.clear();
      for (int64_t member : groups.members) group.push_back(static_cast<W>(x[groups.starts[o] + member]));
      y[o] = static_cast<S>(reduceGroup(op, group, input.dtype));
    }
  });
}

// ---- ArgMax / ArgMin / Hardmax -------------------------------------------------------------

// Whether `candidate`, met after `best` along the axis, becomes ArgMax's (`largest`) or
// ArgMin's pick. NaN beats every number (numpy's argmax and argmin, which ONNX's reference
// uses, return the first NaN); an equal value wins only with select_last_index.
template <typename W>
bool replaces(W candidate, W best, bool largest, bool last) {
  if (isNaN(best)) return last && isNaN(candidate);
  if (isNaN(candidate)) return true;
  if (candidate == best) return last;
  return largest ? candidate > best : candidate < best;
}

// The index along line `line` of its largest (smallest) element.
template <typename S>
int64_t pick(const S* x, const Lines& lines, int64_t line, bool largest, bool last) {
  int64_t best = 0;
  for (int64_t j = 1; j < lines.length; ++j) {
    if (replaces<Wide<S>>(x[lines.at(line, j)], x[lines.at(line, best)], largest, last)) best = j;
  }
  return best;
}

// ArgMax/ArgMin over an empty axis have no answer: the build refuses them unless the output
// is empty too.
void checkPickable(const KernelBuildContext& context, const Lines& lines) {
  if (lines.length == 0 && lines.count > 0) context.fail("cannot pick an element along an empty axis");
}

template <typename S>
std::unique_ptr<Kernel> makeArgReduce(const KernelBuildContext& context, bool largest) {
  const Lines lines(context.input(0), normalizeAxis(context, context.intAttr("axis"), context.input(0).rank));
  checkPickable(context, lines);
  const bool last = context.intAttr("select_last_index") != 0;
  return makeKernel(context, [=](const KernelArgs& args) {
    const S* x = static_cast<const S*>(args.inputs[0]);
    int64_t* y = static_cast<int64_t*>(args.outputs[0]);
    for (int64_t line = 0; line < lines.count; ++line) y[line] = pick(x, lines, line, largest, last);
  });
}

template <typename S>
std::unique_ptr<Kernel> makeHardmax(const KernelBuildContext& context) {
  const Lines lines(context.input(0), normalizeAxis(context, context.intAttr("axis"), context.input(0).rank));
  return makeKernel(context, [=](const KernelArgs& args) {
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* y = static_cast<S*>(args.outputs[0]);
    for (int64_t line = 0; line < lines.count; ++line) {
      const int64_t first_max = pick(x, lines, line, true, false);
      for (int64_t j = 0; j < lines.length; ++j) y[lines.at(line, j)] = static_cast<S>(j == first_max ? 1 : 0);
    }
  });
}

// ---- Softmax / LogSoftmax --------------------------------------------------------------------

// softmax(x) = exp(x - max) / sum(exp(x - max)) along the axis, and its log
// (x - max) - log(sum(exp(x - max))). A NaN in the line makes the whole line NaN.
template <typename S>
std::unique_ptr<Kernel> makeSoftmax(const KernelBuildContext& context, bool log) {
  const Lines lines(context.input(0), normalizeAxis(context, context.intAttr("axis"), context.input(0).rank));
  return makeKernel(context, [=](const KernelArgs& args) {
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* y = static_cast<S*>(args.outputs[0]);
    for (int64_t line = 0; line < lines.count; ++line) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < lines.length; ++j) {
        const double v = static_cast<double>(x[lines.at(line, j)]);
        max = std::isnan(v) || std::isnan(max) ? std::numeric_limits<double>::quiet_NaN() : std::max(max, v);
      }
      double sum = 0;
      for (int64_t j = 0; j < lines.length; ++j) sum += std::exp(static_cast<double>(x[lines.at(line, j)]) - max);
      for (int64_t j = 0; j < lines.length; ++j) {
        const double shifted = static_cast<double>(x[lines.at(line, j)]) - max;
        y[lines.at(line, j)] = static_cast<S>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  });
}

// ---- TopK --------------------------------------------------------------------------------------

// Whether a sorts before b in ascending order, NaN being larger than every number (numpy's
// sort, which ONNX's reference uses, puts NaN last).
template <typename W>
bool ascending(W a, W b) {
  return !isNaN(a) && (isNaN(b) || a < b);
}

// The K largest (smallest) elements of each line in order, equal values by their lower
// index; K is read from its input when the kernel runs. sorted = 0 leaves the order to the
// implementation: this one sorts anyway.
template <typename S>
std::unique_ptr<Kernel> makeTopK(const KernelBuildContext& context) {
  const int64_t axis = normalizeAxis(context, context.intAttr("axis"), context.input(0).rank);
  const Lines lines(context.input(0), axis);
  const Lines picked(context.output(0), axis);
  const bool largest = context.intAttr("largest") != 0;
  const DType k_dtype = context.input(1).dtype;
  const std::string node = context.node().describe();
  return makeKernel(context, [=](const KernelArgs& args) {
    const int64_t k = loadInt(k_dtype, args.inputs[1], 0);
    if (k != picked.length) raise(node, ": K is ", k, ", the plan has ", picked.length);
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* values = static_cast<S*>(args.outputs[0]);
    int64_t* indices = static_cast<int64_t*>(args.outputs[1]);
    std::vector<int64_t> order(static_cast<size_t>(lines.length));
    for (int64_t line = 0; line < lines.count; ++line) {
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const Wide<S> va = x[lines.at(line, a)], vb = x[lines.at(line, b)];
        return largest ? ascending(vb, va) : ascending(va, vb);
      });
      for (int64_t j = 0; j < k; ++j) {
        values[picked.at(line, j)] = x[lines.at(line, order[j])];
        indices[picked.at(line, j)] = order[j];
      }
    }
  });
}

// ---- CumSum ------------------------------------------------------------------------------------

// Running sums along the axis (read from its input when the kernel runs): element j sums the
// elements up to j, excluding j itself when exclusive, counting from the end when reverse.
template <typename S>
std::unique_ptr<Kernel> makeCumSum(const KernelBuildContext& context) {
  using W = Wide<S>;
  const TensorDesc input = context.input(0);
  const DType axis_dtype = context.input(1).dtype;
  const bool exclusive = context.intAttr("exclusive") != 0;
  const bool reverse = context.intAttr("reverse") != 0;
  const std::string node = context.node().describe();
  return makeKernel(context, [=](const KernelArgs& args) {
    const int64_t axis = loadInt(axis_dtype, args.inputs[1], 0);
    if (axis < -input.rank || axis >= input.rank) {
      raise(node, ": input 'axis' is ", axis, ", out of range for rank ", input.rank);
    }
    const Lines lines(input, axis < 0 ? axis + input.rank : axis);
    const S* x = static_cast<const S*>(args.inputs[0]);
    S* y = static_cast<S*>(args.outputs[0]);
    for (int64_t line = 0; line < lines.count; ++line) {
      W sum = 0;
      for (int64_t step = 0; step < lines.length; ++step) {
        const int64_t j = reverse ? lines.length - 1 - step : step;
        const W v = static_cast<W>(x[lines.at(line, j)]);
        if (!exclusive) sum = add(sum, v);
        y[lines.at(line, j)] = static_cast<S>(sum);
        if (exclusive) sum = add(sum, v);
      }
    }
  });
}

}  // namespace

void registerReductionKernels(KernelRegistry& registry) {
  const std::pair<const char*, Reduce> reductions[] = {
      {"ReduceSum", Reduce::Sum},       {"ReduceMean", Reduce::Mean},           {"ReduceMax", Reduce::Max},
      {"ReduceMin", Reduce::Min},       {"ReduceProd", Reduce::Prod},           {"ReduceL1", Reduce::L1},
      {"ReduceL2", Reduce::L2},         {"ReduceSumSquare", Reduce::SumSquare}, {"ReduceLogSum", Reduce::LogSum},
      {"ReduceLogSumExp", Reduce::LogSumExp}};
  for (const auto& [name, op] : reductions) {
    registry.add(name, "", [op = op](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
      if (!takesAllDTypes(context)) return nullptr;
      return dispatch(ReferenceDTypes{}, context.input(0).dtype,
                           [&](auto type) { return makeReduction<StorageOf<decltype(type)>>(context, op); });
    });
  }
  for (bool largest : {true, false}) {
    registry.add(largest ? "ArgMax" : "ArgMin", "", [largest](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
      if (!takesAllDTypes(context)) return nullptr;
      return dispatch(ReferenceDTypes{}, context.input(0).dtype,
                           [&](auto type) { return makeArgReduce<StorageOf<decltype(type)>>(context, largest); });
    });
  }
  registry.add("Hardmax", "", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    if (!takesAllDTypes(context)) return nullptr;
    return dispatch(ReferenceDTypes{}, context.input(0).dtype, [&](auto type) { return makeHardmax<StorageOf<decltype(type)>>(context); });
  });
  for (bool log : {false, true}) {
    registry.add(log ? "LogSoftmax" : "Softmax", "", [log](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
      if (!takesAllDTypes(context)) return nullptr;
      return dispatch(ReferenceDTypes{}, context.input(0).dtype,
                           [&](auto type) { return makeSoftmax<StorageOf<decltype(type)>>(context, log); });
    });
  }
  registry.add("TopK", "", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    if (!takesAllDTypes(context)) return nullptr;
    return dispatch(ReferenceDTypes{}, context.input(0).dtype, [&](auto type) { return makeTopK<StorageOf<decltype(type)>>(context); });
  });
  registry.add("CumSum", "", [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> {
    if (!takesAllDTypes(context)) return nullptr;
    return dispatch(ReferenceDTypes{}, context.input(0).dtype, [&](auto type) { return makeCumSum<StorageOf<decltype(type)>>(context); });
  });
}

}  // namespace estuary::ge::reference
