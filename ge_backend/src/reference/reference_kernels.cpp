#include "reference/reference_kernels.h"

namespace estuary::ge::reference {

namespace {

class FunctionKernel final : public Kernel {
 public:
  FunctionKernel(std::string name, RunFunction run) : name_(std::move(name)), run_(std::move(run)) {}
  void run(const KernelArgs& args, KernelState*) const override { run_(args); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  RunFunction run_;
};

}  // namespace

std::unique_ptr<Kernel> makeKernel(const KernelBuildContext& context, RunFunction run) {
  return std::make_unique<FunctionKernel>("reference:" + context.node().qualifiedOpType(), std::move(run));
}

bool takesDType(DType dtype) { return dtype != DType::F16 && dtype != DType::BF16 && dtype != DType::Undefined; }

bool takesAllDTypes(const KernelBuildContext& context) {
  for (size_t i = 0; i < context.numInputs(); ++i) {
    if (context.hasInput(i) && !takesDType(context.input(i).dtype)) return false;
  }
  for (size_t o = 0; o < context.numOutputs(); ++o) {
    if (!takesDType(context.output(o).dtype)) return false;
  }
  return true;
}

double loadDouble(DType dtype, const void* data, int64_t i) { return elementAsDouble(dtype, data, i); }

int64_t loadInt(DType dtype, const void* data, int64_t i) { return elementAsInt(dtype, data, i); }

void storeDouble(DType dtype, void* data, int64_t i, double value) {
  if (dtype == DType::Bool) {
    static_cast<uint8_t*>(data)[i] = value != 0;
    return;
  }
  dispatch(AllDTypes{}, dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    if constexpr (std::is_same_v<S, Float16>) {
      static_cast<S*>(data)[i] = toFloat16(value);
    } else if constexpr (std::is_same_v<S, BFloat16>) {
      static_cast<S*>(data)[i] = toBFloat16(value);
    } else {
      static_cast<S*>(data)[i] = static_cast<S>(value);
    }
  });
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

std::vector<int64_t> stridesOf(const TensorDesc& desc) { return stridesOf(desc.dimVector()); }

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 0) continue;
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
  return index;
}

int64_t broadcastOffset(const std::vector<int64_t>& output_index, const TensorDesc& input) {
  const size_t skip = output_index.size() - static_cast<size_t>(input.rank);
  int64_t offset = 0;
  for (int d = 0; d < input.rank; ++d) {
    offset = offset * input.dims[d] + (input.dims[d] == 1 ? 0 : output_index[skip + d]);
  }
  return offset;
}

int64_t normalizeAxis(const KernelBuildContext& context, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) context.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace estuary::ge::reference
