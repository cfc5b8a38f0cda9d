#include "estuary/transforms/shape_inference.h"

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"

namespace estuary {

int64_t inferShapes(Graph& graph, const OpRegistry& ops, const ShapeInferenceOptions& options) {
  KnownValueMap known;
  int64_t changes = 0;
  // Valid IR keeps its node list in topological order (the verifier checks it), and a walk
  // of the list costs a fraction of Graph::topologicalOrder() on large graphs.
  for (Node* node : graph.nodes()) {
    switch (inferNode(*node, known, ops)) {
      case InferStatus::Changed:
        ++changes;
        break;
      case InferStatus::NoSchema:
        if (options.strict) {
          raise(node->describe(), ": no schema is registered for ", node->qualifiedOpType(),
                ", so its result types cannot be inferred (strict shape inference)");
        }
        break;
      case InferStatus::Unchanged:
        break;
    }
  }
  return changes;
}

namespace {

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

PassInfo shapeInferencePass() {
  PassInfo info;
  info.name = "infer_shapes";
  info.description =
      "Infers result types and shapes node by node in topological order, keeping symbolic "
      "dimensions and the known values of shape tensors.";
  info.options.push_back({"strict", OptionSpec::Kind::Bool, false,
                          "fail on ops without a schema instead of skipping them"});
  info.factory = [](const PassOptions& options) {
    return std::make_unique<ShapeInferencePass>(ShapeInferenceOptions{options.getBool("strict")});
  };
  return info;
}

}  // namespace estuary
