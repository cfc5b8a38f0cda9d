// Ops that only relabel the shape of their data: Reshape, Flatten, Squeeze, Unsqueeze and
// Identity. Row-major data is unchanged by them, so the kernel lets the memory planner put
// the output in the input's buffer and copies only when the planner could not (the input
// is read again later, or is a graph input or constant).
#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

class RelabelKernel final : public Kernel {
 public:
  explicit RelabelKernel(size_t bytes) : bytes_(bytes) {}
  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  void run(const KernelArgs& args, KernelState*) const override {
    copyBytes(args.outputs[0], args.inputs[0], bytes_, args.num_threads);
  }
  std::string name() const override { return "cpu:relabel"; }

 private:
  size_t bytes_;
};

std::unique_ptr<Kernel> relabel(const KernelBuildContext& context) {
  if (context.input(0).numElements() != context.output(0).numElements() ||
      context.input(0).dtype != context.output(0).dtype) {
    context.fail("input ", context.input(0).str(), " and output ", context.output(0).str(),
                 " do not hold the same elements");
  }
  return std::make_unique<RelabelKernel>(context.output(0).byteSize());
}

}  // namespace

void registerShapeKernels(KernelRegistry& registry) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) {
    registry.add(op, "", relabel);
  }
}

void registerTensorKernels(KernelRegistry& registry) {
  registerShapeKernels(registry);
  registerTransposeKernels(registry);
  registerConcatSplitKernels(registry);
  registerSliceKernels(registry);
  registerGatherScatterKernels(registry);
  registerGeneratorKernels(registry);
  registerReductionKernels(registry);
  registerResizeKernels(registry);
  registerMiscTensorKernels(registry);
}

}  // namespace estuary::ge::cpu
