#include "reference/reference_device.h"

#include "control_flow.h"
#include "reference/reference_kernels.h"

namespace estuary::ge {

namespace reference {

namespace {

class ReferenceDevice final : public Device {
 public:
  ReferenceDevice() {
    registerElementwiseKernels(kernels_);
    registerReductionKernels(kernels_);
    registerTensorKernels(kernels_);
    registerResizeKernels(kernels_);
    registerNnKernels(kernels_);
    registerControlFlowKernels(kernels_);
  }
  std::string name() const override { return "reference"; }
  // Portable C++ on any CPU: a model built for it loads everywhere.
  std::string isa() const override { return "portable"; }
  const KernelRegistry& kernels() const override { return kernels_; }
  std::unique_ptr<DeviceRunState> createRunState() const override { return std::make_unique<DeviceRunState>(); }
  std::string slowDTypeReason(DType dtype) const override {
    return dtype == DType::F16 || dtype == DType::BF16 ? "the reference device computes in f32 and f64 only" : "";
  }

 private:
  KernelRegistry kernels_;
};

}  // namespace

}  // namespace reference

const Device& referenceDevice() {
  static const Device* device = new reference::ReferenceDevice();  // never destroyed, like the CPU device
  return *device;
}

}  // namespace estuary::ge
