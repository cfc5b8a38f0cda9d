// A plugin registering a pass and an op whose names the test has taken already; built
// with ESTUARY_TEST_BAD_OPTION, its pass declares an option whose default is of another
// kind.
#include "estuary/plugin/plugin.h"

namespace {

class NoPass : public estuary::Pass {
 public:
  estuary::PassResult run(estuary::Graph&, estuary::PassContext&) override { return {}; }
};

void registerClash(estuary::PluginRegistrar& registrar) {
  estuary::PassInfo info;
  info.name = "test_clash_pass";
  info.factory = [](const estuary::PassOptions&) -> std::unique_ptr<estuary::Pass> {
    return std::make_unique<NoPass>();
  };
#if defined(ESTUARY_TEST_BAD_OPTION)
  info.options = {{"depth", estuary::OptionSpec::Kind::Int, std::string("deep"), ""}};
#endif
  registrar.addPass(std::move(info));
  registrar.addOp(estuary::OpSchema("Clash", "test_plugin").input("x", "T").output("y", "T").typeConstraint("T", estuary::allTypes()));
}

}  // namespace

ESTUARY_PLUGIN("test_clash", "1.0", "Registers names already taken", registerClash)
