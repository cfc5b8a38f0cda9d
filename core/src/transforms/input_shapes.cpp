#include "estuary/transforms/input_shapes.h"

#include "estuary/support/error.h"

namespace estuary {

namespace {

std::string inputNames(const Graph& graph) {
  std::string names;
  for (const Value* input : graph.inputs()) names += (names.empty() ? "" : ", ") + input->name();
  return names;
}

}  // namespace

void fixInputShapes(Graph& graph, const InputShapes& shapes) {
  for (const auto& [name, dims] : shapes) {
    Value* input = nullptr;
    for (Value* candidate : graph.inputs()) {
      if (candidate->name() == name) input = candidate;
    }
    if (!input) raise("input shapes: the graph has no input '", name, "' (inputs: ", inputNames(graph), ")");
    const TensorType& type = input->type();
    if (!type.shape.isRanked()) {
      raise("input shapes: input '", name, "' has type ", type.str(), "; the backend needs its rank");
    }
    if (type.shape.rank() != dims.size()) {
      raise("input shapes: input '", name, "' has rank ", type.shape.rank(), " (", type.str(), "), ", dims.size(),
            " dims were given");
    }
    Shape shape = type.shape;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 0) continue;
      if (shape[d].isStatic() && shape[d].value() != dims[d]) {
        raise("input shapes: input '", name, "' dim ", d, " is ", shape[d].value(), " in the graph (", type.str(),
              "), ", dims[d], " was given");
      }
      shape[d] = Dim(dims[d]);
    }
    input->setType(TensorType(type.dtype, std::move(shape)));
  }
}

}  // namespace estuary
