// Element-wise ops: oneDNN binary primitives for broadcasting arithmetic on the types it
// supports.
#include "cpu/onednn_kernel.h"

namespace estuary::ge::cpu {

namespace {

// oneDNN's binary primitive broadcasts src1 only, over equal ranks: src0 must already have
// the output's shape.
std::unique_ptr<Kernel> onednnBinary(const KernelBuildContext& context, dnnl::algorithm algorithm) {
  const TensorDesc& a = context.input(0);
  const TensorDesc& b = context.input(1);
  const TensorDesc& out = context.output(0);
  if (!dnnlSupports(a.dtype) || a.dtype != b.dtype || a.dtype != out.dtype || a != out || b.rank > a.rank) {
    return nullptr;
  }
  TensorDesc b_full = b;  // left-pad with 1s to a's rank
  b_full.rank = a.rank;
  int pad = a.rank - b.rank;
  for (int i = a.rank - 1; i >= 0; --i) b_full.dims[i] = i >= pad ? b.dims[i - pad] : 1;
  const CpuDevice& cpu = cpuOf(context);
  dnnl::memory::desc a_md = plainDesc(a), b_md = plainDesc(b_full), out_md = plainDesc(out);
  dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm, a_md, b_md, out_md), scratchpadAttr(), cpu.engine());
  return std::make_unique<OnednnKernel>(
      "onednn:binary " + implName(pd), cpu.engine(), dnnl::binary(pd), pd.scratchpad_desc().get_size(),
      std::vector<OnednnArg>{{DNNL_ARG_SRC_0, OnednnArg::Source::Input, 0, a_md},
                             {DNNL_ARG_SRC_1, OnednnArg::Source::Input, 1, b_md},
                             {DNNL_ARG_DST, OnednnArg::Source::Output, 0, out_md},
                             {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0,
                              pd.scratchpad_desc()}});
}

}  // namespace

void registerElementwiseKernels(KernelRegistry& registry) {
  const std::pair<const char*, dnnl::algorithm> binaries[] = {
      {"Add", dnnl::algorithm::binary_add}, {"Sub", dnnl::algorithm::binary_sub},
      {"Mul", dnnl::algorithm::binary_mul}, {"Div", dnnl::algorithm::binary_div},
      {"Max", dnnl::algorithm::binary_max}, {"Min", dnnl::algorithm::binary_min},
  };
  for (const auto& [op, algorithm] : binaries) {
    registry.add(op, "", [algorithm = algorithm](const KernelBuildContext& context) {
      return onednnBinary(context, algorithm);
    });
  }
}

}  // namespace estuary::ge::cpu
