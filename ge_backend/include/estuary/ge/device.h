#pragma once
// The device a model is built for and runs on. Ascend hardware is not available here; the
// device Estuary builds, tests and makes fast is the host CPU.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/ge/kernel.h"

namespace estuary::ge {

struct BuildOptions;
struct BuildReport;

// The layout of every value the kernels see that is not Plain.
using LayoutMap = std::unordered_map<const Value*, Layout>;

// What a device's lowering steps work with while one plan is built.
class LoweringContext {
 public:
  LoweringContext(const Device& device, const BuildOptions& options, BuildReport& report)
      : device_(device), options_(options), report_(report) {}
  const BuildOptions& options() const { return options_; }
  BuildReport& report() const { return report_; }
  // The context the device's kernel registry would see for `node` in the plan (values not
  // given a layout are Plain).
  KernelBuildContext kernelContext(const Node& node, const std::vector<Layout>& input_layouts = {},
                                   const std::vector<Layout>& output_layouts = {}) const;
  // Whether one of the device's kernels takes `node` with these layouts; a rewrite that
  // would leave a node without a kernel is not made.
  bool kernelExists(const Node& node, const std::vector<Layout>& input_layouts = {},
                    const std::vector<Layout>& output_layouts = {}) const;

  // Set by the device's layout step; read by the plan builder.
  LayoutMap layouts;

 private:
  const Device& device_;
  const BuildOptions& options_;
  BuildReport& report_;
};

// One step of a device's lowering. The plan builder runs the steps as passes through a
// PassManager, so they get its dumps, verification and timing like any pipeline.
struct LoweringStep {
  std::string name;  // unique within the device's lowering ("fuse_epilogues")
  std::string description;
  // Rewrites the graph; returns how many changes it made.
  std::function<int64_t(Graph&)> run;
};

class Device {
 public:
  virtual ~Device() = default;
  // "cpu", "reference"
  virtual std::string name() const = 0;
  // What code the device's kernels were chosen for ("avx512_core_amx"); an offline model
  // built for another ISA is refused at load.
  virtual std::string isa() const = 0;
  virtual const KernelRegistry& kernels() const = 0;
  // Resources one run context needs (a oneDNN stream on the CPU).
  virtual std::unique_ptr<DeviceRunState> createRunState() const = 0;
  // Why the device has no fast kernels for computing in `dtype` (naming what the CPU lacks), or
  // empty when it has them. A build in a 16-bit precision mode asks this first.
  virtual std::string slowDTypeReason(DType dtype) const { return ""; }
  // The steps that turn a graph specialized to one shape signature into the graph the
  // device's kernels run (backend fusions, layouts), in order. None by default.
  virtual std::vector<LoweringStep> lowering(LoweringContext& context) const { return {}; }
  // The layouts the device's convolution chains may keep activations in besides the one its
  // rules choose (BuildOptions::activation_layout): a build that tunes times the plan in each.
  virtual std::vector<Layout> activationLayouts() const { return {}; }
};

// The host CPU, with oneDNN and Estuary's own kernels.
const Device& cpuDevice();

// The devices models can be built for, by name ("cpu", "reference"); an unknown name raises
// an Error listing the known ones.
const Device& deviceNamed(std::string_view name);
std::vector<std::string> deviceNames();

}  // namespace estuary::ge
