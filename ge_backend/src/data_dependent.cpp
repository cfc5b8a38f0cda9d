#include "data_dependent.h"

#include <cstring>

#include "control_flow.h"
#include "plan.h"

namespace estuary::ge {

namespace {

// Non-zero elements of a constant, any element type.
int64_t countNonZero(const Tensor& tensor) {
  const size_t size = dtypeSize(tensor.dtype());
  const auto* bytes = static_cast<const std::byte*>(tensor.data());
  const std::byte zero[8] = {};
  int64_t count = 0;
  for (int64_t i = 0; i < tensor.numElements(); ++i) {
    const std::byte* element = bytes + i * size;
    bool non_zero = std::memcmp(element, zero, size) != 0;
    // -0.0 is zero: only the sign bit set.
    if (non_zero && isFloatingPoint(tensor.dtype())) {
      std::byte magnitude[8];
      std::memcpy(magnitude, element, size);
      magnitude[size - 1] &= std::byte{0x7f};
      non_zero = std::memcmp(magnitude, zero, size) != 0;
    }
    count += non_zero;
  }
  return count;
}

// Refuses a runtime-length value used by anything but the graph's outputs.
void checkOnlyReturned(const Node& node, const Value& value, const char* what) {
  for (const Use& use : value.uses()) {
    if (!use.user->isReturn()) {
      raise(node.describe(), ": ", what, " depends on the values computed at run time; the CPU backend plans ",
            "every buffer at build time and supports such a length only in a graph output, but ",
            use.user->describe(), " uses it");
    }
  }
}

}  // namespace

void boundDataDependentOutputs(Graph& graph) {
  for (Node* node : graph.nodes()) {
    if (node->is("Loop")) {
      const size_t carried = node->numInputs() - 2;
      if (node->numOutputs() == carried || !loopMayEndEarly(*node)) continue;
      for (size_t s = carried; s < node->numOutputs(); ++s) {
        checkOnlyReturned(*node, *node->output(s), "the length of its scan outputs");
      }
      node->setAttr(kRuntimeScansAttr, static_cast<int64_t>(carried));
      node->addOutput(TensorType(DType::I64, Shape()), "trips");
      continue;
    }
    if (!node->is("NonZero") || node->numOutputs() != 1) continue;
    const Value* input = node->input(0);
    Value* output = node->output();
    const std::vector<int64_t> dims = input->shape().staticDims();
    const int64_t rank = static_cast<int64_t>(dims.size());
    if (const Tensor* constant = constantOf(input)) {
      output->setType(TensorType(DType::I64, Shape::ofStatic({rank, countNonZero(*constant)})));
      continue;
    }
    checkOnlyReturned(*node, *output, "its output length");
    int64_t elements = 1;
    for (int64_t dim : dims) elements *= dim;
    output->setType(TensorType(DType::I64, Shape::ofStatic({rank, elements})));
    node->addOutput(TensorType(DType::I64, Shape()), output->name() + "_count");
  }
}

RuntimeLength runtimeLengthOf(const Value* value) {
  const Node* producer = value->producer();
  if (!producer) return {};
  if (producer->is("NonZero") && producer->numOutputs() == 2 && producer->output(0) == value) {
    return {producer->output(1), 1};
  }
  if (producer->is("Loop") && producer->hasAttr(kRuntimeScansAttr)) {
    Value* trips = producer->output(producer->numOutputs() - 1);
    if (value != trips && value->index() >= producer->intAttr(kRuntimeScansAttr, 0)) return {trips, 0};
  }
  return {};
}

}  // namespace estuary::ge
