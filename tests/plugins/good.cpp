// A working test plugin: op test_plugin::Twice (the shape of its input, twice as
// outputs) and pass test_plugin_mark (renames the graph to its option `name`).
#include "estuary/plugin/plugin.h"

namespace {

class MarkPass : public estuary::Pass {
 public:
  explicit MarkPass(std::string name) : name_(std::move(name)) {}
  estuary::PassResult run(estuary::Graph& graph, estuary::PassContext&) override {
    graph.setName(name_);
    estuary::PassResult result;
    result.changes = 1;
    return result;
  }

 private:
  std::string name_;
};

void registerGood(estuary::PluginRegistrar& registrar) {
  registrar.addOp(estuary::OpSchema("Twice", "test_plugin")
                      .input("x", "T")
                      .output("a", "T")
                      .output("b", "T")
                      .typeConstraint("T", estuary::allTypes())
                      .inference([](estuary::InferenceContext& context) {
                        context.setOutputShape(0, context.inputShape(0));
                        context.setOutputShape(1, context.inputShape(0));
                      }));
  estuary::PassInfo info;
  info.name = "test_plugin_mark";
  info.description = "Renames the graph.";
  info.options = {{"name", estuary::OptionSpec::Kind::String, std::string("marked"), "new name"}};
  info.factory = [](const estuary::PassOptions& options) -> std::unique_ptr<estuary::Pass> {
    return std::make_unique<MarkPass>(options.getString("name"));
  };
  registrar.addPass(std::move(info));
}

}  // namespace

ESTUARY_PLUGIN("test_good", "1.2.3", "A plugin for the loader tests", registerGood)
