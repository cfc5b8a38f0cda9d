#include "cpu/nhwc_conv_support.h"

namespace estuary::ge::cpu::nhwc {

std::optional<ConvOperands> nhwcConvOperands(const KernelBuildContext& context, int64_t out_channels,
                                             const Epilogue& epilogue) {
  const TensorDesc& x = context.input(0);
  const TensorDesc& y = context.output(0);
  if (x.dtype != DType::F32 || y.dtype != DType::F32 || x.rank != 4) return std::nullopt;
  if (x.layout != Layout::ChannelsLast || y.layout != Layout::ChannelsLast) return std::nullopt;
  ConvOperands operands;
  operands.weights = context.constantInput(1);
  if (!operands.weights || operands.weights->dtype() != DType::F32) return std::nullopt;
  const bool has_bias = context.hasInput(2);
  if (has_bias && (context.input(2).dtype != DType::F32 || context.input(2).numElements() != out_channels)) {
    return std::nullopt;
  }
  operands.own_bias = has_bias;
  for (const EpilogueStep& step : epilogue.steps) {
    Step resolved{step.kind, Step::Activation::None, step.alpha, step.beta, step.input};
    switch (step.kind) {
      case EpilogueStep::Kind::Bias: {
        const TensorDesc& vector = context.input(step.input);
        if (vector.dtype != DType::F32 || vector.layout != Layout::Plain || vector.numElements() != out_channels) {
          return std::nullopt;
        }
        operands.own_bias &= step.input != 2;
        break;
      }
      case EpilogueStep::Kind::Residual:
        if (context.input(step.input) != y) return std::nullopt;
        if (!operands.residual) operands.residual = step.input;
        break;
      case EpilogueStep::Kind::Scale: break;
      case EpilogueStep::Kind::Activation:
        if (step.activation == dnnl::algorithm::eltwise_relu) {
          resolved.activation = Step::Activation::Relu;
        } else if (step.activation == dnnl::algorithm::eltwise_clip || step.activation == dnnl::algorithm::eltwise_clip_v2) {
          resolved.activation = Step::Activation::Clip;
        } else {
          return std::nullopt;
        }
        break;
      case EpilogueStep::Kind::Product: return std::nullopt;
    }
    operands.steps.push_back(resolved);
  }
  return operands;
}

}  // namespace estuary::ge::cpu::nhwc
