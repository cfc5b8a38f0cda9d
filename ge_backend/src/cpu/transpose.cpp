// Axis permutations: Transpose, and DepthToSpace / SpaceToDepth, which are permutations of
// a 6-D view of their 4-D input.
#include <immintrin.h>

#include <numeric>

#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// Tiles are 256 bytes wide in both directions (64 x 64 for f32): the tile's source and
// destination rows stay in L1 while 8 x 8 register blocks move them, and every destination
// row receives whole cache lines (smaller tiles measured 2x slower on large transposes).
template <typename E>
constexpr int64_t kTile = 256 / static_cast<int64_t>(sizeof(E));

// In-register transposes of small square blocks: dst[b * dst_stride + a] =
// src[a * src_stride + b] for a, b < size. `size` 0: no vector version for this element.
template <typename E>
struct MicroTranspose {
  static constexpr int64_t size = 0;
};

#if defined(__SSE2__)
// 8 x 8 of 16-bit elements: unpacks at 16, 32 and 64 bits.
template <>
struct MicroTranspose<uint16_t> {
  static constexpr int64_t size = 8;
  static void run(const uint16_t* src, int64_t src_stride, uint16_t* dst, int64_t dst_stride) {
    __m128i a[8], b[8], c[8];
    for (int i = 0; i < 8; ++i) a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
    for (int i = 0; i < 4; ++i) {
      b[2 * i] = _mm_unpacklo_epi16(a[2 * i], a[2 * i + 1]);
      b[2 * i + 1] = _mm_unpackhi_epi16(a[2 * i], a[2 * i + 1]);
    }
    for (int half = 0; half < 2; ++half) {
      const int o = 4 * half;
      c[o + 0] = _mm_unpacklo_epi32(b[o + 0], b[o + 2]);
      c[o + 1] = _mm_unpackhi_epi32(b[o + 0], b[o + 2]);
      c[o + 2] = _mm_unpacklo_epi32(b[o + 1], b[o + 3]);
      c[o + 3] = _mm_unpackhi_epi32(b[o + 1], b[o + 3]);
    }
    for (int i = 0; i < 4; ++i) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * i) * dst_stride), _mm_unpacklo_epi64(c[i], c[i + 4]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * i + 1) * dst_stride), _mm_unpackhi_epi64(c[i], c[i + 4]));
    }
  }
};
#endif

#if defined(__AVX__)
// 8 x 8 of 32-bit elements (as float lanes): unpack, shuffle, then swap 128-bit halves.
template <>
struct MicroTranspose<uint32_t> {
  static constexpr int64_t size = 8;
  static void run(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * src_stride));
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int half = 0; half < 2; ++half) {
      const int o = 4 * half;
      u[o + 0] = _mm256_shuffle_ps(t[o + 0], t[o + 2], _MM_SHUFFLE(1, 0, 1, 0));
      u[o + 1] = _mm256_shuffle_ps(t[o + 0], t[o + 2], _MM_SHUFFLE(3, 2, 3, 2));
      u[o + 2] = _mm256_shuffle_ps(t[o + 1], t[o + 3], _MM_SHUFFLE(1, 0, 1, 0));
      u[o + 3] = _mm256_shuffle_ps(t[o + 1], t[o + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
      _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_stride), _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
      _mm256_storeu_ps(reinterpret_cast<float*>(dst + (i + 4) * dst_stride), _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
  }
};

// 4 x 4 of 64-bit elements (as double lanes).
template <>
struct MicroTranspose<uint64_t> {
  static constexpr int64_t size = 4;
  static void run(const uint64_t* src, int64_t src_stride, uint64_t* dst, int64_t dst_stride) {
    __m256d r[4];
    for (int i = 0; i < 4; ++i) r[i] = _mm256_loadu_pd(reinterpret_cast<const double*>(src + i * src_stride));
    __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    _mm256_storeu_pd(reinterpret_cast<double*>(dst), _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd(reinterpret_cast<double*>(dst + dst_stride), _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd(reinterpret_cast<double*>(dst + 2 * dst_stride), _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd(reinterpret_cast<double*>(dst + 3 * dst_stride), _mm256_permute2f128_pd(t1, t3, 0x31));
  }
};
#endif

// dst[b * dst_stride + a] = src[a * src_stride + b] for a < na, b < nb: in-register
// blocks where the element size has them, element copies for the edges.
template <typename E>
inline void transposeBlock(const E* src, int64_t src_stride, E* dst, int64_t dst_stride, int64_t na, int64_t nb) {
  int64_t full_a = 0, full_b = 0;
  if constexpr (MicroTranspose<E>::size > 0) {
    constexpr int64_t M = MicroTranspose<E>::size;
    full_a = na / M * M;
    full_b = nb / M * M;
    for (int64_t b = 0; b < full_b; b += M) {
      for (int64_t a = 0; a < full_a; a += M) {
        MicroTranspose<E>::run(src + a * src_stride + b, src_stride, dst + b * dst_stride + a, dst_stride);
      }
    }
  }
  // The edges: columns b >= full_b for every a, then rows a >= full_a of the rest.
  for (int64_t b = full_b; b < nb; ++b) {
    for (int64_t a = 0; a < na; ++a) dst[b * dst_stride + a] = src[a * src_stride + b];
  }
  for (int64_t b = 0; b < full_b; ++b) {
    for (int64_t a = full_a; a < na; ++a) dst[b * dst_stride + a] = src[a * src_stride + b];
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
