// Ops that make tensors from attributes or shapes: ConstantOfShape, Range, EyeLike, Shape,
// Size. With static shapes they are usually folded into constants at build time (by these
// very kernels); the kernels also run when an operand is only known at run time.
#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// Fills the output with one element (ConstantOfShape's value).
class FillKernel final : public Kernel {
 public:
  FillKernel(size_t element_size, const void* value, int64_t count) : element_size_(element_size), count_(count) {
    std::memcpy(&value_, value, element_size);
  }
  void run(const KernelArgs& args, KernelState*) const override {
    dispatchBySize(element_size_, [&](auto element) {
      using E = decltype(element);
      E value;
      std::memcpy(&value, &value_, sizeof(E));
      fillElements(static_cast<E*>(args.outputs[0]), count_, value, args.num_threads);
    });
  }
  std::string name() const override { return "cpu:fill"; }

 private:
  size_t element_size_;
  uint64_t value_ = 0;
  int64_t count_;
};

std::unique_ptr<Kernel> constantOfShape(const KernelBuildContext& context) {
  const TensorDesc& out = context.output(0);
  uint64_t zero = 0;
  const void* value = &zero;
  if (const Attribute* attr = context.attr("value")) {
    const Tensor& tensor = attr->asTensor();
    if (tensor.numElements() != 1 || tensor.dtype() != out.dtype) {
      context.fail("attribute 'value' must hold one ", dtypeName(out.dtype), " element");
    }
    value = tensor.data();
  }
  return std::make_unique<FillKernel>(dtypeSize(out.dtype), value, out.numElements());
}

// Range: out[i] = start + i * delta, computed in double and rounded once.
class RangeKernel final : public Kernel {
 public:
  explicit RangeKernel(const KernelBuildContext& context)
      : node_(context.node().describe()), dtype_(context.output(0).dtype), count_(context.output(0).numElements()) {
    for (size_t i = 0; i < 3; ++i) {
      if (context.input(i).numElements() != 1) {
        context.fail("input ", i, " must hold one value, got ", context.input(i).str());
      }
    }
  }

  void run(const KernelArgs& args, KernelState*) const override {
    double start = elementAsDouble(dtype_, args.inputs[0], 0);
    double limit = elementAsDouble(dtype_, args.inputs[1], 0);
    double delta = elementAsDouble(dtype_, args.inputs[2], 0);
    if (delta == 0) raise(node_, ": input 'delta' is 0");
    double length = std::ceil((limit - start) / delta);
    int64_t count = length > 0 ? static_cast<int64_t>(length) : 0;
    if (count != count_) {
      raise(node_, ": start ", start, ", limit ", limit, " and delta ", delta, " give ", count,
            " elements, the output was planned with ", count_);
    }
    dispatch(AllDTypes{}, dtype_, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      S* out = static_cast<S*>(args.outputs[0]);
      for (int64_t i = 0; i < count_; ++i) {
        double value = start + static_cast<double>(i) * delta;
        if constexpr (std::is_integral_v<S>) {
          out[i] = static_cast<S>(static_cast<int64_t>(value));
        } else {
          out[i] = storeAs<S>(static_cast<ComputeOf<S>>(value));
        }
      }
    });
  }
  std::string name() const override { return "cpu:range"; }

 private:
  std::string node_;
  DType dtype_;
  int64_t count_;
};

// EyeLike: ones on the k-th diagonal of a 2-D output, zeros elsewhere.
class EyeKernel final : public Kernel {
 public:
  explicit EyeKernel(const KernelBuildContext& context)
      : dtype_(context.output(0).dtype),
        rows_(context.output(0).dims[0]),
        cols_(context.output(0).dims[1]),
        k_(context.intAttr("k")) {
    if (context.output(0).rank != 2) context.fail("output ", context.output(0).str(), " is not 2-D");
  }

  void run(const KernelArgs& args, KernelState*) const override {
    std::memset(args.outputs[0], 0, static_cast<size_t>(rows_ * cols_) * dtypeSize(dtype_));
    dispatch(AllDTypes{}, dtype_, [&](auto type) {
      using S = StorageOf<decltype(type)>;
      S* out = static_cast<S*>(args.outputs[0]);
      const S one = storeAs<S>(ComputeOf<S>(1));
      for (int64_t i = std::max<int64_t>(0, -k_); i < rows_ && i + k_ < cols_; ++i) out[i * cols_ + i + k_] = one;
    });
  }
  std::string name() const override { return "cpu:eye_like"; }

 private:
  DType dtype_;
  int64_t rows_, cols_, k_;
};

// Shape and Size: known at build time from the input's static shape.
class KnownIntsKernel final : public Kernel {
 public:
  explicit KnownIntsKernel(std::vector<int64_t> values) : values_(std::move(values)) {}
  void run(const KernelArgs& args, KernelState*) const override {
    if (!values_.empty()) std::memcpy(args.outputs[0], values_.data(), values_.size() * sizeof(int64_t));
  }
  std::string name() const override { return "cpu:shape_values"; }

 private:
  std::vector<int64_t> values_;
};

std::unique_ptr<Kernel> shape(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  auto clampIndex = [&](int64_t index) { return std::clamp<int64_t>(index < 0 ? index + in.rank : index, 0, in.rank); };
  int64_t start = clampIndex(context.intAttr("start"));
  int64_t end = context.attr("end") ? clampIndex(context.intAttr("end")) : in.rank;
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(in.dims[d]);
  if (static_cast<int64_t>(dims.size()) != context.output(0).numElements()) {
    context.fail("output ", context.output(0).str(), " cannot hold the ", dims.size(), " dims of ", in.str());
  }
  return std::make_unique<KnownIntsKernel>(std::move(dims));
}

std::unique_ptr<Kernel> size(const KernelBuildContext& context) {
  return std::make_unique<KnownIntsKernel>(std::vector<int64_t>{context.input(0).numElements()});
}

}  // namespace

void registerGeneratorKernels(KernelRegistry& registry) {
  registry.add("ConstantOfShape", "", constantOfShape);
  registry.add("Range", "", [](const KernelBuildContext& context) { return std::make_unique<RangeKernel>(context); });
  registry.add("EyeLike", "", [](const KernelBuildContext& context) { return std::make_unique<EyeKernel>(context); });
  registry.add("Shape", "", shape);
  registry.add("Size", "", size);
}

}  // namespace estuary::ge::cpu
