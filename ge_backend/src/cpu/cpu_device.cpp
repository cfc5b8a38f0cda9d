#include "cpu/cpu_device.h"

#include "control_flow.h"
#include "cpu/epilogue_fusion.h"
#include "cpu/gemv.h"
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

namespace {

// What still runs fast in a 16-bit type that is otherwise converted to f32 around every op.
std::string gemvException(const char* type) {
  return std::string(", except matrix products of up to ") + std::to_string(kGemvMaxRows) +
         " rows (a decoder's step), which read " + type + " weights as they are and run up to twice as fast as in f32";
}

}  // namespace

std::string CpuDevice::slowDTypeReason(DType dtype) const {
  if (dtype == DType::BF16) {
    // oneDNN's bf16 matrix products and convolutions beat f32 only with the bf16 dot-product
    // instructions; before them it converts to f32 around every op. The own GEMV (gemv.h)
    // gains without them, since it is bound by the bytes of weights it reads; so in f16.
    const dnnl::cpu_isa isa_in_use = dnnl::get_effective_cpu_isa();
    if (isa_in_use == dnnl::cpu_isa::avx512_core_bf16 || isa_in_use == dnnl::cpu_isa::avx512_core_amx) return "";
    return "this CPU lacks AVX512-BF16 (and AMX-BF16), so bf16 runs as f32 converted back and forth (CPU ISA: " +
           isa() + ")" + gemvException("bf16");
  }
  if (dtype == DType::F16) {
    // oneDNN 2.6 has no f16 kernels for any CPU, only reorders.
    return std::string("the CPU device has no f16 kernels (its oneDNN ") + std::to_string(DNNL_VERSION_MAJOR) + "." +
           std::to_string(DNNL_VERSION_MINOR) + " has none; f16 would need AVX512-FP16 too, which this CPU " +
           (__builtin_cpu_supports("avx512fp16") ? "has" : "lacks") + "), so f16 runs as f32 converted back and forth" +
           gemvException("f16");
  }
  return "";
}

std::vector<Layout> CpuDevice::activationLayouts() const {
  // 16-channel blocks fill an AVX-512 register; on AVX2 oneDNN's direct kernels for them do
  // not exist and its fallbacks run ResNet-50 3x slower, so they are not worth a timing.
  if (isa().rfind("avx512", 0) == 0) return {Layout::Blocked16, Layout::ChannelsLast, Layout::Blocked8};
  return {Layout::Blocked8, Layout::ChannelsLast};
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
