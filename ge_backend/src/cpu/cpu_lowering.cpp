// The CPU device's lowering: backend fusions and the choice of memory layouts, run by the
// plan builder as passes for every plan.
#include "cpu/batch_norm_folding.h"
#include "cpu/cpu_device.h"
#include "cpu/epilogue_fusion.h"
#include "cpu/layout_assignment.h"
#include "estuary/ge/model.h"
#include "estuary/ops/schema.h"
#include "estuary/transforms/cse.h"
#include "estuary/transforms/dce.h"

namespace estuary::ge::cpu {

std::vector<LoweringStep> CpuDevice::lowering(LoweringContext& context) const {
  const BuildOptions& options = context.options();
  BuildReport& report = context.report();
  auto kernelExists = [&context](const Node& node) { return context.kernelExists(node); };
  auto chooseLayouts = [&context, &options, &report](Graph& graph) -> int64_t {
    // Winograd (2.25x-4x fewer multiplications for 3x3 stride-1 convolutions) runs on one
    // layout: oneDNN's on nChw16c, Estuary's own (AVX2 CPUs) on channels-last. oneDNN's 1x1 and
    // strided kernels are as fast in nChw16c as in nhwc (ResNet-50: 1x1 convolutions 31 ms
    // either way on one thread), so a graph with convolutions Winograd takes keeps all its
    // chains in that layout: ResNet-50 b1 on one thread 57 -> 54 ms with oneDNN's
    // (bench/cnn_bench, alternating rounds).
    std::optional<Layout> chain_layout = options.activation_layout;
    for (const Node* node : graph.nodeList()) {
      if (chain_layout || !isConv(*node)) continue;
      chain_layout = winogradLayout(context.kernelContext(*node));
    }
    LayoutAssignment assigned = assignLayouts(
        graph, chain_layout, [&](const Node& conv) { return preferredConvLayout(context.kernelContext(conv)); },
        [&](const Node& node, const std::vector<Layout>& inputs, const std::vector<Layout>& outputs) {
          return context.kernelExists(node, inputs, outputs);  // if not, the node stays Plain
        });
    context.layouts = std::move(assigned.layouts);
    report.layout_reorders = assigned.reorders;
    return static_cast<int64_t>(assigned.reorders);
  };
  return {
      {"fold_batch_norms", "BatchNormalization and per-channel affine ops into the Conv before them",
       [&report](Graph& graph) {
         report.folded_batch_norms = foldBatchNormsIntoConvs(graph) + foldChannelAffinesIntoConvs(graph);
         return static_cast<int64_t>(report.folded_batch_norms);
       }},
      {"cse", "common subexpressions the specialization made equal",
       [](Graph& graph) { return static_cast<int64_t>(eliminateCommonSubexpressions(graph, OpRegistry::global())); }},
      {"dce", "dead nodes", [](Graph& graph) { return static_cast<int64_t>(eliminateDeadCode(graph)); }},
      {"fuse_epilogues", "bias, residual, scale and activation into the Conv/MatMul/Gemm before them",
       [&options, &report, kernelExists](Graph& graph) {
         report.fused_epilogues = options.fuse_epilogues ? fuseEpilogues(graph, kernelExists) : 0;
         return static_cast<int64_t>(report.fused_epilogues);
       }},
      {"fold_transposes", "Transposes read by a MatMul through strides",
       [&report, kernelExists](Graph& graph) {
         report.folded_transposes = foldTransposesIntoMatMuls(graph, kernelExists);
         return static_cast<int64_t>(report.folded_transposes);
       }},
      {"dce_after_fusion", "nodes the fusions left unused",
       [](Graph& graph) { return static_cast<int64_t>(eliminateDeadCode(graph)); }},
      {"assign_layouts", "blocked or channels-last layouts along convolution chains, with reorders",
       chooseLayouts},
  };
}

}  // namespace estuary::ge::cpu
