// Control flow with subgraphs: If and Loop. Inference infers the subgraphs in place and
// derives the node's output types from their outputs.
#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

// A condition or trip count: one element, as a scalar or a [1] tensor.
void checkSingleElement(const InferenceContext& context, size_t input) {
  const Shape& shape = context.inputShape(input);
  if (!context.hasInput(input) || !shape.isRanked()) return;
  Dim count = shape.numElements();
  if (shape.rank() > 1 || (count.isStatic() && count.value() != 1)) {
    context.fail("input ", input, " '", context.schema().inputs()[input].name,
                 "' must hold one element, got ", shape.str());
  }
}

Graph& subgraph(const InferenceContext& context, std::string_view name) {
  return *context.attr(name)->asGraph();
}

// The most precise type both a and b satisfy (If's two branches).
TensorType generalize(const InferenceContext& context, const TensorType& a, const TensorType& b,
                      size_t output) {
  if (a.dtype != DType::Undefined && b.dtype != DType::Undefined && a.dtype != b.dtype) {
    context.fail("output ", output, " is ", dtypeName(a.dtype), " in then_branch but ",
                 dtypeName(b.dtype), " in else_branch");
  }
  TensorType result;
  result.dtype = a.dtype != DType::Undefined ? a.dtype : b.dtype;
  if (a.shape.isRanked() && b.shape.isRanked() && a.shape.rank() == b.shape.rank()) {
    std::vector<Dim> dims(a.shape.rank());
    for (size_t d = 0; d < dims.size(); ++d) {
      if (a.shape[d].provablyEqual(b.shape[d])) dims[d] = a.shape[d];
    }
    result.shape = Shape(std::move(dims));
  }
  return result;
}

void inferIf(InferenceContext& context) {
  checkSingleElement(context, 0);
  // A condition known here (Size(x) == 4 in ONNX's function bodies) leaves the other branch
  // unused, and it may not even be valid for these inputs (a Split into 4 of a 5-vector):
  // only the taken branch is inferred; the backend runs only that one.
  if (std::optional<std::vector<int64_t>> condition = context.knownInts(0); condition && condition->size() == 1) {
    Graph& branch = subgraph(context, (*condition)[0] ? "then_branch" : "else_branch");
    std::vector<TensorType> taken = context.inferSubgraph(branch, {});
    if (taken.size() != context.numOutputs()) {
      context.fail("has ", context.numOutputs(), " outputs but its ", (*condition)[0] ? "then" : "else",
                   "_branch returns ", taken.size());
    }
    for (size_t i = 0; i < taken.size(); ++i) {
      context.setOutputType(i, taken[i]);
      // Sizes computed in the branch (a Split of a shape) stay known after it.
      if (std::optional<std::vector<SymInt>> values = context.knownValuesOf(branch.output(i))) {
        context.setOutputValues(i, std::move(*values));
      }
    }
    return;
  }
  std::vector<TensorType> then_types = context.inferSubgraph(subgraph(context, "then_branch"), {});
  std::vector<TensorType> else_types = context.inferSubgraph(subgraph(context, "else_branch"), {});
  if (then_types.size() != else_types.size() || then_types.size() != context.numOutputs()) {
    context.fail("has ", context.numOutputs(), " outputs but then_branch returns ",
                 then_types.size(), " and else_branch ", else_types.size());
  }
  for (size_t i = 0; i < then_types.size(); ++i) {
    context.setOutputType(i, generalize(context, then_types[i], else_types[i], i));
  }
}

void inferLoop(InferenceContext& context) {
  checkSingleElement(context, 0);
  checkSingleElement(context, 1);
  Graph& body = subgraph(context, "body");
  size_t carried = context.numInputs() - 2;
  if (body.inputs().size() != carried + 2) {
    context.fail("carries ", carried, " values, so its body must take ", carried + 2,
                 " inputs (iteration number, condition, carried values), it takes ",
                 body.inputs().size());
  }
  if (body.numOutputs() < carried + 1) {
    context.fail("carries ", carried, " values, so its body must return at least ", carried + 1,
                 " values (condition, carried values), it returns ", body.numOutputs());
  }
  size_t scanned = body.numOutputs() - 1 - carried;
  if (context.numOutputs() != carried + scanned) {
    context.fail("has ", context.numOutputs(), " outputs but its body yields ", carried,
                 " carried and ", scanned, " scanned values");
  }
  // Carried values may change shape from one iteration to the next, so the body sees
  // only their element types (as in ONNX).
  std::vector<TensorType> body_inputs{TensorType(DType::I64, Shape()),
                                      TensorType(DType::Bool, Shape())};
  for (size_t k = 0; k < carried; ++k) {
    body_inputs.emplace_back(context.inputType(2 + k).dtype, Shape::unranked());
  }
  std::vector<TensorType> body_outputs = context.inferSubgraph(body, body_inputs);
  for (size_t k = 0; k < carried; ++k) {
    const TensorType& initial = context.inputType(2 + k);
    const TensorType& next = body_outputs[1 + k];
    if (initial.dtype != DType::Undefined && next.dtype != DType::Undefined &&
        initial.dtype != next.dtype) {
      context.fail("carried value ", k, " enters as ", dtypeName(initial.dtype),
                   " but the body returns ", dtypeName(next.dtype));
    }
    DType dtype = initial.dtype != DType::Undefined ? initial.dtype : next.dtype;
    // The shape is known when the body provably keeps it.
    context.setOutputType(k, TensorType(dtype, initial == next ? next.shape : Shape::unranked()));
  }
  for (size_t k = 0; k < scanned; ++k) {
    const TensorType& element = body_outputs[1 + carried + k];
    Shape shape = Shape::unranked();
    if (element.shape.isRanked()) {
      std::vector<Dim> dims{Dim::unknown()};
      dims.insert(dims.end(), element.shape.dims().begin(), element.shape.dims().end());
      shape = Shape(std::move(dims));
    }
    context.setOutputType(carried + k, TensorType(element.dtype, std::move(shape)));
  }
}

}  // namespace

void registerControlFlowOps(OpRegistry& registry) {
  registry.add(OpSchema("If")
                   .input("cond", "B")
                   .output("outputs", "V", Arity::Variadic, false)
                   .requiredAttr("else_branch", AttrKind::Graph)
                   .requiredAttr("then_branch", AttrKind::Graph)
                   .typeConstraint("B", {DType::Bool})
                   .typeConstraint("V", allTypes())
                   .inference(inferIf));
  registry.add(OpSchema("Loop")
                   .input("M", "I", Arity::Optional)
                   .input("cond", "B", Arity::Optional)
                   .input("v_initial", "V", Arity::Variadic, false, 0)
                   .output("v_final_and_scan_outputs", "V", Arity::Variadic, false)
                   .requiredAttr("body", AttrKind::Graph)
                   .typeConstraint("I", {DType::I64})
                   .typeConstraint("B", {DType::Bool})
                   .typeConstraint("V", allTypes())
                   .inference(inferLoop));
}

}  // namespace estuary
