// A CPU kernel for Tanh that is wrong on purpose: tanh(x) + 0.05. `estuary compare` must
// report the Tanh node itself as the first one to drift (python/tests/test_compare.py).
#include <cmath>

#include "estuary/ge/kernel.h"
#include "estuary/plugin/plugin.h"

namespace {

class BiasedTanhKernel final : public estuary::ge::Kernel {
 public:
  explicit BiasedTanhKernel(int64_t count) : count_(count) {}
  void run(const estuary::ge::KernelArgs& args, estuary::ge::KernelState*) const override {
    const float* x = static_cast<const float*>(args.inputs[0]);
    float* y = static_cast<float*>(args.outputs[0]);
    for (int64_t i = 0; i < count_; ++i) y[i] = std::tanh(x[i]) + 0.05f;
  }
  std::string name() const override { return "test:biased_tanh"; }

 private:
  int64_t count_;
};

void registerBiasedTanh(estuary::PluginRegistrar& registrar) {
  registrar.extend(estuary::ge::kCpuKernelsExtension, [](void* registry, const std::shared_ptr<const void>& keep_alive) {
    static_cast<estuary::ge::KernelRegistry*>(registry)->add(
        "Tanh", "",
        [](const estuary::ge::KernelBuildContext& context) -> std::unique_ptr<estuary::ge::Kernel> {
          if (context.input(0).dtype != estuary::DType::F32) return nullptr;
          return std::make_unique<BiasedTanhKernel>(context.output(0).numElements());
        },
        keep_alive);
  });
}

}  // namespace

ESTUARY_PLUGIN("test_biased_tanh", "1.0.0", "A Tanh kernel off by 0.05, for estuary compare's tests", registerBiasedTanh)
