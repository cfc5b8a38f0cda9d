// A plugin bringing conversion extensions, as a user's would: translations of two custom
// ops that no frontend knows, alpha * tanh(x) each,
//   - for ONNX, test.ops::ScaledTanh(x) with a FLOAT attribute alpha;
//   - for PyTorch, the custom op estuary_test::scaled_tanh(Tensor x, float alpha).
#include "estuary/frontend/node_context.h"
#include "estuary/plugin/plugin.h"

namespace {

std::vector<estuary::Value*> scaledTanh(estuary::NodeContext& node) {
  estuary::Value* x = node.requiredInput(0);
  estuary::Value* alpha = node.scalar(x->dtype(), node.attr<double>("alpha", 1.0));
  return {node.emitValue("Mul", {node.emitValue("Tanh", {x}), alpha})};
}

void registerConversions(estuary::PluginRegistrar& registrar) {
  registrar.addConversion({"onnx", "test.ops", "ScaledTanh", scaledTanh, {}});
  registrar.addConversion({"pytorch", "", "estuary_test.scaled_tanh.default", scaledTanh, {}});
}

}  // namespace

ESTUARY_PLUGIN("test_conversions", "1.0", "Conversion extensions for two custom ops, for tests",
               registerConversions)
