// Axis permutations: Transpose, and DepthToSpace / SpaceToDepth, which are permutations of
// a 6-D view of their 4-D input.
#include <numeric>

#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// Tiles are one 64-byte cache line wide in both directions: every line read from the
// source and written to the destination is used whole.
template <typename E>
constexpr int64_t kTile = 64 / static_cast<int64_t>(sizeof(E));

// dst[b * dst_stride + a] = src[a * src_stride + b] for a < na, b < nb.
template <typename E>
inline void transposeBlock(const E* src, int64_t src_stride, E* dst, int64_t dst_stride, int64_t na, int64_t nb) {
  constexpr int64_t T = kTile<E>;
  if (na == T && nb == T) {
    // Fixed trip counts: the compiler unrolls and keeps the tile in registers.
    for (int64_t b = 0; b < T; ++b) {
      for (int64_t a = 0; a < T; ++a) dst[b * dst_stride + a] = src[a * src_stride + b];
    }
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int64_t a = 0; a < na; ++a) dst[b * dst_stride + a] = src[a * src_stride + b];
  }
}

}  // namespace

PermuteCopy::PermuteCopy(const std::vector<int64_t>& in_dims, const std::vector<int>& perm, size_t element_size)
    : element_size_(element_size) {
  const int rank = static_cast<int>(in_dims.size());
  count_ = productOf(in_dims.data(), 0, rank);
  // Drop size-1 axes: they do not move any element.
  std::vector<int> renumber(rank, -1);
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) {
    if (in_dims[d] != 1) {
      renumber[d] = static_cast<int>(dims.size());
      dims.push_back(in_dims[d]);
    }
  }
  std::vector<int> order;  // output axes as (renumbered) input axes
  for (int axis : perm) {
    if (renumber[axis] >= 0) order.push_back(renumber[axis]);
  }
  // Merge runs of input axes that stay adjacent and in order in the output.
  std::vector<std::pair<int, int>> runs;  // [first, last] input axes, in output order
  for (int axis : order) {
    if (!runs.empty() && runs.back().second + 1 == axis) {
      runs.back().second = axis;
    } else {
      runs.emplace_back(axis, axis);
    }
  }
  const int merged = static_cast<int>(runs.size());
  merged_rank_ = merged;
  std::vector<int> by_input(merged);
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(), [&](int a, int b) { return runs[a].first < runs[b].first; });
  std::vector<int> run_input_axis(merged);  // output run k is merged input axis run_input_axis[k]
  std::vector<int64_t> merged_dims(merged);
  for (int i = 0; i < merged; ++i) {
    int k = by_input[i];
    run_input_axis[k] = i;
    merged_dims[i] = productOf(dims.data(), runs[k].first, runs[k].second + 1);
  }
  bool identity = true;
  for (int k = 0; k < merged; ++k) identity &= run_input_axis[k] == k;
  if (identity || count_ == 0) {
    kind_ = Kind::Copy;
    return;
  }
  std::vector<int64_t> in_strides(merged), out_dims(merged), out_strides(merged), src_strides(merged);
  int64_t stride = 1;
  for (int i = merged - 1; i >= 0; --i) {
    in_strides[i] = stride;
    stride *= merged_dims[i];
  }
  for (int k = 0; k < merged; ++k) {
    out_dims[k] = merged_dims[run_input_axis[k]];
    src_strides[k] = in_strides[run_input_axis[k]];
  }
  stride = 1;
  for (int k = merged - 1; k >= 0; --k) {
    out_strides[k] = stride;
    stride *= out_dims[k];
  }
  if (run_input_axis[merged - 1] == merged - 1) {
    // The innermost axis stays innermost: whole rows move.
    kind_ = Kind::Rows;
    rows_ = StridedCopy(out_dims.data(), src_strides.data(), merged);
    return;
  }
  kind_ = Kind::Tiles;
  int input_inner_at = 0;  // output position of the input's innermost axis
  for (int k = 0; k < merged; ++k) {
    if (run_input_axis[k] == merged - 1) input_inner_at = k;
  }
  tile_a_ = out_dims[merged - 1];
  tile_in_stride_ = src_strides[merged - 1];
  tile_b_ = merged_dims[merged - 1];
  tile_out_stride_ = out_strides[input_inner_at];
  for (int k = 0; k < merged - 1; ++k) {
    if (k == input_inner_at) continue;
    outer_dims_[outer_rank_] = out_dims[k];
    outer_in_strides_[outer_rank_] = src_strides[k];
    outer_out_strides_[outer_rank_] = out_strides[k];
    ++outer_rank_;
  }
}

void PermuteCopy::run(const void* in, void* out, int threads) const {
  if (kind_ == Kind::Copy) {
    copyBytes(out, in, static_cast<size_t>(count_) * element_size_, threads);
    return;
  }
  dispatchBySize(element_size_, [&](auto element) {
    using E = decltype(element);
    const E* src = static_cast<const E*>(in);
    E* dst = static_cast<E*>(out);
    if (kind_ == Kind::Rows) {
      rows_.run(src, dst, threads);
      return;
    }
    constexpr int64_t T = kTile<E>;
    const int64_t tiles_a = (tile_a_ + T - 1) / T, tiles_b = (tile_b_ + T - 1) / T;
    const int64_t outer = productOf(outer_dims_.data(), 0, outer_rank_);
    const int64_t tiles = outer * tiles_a * tiles_b;
    parallelRanges(tiles, T * T * static_cast<int64_t>(sizeof(E)), threads, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t tb = t % tiles_b, ta = (t / tiles_b) % tiles_a, o = t / (tiles_b * tiles_a);
        int64_t in_offset = 0, out_offset = 0;
        for (int d = outer_rank_ - 1; d >= 0; --d) {
          int64_t i = o % outer_dims_[d];
          o /= outer_dims_[d];
          in_offset += i * outer_in_strides_[d];
          out_offset += i * outer_out_strides_[d];
        }
        int64_t a0 = ta * T, b0 = tb * T;
        transposeBlock(src + in_offset + a0 * tile_in_stride_ + b0, tile_in_stride_,
                       dst + out_offset + b0 * tile_out_stride_ + a0, tile_out_stride_, std::min(T, tile_a_ - a0),
                       std::min(T, tile_b_ - b0));
      }
    });
  });
}

std::string PermuteCopy::strategy() const {
  const char* kind = kind_ == Kind::Copy ? "copy" : kind_ == Kind::Rows ? "rows" : "tiles";
  return std::string(kind) + " rank " + std::to_string(merged_rank_);
}

namespace {

class PermuteKernel final : public Kernel {
 public:
  PermuteKernel(std::string op, PermuteCopy copy) : op_(std::move(op)), copy_(std::move(copy)) {}
  void run(const KernelArgs& args, KernelState*) const override {
    copy_.run(args.inputs[0], args.outputs[0], args.num_threads);
  }
  std::string name() const override { return "cpu:" + op_ + " " + copy_.strategy(); }

 private:
  std::string op_;
  PermuteCopy copy_;
};

std::unique_ptr<Kernel> transpose(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  std::vector<int> perm;
  if (context.attr("perm")) {
    for (int64_t axis : context.intsAttr("perm")) perm.push_back(normalizedAxis(context, axis, in.rank, "perm"));
  } else {
    for (int d = in.rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != in.rank) {
    context.fail("attribute 'perm' has ", perm.size(), " axes for input ", in.str());
  }
  return std::make_unique<PermuteKernel>("transpose", PermuteCopy(in.dimVector(), perm, dtypeSize(in.dtype)));
}

// DepthToSpace and SpaceToDepth move blocksize x blocksize pixel blocks between the channel
// axis and the spatial axes: a permutation of a 6-D view.
std::unique_ptr<Kernel> depthSpace(const KernelBuildContext& context, bool to_space) {
  const TensorDesc& in = context.input(0);
  if (in.rank != 4) context.fail("input ", in.str(), " is not 4-D");
  const int64_t b = context.intAttr("blocksize");
  const bool crd = context.stringAttr("mode") == "CRD";
  const int64_t n = in.dims[0], c = in.dims[1], h = in.dims[2], w = in.dims[3];
  std::vector<int64_t> view;
  std::vector<int> perm;
  if (to_space) {
    const int64_t depth = c / (b * b);
    if (crd) {
      view = {n, depth, b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      view = {n, b, b, depth, h, w};
      perm = {0, 3, 4, 1, 5, 2};
    }
  } else {
    view = {n, c, h / b, b, w / b, b};
    perm = crd ? std::vector<int>{0, 1, 3, 5, 2, 4} : std::vector<int>{0, 3, 5, 1, 2, 4};
  }
  const char* op = to_space ? "depth_to_space" : "space_to_depth";
  return std::make_unique<PermuteKernel>(op, PermuteCopy(view, perm, dtypeSize(in.dtype)));
}

}  // namespace

void registerTransposeKernels(KernelRegistry& registry) {
  registry.add("Transpose", "", transpose);
  registry.add("DepthToSpace", "", [](const KernelBuildContext& context) { return depthSpace(context, true); });
  registry.add("SpaceToDepth", "", [](const KernelBuildContext& context) { return depthSpace(context, false); });
}

}  // namespace estuary::ge::cpu
