#include "commands.h"
#include "estuary/support/limits.h"

namespace estuary::cli {

std::vector<OptionDecl> limitOptionDecls() {
  const ResourceLimits machine = ResourceLimits::forThisMachine();
  auto size = [](size_t bytes) { return formatByteSize(static_cast<double>(bytes)); };
  return {
      {"max-tensor-size", "SIZE", "refuse a model with any one value larger than this (512MB, 4GiB)",
       size(machine.tensor_bytes) + ", half of this machine's memory"},
      {"max-plan-size", "SIZE", "refuse a plan whose activation memory is larger than this",
       size(machine.plan_bytes) + ", three quarters of this machine's memory"},
      {"max-run-size", "SIZE", "refuse a run that would allocate more than this (activations and outputs)",
       size(machine.run_bytes) + ", this machine's memory"},
      {"max-plans", "N", "plans (one per input shape) a model keeps; the least recently used makes room",
       std::to_string(machine.plans)},
  };
}

ResourceLimits limitsFrom(const std::string& command, const Arguments& args) {
  ResourceLimits limits = ResourceLimits::forThisMachine();
  auto sizeOption = [&](const char* name, size_t& limit) {
    std::optional<std::string> value = args.value(name);
    if (!value) return;
    try {
      limit = parseByteSize(*value);
    } catch (const Error& error) {
      usageError("estuary ", command, ": --", name, ": ", error.what());
    }
  };
  sizeOption("max-tensor-size", limits.tensor_bytes);
  sizeOption("max-plan-size", limits.plan_bytes);
  sizeOption("max-run-size", limits.run_bytes);
  if (std::optional<std::string> plans = args.value("max-plans")) {
    limits.plans = static_cast<size_t>(integerOption(command, "max-plans", plans, 0, 1));
  }
  return limits;
}

}  // namespace estuary::cli
