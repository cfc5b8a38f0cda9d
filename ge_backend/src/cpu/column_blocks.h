#pragma once
// A oneDNN matrix product computed as blocks of its output's columns: one single-threaded
// primitive per block, the blocks run on Estuary's worker pool (worker_pool.h) instead of
// oneDNN's OpenMP team. Each block reads all of A and only its columns of B, so the blocks
// share nothing they write and little they read. On an idle machine this scales better than
// oneDNN's own split of the same product (BERT's 128x3072 by 3072x768 with its residual:
// 1.80x from 1 to 2 threads in OpenMP, 1.94x as two blocks; Zen 1), and the product leaves
// no OpenMP team spinning on the cores Estuary's own kernels use next. On a busy machine a
// block a stalled worker has not started is taken by the calling thread.
#include <memory>
#include <string>
#include <vector>

#include "cpu/onednn_kernel.h"

namespace estuary::ge::cpu {

// `whole`'s product as `blocks` blocks of columns (fewer when the columns do not fill them),
// each made with the implementation `whole` has, named `name` plus "in N column blocks". `args` are whole's arguments (constants pointing into `owned`, which the kernel
// keeps). nullptr when it cannot be split so: an operand in a blocked layout, a post-op other
// than eltwise or binary, too few columns for two blocks of 16, or no implementation of that name
// for a block.
std::unique_ptr<Kernel> makeColumnBlockMatmul(const dnnl::engine& engine, const std::string& name,
                                              const dnnl::matmul::primitive_desc& whole,
                                              const std::vector<OnednnArg>& args,
                                              OwnedConstants owned, int blocks);

}  // namespace estuary::ge::cpu
