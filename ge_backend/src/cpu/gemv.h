#pragma once
// Matrix products with few rows on the left (a decoder step, a batch-1 linear layer): y = A B
// for an A of at most kGemvMaxRows rows of K and a B of K x N, stored K x N or, as
// FusedMatMul's transB and Gemm's transB leave it, N x K; f32, bf16 or f16 each, computed in
// f32 (a 16-bit B widened in registers as it is read). They are bound by reading B, not by
// arithmetic, so the kernel reads every weight once, where and in the order it is stored
// (never a packed copy, which would keep the weights resident twice), in shards that threads
// take as they come (worker_pool.h): a thread that another process holds up costs its share
// of the work, not the whole step.
#include <memory>
#include <vector>

#include "cpu/post_ops.h"

namespace estuary::ge::cpu {

inline constexpr int64_t kGemvMaxRows = 4;

// The kernel for MatMul/Gemm node `context` computing y (rows x n) = A (rows x k) B, then
// `steps`; nullptr when a step or operand is one it does not handle (the caller falls back
// to oneDNN). Inputs 0 and 1 are A and B, plain and row-major.
std::unique_ptr<Kernel> makeGemvKernel(const KernelBuildContext& context, int64_t rows, int64_t k, int64_t n,
                                       bool b_transposed, const std::vector<EpilogueStep>& steps);

}  // namespace estuary::ge::cpu
