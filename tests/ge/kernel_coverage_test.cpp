#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estuary/ge/device.h"
#include "estuary/ge/kernel.h"
#include "estuary/ops/schema.h"

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

}  // namespace
}  // namespace estuary::ge
