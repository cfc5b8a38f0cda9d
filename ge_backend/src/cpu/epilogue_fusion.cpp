#include "cpu/epilogue_fusion.h"

#include <unordered_map>
#include <unordered_set>

#include "cpu/post_ops.h"
#include "estuary/ge/kernel.h"
#include "estuary/ops/backend_ops.h"
#include "plan.h"

namespace estuary::ge::cpu {

namespace {

// The fused ops are the core's (estuary/ops/backend_ops.h); where a bias vector applies is the
// CPU fusion's own concern: the channel axis 1 for convolutions, the last axis otherwise.
using BaseOp = EpilogueFusion;

int channelAxisOf(const BaseOp& base) {
  const std::string_view op = base.base;
  return op == "Conv" || op == "ConvTranspose" ? 1 : -1;
}

const BaseOp* baseOf(const Node& node) {
  for (const BaseOp& base : epilogueFusions()) {
    if (node.is(base.base) || node.is(base.fused, "estuary")) return &base;
  }
  return nullptr;
}

// The permutation of a rank-`rank` tensor that swaps its last two axes.
std::vector<int64_t> swapLastTwoAxes(size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  if (rank >= 2) std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

bool isScalarConstant(const Value* value) {
  const Tensor* tensor = constantOf(value);
  return tensor && tensor->numElements() == 1 && tensor->dtype() == DType::F32;
}

// Whether `operand` is a vector along the result's channel axis (a bias).
bool isChannelVector(const Value* operand, const Value* result, int channel_axis) {
  const Shape& shape = operand->shape();
  const Shape& out = result->shape();
  if (!constantOf(operand) || !shape.isRanked() || !out.isRanked() || out.rank() < 2) return false;
  size_t axis = channel_axis < 0 ? out.rank() - 1 : static_cast<size_t>(channel_axis);
  const Dim& channels = out[axis];
  if (!channels.isStatic()) return false;
  // [C], or [C,1,...,1] trailing the channel axis for convolutions.
  if (shape.rank() == 1) return axis == out.rank() - 1 && shape[0] == channels;
  if (shape.rank() != out.rank() - axis) return false;
  for (size_t i = 1; i < shape.rank(); ++i) {
    if (shape[i] != Dim(1)) return false;
  }
  return shape[0] == channels;
}

// One more node for the chain ending at `current`, or nullptr.
Node* nextInChain(const Value* current, int channel_axis) {
  if (current->uses().size() != 1) return nullptr;
  Node* user = current->uses()[0].user;
  if (user->isReturn() || !user->domain().empty() || user->numOutputs() != 1) return nullptr;
  if (user->is("Add") || user->is("Mul")) {
    const Value* other = user->input(user->input(0) == current ? 1 : 0);
    if (other == current) return nullptr;
    bool same_shape = other->shape().isRanked() && other->shape() == current->shape();
    if (user->is("Mul")) return isScalarConstant(other) || (same_shape && other->dtype() == current->dtype()) ? user : nullptr;
    bool bias = isChannelVector(other, current, channel_axis);
    return (same_shape || bias) && other->dtype() == current->dtype() ? user : nullptr;
  }
  return fusesAccurately(*user) ? user : nullptr;
}

}  // namespace

bool fusesAccurately(const Node& node) {
  // Measured with oneDNN 2.6 (tests/ge/epilogue_accuracy_test.cpp prints the table): these
  // post-ops match the unfused kernels on every number. Relu, Clip and HardSigmoid map a NaN
  // input to their lower bound, as ONNX Runtime's fused convolutions (MLAS's max/min) do;
  // refusing them would leave every CNN's activations unfused for the sake of NaN inputs.
  // Swish (SiLU, the gated MLP's activation) and Exp flush results below about 1e-35 in
  // magnitude to zero, a difference no model observes (the test ignores differences below
  // 1e-30); Exp maps a NaN input to infinity. The others stay separate nodes: elu computes
  // e^x - 1 and returns 0 for tiny negative x; gelu (both forms), soft_relu and mish are 0 or
  // wrong by orders of magnitude in the negative tail (x < -5, where the true value is
  // ~1e-7); log is off by 15 for denormal inputs.
  static const char* const kExact[] = {"Relu",      "Clip", "HardSigmoid", "LeakyRelu", "Sigmoid",
                                       "Tanh",      "HardSwish", "Abs", "Sqrt",  "Swish", "Exp"};
  if (activationSteps(node).empty()) return false;
  for (const char* op : kExact) {
    if (node.is(op)) return true;
  }
  // In 16 bits gelu fuses too: its post-op's error is the tail's values of at most ~1e-7
  // flushed to 0, far below the rounding of a bf16 or f16 output, and as its own node it
  // cost a 16-bit BERT encoder a third of its products' time (45 against 142 ms at 8
  // sequences, Xeon with AMX, 2 threads).
  const DType dtype = node.output()->dtype();
  return node.is("Gelu") && (dtype == DType::BF16 || dtype == DType::F16);
}

size_t fuseEpilogues(Graph& graph, const std::function<bool(const Node&)>& kernel_accepts) {
  size_t absorbed = 0;
  std::unordered_set<const Node*> erased;  // absorbed nodes still listed in the walk
  for (Node* node : graph.nodeList()) {
    if (erased.count(node) || !node->domain().empty()) continue;
    const BaseOp* base = baseOf(*node);
    if (!base || node->numOutputs() != 1 || node->numInputs() > base->base_inputs) continue;
    std::vector<Node*> chain;
    for (Node* next = nextInChain(node->output(), channelAxisOf(*base)); next;
         next = nextInChain(chain.back()->output(), channelAxisOf(*base))) {
      chain.push_back(next);
    }
    if (chain.empty()) continue;

    // The epilogue subgraph: the base result comes in as %y; every other operand of the
    // chain (a residual, a bias, a scale) becomes a further input.
    auto epilogue = std::make_shared<Graph>("epilogue");
    std::vector<Value*> operands;
    std::unordered_map<const Value*, Value*> inside{{node->output(), epilogue->addInput("y", node->output()->type())}};
    for (Node* step : chain) {
      std::vector<Value*> step_inputs;
      for (Value* input : step->inputs()) {
        if (!input) {
          step_inputs.push_back(nullptr);
          continue;
        }
        auto found = inside.find(input);
        if (found == inside.end() && !step->is("Add") && !step->is("Mul") && constantOf(input)) {
          // An activation's constant parameters (Clip's bounds) are copied inside, where the
          // kernel reads them from the step itself.
          Node* constant = epilogue->createNode("Constant", {});
          constant->setAttr("value", *input->producer()->attr("value"));
          constant->output()->setType(input->type());
          found = inside.emplace(input, constant->output()).first;
        }
        if (found == inside.end()) {
          operands.push_back(input);
          found = inside.emplace(input, epilogue->addInput("operand" + std::to_string(operands.size()),
                                                             input->type())).first;
        }
        step_inputs.push_back(found->second);
      }
      Node* copy = epilogue->createNode(step->opType(), step_inputs);
      for (const auto& [name, attr] : step->attributes()) copy->setAttr(name, attr);
      copy->output()->setType(step->output()->type());
      inside[step->output()] = copy->output();
    }
    epilogue->addOutput(inside.at(chain.back()->output()));

    std::vector<Value*> inputs = node->inputs();
    inputs.resize(base->base_inputs, nullptr);  // absent optional inputs keep their positions
    inputs.insert(inputs.end(), operands.begin(), operands.end());
    Node* fused = graph.createNodeBefore(chain.back(), base->fused, inputs, 1, "estuary");
    for (const auto& [name, attr] : node->attributes()) fused->setAttr(name, attr);
    fused->setAttr("epilogue", epilogue);
    fused->setName(node->name());
    Value* result = chain.back()->output();
    fused->output()->setType(result->type());
    if (!kernel_accepts(*fused)) {
      graph.eraseNode(fused);
      continue;
    }
    fused->output()->setName(result->name());
    result->replaceAllUsesWith(fused->output());
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      erased.insert(*it);
      graph.eraseNode(*it);
    }
    graph.eraseNode(node);
    absorbed += chain.size();
  }
  return absorbed;
}

size_t foldTransposesIntoMatMuls(Graph& graph, const std::function<bool(const Node&)>& kernel_accepts) {
  size_t folded = 0;
  for (Node* node : graph.nodeList()) {
    const bool plain = node->is("MatMul"), fused = node->is("FusedMatMul", "estuary");
    if ((!plain && !fused) || node->numInputs() < 2 || !node->input(1)) continue;
    if (fused && node->attr("transB") && node->attr("transB")->asInt() != 0) continue;
    const Node* transpose = node->input(1)->producer();
    if (!transpose || !transpose->is("Transpose") || !transpose->attr("perm")) continue;
    const size_t rank = node->input(1)->shape().rank();
    if (rank < 2 || transpose->attr("perm")->asInts() != swapLastTwoAxes(rank)) continue;

    std::vector<Value*> inputs = node->inputs();
    inputs[1] = transpose->input(0);
    Node* replacement = graph.createNodeBefore(node, "FusedMatMul", inputs, 1, "estuary");
    for (const auto& [name, attr] : node->attributes()) replacement->setAttr(name, attr);
    if (plain) {
      // An empty epilogue: the subgraph returns the product itself.
      auto epilogue = std::make_shared<Graph>("epilogue");
      epilogue->addOutput(epilogue->addInput("y", node->output()->type()));
      replacement->setAttr("epilogue", epilogue);
    }
    replacement->setAttr("transB", int64_t{1});
    replacement->setName(node->name());
    replacement->output()->setType(node->output()->type());
    if (!kernel_accepts(*replacement)) {
      graph.eraseNode(replacement);
      continue;
    }
    replacement->output()->setName(node->output()->name());
    node->output()->replaceAllUsesWith(replacement->output());
    graph.eraseNode(node);
    ++folded;
  }
  return folded;
}

namespace {

// Reads the epilogue subgraph back into kernel steps. Subgraph input k (k >= 1) is fused
// node input base.base_inputs + k - 1.
std::optional<Epilogue> epilogueOf(const KernelBuildContext& context, const BaseOp& base) {
  const Attribute* attr = context.node().attr("epilogue");
  if (!attr) return std::nullopt;
  const Graph& body = *attr->asGraph();
  auto operandIndex = [&](const Value* value) -> std::optional<size_t> {
    if (!value->isGraphInput() || value->graph() != &body || value->index() == 0) return std::nullopt;
    return base.base_inputs + value->index() - 1;
  };
  Epilogue epilogue;
  const Value* current = body.input(0);
  for (Node* step : body.nodes()) {
    if (step->is("Constant")) continue;  // an activation's parameter
    if (step->numInputs() == 0 || (step->input(0) != current && (step->numInputs() < 2 || step->input(1) != current))) {
      return std::nullopt;
    }
    if (step->is("Add") || step->is("Mul")) {
      auto index = operandIndex(step->input(step->input(0) == current ? 1 : 0));
      if (!index) return std::nullopt;
      if (step->is("Mul")) {
        const Tensor* factor = context.constantInput(*index);
        if (factor && factor->dtype() == DType::F32 && factor->numElements() == 1) {
          epilogue.steps.push_back(EpilogueStep::scale(*factor->data<float>()));
        } else if (!factor && context.input(*index).numElements() == context.output(0).numElements()) {
          epilogue.steps.push_back(EpilogueStep::product(*index));
        } else {
          return std::nullopt;
        }
      } else {
        const TensorDesc& operand = context.input(*index);
        bool full = operand.numElements() == context.output(0).numElements();
        epilogue.steps.push_back(full ? EpilogueStep::residual(*index) : EpilogueStep::bias(*index));
      }
    } else {
      std::vector<EpilogueStep> steps = activationSteps(*step);
      if (steps.empty()) return std::nullopt;
      epilogue.steps.insert(epilogue.steps.end(), steps.begin(), steps.end());
    }
    current = step->output();
  }
  return epilogue;
}

}  // namespace

void registerFusedKernels(KernelRegistry& registry) {
  using Maker = std::unique_ptr<Kernel> (*)(const KernelBuildContext&, const Epilogue&);
  const std::pair<const BaseOp*, Maker> makers[] = {
      {&epilogueFusions()[0], [](const KernelBuildContext& c, const Epilogue& e) { return makeConvKernel(c, e); }},
      {&epilogueFusions()[1], [](const KernelBuildContext& c, const Epilogue& e) { return makeConvTransposeKernel(c, e); }},
      {&epilogueFusions()[2], makeMatMulKernel},
      {&epilogueFusions()[3], makeGemmKernel},
  };
  for (const auto& [base, make] : makers) {
    auto factory = [base = base, make = make](const KernelBuildContext& context) {
      std::optional<Epilogue> epilogue = epilogueOf(context, *base);
      if (!epilogue) context.fail("its epilogue has a step the CPU kernel cannot apply");
      return make(context, *epilogue);
    };
    // The convolutions run in other layouts than Plain too (makeConvKernel).
    if (channelAxisOf(*base) == 1) {
      registry.addLayoutAware(base->fused, "estuary", factory);
    } else {
      registry.add(base->fused, "estuary", factory);
    }
  }
}

}  // namespace estuary::ge::cpu
