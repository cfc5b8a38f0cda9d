#include "cpu/layout_assignment.h"

#include <map>

#include "cpu/nn_support.h"
#include "cpu/post_ops.h"

namespace estuary::ge::cpu {

bool isConv(const Node& node) { return node.is("Conv") || node.is("FusedConv", "estuary"); }

namespace {

// Nodes that take over a layout from their inputs: their oneDNN kernels run in any layout.
bool isPooling(const Node& node) {
  return (node.is("MaxPool") && node.numOutputs() == 1) || node.is("AveragePool") ||
         node.is("GlobalAveragePool") || node.is("GlobalMaxPool");
}

const std::pair<const char*, dnnl::algorithm> kBinaryOps[] = {
    {"Add", dnnl::algorithm::binary_add}, {"Sub", dnnl::algorithm::binary_sub},
    {"Mul", dnnl::algorithm::binary_mul}, {"Div", dnnl::algorithm::binary_div},
    {"Max", dnnl::algorithm::binary_max}, {"Min", dnnl::algorithm::binary_min},
};

std::optional<dnnl::algorithm> binaryAlgorithm(const Node& node) {
  if (!node.domain().empty() || node.numInputs() != 2) return std::nullopt;
  for (const auto& [op, algorithm] : kBinaryOps) {
    if (node.is(op)) return algorithm;
  }
  return std::nullopt;
}

// Concat along the channel axis.
bool isChannelConcat(const Node& node) {
  if (!node.is("Concat") || !node.output()->shape().isRanked()) return false;
  const int64_t rank = static_cast<int64_t>(node.output()->shape().rank());
  const int64_t axis = node.intAttr("axis", 0);
  return (axis < 0 ? axis + rank : axis) == 1;
}

bool isConstant(const Value* value) { return value && value->producer() && value->producer()->is("Constant"); }

bool sameStaticShape(const Value* a, const Value* b) {
  return a->shape().isStatic() && b->shape().isStatic() && a->shape() == b->shape();
}

// The inputs of `node` that would share its output's layout (activations, residuals), or
// nothing when the node has no kernel for a layout other than Plain.
std::vector<size_t> layoutInputs(const Node& node) {
  if (node.numOutputs() != 1 || node.numInputs() == 0 || !node.input(0) || node.is("Constant")) return {};
  const Value* output = node.output();
  if (output->dtype() != DType::F32 || !output->shape().isStatic()) return {};
  const size_t rank = output->shape().rank();
  if (rank < 3 || rank > 5) return {};
  std::vector<size_t> inputs;
  if (isConv(node)) {
    inputs.push_back(0);
    // estuary::FusedConv: the epilogue's residuals of the output's shape (after X, W, B).
    for (size_t i = 3; i < node.numInputs(); ++i) {
      if (node.input(i) && sameStaticShape(node.input(i), output)) inputs.push_back(i);
    }
  } else if (isPooling(node) || node.is("BatchNormalization") || activationSteps(node).size() == 1) {
    inputs.push_back(0);
  } else if (isChannelConcat(node)) {
    for (size_t i = 0; i < node.numInputs(); ++i) {
      if (!node.input(i)) return {};
      inputs.push_back(i);
    }
  } else if (binaryAlgorithm(node)) {
    if (!sameStaticShape(node.input(0), output) || !sameStaticShape(node.input(1), output)) return {};
    inputs = {0, 1};
  }
  for (size_t i : inputs) {
    if (isConstant(node.input(i)) || node.input(i)->dtype() != DType::F32) return {};
  }
  return inputs;
}

}  // namespace

LayoutAssignment assignLayouts(Graph& graph, std::optional<Layout> forced, const PreferredLayout& preferred,
                               const LayoutProbe& accepts) {
  LayoutAssignment result;
  if (forced == Layout::Plain) return result;
  auto layoutOfValue = [&](const Value* value) {
    auto found = result.layouts.find(value);
    return found == result.layouts.end() ? Layout::Plain : found->second;
  };

  // Forward: every node takes the layout of its chain when its kernel accepts it; what
  // each node wants its inputs in is remembered for the reorders.
  std::unordered_map<const Node*, std::vector<Layout>> wanted;
  const std::vector<Node*> nodes = graph.nodeList();
  for (Node* node : nodes) {
    std::vector<size_t> inputs = layoutInputs(*node);
    if (inputs.empty()) continue;
    Layout layout = Layout::Plain;
    for (size_t i : inputs) {
      if (layoutOfValue(node->input(i)) != Layout::Plain) {
        layout = layoutOfValue(node->input(i));
        break;
      }
    }
    // A convolution whose input is Plain starts a chain.
    const bool starts_chain = layout == Layout::Plain && isConv(*node);
    if (starts_chain) layout = forced ? *forced : preferred(*node).value_or(Layout::Plain);
    if (layout == Layout::Plain) continue;
    std::vector<Layout> input_layouts(node->numInputs(), Layout::Plain);
    for (size_t i : inputs) input_layouts[i] = layout;
    if (!accepts(*node, input_layouts, {layout})) {
      // The chain's first convolution may read its input as it is and write the chain's
      // layout: oneDNN's kernels for a few input channels (an image's 3) read plain and
      // write blocked. Else a stem convolution stays plain, and so does the pooling after
      // it (ResNet-50: oneDNN's plain max pooling, 14 of 108 ms).
      input_layouts.assign(node->numInputs(), Layout::Plain);
      if (!starts_chain || !accepts(*node, input_layouts, {layout})) continue;
    }
    wanted[node] = std::move(input_layouts);
    result.layouts[node->output()] = layout;
  }
  if (result.layouts.empty()) return result;

  // Reorders where a value's layout differs from what a reader wants; one per value and
  // layout, placed before its first reader.
  std::map<std::pair<const Value*, Layout>, Value*> reordered;
  auto reorder = [&](Value* value, Layout layout, Node* before) {
    auto [it, added] = reordered.emplace(std::make_pair(value, layout), nullptr);
    if (!added) return it->second;
    Node* node = graph.createNodeBefore(before, "Reorder", {value}, 1, "estuary");
    node->setAttr("layout", std::string(layoutName(layout)));
    node->setName(value->name() + "/" + layoutName(layout));
    node->output()->setType(value->type());
    node->output()->setName(node->name());
    if (layout != Layout::Plain) result.layouts[node->output()] = layout;
    ++result.reorders;
    return it->second = node->output();
  };
  for (Node* node : nodes) {
    auto want = wanted.find(node);
    for (size_t i = 0; i < node->numInputs(); ++i) {
      Value* input = node->input(i);
      if (!input) continue;
      Layout layout = want == wanted.end() ? Layout::Plain : want->second[i];
      if (layoutOfValue(input) != layout) node->setInput(i, reorder(input, layout, node));
    }
  }
  for (size_t k = 0; k < graph.numOutputs(); ++k) {
    Value* output = graph.output(k);
    if (layoutOfValue(output) != Layout::Plain) graph.setOutput(k, reorder(output, Layout::Plain, nullptr));
  }
  for (const Graph::InputUpdate& update : graph.inputUpdates()) {
    if (layoutOfValue(update.new_value) != Layout::Plain) {
      graph.setInputUpdate(update.input, reorder(update.new_value, Layout::Plain, nullptr));
    }
  }
  return result;
}

namespace {

std::unique_ptr<Kernel> makeReorder(const KernelBuildContext& context) {
  ScopedOpenMpThreads threads(context.maxThreads());
  const TensorDesc &from = context.input(0), &to = context.output(0);
  return reorderKernel(cpuOf(context).engine(), layoutDesc(from), layoutDesc(to),
                       std::string("onednn:reorder ") + layoutName(from.layout) + " -> " + layoutName(to.layout));
}

bool anyNotPlain(const KernelBuildContext& context) {
  for (size_t i = 0; i < context.numInputs(); ++i) {
    if (context.hasInput(i) && context.input(i).layout != Layout::Plain) return true;
  }
  return context.output(0).layout != Layout::Plain;
}

// An activation (one eltwise step) on a tensor that is not Plain; Plain ones run on the
// element-wise kernels.
std::unique_ptr<Kernel> makeLayoutActivation(const KernelBuildContext& context) {
  if (!anyNotPlain(context) || context.output(0).dtype != DType::F32) return nullptr;
  std::vector<EpilogueStep> steps = activationSteps(context.node());
  if (steps.size() != 1 || context.input(0) != context.output(0)) return nullptr;
  for (size_t i = 1; i < context.numInputs(); ++i) {
    if (context.hasInput(i) && context.input(i).layout != Layout::Plain) return nullptr;  // Clip's bounds
  }
  ScopedOpenMpThreads threads(context.maxThreads());
  const dnnl::engine& engine = cpuOf(context).engine();
  dnnl::memory::desc data = layoutDesc(context.output(0));
  try {
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, steps[0].activation, data, steps[0].alpha,
                                     steps[0].beta);
    dnnl::eltwise_forward::primitive_desc pd(desc, scratchpadAttr(), engine);
    return std::make_unique<OnednnKernel>(
        "onednn:eltwise " + implName(pd), engine, dnnl::eltwise_forward(pd), pd.scratchpad_desc().get_size(),
        std::vector<OnednnArg>{{DNNL_ARG_SRC, OnednnArg::Source::Input, 0, data},
                               {DNNL_ARG_DST, OnednnArg::Source::Output, 0, data},
                               {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// A binary element-wise op on two tensors of the output's shape and layout.
std::unique_ptr<Kernel> makeLayoutBinary(const KernelBuildContext& context, dnnl::algorithm algorithm) {
  if (!anyNotPlain(context) || context.output(0).dtype != DType::F32) return nullptr;
  if (context.input(0) != context.output(0) || context.input(1) != context.output(0)) return nullptr;
  ScopedOpenMpThreads threads(context.maxThreads());
  const dnnl::engine& engine = cpuOf(context).engine();
  dnnl::memory::desc data = layoutDesc(context.output(0));
  try {
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm, data, data, data), scratchpadAttr(), engine);
    return std::make_unique<OnednnKernel>(
        "onednn:binary " + implName(pd), engine, dnnl::binary(pd), pd.scratchpad_desc().get_size(),
        std::vector<OnednnArg>{{DNNL_ARG_SRC_0, OnednnArg::Source::Input, 0, data},
                               {DNNL_ARG_SRC_1, OnednnArg::Source::Input, 1, data},
                               {DNNL_ARG_DST, OnednnArg::Source::Output, 0, data},
                               {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// Concat along channels of tensors in one layout (other axes stay with the plain kernel).
std::unique_ptr<Kernel> makeLayoutConcat(const KernelBuildContext& context) {
  const TensorDesc& output = context.output(0);
  if (!anyNotPlain(context) || output.dtype != DType::F32 || output.rank < 3) return nullptr;
  int64_t axis = context.intAttr("axis");
  if ((axis < 0 ? axis + output.rank : axis) != 1) return nullptr;
  ScopedOpenMpThreads threads(context.maxThreads());
  const dnnl::engine& engine = cpuOf(context).engine();
  std::vector<dnnl::memory::desc> sources;
  std::vector<OnednnArg> args;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    if (!context.hasInput(i) || context.input(i).layout != output.layout || context.input(i).dtype != DType::F32) {
      return nullptr;
    }
    sources.push_back(layoutDesc(context.input(i)));
    args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), OnednnArg::Source::Input, i, sources.back()});
  }
  try {
    const dnnl::memory::desc dst = layoutDesc(output);
    dnnl::concat::primitive_desc pd(dst, 1, sources, engine, scratchpadAttr());
    args.push_back({DNNL_ARG_DST, OnednnArg::Source::Output, 0, dst});
    args.push_back({DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()});
    return std::make_unique<OnednnKernel>("onednn:concat " + implName(pd), engine, dnnl::concat(pd),
                                          pd.scratchpad_desc().get_size(), std::move(args));
  } catch (const dnnl::error&) {
    return nullptr;  // e.g. blocked channels that do not split at block boundaries
  }
}

}  // namespace

void registerLayoutKernels(KernelRegistry& registry) {
  registry.addLayoutAware("Concat", "", makeLayoutConcat);
  registry.addLayoutAware("Reorder", "estuary", makeReorder);
  // The single-step activations activationSteps() knows, but Log: log(0) = -inf in a blocked
  // tensor's zero channel padding would turn a following convolution's sums into NaN.
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "Gelu", "HardSwish", "Softplus", "Mish",
                         "Abs", "Exp", "Sqrt", "Clip"}) {
    registry.addLayoutAware(op, "", makeLayoutActivation);
  }
  for (const auto& [op, algorithm] : kBinaryOps) {
    registry.addLayoutAware(op, "", [algorithm = algorithm](const KernelBuildContext& context) {
      return makeLayoutBinary(context, algorithm);
    });
  }
}

}  // namespace estuary::ge::cpu
