// Activations as oneDNN eltwise post-ops against the same activation run unfused, on the
// inputs where approximations differ: NaN, infinities, large magnitudes, denormals, signed
// zeros, plus a dense sweep. Epilogue fusion may take an activation only when its post-op
// agrees on every number; a NaN input may come out as the activation's lower bound (relu,
// clip), as in ONNX Runtime's fused convolutions. The test prints the measured table (ulp:
// units in the last place).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>

#include <sstream>

#include "../../ge_backend/src/cpu/epilogue_fusion.h"
#include "../../ge_backend/src/cpu/post_ops.h"
#include "estuary/ge/device.h"
#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

// The most a fused activation may differ from the unfused one, in ulp of the unfused
// result. Both sides approximate (the unfused kernels to a few ulp), so a few ulp apart
// is agreement; a flushed denormal or a wrong tail is thousands.
constexpr int64_t kMaxUlp = 8;
constexpr float kNegligible = 1e-30f;

std::vector<float> edgeInputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values{std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                            inf, -inf, 0.f, -0.f, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                            1e-45f, -1e-45f, 1e-40f, -1e-40f, 1e-39f, -1e-39f};
  for (float magnitude = 1e-38f; magnitude < 1e38f; magnitude *= 3.7f) {
    values.push_back(magnitude);
    values.push_back(-magnitude);
  }
  for (float x : {20.f, 30.f, 40.f, 80.f, 87.f, 88.f, 88.7f, 89.f, 100.f, 104.f, 110.f}) {
    values.push_back(x);
    values.push_back(-x);
  }
  for (float x = -30.f; x <= 30.f; x += 0.0137f) values.push_back(x);
  return values;
}

int64_t orderedBits(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits < 0 ? int64_t{INT32_MIN} - bits : bits;
}

struct Agreement {
  int64_t max_ulp = 0;
  float worst_input = 0, worst_fused = 0, worst_unfused = 0;
  int64_t nan_mismatches = 0;              // NaN on one side only
  int64_t nan_mismatches_from_numbers = 0;  // ... for an input that is not NaN
  float nan_input = 0, nan_fused = 0, nan_unfused = 0;  // the first NaN mismatch
  bool agreesOnNumbers() const { return max_ulp <= kMaxUlp && nan_mismatches_from_numbers == 0; }
};

// `%m = MatMul(%x, %one)` with %x [n,1] and %one [[1]] reproduces x exactly; `activation`
// is applied to %m.
std::unique_ptr<Graph> activationGraph(size_t n, const std::string& constants, const std::string& activation) {
  return parseGraph("graph @g(%x: f32[" + std::to_string(n) + ",1], %one: f32[1,1]) {\n" + constants +
                    "  %m = MatMul(%x, %one)\n  %y = " + activation + "\n  return %y\n}");
}

// The activation as the MatMul kernel's post-op, whatever the fusion policy says.
std::vector<float> runPostOp(const Graph& graph, std::vector<float>& x) {
  const Node* matmul = nullptr;
  const Node* activation = nullptr;
  for (const Node* node : graph.nodes()) {
    if (node->is("MatMul")) matmul = node;
    if (matmul && node != matmul) activation = node;
  }
  cpu::Epilogue epilogue{cpu::activationSteps(*activation)};
  const int64_t n = static_cast<int64_t>(x.size());
  KernelBuildContext context(*matmul, {TensorDesc::of(DType::F32, {n, 1}), TensorDesc::of(DType::F32, {1, 1})},
                             {TensorDesc::of(DType::F32, {n, 1})}, {nullptr, nullptr}, cpuDevice(), 1);
  std::unique_ptr<Kernel> kernel = cpu::makeMatMulKernel(context, epilogue);
  float one = 1.f;
  std::vector<float> y(x.size());
  const void* inputs[] = {x.data(), &one};
  void* outputs[] = {y.data()};
  std::vector<std::byte> scratch(kernel->scratchBytes() + 64);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
  auto device = cpuDevice().createRunState();
  auto state = kernel->createState();
  kernel->run(KernelArgs{inputs, outputs, aligned, 1, device.get()}, state.get());
  return y;
}

// The graph built with or without epilogue fusion; `absorbed` gets the nodes fused.
std::vector<float> runBuilt(const Graph& graph, bool fuse, std::vector<float>& x, size_t* absorbed = nullptr) {
  BuildOptions options;
  options.fuse_epilogues = fuse;
  options.num_threads = 1;
  auto model = CompiledModel::build(graph, options);
  if (absorbed) *absorbed = model->report().fused_epilogues;
  auto context = model->createContext();
  float one = 1.f;
  const int64_t n = static_cast<int64_t>(x.size());
  const auto& outputs = context->run({HostTensor::of(TensorDesc::of(DType::F32, {n, 1}), x.data()),
                                      HostTensor::of(TensorDesc::of(DType::F32, {1, 1}), &one)});
  const float* y = static_cast<const float*>(outputs[0].data);
  return std::vector<float>(y, y + x.size());
}

Agreement compare(const std::vector<float>& x, const std::vector<float>& fused, const std::vector<float>& unfused) {
  Agreement agreement;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(unfused[i]) || std::isnan(fused[i])) {
      if (std::isnan(unfused[i]) != std::isnan(fused[i])) {
        if (!std::isnan(x[i])) ++agreement.nan_mismatches_from_numbers;
        if (agreement.nan_mismatches++ == 0) {
          agreement.nan_input = x[i];
          agreement.nan_fused = fused[i];
          agreement.nan_unfused = unfused[i];
        }
      }
      continue;
    }
    // A result below 1e-30 in magnitude flushed to zero (or the like) is no difference a
    // model can observe: every add, normalization or product after it swamps it.
    if (std::fabs(fused[i] - unfused[i]) <= kNegligible) continue;
    const int64_t ulp = std::abs(orderedBits(fused[i]) - orderedBits(unfused[i]));
    if (ulp > agreement.max_ulp) {
      agreement.max_ulp = ulp;
      agreement.worst_input = x[i];
      agreement.worst_fused = fused[i];
      agreement.worst_unfused = unfused[i];
    }
  }
  return agreement;
}

struct Case {
  const char* name;
  const char* node;  // the activation applied to %m
  const char* constants = "";
};

constexpr Case kActivations[] = {
    {"Relu", "Relu(%m)"},
    {"LeakyRelu", "LeakyRelu(%m) {alpha = 0.1}"},
    {"Elu", "Elu(%m)"},
    {"Sigmoid", "Sigmoid(%m)"},
    {"Tanh", "Tanh(%m)"},
    {"Gelu", "Gelu(%m)"},
    {"Gelu tanh", "Gelu(%m) {approximate = \"tanh\"}"},
    {"HardSigmoid", "HardSigmoid(%m)"},
    {"HardSwish", "HardSwish(%m)"},
    {"Swish", "Swish(%m) {alpha = 1.0}"},
    {"Softplus", "Softplus(%m)"},
    {"Mish", "Mish(%m)"},
    {"Abs", "Abs(%m)"},
    {"Exp", "Exp(%m)"},
    {"Log", "Log(%m)"},
    {"Sqrt", "Sqrt(%m)"},
    {"Clip", "Clip(%m, %lo, %hi)",
     "  %lo = Constant() {value = tensor<f32[]> [-2.5]}\n  %hi = Constant() {value = tensor<f32[]> [6.0]}\n"},
};

const Node& activationOf(const Graph& graph) { return *graph.lastNode(); }

// Each activation's post-op measured against its unfused kernel; the fusion policy must
// fuse exactly the ones that agree on numbers.
TEST(EpilogueAccuracy, FusionTakesExactlyTheActivationsWhosePostOpAgreesOnNumbers) {
  std::vector<float> x = edgeInputs();
  std::cout << std::left << std::setw(12) << "activation" << std::setw(12) << "max ulp" << std::setw(36)
            << "at x: post-op vs unfused" << std::setw(10) << "NaN diff" << "first NaN difference\n";
  size_t exact = 0;
  for (const Case& c : kActivations) {
    auto graph = activationGraph(x.size(), c.constants, c.node);
    Agreement a = compare(x, runPostOp(*graph, x), runBuilt(*graph, false, x));
    std::ostringstream worst, nan;
    worst << a.worst_input << ": " << a.worst_fused << " vs " << a.worst_unfused;
    if (a.nan_mismatches) nan << a.nan_input << ": " << a.nan_fused << " vs " << a.nan_unfused;
    std::cout << std::left << std::setw(12) << c.name << std::setw(12) << a.max_ulp << std::setw(36) << worst.str()
              << std::setw(10) << a.nan_mismatches << nan.str() << "\n";
    EXPECT_EQ(cpu::fusesAccurately(activationOf(*graph)), a.agreesOnNumbers())
        << c.name << ": the fusion policy disagrees with the measurement (max " << a.max_ulp << " ulp at x = "
        << a.worst_input << ", " << a.nan_mismatches << " NaN differences)";
    exact += a.agreesOnNumbers();
  }
  EXPECT_GT(exact, 0u) << "no activation post-op agrees: the measurement itself is broken";
}

// Built graphs: an inaccurate activation stays a node of its own, an accurate one is fused,
// and either way the result is the unfused one on every number.
TEST(EpilogueAccuracy, AnInaccurateActivationStaysUnfused) {
  std::vector<float> x = edgeInputs();
  for (const char* activation : {"Relu(%m)", "Exp(%m)", "Gelu(%m)", "Tanh(%m)"}) {
    SCOPED_TRACE(activation);
    auto graph = activationGraph(x.size(), "", activation);
    size_t absorbed = 0;
    std::vector<float> fused = runBuilt(*graph, true, x, &absorbed);
    EXPECT_EQ(absorbed, cpu::fusesAccurately(activationOf(*graph)) ? 1u : 0u);
    Agreement a = compare(x, fused, runBuilt(*graph, false, x));
    EXPECT_TRUE(a.agreesOnNumbers()) << a.max_ulp << " ulp at x = " << a.worst_input << ", " << a.nan_mismatches << " NaN";
  }
  EXPECT_TRUE(cpu::fusesAccurately(activationOf(*activationGraph(1, "", "Relu(%m)"))));  // NaN -> 0 only
  EXPECT_FALSE(cpu::fusesAccurately(activationOf(*activationGraph(1, "", "Gelu(%m)"))));  // its tail is 0
  // ... which a 16-bit output cannot resolve.
  auto bf16_gelu = parseGraph(
      "graph @g(%x: bf16[4,1], %one: bf16[1,1]) {\n  %m = MatMul(%x, %one) : bf16[4,1]\n  %y = Gelu(%m) : bf16[4,1]\n  return %y\n}");
  EXPECT_TRUE(cpu::fusesAccurately(activationOf(*bf16_gelu)));
  EXPECT_TRUE(cpu::fusesAccurately(activationOf(*activationGraph(1, "", "Tanh(%m)"))));
}

}  // namespace
}  // namespace estuary::ge
