#pragma once
// Estuary's own tensor-manipulation, indexing, generator and reduction kernels: one
// registration function per file under src/cpu/, all called by registerTensorKernels().
#include <string>
#include <vector>

#include "cpu/strided.h"

namespace estuary::ge::cpu {

void registerShapeKernels(KernelRegistry& registry);        // shape_ops.cpp
void registerTransposeKernels(KernelRegistry& registry);    // transpose.cpp
void registerConcatSplitKernels(KernelRegistry& registry);  // concat_split.cpp
void registerSliceKernels(KernelRegistry& registry);        // slice.cpp
void registerGatherScatterKernels(KernelRegistry& registry);  // gather_scatter.cpp
void registerGeneratorKernels(KernelRegistry& registry);    // generators.cpp
void registerReductionKernels(KernelRegistry& registry);    // reduction.cpp
void registerResizeKernels(KernelRegistry& registry);       // resize.cpp
void registerMiscTensorKernels(KernelRegistry& registry);   // misc_tensor.cpp

// Copies a row-major tensor with its axes permuted (output axis k is input axis perm[k]).
// Built once: size-1 axes are dropped and axes that stay neighbours are merged, then the
// copy is either a walk over contiguous rows (the innermost axis stays innermost) or a
// cache-blocked 2-D tile transpose under an outer loop. Transpose, DepthToSpace,
// SpaceToDepth and the reductions over scattered axes use it.
class PermuteCopy {
 public:
  PermuteCopy() = default;
  PermuteCopy(const std::vector<int64_t>& in_dims, const std::vector<int>& perm, size_t element_size);

  void run(const void* in, void* out, int threads) const;
  // "copy", "rows" or "tiles", with the simplified rank.
  std::string strategy() const;

 private:
  enum class Kind { Copy, Rows, Tiles };
  Kind kind_ = Kind::Copy;
  size_t element_size_ = 0;
  int64_t count_ = 0;
  int merged_rank_ = 0;
  StridedCopy rows_;  // Kind::Rows
  // Kind::Tiles: out(a, b) = in(a, b) over the outer walk, where `a` runs along the
  // output's innermost axis (input stride tile_in_stride_) and `b` along the input's
  // innermost axis (output stride tile_out_stride_).
  int64_t tile_a_ = 0;
  int64_t tile_b_ = 0;
  int64_t tile_in_stride_ = 0;
  int64_t tile_out_stride_ = 0;
  int outer_rank_ = 0;
  std::array<int64_t, kMaxRank> outer_dims_{};
  std::array<int64_t, kMaxRank> outer_in_strides_{};
  std::array<int64_t, kMaxRank> outer_out_strides_{};
};

}  // namespace estuary::ge::cpu
