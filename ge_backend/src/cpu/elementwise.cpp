// Element-wise ops: registration of the family, and its oneDNN kernels. oneDNN's eltwise and
// binary primitives take f32/f16/bf16 nodes where they compute exactly what the ONNX op
// defines (special values included); Estuary's own kernels (elementwise_*.cpp) do the rest
// and every other dtype.
#include "cpu/elementwise.h"

#include "cpu/elementwise_kernels.h"
#include "cpu/nn_support.h"
#include "cpu/onednn_kernel.h"
#include "estuary/ops/schema.h"

namespace estuary::ge::cpu {

namespace {

// An element-wise oneDNN primitive: its output may take the buffer of input `in_place`.
class OnednnElementwiseKernel final : public OnednnKernel {
 public:
  OnednnElementwiseKernel(std::string name, const dnnl::engine& engine, dnnl::primitive primitive,
                          size_t scratchpad_bytes, std::vector<OnednnArg> args, size_t in_place)
      : OnednnKernel(std::move(name), engine, std::move(primitive), scratchpad_bytes, std::move(args)),
        in_place_(in_place) {}
  std::optional<size_t> inPlaceInput(size_t) const override { return in_place_; }

 private:
  size_t in_place_;
};

bool onednnFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

// The tensor as one dimension: element-wise primitives do not care about the shape, and
// oneDNN then never picks a slower path for an odd one.
dnnl::memory::desc flatDesc(const TensorDesc& desc) {
  return dnnl::memory::desc({desc.numElements()}, dnnlType(desc.dtype), dnnl::memory::format_tag::a);
}

std::unique_ptr<Kernel> onednnEltwiseKernel(const KernelBuildContext& context) {
  const TensorDesc& in = context.input(0);
  if (!onednnFloat(in.dtype) || in != context.output(0) || in.numElements() == 0) return nullptr;
  std::optional<OnednnEltwise> eltwise = onednnEltwiseOf(context.node());
  if (!eltwise) return nullptr;
  const CpuDevice& cpu = cpuOf(context);
  dnnl::memory::desc md = flatDesc(in);
  ScopedOpenMpThreads threads(threadsForWork(context));
  try {
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, eltwise->algorithm, md, eltwise->alpha,
                                    eltwise->beta),
        scratchpadAttr(), cpu.engine());
    return std::make_unique<OnednnElementwiseKernel>(
        "onednn:eltwise " + implName(pd), cpu.engine(), dnnl::eltwise_forward(pd), pd.scratchpad_desc().get_size(),
        std::vector<OnednnArg>{{DNNL_ARG_SRC, OnednnArg::Source::Input, 0, md},
                               {DNNL_ARG_DST, OnednnArg::Source::Output, 0, md},
                               {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}},
        0);
  } catch (const dnnl::error&) {
    return nullptr;  // no implementation for this dtype on this CPU: the own kernel runs it
  }
}

// oneDNN's binary primitive broadcasts its second operand only, over equal ranks: the first
// must already have the output's shape. Commutative ops swap their operands to get there.
std::unique_ptr<Kernel> onednnBinaryKernel(const KernelBuildContext& context, dnnl::algorithm algorithm,
                                           bool commutative) {
  const TensorDesc& out = context.output(0);
  if (!onednnFloat(out.dtype) || context.input(0).dtype != out.dtype || context.input(1).dtype != out.dtype ||
      out.numElements() == 0) {
    return nullptr;
  }
  size_t full = 0;
  if (context.input(0) != out) {
    if (!commutative || context.input(1) != out) return nullptr;
    full = 1;
  }
  const TensorDesc& a = context.input(full);
  const TensorDesc& b = context.input(1 - full);
  TensorDesc b_full = b;  // left-padded with 1s to the output's rank
  b_full.rank = out.rank;
  int pad = out.rank - b.rank;
  for (int i = out.rank - 1; i >= 0; --i) b_full.dims[i] = i >= pad ? b.dims[i - pad] : 1;
  const CpuDevice& cpu = cpuOf(context);
  dnnl::memory::desc a_md = plainDesc(a), b_md = plainDesc(b_full), out_md = plainDesc(out);
  ScopedOpenMpThreads threads(threadsForWork(context));
  try {
    dnnl::binary::primitive_desc pd(dnnl::binary::desc(algorithm, a_md, b_md, out_md), scratchpadAttr(),
                                    cpu.engine());
    return std::make_unique<OnednnElementwiseKernel>(
        "onednn:binary " + implName(pd), cpu.engine(), dnnl::binary(pd), pd.scratchpad_desc().get_size(),
        std::vector<OnednnArg>{{DNNL_ARG_SRC_0, OnednnArg::Source::Input, full, a_md},
                               {DNNL_ARG_SRC_1, OnednnArg::Source::Input, 1 - full, b_md},
                               {DNNL_ARG_DST, OnednnArg::Source::Output, 0, out_md},
                               {DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, pd.scratchpad_desc()}},
        full);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

// An attribute of the node, or its schema's default.
const Attribute* attrOf(const Node& node, std::string_view name) {
  if (const Attribute* attribute = node.attr(name)) return attribute;
  const OpSchema* schema = OpRegistry::global().find(node);
  const AttrSpec* spec = schema ? schema->findAttr(name) : nullptr;
  return spec && spec->default_value ? &*spec->default_value : nullptr;
}

float floatAttrOf(const Node& node, std::string_view name) {
  const Attribute* attribute = attrOf(node, name);
  if (!attribute) raise(node.describe(), ": attribute '", name, "' is missing");
  return static_cast<float>(attribute->asFloat());
}

}  // namespace

std::optional<OnednnEltwise> onednnEltwiseOf(const Node& node) {
  // Checked against ONNX's formulas in double over each op's range plus special values
  // (tests/ge/elementwise_unary_test.cpp). oneDNN 2.6's relu maps NaN to 0; its exp, log,
  // elu, soft_relu, mish, swish and gelu approximations are accurate to about 1e-6 absolute
  // (exp flushes denormal results, elu computes e^x - 1 and loses everything near 0, the
  // gelus are off by 0.2% in the negative tail), so those ops run on Estuary's kernels.
  using algorithm = dnnl::algorithm;
  if (!node.domain().empty()) return std::nullopt;
  const std::string& op = node.opType();
  if (op == "LeakyRelu") return OnednnEltwise{algorithm::eltwise_relu, floatAttrOf(node, "alpha")};
  if (op == "Tanh") return OnednnEltwise{algorithm::eltwise_tanh};
  if (op == "Sigmoid") return OnednnEltwise{algorithm::eltwise_logistic};
  if (op == "Sqrt") return OnednnEltwise{algorithm::eltwise_sqrt};
  if (op == "Abs") return OnednnEltwise{algorithm::eltwise_abs};
  if (op == "HardSwish") return OnednnEltwise{algorithm::eltwise_hardswish};
  if (op == "Round") return OnednnEltwise{algorithm::eltwise_round};
  return std::nullopt;
}

void registerElementwiseKernels(KernelRegistry& registry) {
  registerUnaryKernels(registry);
  registerBinaryKernels(registry);
  registerCastKernels(registry);
  registerSelectKernels(registry);

  // Registered last, so tried first; they decline what they do not handle.
  for (const char* op : {"LeakyRelu", "Tanh", "Sigmoid", "Sqrt", "Abs", "HardSwish", "Round"}) {
    registry.add(op, "", onednnEltwiseKernel);
  }
  const std::tuple<const char*, dnnl::algorithm, bool> binaries[] = {
      {"Add", dnnl::algorithm::binary_add, true},
      {"Sub", dnnl::algorithm::binary_sub, false},
      {"Mul", dnnl::algorithm::binary_mul, true},
      {"Div", dnnl::algorithm::binary_div, false},
  };
  for (const auto& [op, algorithm, commutative] : binaries) {
    registry.add(op, "", [algorithm = algorithm, commutative = commutative](const KernelBuildContext& context) {
      return onednnBinaryKernel(context, algorithm, commutative);
    });
  }
}

}  // namespace estuary::ge::cpu
