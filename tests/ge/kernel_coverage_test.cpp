#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "estuary/ge/device.h"
#include "estuary/ge/kernel.h"
#include "estuary/ops/backend_ops.h"
#include "estuary/ops/schema.h"
#include "estuary/plugin/loader.h"

namespace estuary::ge {
namespace {

// Every op of the core schema registry (ONNX and estuary domains, with the backend's own
// estuary::Fused* ops) has a CPU kernel. Plugins are not loaded here: a plugin brings its
// kernels along with its schemas and tests them itself. Constant is the one op no kernel
// runs: the planner turns its value into a constant buffer.
TEST(KernelCoverage, EveryRegisteredOpHasACpuKernel) {
  const KernelRegistry& kernels = cpuDevice().kernels();
  std::vector<std::string> missing;
  for (const OpSchema* schema : OpRegistry::global().all()) {
    if (schema->qualifiedName() == "Constant") continue;
    if (!kernels.has(schema->opType(), schema->domain())) missing.push_back(schema->qualifiedName());
  }
  std::string list;
  for (const std::string& name : missing) list += " " + name;
  EXPECT_TRUE(missing.empty()) << missing.size() << " ops have no CPU kernel:" << list;
}

// The reference device runs every op a model can hold as translated: every op of the core
// registry but those a backend's lowering makes (fused ops, layout reorders), which it never
// makes since it lowers nothing.
TEST(KernelCoverage, EveryCoreOpHasAReferenceKernel) {
  const KernelRegistry& kernels = deviceNamed("reference").kernels();
  std::vector<std::string> lowering_ops = {"estuary::Reorder"};
  for (const EpilogueFusion& fusion : epilogueFusions()) lowering_ops.push_back(std::string("estuary::") + fusion.fused);
  // Ops a plugin brought (another test of this binary loads the fusion plugin) come with their
  // own kernels: the core's ops are the ones the reference device answers for.
  for (const PluginHandle& plugin : PluginLoader::global().loaded()) {
    for (const std::string& op : plugin->ops()) lowering_ops.push_back(op);
  }
  std::string missing;
  size_t count = 0;
  for (const OpSchema* schema : OpRegistry::global().all()) {
    const std::string name = schema->qualifiedName();
    if (name == "Constant" || std::find(lowering_ops.begin(), lowering_ops.end(), name) != lowering_ops.end()) continue;
    if (!kernels.has(schema->opType(), schema->domain())) {
      missing += " " + name;
      ++count;
    }
  }
  EXPECT_EQ(count, 0u) << count << " ops have no reference kernel:" << missing;
}

TEST(KernelCoverage, DevicesAreFoundByName) {
  EXPECT_EQ(&deviceNamed("cpu"), &cpuDevice());
  EXPECT_EQ(deviceNamed("reference").name(), "reference");
  try {
    deviceNamed("npu");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("unknown device 'npu' (known: cpu, reference)"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace estuary::ge
