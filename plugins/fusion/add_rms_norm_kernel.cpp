// The CPU kernel of estuary::AddRMSNorm: one pass over each row computes and stores the sum
// and its sum of squares, a second scales it, so the sum is read from cache, not memory.
#include <cmath>

#include "add_rms_norm.h"
#include "estuary/ge/kernel.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary {
namespace {

class AddRmsNormKernel final : public ge::Kernel {
 public:
  AddRmsNormKernel(int64_t rows, int64_t row_size, float epsilon)
      : rows_(rows), row_size_(row_size), epsilon_(epsilon) {}

  void run(const ge::KernelArgs& args, ge::KernelState*) const override {
    const float* x1 = static_cast<const float*>(args.inputs[0]);
    const float* x2 = static_cast<const float*>(args.inputs[1]);
    const float* gamma = static_cast<const float*>(args.inputs[2]);
    float* y = static_cast<float*>(args.outputs[0]);
    float* sum = static_cast<float*>(args.outputs[1]);
    const int64_t n = row_size_;
    // A row is read twice and written twice.
    ge::parallelFor(rows_, 4.0 * static_cast<double>(n), args.num_threads, [&](int64_t first, int64_t last) {
      for (int64_t row = first; row < last; ++row) {
        const float* a = x1 + row * n;
        const float* b = x2 + row * n;
        float* s = sum + row * n;
        float squares = 0.f;
#pragma omp simd reduction(+ : squares)
        for (int64_t i = 0; i < n; ++i) {
          float v = a[i] + b[i];
          s[i] = v;
          squares += v * v;
        }
        float scale = 1.f / std::sqrt(squares / static_cast<float>(n) + epsilon_);
        float* out = y + row * n;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) out[i] = s[i] * scale * gamma[i];
      }
    });
  }
  std::string name() const override { return "fusion_add_rms_norm:f32"; }

 private:
  int64_t rows_;
  int64_t row_size_;
  float epsilon_;
};

// Handles f32 with both addends of the output's shape and gamma covering the normalized
// axes exactly; other cases are declined (the build then names the node).
std::unique_ptr<ge::Kernel> makeAddRmsNormKernel(const ge::KernelBuildContext& context) {
  const ge::TensorDesc& out = context.output(0);
  const ge::TensorDesc& gamma = context.input(2);
  if (out.dtype != DType::F32 || context.input(0) != out || context.input(1) != out || gamma.dtype != DType::F32) {
    return nullptr;
  }
  int64_t axis = context.intAttr("axis");
  if (axis < 0) axis += out.rank;
  if (axis < 0 || axis >= out.rank) return nullptr;
  int64_t row_size = 1;
  for (int d = static_cast<int>(axis); d < out.rank; ++d) row_size *= out.dims[d];
  if (gamma.numElements() != row_size) return nullptr;
  return std::make_unique<AddRmsNormKernel>(out.numElements() / std::max<int64_t>(row_size, 1), row_size,
                                            static_cast<float>(context.floatAttr("epsilon")));
}

}  // namespace

void registerAddRmsNormKernel(PluginRegistrar& registrar) {
  registrar.extend(ge::kCpuKernelsExtension, [](void* registry, const std::shared_ptr<const void>& keep_alive) {
    static_cast<ge::KernelRegistry*>(registry)->add("AddRMSNorm", "estuary", makeAddRmsNormKernel, keep_alive);
  });
}

}  // namespace estuary
