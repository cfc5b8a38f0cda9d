#include "cpu/column_blocks.h"

#include <optional>

#include "cpu/nn_support.h"
#include "worker_pool.h"

namespace estuary::ge::cpu {

namespace {

// Column widths a multiple of a cache line of f32, so that blocks do not share the lines of
// the output they write.
constexpr int64_t kColumnAlignment = 16;

bool isPlain(const dnnl::memory::desc& desc) {
  return desc.data.format_kind == dnnl_blocked && desc.data.format_desc.blocking.inner_nblks == 0;
}

// Columns [first, first + width) of a plain desc whose last axis runs along the output's
// columns: the same strides, so the block reads its columns where the whole tensor keeps them.
dnnl::memory::desc columnsOf(const dnnl::memory::desc& desc, int64_t width) {
  dnnl::memory::dims dims = desc.dims();
  dims.back() = width;
  const dnnl_dims_t& strides = desc.data.format_desc.blocking.strides;
  return dnnl::memory::desc(dims, desc.data_type(), dnnl::memory::dims(strides, strides + dims.size()));
}

size_t columnOffsetBytes(const dnnl::memory::desc& desc, int64_t first) {
  const int64_t stride = desc.data.format_desc.blocking.strides[desc.data.ndims - 1];
  return static_cast<size_t>(first * stride) * dnnl::memory::data_type_size(desc.data_type());
}

// Whether argument `dnnl_arg` runs along the output's n columns on its last axis: B, the
// output, a bias or a binary operand that does not broadcast along them. A (DNNL_ARG_SRC)
// never does, even when K happens to equal N.
bool spansColumns(int dnnl_arg, const dnnl::memory::desc& desc, int64_t n) {
  return dnnl_arg != DNNL_ARG_SRC && dnnl_arg != DNNL_ARG_SCRATCHPAD && desc.dims().back() == n;
}

// `whole`'s post-ops for a block `width` columns wide; nullopt for kinds other than eltwise
// and binary.
std::optional<dnnl::post_ops> blockPostOps(const dnnl::post_ops& whole, int64_t n, int64_t width) {
  dnnl::post_ops block;
  for (int i = 0; i < whole.len(); ++i) {
    if (whole.kind(i) == dnnl::primitive::kind::eltwise) {
      float scale = 0.f, alpha = 0.f, beta = 0.f;
      dnnl::algorithm algorithm;
      whole.get_params_eltwise(i, scale, algorithm, alpha, beta);
      block.append_eltwise(scale, algorithm, alpha, beta);
    } else if (whole.kind(i) == dnnl::primitive::kind::binary) {
      dnnl::algorithm algorithm;
      dnnl::memory::desc operand;
      whole.get_params_binary(i, algorithm, operand);
      if (!isPlain(operand)) return std::nullopt;
      block.append_binary(algorithm, spansColumns(DNNL_ARG_SRC_1, operand, n) ? columnsOf(operand, width) : operand);
    } else {
      return std::nullopt;
    }
  }
  return block;
}

class BlockStates final : public KernelState {
 public:
  // One stream per block: blocks execute concurrently.
  std::vector<std::unique_ptr<CpuRunState>> streams;
  std::vector<std::unique_ptr<KernelState>> states;
};

class ColumnBlockMatmul final : public Kernel {
 public:
  ColumnBlockMatmul(std::string name, dnnl::engine engine, std::vector<std::unique_ptr<OnednnKernel>> blocks,
                    size_t scratch_bytes, OwnedConstants owned)
      : name_(std::move(name)), engine_(std::move(engine)), blocks_(std::move(blocks)),
        scratch_bytes_(scratch_bytes), owned_(std::move(owned)) {}

  size_t scratchBytes() const override { return scratch_bytes_; }
  std::string name() const override { return name_; }

  std::unique_ptr<KernelState> createState() const override {
    auto state = std::make_unique<BlockStates>();
    for (const auto& block : blocks_) {
      state->streams.push_back(std::make_unique<CpuRunState>(engine_));
      state->states.push_back(block->createState());
    }
    return state;
  }

  void run(const KernelArgs& args, KernelState* raw_state) const override {
    auto* state = static_cast<BlockStates*>(raw_state);
    runShards(static_cast<int64_t>(blocks_.size()), args.num_threads - 1, [&](int64_t block) {
      // A pool worker's OpenMP count is the default, all cores: oneDNN's gemm would start a
      // team of its own from inside the block.
      ScopedOpenMpThreads one_thread(1);
      KernelArgs block_args = args;
      block_args.num_threads = 1;
      block_args.device = state->streams[block].get();
      blocks_[block]->run(block_args, state->states[block].get());
    });
  }

 private:
  std::string name_;
  dnnl::engine engine_;
  std::vector<std::unique_ptr<OnednnKernel>> blocks_;
  size_t scratch_bytes_;
  OwnedConstants owned_;  // constants the blocks read
};

}  // namespace

std::unique_ptr<Kernel> makeColumnBlockMatmul(const dnnl::engine& engine, const std::string& name,
                                              const dnnl::matmul::primitive_desc& whole,
                                              const std::vector<OnednnArg>& args,
                                              OwnedConstants owned, int blocks) {
  const dnnl::memory::desc whole_dst = whole.dst_desc();
  const int64_t n = whole_dst.dims().back();
  const int64_t width = roundUp((n + blocks - 1) / blocks, kColumnAlignment);
  if (blocks < 2 || width >= n) return nullptr;
  for (const OnednnArg& arg : args) {
    if (arg.dnnl_arg != DNNL_ARG_SCRATCHPAD && !isPlain(arg.desc)) return nullptr;
  }
  const dnnl::primitive_attr whole_attr = whole.get_primitive_attr();
  int scale_mask = 0;
  std::vector<float> scales;
  whole_attr.get_output_scales(scale_mask, scales);
  const dnnl::post_ops whole_post_ops = whole_attr.get_post_ops();
  if (scale_mask != 0) return nullptr;  // per-column scales would need their share too
  const std::string implementation = implName(whole);
  auto find = [&](int dnnl_arg) -> const OnednnArg* {
    for (const OnednnArg& arg : args) {
      if (arg.dnnl_arg == dnnl_arg) return &arg;
    }
    return nullptr;
  };
  const OnednnArg *src = find(DNNL_ARG_SRC), *weights = find(DNNL_ARG_WEIGHTS), *dst = find(DNNL_ARG_DST),
                  *bias = find(DNNL_ARG_BIAS);
  if (!src || !weights || !dst) return nullptr;

  ScopedOpenMpThreads one_thread(1);  // each block runs on one thread: its primitive is made for one
  std::vector<std::unique_ptr<OnednnKernel>> kernels;
  size_t scratch_bytes = 0;
  for (int64_t first = 0; first < n; first += width) {
    const int64_t columns = std::min(width, n - first);
    std::optional<dnnl::post_ops> post_ops = blockPostOps(whole_post_ops, n, columns);
    if (!post_ops) return nullptr;
    dnnl::primitive_attr attr = scratchpadAttr();
    attr.set_post_ops(*post_ops);
    if (!scales.empty()) attr.set_output_scales(scale_mask, scales);
    std::optional<dnnl::matmul::primitive_desc> made;
    try {
      const dnnl::memory::desc block_weights = columnsOf(weights->desc, columns), block_dst = columnsOf(dst->desc, columns);
      dnnl::matmul::desc desc = bias ? dnnl::matmul::desc(src->desc, block_weights,
                                                          spansColumns(DNNL_ARG_BIAS, bias->desc, n)
                                                              ? columnsOf(bias->desc, columns)
                                                              : bias->desc,
                                                          block_dst)
                                     : dnnl::matmul::desc(src->desc, block_weights, block_dst);
      dnnl::matmul::primitive_desc candidate(desc, attr, engine);
      do {
        if (implName(candidate) == implementation) {
          made = candidate;
          break;
        }
      } while (candidate.next_impl());
    } catch (const dnnl::error&) {
      return nullptr;
    }
    if (!made) return nullptr;
    std::vector<OnednnArg> block_args;
    for (const OnednnArg& arg : args) {
      OnednnArg block = arg;
      if (arg.dnnl_arg == DNNL_ARG_SCRATCHPAD) {
        block.desc = made->scratchpad_desc();
        block.offset = scratch_bytes;
        scratch_bytes += static_cast<size_t>(roundUp(static_cast<int64_t>(block.desc.get_size()), 64));
      } else if (spansColumns(arg.dnnl_arg, arg.desc, n)) {
        block.desc = columnsOf(arg.desc, columns);
        const size_t offset = columnOffsetBytes(arg.desc, first);
        if (arg.source == OnednnArg::Source::Constant) {
          block.constant = arg.constant ? static_cast<const std::byte*>(arg.constant) + offset : nullptr;
        } else {
          block.offset = arg.offset + offset;
        }
      }
      block_args.push_back(std::move(block));
    }
    kernels.push_back(std::make_unique<OnednnKernel>(name + " [" + std::to_string(first) + ", " +
                                                         std::to_string(first + columns) + ")",
                                                     engine, dnnl::matmul(*made), made->scratchpad_desc().get_size(),
                                                     std::move(block_args)));
  }
  const std::string kernel_name = name + " in " + std::to_string(kernels.size()) + " column blocks";
  return std::make_unique<ColumnBlockMatmul>(kernel_name, engine, std::move(kernels), scratch_bytes, std::move(owned));
}

}  // namespace estuary::ge::cpu
