#pragma once
// Layout assignment: chains of convolutions, with the pooling, batch normalization,
// activation, element-wise and channel Concat nodes between them, keep their activations in the layout
// oneDNN's convolutions run fastest on (TensorDesc::layout). The first convolution of a
// chain picks the layout (oneDNN's own choice with format_tag::any, or a forced one), the
// nodes after it take it over when their kernels accept it, and estuary::Reorder nodes are
// inserted only where a tensor meets a node that needs another layout, and before graph
// outputs and input updates (always Plain).
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "estuary/ge/device.h"
#include "estuary/ge/kernel.h"
#include "estuary/ir/graph.h"
#include "estuary/ops/schema.h"

namespace estuary::ge::cpu {

// Conv or estuary::FusedConv.
bool isConv(const Node& node);

struct LayoutAssignment {
  LayoutMap layouts;
  size_t reorders = 0;  // estuary::Reorder nodes inserted
};

// Whether a kernel takes `node` with these input and output layouts.
using LayoutProbe =
    std::function<bool(const Node& node, const std::vector<Layout>& inputs, const std::vector<Layout>& outputs)>;
// The layout a convolution node would like its activations in, or nullopt.
using PreferredLayout = std::function<std::optional<Layout>(const Node& conv)>;

// `forced`: the layout of every chain instead of the preferred one. Layout::Plain (or no
// convolution accepting another layout) leaves the graph unchanged.
LayoutAssignment assignLayouts(Graph& graph, std::optional<Layout> forced, const PreferredLayout& preferred,
                               const LayoutProbe& accepts);

// What oneDNN's convolution primitive picks for a Conv (or estuary::FusedConv) node's
// activations when asked with format_tag::any, if it is a Layout and a direct (JIT)
// implementation runs it; defined in conv.cpp.
std::optional<Layout> preferredConvLayout(const KernelBuildContext& context);
// The layout a Winograd convolution runs a Conv node in, if Winograd takes it (f32, 3x3,
// stride 1): oneDNN's nChw16c on AVX-512 (see conv.cpp), channels-last for Estuary's own on
// AVX2 CPUs without it (winograd_conv.h); defined in conv.cpp.
std::optional<Layout> winogradLayout(const KernelBuildContext& context);

// The kernels of estuary::Reorder (a core op, estuary/ops/backend_ops.h, which the layout
// assignment inserts), and oneDNN kernels for activations, same-shape binary element-wise ops and
// Concat along channels on tensors that are not Plain.
void registerLayoutKernels(KernelRegistry& registry);

}  // namespace estuary::ge::cpu
