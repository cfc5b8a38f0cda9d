#include "data_dependent.h"

#include <cstring>

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

}  // namespace

void boundDataDependentOutputs(Graph& graph) {
  for (Node* node : graph.nodes()) {
    if (!node->is("NonZero") || node->numOutputs() != 1) continue;
    const Value* input = node->input(0);
    Value* output = node->output();
    const std::vector<int64_t> dims = input->shape().staticDims();
    const int64_t rank = static_cast<int64_t>(dims.size());
    if (const Tensor* constant = constantOf(input)) {
      output->setType(TensorType(DType::I64, Shape::ofStatic({rank, countNonZero(*constant)})));
      continue;
    }
    for (const Use& use : output->uses()) {
      if (!use.user->isReturn()) {
        raise(node->describe(), ": its output length depends on the values of its input, known only at run time; ",
              "the CPU backend plans every buffer at build time and supports such a length only in a graph output, ",
              "but ", use.user->describe(), " uses it");
      }
    }
    int64_t elements = 1;
    for (int64_t dim : dims) elements *= dim;
    output->setType(TensorType(DType::I64, Shape::ofStatic({rank, elements})));
    node->addOutput(TensorType(DType::I64, Shape()), output->name() + "_count");
  }
}

Value* runtimeLengthOf(const Value* value) {
  const Node* producer = value->producer();
  return producer && producer->is("NonZero") && producer->numOutputs() == 2 && producer->output(0) == value
             ? producer->output(1)
             : nullptr;
}

}  // namespace estuary::ge
