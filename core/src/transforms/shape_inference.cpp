#include "estuary/transforms/shape_inference.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"

namespace estuary {

namespace {

// The recorded type refined by the inferred one. Raises on a contradiction.
TensorType refine(const TensorType& recorded, const TensorType& inferred, const Node& node,
                  size_t output) {
  auto conflict = [&]() {
    raise(node.describe(), ": output ", output, " is recorded as ", recorded.str(),
          " but its inputs give ", inferred.str());
  };
  TensorType result = recorded;
  if (inferred.dtype != DType::Undefined) {
    if (recorded.dtype != DType::Undefined && recorded.dtype != inferred.dtype) conflict();
    result.dtype = inferred.dtype;
  }
  if (!inferred.shape.isRanked()) return result;
  if (!recorded.shape.isRanked()) {
    result.shape = inferred.shape;
    return result;
  }
  if (recorded.shape.rank() != inferred.shape.rank()) conflict();
  for (size_t i = 0; i < inferred.shape.rank(); ++i) {
    const Dim& have = recorded.shape[i];
    const Dim& got = inferred.shape[i];
    if (have.isStatic() && got.isStatic() && have.value() != got.value()) conflict();
    // A static size beats a symbol (the inputs pin it down); otherwise the inferred
    // expression wins over the recorded one unless it knows nothing.
    if (got.isUnknown() || (have.isStatic() && !got.isStatic())) continue;
    result.shape[i] = got;
  }
  return result;
}

class ShapeInference {
 public:
  ShapeInference(const OpRegistry& ops, const ShapeInferenceOptions& options)
      : ops_(ops), options_(options), lookup_([this](const Value* value) {
          auto it = known_.find(value);
          return it == known_.end() ? nullptr : &it->second;
        }) {}

  int64_t run(Graph& graph) {
    int64_t changes = 0;
    for (Node* node : graph.topologicalOrder()) {
      for (Graph* subgraph : node->subgraphs()) changes += run(*subgraph);
      changes += inferNode(*node);
    }
    return changes;
  }

 private:
  int64_t inferNode(Node& node) {
    const OpSchema* schema = ops_.find(node);
    if (!schema || !schema->hasInference()) {
      if (options_.strict) {
        raise(node.describe(), ": ", schema ? "the op has no shape inference"
                                            : "no schema is registered for this op");
      }
      return 0;
    }
    schema->validate(node);
    InferenceContext context(node, *schema, lookup_);
    schema->infer(context);
    int64_t changes = 0;
    const std::vector<TensorType>& types = context.outputTypes();
    for (size_t i = 0; i < node.numOutputs() && i < types.size(); ++i) {
      Value* output = node.output(i);
      TensorType refined = refine(output->type(), types[i], node, i);
      if (refined != output->type()) {
        output->setType(std::move(refined));
        ++changes;
      }
    }
    for (const auto& [index, values] : context.outputValues()) {
      if (index < node.numOutputs()) known_[node.output(index)] = values;
    }
    return changes;
  }

  const OpRegistry& ops_;
  ShapeInferenceOptions options_;
  std::unordered_map<const Value*, std::vector<Dim>> known_;
  std::function<const std::vector<Dim>*(const Value*)> lookup_;
};

class ShapeInferencePass : public Pass {
 public:
  explicit ShapeInferencePass(ShapeInferenceOptions options) : options_(options) {}
  PassResult run(Graph& graph, PassContext& context) override {
    const OpRegistry& ops = context.ops ? *context.ops : OpRegistry::global();
    return {inferShapes(graph, ops, options_)};
  }

 private:
  ShapeInferenceOptions options_;
};

}  // namespace

int64_t inferShapes(Graph& graph, const OpRegistry& ops, const ShapeInferenceOptions& options) {
  return ShapeInference(ops, options).run(graph);
}

PassInfo shapeInferencePass() {
  PassInfo info;
  info.name = "infer-shapes";
  info.description =
      "Infers result types and shapes node by node, keeping symbolic dimensions and the "
      "known values of shape tensors.";
  info.options.push_back({"strict", OptionSpec::Kind::Bool, false,
                          "fail on ops without a schema or shape inference instead of "
                          "skipping them"});
  info.factory = [](const PassOptions& options) {
    return std::make_unique<ShapeInferencePass>(
        ShapeInferenceOptions{options.getBool("strict")});
  };
  return info;
}

}  // namespace estuary
