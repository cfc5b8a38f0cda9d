#include "cpu/elementwise_kernels.h"

namespace estuary::ge::cpu {

std::string kernelName(const KernelBuildContext& context, DType dtype) {
  return "cpu:" + context.node().opType() + " " + std::string(dtypeName(dtype));
}

double readScalar(const void* data, DType dtype) {
  double value = 0;
  dispatch(AllDTypes{}, dtype, [&](auto type) {
    using T = LoopStorage<decltype(type)>;
    value = static_cast<double>(Element<T>::load(*static_cast<const T*>(data)));
  });
  return value;
}

std::optional<double> constantScalar(const KernelBuildContext& context, size_t index) {
  const Tensor* tensor = context.constantInput(index);
  if (!tensor || tensor->numElements() != 1) return std::nullopt;
  return readScalar(tensor->data(), tensor->dtype());
}

BroadcastPlan::BroadcastPlan(const KernelBuildContext& context, const std::vector<TensorDesc>& inputs,
                             const TensorDesc& output)
    : num_inputs_(static_cast<int>(inputs.size())), size_(output.numElements()) {
  if (inputs.size() > static_cast<size_t>(kMaxInputs)) context.fail("more than ", kMaxInputs, " broadcast inputs");
  struct Dim {
    int64_t size;
    bool present[kMaxInputs];
  };
  Dim dims[kMaxRank];
  int count = 0;
  for (int d = 0; d < output.rank; ++d) {
    Dim dim{output.dims[d], {}};
    for (int k = 0; k < num_inputs_; ++k) {
      const TensorDesc& input = inputs[k];
      int input_d = d - (output.rank - input.rank);
      int64_t input_size = input_d >= 0 ? input.dims[input_d] : 1;
      if (input.rank > output.rank || (input_size != dim.size && input_size != 1)) {
        context.fail("input ", input.str(), " does not broadcast to the output ", output.str());
      }
      dim.present[k] = input_size == dim.size;
    }
    if (dim.size == 1) continue;  // contributes nothing to any offset
    bool mergeable = count > 0;
    for (int k = 0; k < num_inputs_ && mergeable; ++k) mergeable = dims[count - 1].present[k] == dim.present[k];
    if (mergeable) {
      dims[count - 1].size *= dim.size;
    } else {
      dims[count++] = dim;
    }
  }
  if (count == 0) {  // a single element
    dims[0].size = 1;
    std::fill(std::begin(dims[0].present), std::end(dims[0].present), true);
    count = 1;
  }
  rank_ = count;
  for (int d = 0; d < count; ++d) dims_[d] = dims[d].size;
  for (int k = 0; k < num_inputs_; ++k) {
    int64_t stride = 1;
    for (int d = count - 1; d >= 0; --d) {
      strides_[k][d] = dims[d].present[k] ? stride : 0;
      if (dims[d].present[k]) stride *= dims[d].size;
    }
    contiguous_[k] = dims[count - 1].present[k];
  }
}

std::optional<size_t> sameDescInput(const KernelBuildContext& context, std::initializer_list<size_t> candidates) {
  for (size_t input : candidates) {
    if (context.hasInput(input) && context.input(input) == context.output(0)) return input;
  }
  return std::nullopt;
}

int BroadcastPlan::pattern() const {
  int bits = 0;
  for (int k = 0; k < num_inputs_; ++k) bits |= contiguous_[k] ? 1 << k : 0;
  return bits;
}

}  // namespace estuary::ge::cpu
