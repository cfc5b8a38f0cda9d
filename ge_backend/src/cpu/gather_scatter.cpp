// Ops that pick or place elements by index: Gather, GatherElements, GatherND,
// ScatterElements, ScatterND, OneHot.
//
// Negative indices count from the end, as ONNX allows. An index outside [-n, n) is invalid
// data: the kernels check every index, skip the bad ones inside their (parallel) loops and,
// once the loop is done, raise an Error that names the node, the index and the axis size.
#include <atomic>

#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// The first bad index seen by any thread of a loop; raised after the loop.
class IndexCheck {
 public:
  // `index` normalized into [0, limit), or -1 (recorded) when it is out of range.
  int64_t normalize(int64_t index, int64_t limit) {
    int64_t normalized = index < 0 ? index + limit : index;
    if (normalized >= 0 && normalized < limit) return normalized;
    if (!found_.exchange(true)) {
      index_ = index;
      limit_ = limit;
    }
    return -1;
  }
  void raiseIfBad(const std::string& node, const char* what) const {
    if (found_.load()) {
      raise(node, ": index ", index_, " is out of range for ", what, " of size ", limit_, " (valid: [", -limit_,
            ", ", limit_ - 1, "])");
    }
  }

 private:
  std::atomic<bool> found_{false};
  int64_t index_ = 0;
  int64_t limit_ = 0;
};

// Copies `count` elements; rows of a cache line or more go through memcpy.
template <typename E>
inline void copyRun(E* dst, const E* src, int64_t count) {
  if (count * static_cast<int64_t>(sizeof(E)) >= 64) {
    std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(E));
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
  }
}

// ---- Gather: out[o, k, :] = data[o, indices[k], :] ---------------------------------------

class GatherKernel final : public Kernel {
 public:
  GatherKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        element_size_(dtypeSize(context.input(0).dtype)),
        index_type_(context.input(1).dtype) {
    const TensorDesc& data = context.input(0);
    axis_ = normalizedAxis(context, context.intAttr("axis"), data.rank, "attribute 'axis'");
    outer_ = outerSize(data, axis_);
    limit_ = data.dims[axis_];
    inner_ = innerSize(data, axis_);
    count_ = context.input(1).numElements();
  }

  void run(const KernelArgs& args, KernelState*) const override {
    IndexCheck check;
    dispatchBySize(element_size_, [&](auto element) {
      dispatchIndex(index_type_, [&](auto index) {
        using E = decltype(element);
        using I = decltype(index);
        gather(static_cast<const E*>(args.inputs[0]), static_cast<const I*>(args.inputs[1]),
               static_cast<E*>(args.outputs[0]), args.num_threads, check);
      });
    });
    check.raiseIfBad(node_, "the gathered axis");
  }
  std::string name() const override { return "cpu:gather"; }

 private:
  template <typename E, typename I>
  void gather(const E* data, const I* indices, E* out, int threads, IndexCheck& check) const {
    const int64_t rows = outer_ * count_;
    parallelRanges(rows, std::max<int64_t>(inner_, 8) * static_cast<int64_t>(sizeof(E)), threads,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t row = begin; row < end; ++row) {
                       int64_t o = row / count_, k = row % count_;
                       int64_t index = check.normalize(static_cast<int64_t>(indices[k]), limit_);
                       E* dst = out + row * inner_;
                       if (index < 0) {
                         std::fill(dst, dst + inner_, E{});
                         continue;
                       }
                       const E* src = data + (o * limit_ + index) * inner_;
                       if (inner_ == 1) {
                         *dst = *src;
                       } else {
                         copyRun(dst, src, inner_);
                       }
                     }
                   });
  }

  std::string node_;
  size_t element_size_;
  DType index_type_;
  int axis_ = 0;
  int64_t outer_ = 0, limit_ = 0, inner_ = 0, count_ = 0;
};

// ---- GatherElements: out[i] = data[i with the axis coordinate replaced by indices[i]] ---

// Row geometry shared by GatherElements and ScatterElements: the indices tensor is walked
// row by row (its last axis innermost); `row_walk` gives the data offset of each row with
// the axis coordinate left out, and within a row element j sits at j * last_stride plus the
// index times axis_stride.
struct ElementsGeometry {
  StridedWalk row_walk;
  int64_t rows = 0;
  int64_t row_length = 0;
  int64_t last_stride = 0;  // 0 when the last axis is the indexed axis
  int64_t axis_stride = 0;
  int64_t limit = 0;
  int64_t slab_rows = 1;    // rows per value of the leading axes (before the indexed axis)
};

ElementsGeometry elementsGeometry(const KernelBuildContext& context, const TensorDesc& data,
                                  const TensorDesc& indices) {
  if (data.rank != indices.rank) context.fail("data ", data.str(), " and indices ", indices.str(), " differ in rank");
  ElementsGeometry geometry;
  int axis = normalizedAxis(context, context.intAttr("axis"), data.rank, "attribute 'axis'");
  for (int d = 0; d < data.rank; ++d) {
    if (d != axis && indices.dims[d] > data.dims[d]) {
      context.fail("indices ", indices.str(), " are larger than data ", data.str(), " along axis ", d);
    }
  }
  std::array<int64_t, kMaxRank> strides = stridesOf(data);
  int last = indices.rank - 1;
  geometry.row_walk.rank = last;
  for (int d = 0; d < last; ++d) {
    geometry.row_walk.dims[d] = indices.dims[d];
    geometry.row_walk.strides[d] = d == axis ? 0 : strides[d];
  }
  geometry.rows = productOf(indices.dims.data(), 0, last);
  geometry.row_length = indices.dims[last];
  geometry.last_stride = axis == last ? 0 : 1;
  geometry.axis_stride = strides[axis];
  geometry.limit = data.dims[axis];
  geometry.slab_rows = productOf(indices.dims.data(), axis, last);
  return geometry;
}

class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        element_size_(dtypeSize(context.input(0).dtype)),
        index_type_(context.input(1).dtype),
        geometry_(elementsGeometry(context, context.input(0), context.input(1))) {}

  void run(const KernelArgs& args, KernelState*) const override {
    IndexCheck check;
    dispatchBySize(element_size_, [&](auto element) {
      dispatchIndex(index_type_, [&](auto index) {
        using E = decltype(element);
        using I = decltype(index);
        const E* data = static_cast<const E*>(args.inputs[0]);
        const I* indices = static_cast<const I*>(args.inputs[1]);
        E* out = static_cast<E*>(args.outputs[0]);
        const ElementsGeometry& g = geometry_;
        parallelRanges(g.rows, g.row_length * static_cast<int64_t>(sizeof(E)) * 2, args.num_threads,
                       [&](int64_t begin, int64_t end) {
                         StridedWalk walk = g.row_walk;
                         walk.seek(begin);
                         for (int64_t row = begin; row < end; ++row, walk.next()) {
                           const I* row_indices = indices + row * g.row_length;
                           E* dst = out + row * g.row_length;
                           const E* base = data + walk.offset;
                           for (int64_t j = 0; j < g.row_length; ++j) {
                             int64_t index = check.normalize(static_cast<int64_t>(row_indices[j]), g.limit);
                             dst[j] = index < 0 ? E{} : base[j * g.last_stride + index * g.axis_stride];
                           }
                         }
                       });
      });
    });
    check.raiseIfBad(node_, "the indexed axis");
  }
  std::string name() const override { return "cpu:gather_elements"; }

 private:
  std::string node_;
  size_t element_size_;
  DType index_type_;
  ElementsGeometry geometry_;
};

// ---- GatherND / ScatterND: index tuples address slices of data --------------------------

// data [batch..., indexed (depth axes)..., slice...], indices [batch..., tuples..., depth].
struct TupleGeometry {
  int64_t batches = 1;
  int64_t tuples = 1;       // per batch
  int depth = 0;
  int64_t slice = 1;        // elements per addressed slice
  int64_t batch_stride = 0; // elements of data per batch
  std::array<int64_t, kMaxRank> limits{};
  std::array<int64_t, kMaxRank> strides{};
};

TupleGeometry tupleGeometry(const KernelBuildContext& context, const TensorDesc& data, const TensorDesc& indices,
                            int batch_dims) {
  TupleGeometry g;
  g.depth = static_cast<int>(indices.dims[indices.rank - 1]);
  if (indices.rank < 1 || batch_dims + g.depth > data.rank) {
    context.fail("indices ", indices.str(), " do not fit data ", data.str());
  }
  g.batches = productOf(indices.dims.data(), 0, batch_dims);
  g.tuples = productOf(indices.dims.data(), batch_dims, indices.rank - 1);
  g.slice = productOf(data.dims.data(), batch_dims + g.depth, data.rank);
  g.batch_stride = productOf(data.dims.data(), batch_dims, data.rank);
  std::array<int64_t, kMaxRank> strides = stridesOf(data);
  for (int j = 0; j < g.depth; ++j) {
    g.limits[j] = data.dims[batch_dims + j];
    g.strides[j] = strides[batch_dims + j];
  }
  return g;
}

// The data offset (within its batch) a tuple addresses, or -1 for a bad index.
inline int64_t tupleOffset(const TupleGeometry& g, const int64_t* tuple, IndexCheck& check) {
  int64_t offset = 0;
  for (int j = 0; j < g.depth; ++j) {
    int64_t index = check.normalize(tuple[j], g.limits[j]);
    if (index < 0) return -1;
    offset += index * g.strides[j];
  }
  return offset;
}

class GatherNdKernel final : public Kernel {
 public:
  GatherNdKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        element_size_(dtypeSize(context.input(0).dtype)),
        geometry_(tupleGeometry(context, context.input(0), context.input(1),
                                static_cast<int>(context.intAttr("batch_dims")))) {}

  void run(const KernelArgs& args, KernelState*) const override {
    IndexCheck check;
    const TupleGeometry& g = geometry_;
    const auto* indices = static_cast<const int64_t*>(args.inputs[1]);
    dispatchBySize(element_size_, [&](auto element) {
      using E = decltype(element);
      const E* data = static_cast<const E*>(args.inputs[0]);
      E* out = static_cast<E*>(args.outputs[0]);
      parallelRanges(g.batches * g.tuples, std::max<int64_t>(g.slice, 8) * static_cast<int64_t>(sizeof(E)),
                     args.num_threads, [&](int64_t begin, int64_t end) {
                       for (int64_t t = begin; t < end; ++t) {
                         int64_t offset = tupleOffset(g, indices + t * g.depth, check);
                         E* dst = out + t * g.slice;
                         if (offset < 0) {
                           std::fill(dst, dst + g.slice, E{});
                         } else {
                           copyRun(dst, data + (t / g.tuples) * g.batch_stride + offset, g.slice);
                         }
                       }
                     });
    });
    check.raiseIfBad(node_, "an indexed axis");
  }
  std::string name() const override { return "cpu:gather_nd"; }

 private:
  std::string node_;
  size_t element_size_;
  TupleGeometry geometry_;
};

// ---- Scatter reductions ------------------------------------------------------------------

enum class ScatterReduction { None, Add, Mul, Max, Min };

ScatterReduction scatterReduction(const KernelBuildContext& context) {
  std::string reduction = context.stringAttr("reduction");
  if (reduction == "none") return ScatterReduction::None;
  if (reduction == "add") return ScatterReduction::Add;
  if (reduction == "mul") return ScatterReduction::Mul;
  if (reduction == "max") return ScatterReduction::Max;
  if (reduction == "min") return ScatterReduction::Min;
  context.fail("attribute 'reduction' is '", reduction, "', expected none, add, mul, max or min");
}

// Combines an update into an output element. Booleans (stored 0/1) add as "or" and
// multiply as "and", which keeps them booleans.
template <typename S, ScatterReduction R, bool kBool>
inline void combine(S& target, S update) {
  if constexpr (R == ScatterReduction::None) {
    target = update;
  } else if constexpr (kBool) {
    target = (R == ScatterReduction::Add || R == ScatterReduction::Max) ? (target | update) : (target & update);
  } else {
    auto a = loadAs(target), b = loadAs(update);
    decltype(a) result;
    if constexpr (R == ScatterReduction::Add) result = a + b;
    if constexpr (R == ScatterReduction::Mul) result = a * b;
    // NaN wins from either side, as np.maximum / np.minimum (ONNX's reference) have it.
    if constexpr (R == ScatterReduction::Max) result = (b > a || b != b) ? b : a;
    if constexpr (R == ScatterReduction::Min) result = (b < a || b != b) ? b : a;
    target = storeAs<S>(result);
  }
}

// Calls fn(S{}, reduction constant, bool constant) for the node's element type and reduction.
template <typename Fn>
void dispatchScatter(DType dtype, ScatterReduction reduction, Fn&& fn) {
  dispatch(AllDTypes{}, dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    auto with = [&](auto r) { fn(S{}, r, std::bool_constant<decltype(type)::dtype == DType::Bool>{}); };
    switch (reduction) {
      case ScatterReduction::None: return with(std::integral_constant<ScatterReduction, ScatterReduction::None>{});
      case ScatterReduction::Add: return with(std::integral_constant<ScatterReduction, ScatterReduction::Add>{});
      case ScatterReduction::Mul: return with(std::integral_constant<ScatterReduction, ScatterReduction::Mul>{});
      case ScatterReduction::Max: return with(std::integral_constant<ScatterReduction, ScatterReduction::Max>{});
      case ScatterReduction::Min: return with(std::integral_constant<ScatterReduction, ScatterReduction::Min>{});
    }
  });
}

// ---- ScatterElements ---------------------------------------------------------------------

class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        dtype_(context.input(0).dtype),
        bytes_(context.input(0).byteSize()),
        index_type_(context.input(1).dtype),
        reduction_(scatterReduction(context)),
        geometry_(elementsGeometry(context, context.input(0), context.input(1))) {
    if (context.input(2) != TensorDesc::of(context.input(0).dtype, context.input(1).dimVector())) {
      context.fail("updates ", context.input(2).str(), " must have the shape of indices ", context.input(1).str());
    }
  }

  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }

  void run(const KernelArgs& args, KernelState*) const override {
    copyBytes(args.outputs[0], args.inputs[0], bytes_, args.num_threads);
    IndexCheck check;
    dispatchScatter(dtype_, reduction_, [&](auto element, auto reduction, auto is_bool) {
      dispatchIndex(index_type_, [&](auto index) {
        using S = decltype(element);
        using I = decltype(index);
        scatter<S, I, decltype(reduction)::value, decltype(is_bool)::value>(args, check);
      });
    });
    check.raiseIfBad(node_, "the indexed axis");
  }
  std::string name() const override { return "cpu:scatter_elements"; }

 private:
  // Updates that differ in a coordinate before the indexed axis never meet, so threads
  // take whole slabs of the leading axes; within a slab updates apply in order.
  template <typename S, typename I, ScatterReduction R, bool kBool>
  void scatter(const KernelArgs& args, IndexCheck& check) const {
    const ElementsGeometry& g = geometry_;
    const I* indices = static_cast<const I*>(args.inputs[1]);
    const S* updates = static_cast<const S*>(args.inputs[2]);
    S* out = static_cast<S*>(args.outputs[0]);
    const int64_t slabs = g.rows / std::max<int64_t>(g.slab_rows, 1);
    const int threads = slabs >= args.num_threads ? args.num_threads : 1;
    parallelRanges(slabs, g.slab_rows * g.row_length * static_cast<int64_t>(sizeof(S)), threads,
                   [&](int64_t begin, int64_t end) {
                     StridedWalk walk = g.row_walk;
                     walk.seek(begin * g.slab_rows);
                     for (int64_t row = begin * g.slab_rows; row < end * g.slab_rows; ++row, walk.next()) {
                       const I* row_indices = indices + row * g.row_length;
                       const S* row_updates = updates + row * g.row_length;
                       S* base = out + walk.offset;
                       for (int64_t j = 0; j < g.row_length; ++j) {
                         int64_t index = check.normalize(static_cast<int64_t>(row_indices[j]), g.limit);
                         if (index >= 0) {
                           combine<S, R, kBool>(base[j * g.last_stride + index * g.axis_stride], row_updates[j]);
                         }
                       }
                     }
                   });
  }

  std::string node_;
  DType dtype_;
  size_t bytes_;
  DType index_type_;
  ScatterReduction reduction_;
  ElementsGeometry geometry_;
};

// ---- ScatterND ---------------------------------------------------------------------------

class ScatterNdKernel final : public Kernel {
 public:
  ScatterNdKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        dtype_(context.input(0).dtype),
        bytes_(context.input(0).byteSize()),
        reduction_(scatterReduction(context)),
        geometry_(tupleGeometry(context, context.input(0), context.input(1), 0)) {
    if (context.input(2).numElements() != geometry_.tuples * geometry_.slice) {
      context.fail("updates ", context.input(2).str(), " do not match indices ", context.input(1).str(),
                   " and data ", context.input(0).str());
    }
  }

  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }

  void run(const KernelArgs& args, KernelState*) const override {
    copyBytes(args.outputs[0], args.inputs[0], bytes_, args.num_threads);
    IndexCheck check;
    dispatchScatter(dtype_, reduction_, [&](auto element, auto reduction, auto is_bool) {
      using S = decltype(element);
      scatter<S, decltype(reduction)::value, decltype(is_bool)::value>(args, check);
    });
    check.raiseIfBad(node_, "an indexed axis");
  }
  std::string name() const override { return "cpu:scatter_nd"; }

 private:
  // Tuples may repeat, and repeats must combine in order, so the tuples are visited in
  // order and threads split the slice instead: each owns a range of every slice.
  template <typename S, ScatterReduction R, bool kBool>
  void scatter(const KernelArgs& args, IndexCheck& check) const {
    const TupleGeometry& g = geometry_;
    const auto* indices = static_cast<const int64_t*>(args.inputs[1]);
    const S* updates = static_cast<const S*>(args.inputs[2]);
    S* out = static_cast<S*>(args.outputs[0]);
    parallelRanges(g.slice, g.tuples * static_cast<int64_t>(sizeof(S)), args.num_threads,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t t = 0; t < g.tuples; ++t) {
                       int64_t offset = tupleOffset(g, indices + t * g.depth, check);
                       if (offset < 0) continue;
                       S* dst = out + offset;
                       const S* src = updates + t * g.slice;
                       for (int64_t i = begin; i < end; ++i) combine<S, R, kBool>(dst[i], src[i]);
                     }
                   });
  }

  std::string node_;
  DType dtype_;
  size_t bytes_;
  ScatterReduction reduction_;
  TupleGeometry geometry_;
};

// ---- OneHot: out[o, d, i] = d == indices[o, i] ? on : off --------------------------------

class OneHotKernel final : public Kernel {
 public:
  OneHotKernel(const KernelBuildContext& context)
      : node_(context.node().describe()),
        index_type_(context.input(0).dtype),
        depth_operand_(context, 1, "input 'depth'"),
        element_size_(dtypeSize(context.output(0).dtype)) {
    const TensorDesc& out = context.output(0);
    int axis = normalizedAxis(context, context.intAttr("axis"), out.rank, "attribute 'axis'");
    outer_ = outerSize(out, axis);
    depth_ = out.dims[axis];
    inner_ = innerSize(out, axis);
    if (depth_operand_.count() != 1) context.fail("input 'depth' must hold one value");
    if (context.input(2).numElements() != 2) context.fail("input 'values' must hold [off, on], it is ", context.input(2).str());
    if (depth_operand_.isConstant() && depth_operand_.constantValues()[0] != depth_) {
      context.fail("input 'depth' is ", depth_operand_.constantValues()[0], " but the output has ", depth_);
    }
  }

  void run(const KernelArgs& args, KernelState*) const override {
    if (!depth_operand_.isConstant()) {
      int64_t depth = 0;
      depth_operand_.read(args, &depth);
      if (depth != depth_) raise(node_, ": input 'depth' is ", depth, " but the output was planned with ", depth_);
    }
    dispatchBySize(element_size_, [&](auto element) {
      dispatch(AllDTypes{}, index_type_, [&](auto index) {  // OneHot's indices may be of any numeric type
        using E = decltype(element);
        using I = StorageOf<decltype(index)>;
        const E* values = static_cast<const E*>(args.inputs[2]);
        fill(static_cast<const I*>(args.inputs[0]), values[0], values[1], static_cast<E*>(args.outputs[0]),
             args.num_threads);
      });
    });
  }
  std::string name() const override { return "cpu:one_hot"; }

 private:
  // Indices outside [-depth, depth) give an all-off line, as ONNX specifies.
  template <typename I, typename E>
  void fill(const I* indices, E off, E on, E* out, int threads) const {
    parallelRanges(outer_, depth_ * inner_ * static_cast<int64_t>(sizeof(E)), threads,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t o = begin; o < end; ++o) {
                       E* block = out + o * depth_ * inner_;
                       std::fill(block, block + depth_ * inner_, off);
                       for (int64_t i = 0; i < inner_; ++i) {
                         auto index = static_cast<int64_t>(loadAs(indices[o * inner_ + i]));
                         if (index < 0) index += depth_;
                         if (index >= 0 && index < depth_) block[index * inner_ + i] = on;
                       }
                     }
                   });
  }

  std::string node_;
  DType index_type_;
  SmallIntOperand depth_operand_;
  size_t element_size_;
  int64_t outer_ = 0, depth_ = 0, inner_ = 0;
};

template <typename K>
KernelFactory factoryOf() {
  return [](const KernelBuildContext& context) -> std::unique_ptr<Kernel> { return std::make_unique<K>(context); };
}

}  // namespace

void registerGatherScatterKernels(KernelRegistry& registry) {
  registry.add("Gather", "", factoryOf<GatherKernel>());
  registry.add("GatherElements", "", factoryOf<GatherElementsKernel>());
  registry.add("GatherND", "", factoryOf<GatherNdKernel>());
  registry.add("ScatterElements", "", factoryOf<ScatterElementsKernel>());
  registry.add("ScatterND", "", factoryOf<ScatterNdKernel>());
  registry.add("OneHot", "", factoryOf<OneHotKernel>());
}

}  // namespace estuary::ge::cpu
