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

std::map<std::string, DimRange> symbolRanges(const Graph& graph, const InputDimRanges& ranges) {
  std::map<std::string, DimRange> symbols;
  for (const auto& [name, dims] : ranges) {
    const Value* input = nullptr;
    for (const Value* candidate : graph.inputs()) {
      if (candidate->name() == name) input = candidate;
    }
    if (!input) raise("input shapes: the graph has no input '", name, "' (inputs: ", inputNames(graph), ")");
    const TensorType& type = input->type();
    for (const auto& [index, range] : dims) {
      if (range.min < 0 || range.min > range.max) {
        raise("input shapes: input '", name, "' dim ", index, ": the range ", range.min, "~", range.max,
              " is empty or negative");
      }
      if (!type.shape.isRanked() || index >= type.shape.rank()) {
        raise("input shapes: input '", name, "' has type ", type.str(), ", which has no dim ", index);
      }
      const Dim& dim = type.shape[index];
      std::vector<std::string> names = dim.symbols();
      if (!dim.isSymbolic() || names.size() != 1 || names[0] != dim.str()) {
        raise("input shapes: input '", name, "' dim ", index, " is ", dim.str(), " in the graph (", type.str(),
              "); only a symbolic dim can take a range");
      }
      auto [it, inserted] = symbols.emplace(names[0], range);
      if (!inserted && (it->second.min != range.min || it->second.max != range.max)) {
        raise("input shapes: dim '", names[0], "' is given the ranges ", it->second.min, "~", it->second.max,
              " and ", range.min, "~", range.max);
      }
    }
  }
  return symbols;
}

}  // namespace estuary
