// The devices a model can be built for, by name.
#include "estuary/ge/device.h"
#include "reference/reference_device.h"

namespace estuary::ge {

namespace {

struct NamedDevice {
  const char* name;
  const Device& (*get)();
};

// Devices are made on first use: the CPU device starts oneDNN and registers plugins' kernels.
constexpr NamedDevice kDevices[] = {
    {"cpu", cpuDevice},
    {"reference", referenceDevice},
};

}  // namespace

const Device& deviceNamed(std::string_view name) {
  for (const NamedDevice& device : kDevices) {
    if (name == device.name) return device.get();
  }
  std::string known;
  for (const NamedDevice& device : kDevices) known += std::string(known.empty() ? "" : ", ") + device.name;
  raise("unknown device '", name, "' (known: ", known, ")");
}

std::vector<std::string> deviceNames() {
  std::vector<std::string> names;
  for (const NamedDevice& device : kDevices) names.push_back(device.name);
  return names;
}

}  // namespace estuary::ge
