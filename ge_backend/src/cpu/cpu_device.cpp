#include "cpu/cpu_device.h"

#include "control_flow.h"
#include "cpu/epilogue_fusion.h"
#include "cpu/layout_assignment.h"

#include "estuary/plugin/extensions.h"

namespace estuary::ge {

namespace cpu {

CpuDevice::CpuDevice() : engine_(dnnl::engine::kind::cpu, 0) {
  registerElementwiseKernels(kernels_);
  registerNnKernels(kernels_);
  registerTensorKernels(kernels_);
  registerFusedKernels(kernels_);
  registerControlFlowKernels(kernels_);
  registerLayoutKernels(kernels_);
  // Offered to plugins once the built-in kernels are in, so that a plugin's kernel takes
  // precedence. The device is never destroyed (cpuDevice()), so the registry outlives them.
  ExtensionPoints::global().provide(kCpuKernelsExtension, &kernels_);
}

std::string CpuDevice::isa() const {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "generic";
  }
}

std::unique_ptr<DeviceRunState> CpuDevice::createRunState() const {
  return std::make_unique<CpuRunState>(engine_);
}

}  // namespace cpu

const Device& cpuDevice() {
  static const cpu::CpuDevice* device = new cpu::CpuDevice();  // never destroyed: plugins may outlive statics
  return *device;
}

}  // namespace estuary::ge
