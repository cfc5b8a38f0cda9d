// The schemas of the ops backends' lowering makes (estuary/ops/backend_ops.h).
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/graph.h"
#include "estuary/ops/backend_ops.h"
#include "estuary/transforms/shape_inference.h"
#include "register.h"

namespace estuary {

const std::array<EpilogueFusion, 4>& epilogueFusions() {
  static const std::array<EpilogueFusion, 4> fusions{{
      {"Conv", "FusedConv", 3},
      {"ConvTranspose", "FusedConvTranspose", 3},
      {"MatMul", "FusedMatMul", 2},
      {"Gemm", "FusedGemm", 3},
  }};
  return fusions;
}

namespace {

// The permutation of a rank-`rank` tensor that swaps its last two axes.
std::vector<int64_t> swapLastTwoAxes(size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(d);
  if (rank >= 2) std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

// The output type of the base op applied to the fused node's first inputs, from the base
// op's own inference on a one-node scratch graph (the epilogue keeps type and shape).
void inferFused(InferenceContext& context, const EpilogueFusion& fusion) {
  Graph scratch("scratch");
  std::vector<Value*> inputs;
  for (size_t i = 0; i < fusion.base_inputs && i < context.numInputs(); ++i) {
    inputs.push_back(context.hasInput(i) ? scratch.addInput("in" + std::to_string(i), context.inputType(i)) : nullptr);
  }
  KnownValueMap known;
  const Attribute* trans_b = context.node().attr("transB");
  if (fusion.base == std::string_view("MatMul") && trans_b && trans_b->asInt() != 0 && inputs.size() > 1 &&
      context.inputShape(1).isRanked()) {
    Node* transpose = scratch.createNode("Transpose", {inputs[1]});
    transpose->setAttr("perm", swapLastTwoAxes(context.inputShape(1).rank()));
    inferNode(*transpose, known);
    inputs[1] = transpose->output();
  }
  Node* node = scratch.createNode(fusion.base, inputs);
  for (const auto& [name, attr] : context.node().attributes()) {
    if (name != "epilogue" && name != "transB") node->setAttr(name, attr);
  }
  inferNode(*node, known);
  context.setOutputType(0, node->output()->type());
}

}  // namespace

void registerBackendOps(OpRegistry& registry) {
  for (const EpilogueFusion& fusion : epilogueFusions()) {
    const OpSchema* original = registry.find(fusion.base);
    OpSchema fused(fusion.fused, "estuary");
    fused.doc(std::string(fusion.base) + " followed by the element-wise nodes of its `epilogue` subgraph.");
    for (const OperandSpec& input : original->inputs()) {
      fused.input(input.name, input.type_var, input.arity, input.homogeneous, input.min_count);
    }
    fused.input("epilogue_operands", original->inputs()[0].type_var, Arity::Variadic, true, 0);
    fused.output("Y", original->outputs()[0].type_var);
    for (const AttrSpec& attr : original->attrs()) fused.attr(attr.name, attr.kind, attr.default_value, attr.required);
    fused.requiredAttr("epilogue", AttrKind::Graph);
    if (fusion.base == std::string_view("MatMul")) fused.attr("transB", AttrKind::Int, int64_t{0});
    for (const TypeConstraint& constraint : original->typeConstraints()) {
      fused.typeConstraint(constraint.var, constraint.allowed);
    }
    fused.inference([&fusion](InferenceContext& context) { inferFused(context, fusion); });
    registry.add(std::move(fused));
  }

  OpSchema reorder("Reorder", "estuary");
  reorder.doc("Y holds X's values in the memory layout `layout` (plain, nhwc, nChw8c, nChw16c); a backend's "
              "layout assignment inserts it where a tensor meets a node that needs another layout.");
  reorder.input("X", "T").output("Y", "T").requiredAttr("layout", AttrKind::String).typeConstraint("T", allTypes());
  reorder.inference([](InferenceContext& context) { context.setOutputType(0, context.inputType(0)); });
  registry.add(std::move(reorder));
}

}  // namespace estuary
