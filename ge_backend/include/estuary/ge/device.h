#pragma once
// The device a model is built for and runs on. Ascend hardware is not available here; the
// device Estuary builds, tests and makes fast is the host CPU.
#include <memory>
#include <string>

#include "estuary/ge/kernel.h"

namespace estuary::ge {

class Device {
 public:
  virtual ~Device() = default;
  // "cpu"
  virtual std::string name() const = 0;
  // What code the device's kernels were chosen for ("avx512_core_amx"); an offline model
  // built for another ISA is refused at load.
  virtual std::string isa() const = 0;
  virtual const KernelRegistry& kernels() const = 0;
  // Resources one run context needs (a oneDNN stream on the CPU).
  virtual std::unique_ptr<DeviceRunState> createRunState() const = 0;
};

// The host CPU, with oneDNN and Estuary's own kernels.
const Device& cpuDevice();

}  // namespace estuary::ge
