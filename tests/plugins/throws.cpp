// A plugin whose registration adds a pass and then fails, as a plugin does when it finds
// no usable device. Nothing it added may stay registered.
#include <stdexcept>

#include "estuary/plugin/plugin.h"

namespace {

class NoPass : public estuary::Pass {
 public:
  estuary::PassResult run(estuary::Graph&, estuary::PassContext&) override { return {}; }
};

void registerThenThrow(estuary::PluginRegistrar& registrar) {
  estuary::PassInfo info;
  info.name = "test_thrower_pass";
  info.factory = [](const estuary::PassOptions&) -> std::unique_ptr<estuary::Pass> {
    return std::make_unique<NoPass>();
  };
  registrar.addPass(std::move(info));
#ifdef ESTUARY_TEST_THROW_INT
  throw 42;
#else
  throw std::runtime_error("no accelerator found");
#endif
}

}  // namespace

#ifdef ESTUARY_TEST_THROW_INT
ESTUARY_PLUGIN("test_throws_int", "1.0", "Registration throws an int", registerThenThrow)
#else
ESTUARY_PLUGIN("test_throws", "1.0", "Registration throws", registerThenThrow)
#endif
