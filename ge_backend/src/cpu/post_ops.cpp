#include "cpu/post_ops.h"

#include <cfloat>
#include <tuple>

#include "cpu/nn_support.h"
#include "cpu/strided.h"

namespace estuary::ge::cpu {

namespace {

// A scalar bound of Clip: its constant input, or `fallback` when absent. nullopt when the
// bound is computed at run time (the activation cannot be fused then).
std::optional<float> clipBound(const Node& node, size_t input, float fallback) {
  if (input >= node.numInputs() || !node.input(input)) return fallback;
  const Node* producer = node.input(input)->producer();
  const Attribute* value = producer && producer->is("Constant") ? producer->attr("value") : nullptr;
  if (!value || value->kind() != AttrKind::Tensor || value->asTensor().numElements() != 1) return std::nullopt;
  const Tensor& tensor = value->asTensor();
  float bound = 0.f;
  bool known = dispatch(FloatDTypes{}, tensor.dtype(), [&](auto type) {
    bound = static_cast<float>(loadAs(*tensor.data<StorageOf<decltype(type)>>()));
  });
  if (!known) return std::nullopt;
  return bound;
}

}  // namespace

std::vector<EpilogueStep> activationSteps(const Node& node) {
  using algorithm = dnnl::algorithm;
  auto one = [](algorithm kind, float alpha = 0.f, float beta = 0.f) {
    return std::vector<EpilogueStep>{EpilogueStep::eltwise(kind, alpha, beta)};
  };
  if (!node.domain().empty()) return {};
  const std::string& op = node.opType();
  if (op == "Relu") return one(algorithm::eltwise_relu);
  if (op == "LeakyRelu") return one(algorithm::eltwise_relu, static_cast<float>(node.floatAttr("alpha", 0.01)));
  if (op == "Elu") return one(algorithm::eltwise_elu, static_cast<float>(node.floatAttr("alpha", 1.0)));
  if (op == "Sigmoid") return one(algorithm::eltwise_logistic);
  if (op == "Tanh") return one(algorithm::eltwise_tanh);
  if (op == "Gelu") {
    return one(node.stringAttr("approximate", "none") == "tanh" ? algorithm::eltwise_gelu_tanh
                                                                 : algorithm::eltwise_gelu_erf);
  }
  if (op == "HardSwish") return one(algorithm::eltwise_hardswish);
  if (op == "Swish") return one(algorithm::eltwise_swish, static_cast<float>(node.floatAttr("alpha", 1.0)));
  if (op == "Softplus") return one(algorithm::eltwise_soft_relu);
  if (op == "Mish") return one(algorithm::eltwise_mish);
  if (op == "Abs") return one(algorithm::eltwise_abs);
  if (op == "Exp") return one(algorithm::eltwise_exp);
  if (op == "Log") return one(algorithm::eltwise_log);
  if (op == "Sqrt") return one(algorithm::eltwise_sqrt);
  if (op == "HardSigmoid") {
    // max(0, min(1, alpha * x + beta)): a linear step, then a clip.
    return {EpilogueStep::eltwise(algorithm::eltwise_linear, static_cast<float>(node.floatAttr("alpha", 0.2)),
                                  static_cast<float>(node.floatAttr("beta", 0.5))),
            EpilogueStep::eltwise(algorithm::eltwise_clip_v2, 0.f, 1.f)};
  }
  if (op == "Clip") {
    std::optional<float> low = clipBound(node, 1, -FLT_MAX), high = clipBound(node, 2, FLT_MAX);
    if (!low || !high) return {};
    return one(algorithm::eltwise_clip_v2, *low, *high);
  }
  return {};
}

bool appendEpilogue(const KernelBuildContext& context, const std::vector<EpilogueStep>& steps,
                    const dnnl::memory::desc& dst, int channel_axis, dnnl::post_ops& post_ops,
                    std::vector<OnednnArg>& args) {
  const dnnl::memory::dims dst_dims = dst.dims();
  const size_t rank = dst_dims.size();
  const int64_t elements = productOf(dst_dims.data(), 0, static_cast<int>(rank));
  // Scales become linear steps; consecutive linear steps are folded into one.
  std::vector<EpilogueStep> folded;
  for (const EpilogueStep& original : steps) {
    EpilogueStep step = original;
    if (step.kind == EpilogueStep::Kind::Scale) step = EpilogueStep::eltwise(dnnl::algorithm::eltwise_linear, step.alpha);
    bool linear = step.kind == EpilogueStep::Kind::Activation && step.activation == dnnl::algorithm::eltwise_linear;
    if (linear && !folded.empty() && folded.back().kind == EpilogueStep::Kind::Activation &&
        folded.back().activation == dnnl::algorithm::eltwise_linear) {
      EpilogueStep& previous = folded.back();  // a2 * (a1 x + b1) + b2
      previous.beta = step.alpha * previous.beta + step.beta;
      previous.alpha *= step.alpha;
      continue;
    }
    folded.push_back(step);
  }
  // oneDNN 2.6's JIT post-op injector applies the parameters of an algorithm's first
  // eltwise step to all later steps of the same algorithm: such chains are declined.
  std::vector<std::tuple<dnnl::algorithm, float, float>> eltwise_seen;
  for (const EpilogueStep& step : folded) {
    if (step.kind != EpilogueStep::Kind::Activation) continue;
    for (const auto& [algorithm, alpha, beta] : eltwise_seen) {
      if (algorithm == step.activation && (alpha != step.alpha || beta != step.beta)) return false;
    }
    eltwise_seen.emplace_back(step.activation, step.alpha, step.beta);
  }
  for (const EpilogueStep& step : folded) {
    switch (step.kind) {
      case EpilogueStep::Kind::Activation:
        post_ops.append_eltwise(1.f, step.activation, step.alpha, step.beta);
        break;
      case EpilogueStep::Kind::Scale:
        break;  // folded into linear steps above
      case EpilogueStep::Kind::Bias:
      case EpilogueStep::Kind::Residual:
      case EpilogueStep::Kind::Product: {
        if (!context.hasInput(step.input)) return false;
        const TensorDesc& operand = context.input(step.input);
        if (!dnnlSupports(operand.dtype)) return false;
        dnnl::memory::dims dims(rank, 1);
        dnnl::memory::desc desc;
        if (step.kind == EpilogueStep::Kind::Bias) {
          if (operand.numElements() != dst_dims[channel_axis]) return false;
          dims[channel_axis] = dst_dims[channel_axis];
          desc = plainDesc(dims, operand.dtype);
        } else {
          std::vector<int64_t> operand_dims = operand.dimVector();
          // More dims than the destination: a product that took its batch as rows
          // (matmul.cpp's batchAsRows). Leading 1s say nothing; an operand as large as the
          // destination broadcast to the unfolded output, so it has that output's shape.
          while (operand_dims.size() > rank && operand_dims.front() == 1) operand_dims.erase(operand_dims.begin());
          if (operand_dims.size() > rank) {
            if (operand.layout != Layout::Plain || operand.numElements() != elements) return false;
            operand_dims = dst_dims;
          }
          size_t pad = rank - operand_dims.size();
          for (size_t d = pad; d < rank; ++d) {
            dims[d] = operand_dims[d - pad];
            if (dims[d] != 1 && dims[d] != dst_dims[d]) return false;
          }
          // A residual in another layout than plain has the destination's full shape.
          if (operand.layout != Layout::Plain && dims != dst_dims) return false;
          desc = operand.layout != Layout::Plain ? layoutDesc(operand) : plainDesc(dims, operand.dtype);
        }
        int index = post_ops.len();
        post_ops.append_binary(
            step.kind == EpilogueStep::Kind::Product ? dnnl::algorithm::binary_mul : dnnl::algorithm::binary_add, desc);
        args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, OnednnArg::Source::Input,
                        step.input, desc});
        break;
      }
    }
  }
  return true;
}

}  // namespace estuary::ge::cpu
