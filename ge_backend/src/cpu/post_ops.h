#pragma once
// Epilogues: element-wise work fused into the kernel that produces a Conv, MatMul or Gemm
// result, so the result is written once instead of being re-read by a chain of
// element-wise kernels. The graph-level fusion step builds a fused node whose inputs are
// the base op's inputs followed by the epilogue's operands, describes the epilogue with
// an Epilogue, and asks for the kernel with make{Conv,ConvTranspose,MatMul,Gemm}Kernel.
// oneDNN applies the steps as post-ops in f32 before the result is converted to the
// output type.
#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "estuary/ge/kernel.h"

namespace estuary::ge::cpu {

struct OnednnArg;

struct EpilogueStep {
  enum class Kind : uint8_t {
    // Adds a vector with one value per output channel (Conv: axis 1; MatMul/Gemm: the
    // last axis) held by kernel input `input`.
    Bias,
    // y = activation(y): a oneDNN eltwise algorithm with its alpha and beta (see
    // activationSteps() for the ONNX ops and their parameters).
    Activation,
    // Adds kernel input `input`: a tensor of the output's shape, or one that broadcasts
    // to it (a residual connection).
    Residual,
    // y = alpha * y.
    Scale,
    // Multiplies by kernel input `input`, of the output's shape or broadcasting to it (the
    // gated MLP's silu(x W_gate) * (x W_up)).
    Product,
  };
  Kind kind = Kind::Activation;
  dnnl::algorithm activation = dnnl::algorithm::undef;
  float alpha = 0.f;
  float beta = 0.f;
  size_t input = 0;

  static EpilogueStep bias(size_t input) { return {Kind::Bias, dnnl::algorithm::undef, 0.f, 0.f, input}; }
  static EpilogueStep residual(size_t input) { return {Kind::Residual, dnnl::algorithm::undef, 0.f, 0.f, input}; }
  static EpilogueStep product(size_t input) { return {Kind::Product, dnnl::algorithm::undef, 0.f, 0.f, input}; }
  static EpilogueStep scale(float factor) { return {Kind::Scale, dnnl::algorithm::undef, factor, 0.f, 0}; }
  static EpilogueStep eltwise(dnnl::algorithm algorithm, float alpha = 0.f, float beta = 0.f) {
    return {Kind::Activation, algorithm, alpha, beta, 0};
  }
};

// Steps applied in order to the op's result (after the op's own bias, if it has one).
struct Epilogue {
  std::vector<EpilogueStep> steps;
  bool empty() const { return steps.empty(); }
};

// The epilogue steps computing ONNX activation `node` (Relu, LeakyRelu, Elu, Sigmoid, Tanh,
// Gelu, HardSigmoid, HardSwish, Softplus, Mish, Abs, Exp, Log, Sqrt, Clip with constant
// or absent bounds), or nothing when it is not an activation oneDNN can fuse.
std::vector<EpilogueStep> activationSteps(const Node& node);

// Kernels for the base ops with an epilogue. Inputs: the op's full input list (an absent
// optional input stays a hole: Conv's B is input 2, Gemm's C input 2), then the epilogue's
// operands at the indices its steps name. A Bias step naming Conv's own input 2 makes it
// the primitive's bias. They return nullptr when the case is not
// supported (a dtype without oneDNN support, an operand broadcast oneDNN cannot apply);
// the registered factories call them with an empty epilogue. Conv and ConvTranspose run
// in the layouts of their descs (TensorDesc::layout) for X, Y and full-shape Residual
// operands, and decline another layout when oneDNN has only a slow (gemm or reference)
// implementation for it. oneDNN 2.6 gives every
// eltwise step of one algorithm the alpha/beta of the first one, so an epilogue with two
// activations of one kind but different parameters is declined (consecutive Scale and
// linear steps are folded into one first).
std::unique_ptr<Kernel> makeConvKernel(const KernelBuildContext& context, const Epilogue& epilogue);
std::unique_ptr<Kernel> makeConvTransposeKernel(const KernelBuildContext& context, const Epilogue& epilogue);
std::unique_ptr<Kernel> makeMatMulKernel(const KernelBuildContext& context, const Epilogue& epilogue);
std::unique_ptr<Kernel> makeGemmKernel(const KernelBuildContext& context, const Epilogue& epilogue);

// Appends `steps` to `post_ops` for a primitive whose destination is `dst` (the desc the
// primitive is created with), adding the binary operands to `args`. Bias vectors
// broadcast along `channel_axis` of dst; residuals are read in their desc's layout.
// Returns false when an operand does not broadcast to the destination.
bool appendEpilogue(const KernelBuildContext& context, const std::vector<EpilogueStep>& steps,
                    const dnnl::memory::desc& dst, int channel_axis, dnnl::post_ops& post_ops,
                    std::vector<OnednnArg>& args);

}  // namespace estuary::ge::cpu
