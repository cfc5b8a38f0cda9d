#pragma once
// The host CPU device: oneDNN's CPU engine plus Estuary's own kernels.
#include <dnnl.hpp>

#include "estuary/ge/device.h"

namespace estuary::ge::cpu {

class CpuDevice final : public Device {
 public:
  CpuDevice();
  std::string name() const override { return "cpu"; }
  std::string isa() const override;
  const KernelRegistry& kernels() const override { return kernels_; }
  std::unique_ptr<DeviceRunState> createRunState() const override;
  std::string slowDTypeReason(DType dtype) const override;
  std::vector<LoweringStep> lowering(LoweringContext& context) const override;  // cpu_lowering.cpp
  std::vector<Layout> activationLayouts() const override;
  const dnnl::engine& engine() const { return engine_; }

 private:
  dnnl::engine engine_;
  KernelRegistry kernels_;
};

// Per run context: the oneDNN stream kernels execute on.
class CpuRunState final : public DeviceRunState {
 public:
  explicit CpuRunState(const dnnl::engine& engine) : stream(engine) {}
  dnnl::stream stream;
};

inline const CpuDevice& cpuOf(const KernelBuildContext& context) {
  return static_cast<const CpuDevice&>(context.device());
}
inline dnnl::stream& streamOf(const KernelArgs& args) { return static_cast<CpuRunState*>(args.device)->stream; }

// Kernel families, one file each under src/cpu/, which the CPU device registers.
void registerElementwiseKernels(KernelRegistry& registry);
void registerNnKernels(KernelRegistry& registry);  // conv, matmul, pooling, normalization, softmax, attention
void registerTensorKernels(KernelRegistry& registry);  // tensor_kernels.h: shape, indexing, reductions

}  // namespace estuary::ge::cpu
