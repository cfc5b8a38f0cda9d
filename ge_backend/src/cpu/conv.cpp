// Conv and ConvTranspose. oneDNN's convolution/deconvolution primitives run the 1-D to 3-D
// f32/bf16/f16 cases; constant weights are reordered at build time into the blocked
// format the primitive prefers. Activations are in the layout of their TensorDesc (the
// plan builder's layout assignment keeps convolution chains in the one oneDNN prefers,
// preferredConvLayout()). Everything else (f64, more than three spatial axes, cases
// oneDNN declines) runs on an own im2col + GEMM kernel, on plain tensors only.
#include <array>

#include "cpu/direct_conv.h"
#include "cpu/winograd_conv.h"
#include "cpu/nn_kernels.h"
#include "cpu/nn_support.h"
#include "cpu/post_ops.h"
#include "estuary/ge/kernel_helpers.h"
#include "estuary/support/mapped_file.h"

namespace estuary::ge::cpu {

namespace {

// The sliding-window geometry of a convolution, resolved from the attributes and the
// concrete shapes.
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  std::vector<int64_t> in, out, kernel, strides, dilations, pad_begin, pad_end;
  int64_t kernelSize() const {
    int64_t size = 1;
    for (int64_t k : kernel) size *= k;
    return size;
  }
};

int64_t product(const std::vector<int64_t>& values) {
  int64_t result = 1;
  for (int64_t value : values) result *= value;
  return result;
}

// Reads strides, dilations and pads (auto_pad resolved) for Conv (transpose = false) or
// ConvTranspose.
ConvGeometry convGeometry(const KernelBuildContext& context, bool transpose) {
  const TensorDesc& x = context.input(0);
  const TensorDesc& w = context.input(1);
  const TensorDesc& y = context.output(0);
  const size_t spatial = static_cast<size_t>(x.rank) - 2;
  ConvGeometry geometry;
  geometry.batch = x.dims[0];
  geometry.in_channels = x.dims[1];
  geometry.out_channels = y.dims[1];
  geometry.groups = context.intAttr("group");
  for (size_t i = 0; i < spatial; ++i) {
    geometry.in.push_back(x.dims[2 + i]);
    geometry.out.push_back(y.dims[2 + i]);
    geometry.kernel.push_back(w.dims[2 + i]);
  }
  auto perAxis = [&](const char* name, int64_t fallback) {
    std::vector<int64_t> values = context.intsAttr(name);
    if (values.empty()) values.assign(spatial, fallback);
    return values;
  };
  geometry.strides = perAxis("strides", 1);
  geometry.dilations = perAxis("dilations", 1);
  std::vector<int64_t> pads = context.intsAttr("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  std::vector<int64_t> output_padding = perAxis("output_padding", 0);
  const std::string auto_pad = context.stringAttr("auto_pad");
  const bool has_output_shape = transpose && !context.intsAttr("output_shape").empty();
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t extent = (geometry.kernel[i] - 1) * geometry.dilations[i] + 1;
    int64_t begin = pads[i], end = pads[i + spatial];
    if (auto_pad == "VALID") {
      begin = end = 0;
    } else if (!transpose && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
      int64_t total = std::max<int64_t>(0, (geometry.out[i] - 1) * geometry.strides[i] + extent - geometry.in[i]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (transpose && (has_output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
      // The total may be negative (an output_shape larger than the input covers): halves
      // round down, as ONNX's reference computes them with Python's //.
      int64_t total = geometry.strides[i] * (geometry.in[i] - 1) + output_padding[i] + extent - geometry.out[i];
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      begin = auto_pad == "SAME_UPPER" ? half : total - half;
      end = total - begin;
    }
    if (transpose) {
      // The output the primitive computes is fixed by the output shape: the end padding
      // absorbs output_padding (and may go negative).
      end = geometry.strides[i] * (geometry.in[i] - 1) + extent - begin - geometry.out[i];
    }
    geometry.pad_begin.push_back(begin);
    geometry.pad_end.push_back(end);
  }
  return geometry;
}

// oneDNN's view of ONNX weights. Conv: [M, C/g, k...] is goihw as it is. ConvTranspose:
// [C, M/g, k...] is (g, i, o, k...), given to oneDNN as (g, o, i, k...) by strides.
dnnl::memory::desc weightsDesc(const ConvGeometry& geometry, DType dtype, bool transpose) {
  const int64_t g = geometry.groups, kernel = geometry.kernelSize();
  const int64_t oc = geometry.out_channels / g, ic = geometry.in_channels / g;
  dnnl::memory::dims dims, strides;
  if (g > 1) {
    dims.push_back(g);
    strides.push_back(oc * ic * kernel);
  }
  dims.push_back(oc);
  dims.push_back(ic);
  strides.push_back(transpose ? kernel : ic * kernel);
  strides.push_back(transpose ? oc * kernel : kernel);
  std::vector<int64_t> spatial_strides(geometry.kernel.size(), 1);
  for (size_t i = geometry.kernel.size(); i-- > 1;) spatial_strides[i - 1] = spatial_strides[i] * geometry.kernel[i];
  for (size_t i = 0; i < geometry.kernel.size(); ++i) {
    dims.push_back(geometry.kernel[i]);
    strides.push_back(spatial_strides[i]);
  }
  return dnnl::memory::desc(dims, dnnlType(dtype), strides);
}

// oneDNN's fast convolutions are its direct JIT kernels; "gemm" (im2col + GEMM) and "ref"
// are what it falls back to, e.g. for plain NCHW activations.
bool isDirectImplementation(std::string_view name) {
  return name.find("gemm") == std::string_view::npos && name.find("ref") == std::string_view::npos;
}

struct ConvPrimitive {
  dnnl::primitive primitive;
  dnnl::memory::desc src, dst, weights, scratchpad;
  std::string label;
  bool direct() const { return isDirectImplementation(label); }
};

// oneDNN's f32 Winograd for 3x3 stride-1 convolutions, on nChw16c tensors: F(2x2, 3x3)
// at small batches (2.25x fewer multiplications, errors of about 1e-6 relative: its
// transforms only add and halve), F(4x4, 3x3) at larger ones (4x fewer; ResNet-50 at batch
// 8 then differs from ONNX Runtime by at most 3.7e-4 on logits up to 458, direct
// convolutions by 2.9e-4).
//
// Only on inputs of at least 14x14: on 7x7 a tile grid is a quarter padding and each weight
// serves few outputs, so the transformed weights (16/9 of the kernel for F(2x2), 4x for
// F(4x4)) cost more memory and bandwidth than the multiplications save. ResNet-50's 7x7
// layers hold 63% of its 3x3 weights: without Winograd there its batch-8 plan needs 54 MiB
// less (peak RSS 300 -> 246 MiB) at the same latency, and batch 1 14 MiB less.
constexpr int64_t kWinogradMinSize = 14;

bool winogradApplies(const ConvGeometry& geometry, const dnnl::memory::desc& src) {
  if (src.data_type() != dnnl::memory::data_type::f32 || geometry.kernel.size() != 2 || geometry.groups != 1) return false;
  for (size_t d = 0; d < 2; ++d) {
    if (geometry.kernel[d] != 3 || geometry.strides[d] != 1 || geometry.dilations[d] != 1) return false;
    if (src.dims()[2 + d] < kWinogradMinSize) return false;
  }
  return true;
}

// A convolution window as oneDNN takes it: strides, dilations (oneDNN counts the gaps),
// padding before and after.
std::array<dnnl::memory::dims, 4> onednnWindow(const ConvGeometry& geometry) {
  dnnl::memory::dims dilations;
  for (int64_t d : geometry.dilations) dilations.push_back(d - 1);
  return {dnnl::memory::dims(geometry.strides.begin(), geometry.strides.end()), dilations,
          dnnl::memory::dims(geometry.pad_begin.begin(), geometry.pad_begin.end()),
          dnnl::memory::dims(geometry.pad_end.begin(), geometry.pad_end.end())};
}

// Which convolution algorithms convPrimitive may use.
enum class ConvAlgorithms {
  Preferred,     // Winograd where winogradApplies and oneDNN has it, else direct
  DirectOnly,
  WinogradOnly,  // no primitive where there is no Winograd kernel
};

std::optional<ConvPrimitive> convPrimitive(const dnnl::engine& engine, bool transpose, const dnnl::memory::desc& src,
                                           const dnnl::memory::desc& weights, const dnnl::memory::desc& bias,
                                           const dnnl::memory::desc& dst, const ConvGeometry& geometry,
                                           const dnnl::primitive_attr& attr,
                                           ConvAlgorithms algorithms = ConvAlgorithms::Preferred,
                                           std::string_view implementation = {}) {
  const auto [strides, dilations, pad_l, pad_r] = onednnWindow(geometry);
  ConvPrimitive result;
  if (algorithms != ConvAlgorithms::DirectOnly && !transpose && winogradApplies(geometry, src)) {
    try {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd,
                                           src, weights, bias, dst, strides, dilations, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
      return ConvPrimitive{dnnl::convolution_forward(pd), pd.src_desc(), pd.dst_desc(), pd.weights_desc(),
                           pd.scratchpad_desc(), "onednn:conv " + implName(pd)};
    } catch (const dnnl::error&) {
      // no Winograd kernel for these descs or post-ops: the direct one below
    }
  }
  if (algorithms == ConvAlgorithms::WinogradOnly) return std::nullopt;
  try {
    if (!transpose) {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           src, weights, bias, dst, strides, dilations, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
      while (!implementation.empty() && implName(pd) != implementation) {
        if (!pd.next_impl()) return std::nullopt;
      }
      result = {dnnl::convolution_forward(pd), pd.src_desc(), pd.dst_desc(), pd.weights_desc(),
                pd.scratchpad_desc(), "onednn:conv " + implName(pd)};
    } else {
      dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::deconvolution_direct, src, weights, bias, dst, strides,
                                             dilations, pad_l, pad_r);
      dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine);
      result = {dnnl::deconvolution_forward(pd), pd.src_desc(), pd.dst_desc(), pd.weights_desc(),
                pd.scratchpad_desc(), "onednn:deconv " + implName(pd)};
    }
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
  return result;
}

// The direct implementations oneDNN has for a convolution of `src` into `dst` with weights in
// any format, the best of each family ("jit_1x1", "jit", "jit_dw"), in oneDNN's order.
std::vector<std::string> directConvImplementations(const dnnl::engine& engine, const dnnl::memory::desc& src,
                                                   const dnnl::memory::desc& weights, const dnnl::memory::desc& dst,
                                                   const ConvGeometry& geometry) {
  const auto [strides, dilations, pad_l, pad_r] = onednnWindow(geometry);
  std::vector<std::string> names;
  try {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                         dnnl::memory::desc(weights.dims(), weights.data_type(),
                                                            dnnl::memory::format_tag::any),
                                         dst, strides, dilations, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(desc, scratchpadAttr(), engine);
    do {
      const std::string name = implName(pd);
      if (!isDirectImplementation(name)) continue;
      const bool family_listed = std::any_of(names.begin(), names.end(), [&](const std::string& listed) {
        return implFamily(listed) == implFamily(name);
      });
      if (!family_listed) names.push_back(name);
    } while (pd.next_impl());
  } catch (const dnnl::error&) {
    return {};
  }
  return names;
}

// A convolution on plain tensors computed in the blocked layout oneDNN's direct kernels
// want: input 0 is reordered into scratch, the convolution writes a blocked result into
// scratch, which is reordered into output 0. Used where oneDNN has no direct kernel for
// the plain layout (until a layout pass keeps whole conv chains blocked).
class ReorderedConvKernel final : public Kernel {
 public:
  ReorderedConvKernel(std::unique_ptr<Kernel> to_blocked, std::unique_ptr<Kernel> conv,
                      std::unique_ptr<Kernel> to_plain, size_t src_bytes, size_t dst_bytes, size_t num_inputs)
      : to_blocked_(std::move(to_blocked)), conv_(std::move(conv)), to_plain_(std::move(to_plain)),
        src_bytes_((src_bytes + 63) / 64 * 64), dst_bytes_((dst_bytes + 63) / 64 * 64), num_inputs_(num_inputs) {}

  size_t scratchBytes() const override {
    return src_bytes_ + dst_bytes_ +
           std::max({to_blocked_->scratchBytes(), conv_->scratchBytes(), to_plain_->scratchBytes()});
  }
  std::unique_ptr<KernelState> createState() const override {
    auto state = std::make_unique<States>();
    state->to_blocked = to_blocked_->createState();
    state->conv = conv_->createState();
    state->to_plain = to_plain_->createState();
    return state;
  }
  void run(const KernelArgs& args, KernelState* raw_state) const override {
    auto* state = static_cast<States*>(raw_state);
    auto* scratch = static_cast<std::byte*>(args.scratch);
    void* src = scratch;
    void* dst = scratch + src_bytes_;
    void* inner_scratch = scratch + src_bytes_ + dst_bytes_;
    const void* reorder_in[] = {args.inputs[0]};
    void* reorder_out[] = {src};
    to_blocked_->run({reorder_in, reorder_out, inner_scratch, args.num_threads, args.device}, state->to_blocked.get());
    std::array<const void*, kMaxInputs> inputs{};
    for (size_t i = 0; i < num_inputs_; ++i) inputs[i] = args.inputs[i];
    inputs[0] = src;
    void* conv_out[] = {dst};
    conv_->run({inputs.data(), conv_out, inner_scratch, args.num_threads, args.device}, state->conv.get());
    const void* blocked_in[] = {dst};
    to_plain_->run({blocked_in, args.outputs, inner_scratch, args.num_threads, args.device}, state->to_plain.get());
  }
  std::string name() const override { return conv_->name() + " (blocked inside)"; }

  static constexpr size_t kMaxInputs = 16;

 private:
  struct States final : KernelState {
    std::unique_ptr<KernelState> to_blocked, conv, to_plain;
  };
  std::unique_ptr<Kernel> to_blocked_, conv_, to_plain_;
  size_t src_bytes_, dst_bytes_, num_inputs_;
};

bool allPlain(const KernelBuildContext& context) {
  for (size_t i = 0; i < context.numInputs(); ++i) {
    if (context.hasInput(i) && context.input(i).layout != Layout::Plain) return false;
  }
  return context.output(0).layout == Layout::Plain;
}

// A convolution whose epilogue adds a residual of the output's own desc: the memory
// planner may give the output the residual's buffer (inPlaceInput). The run then takes the
// variant with oneDNN's sum post-op, which adds what the buffer holds; otherwise the one
// reading the residual as a binary post-op operand.
class ResidualInPlaceConvKernel final : public Kernel {
 public:
  ResidualInPlaceConvKernel(std::unique_ptr<Kernel> separate, std::unique_ptr<Kernel> in_place, size_t residual)
      : separate_(std::move(separate)), in_place_(std::move(in_place)), residual_(residual) {}

  size_t scratchBytes() const override { return std::max(separate_->scratchBytes(), in_place_->scratchBytes()); }
  std::optional<size_t> inPlaceInput(size_t output) const override {
    return output == 0 ? std::optional<size_t>(residual_) : std::nullopt;
  }
  std::unique_ptr<KernelState> createState() const override {
    auto state = std::make_unique<States>();
    state->separate = separate_->createState();
    state->in_place = in_place_->createState();
    return state;
  }
  void run(const KernelArgs& args, KernelState* raw_state) const override {
    auto* state = static_cast<States*>(raw_state);
    if (args.outputs[0] == args.inputs[residual_]) {
      in_place_->run(args, state->in_place.get());
    } else {
      separate_->run(args, state->separate.get());
    }
  }
  std::string name() const override {
    return in_place_->name() + " (residual summed in place; else " + separate_->name() + ")";
  }

 private:
  struct States final : KernelState {
    std::unique_ptr<KernelState> separate, in_place;
  };
  std::unique_ptr<Kernel> separate_, in_place_;
  size_t residual_;
};

std::unique_ptr<Kernel> onednnConvWith(const KernelBuildContext& context, const ConvGeometry& geometry,
                                       bool transpose, const Epilogue& epilogue, ConvAlgorithms algorithms,
                                       std::string_view implementation) {
  const DType dtype = context.output(0).dtype;
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16) return nullptr;
  if (geometry.in.size() < 1 || geometry.in.size() > 3) return nullptr;
  for (size_t i = 1; i < 3; ++i) {
    if (context.hasInput(i) && context.input(i).layout != Layout::Plain) return nullptr;  // W and B
  }
  const dnnl::engine& engine = cpuOf(context).engine();
  const bool plain = allPlain(context);
  dnnl::memory::desc src = layoutDesc(context.input(0));
  dnnl::memory::desc dst = layoutDesc(context.output(0));
  dnnl::memory::desc weights = weightsDesc(geometry, dtype, transpose);
  const Tensor* constant_weights = context.constantInput(1);
  dnnl::memory::desc weights_request =
      constant_weights ? dnnl::memory::desc(weights.dims(), weights.data_type(), dnnl::memory::format_tag::any)
                       : weights;

  std::vector<EpilogueStep> steps = epilogue.steps;
  std::optional<OnednnArg> bias;
  auto biasArg = [&](size_t input) {
    const TensorDesc& vector = context.input(input);
    if (vector.numElements() != geometry.out_channels) return false;
    dnnl::memory::dims dims{geometry.out_channels};
    bias = OnednnArg{DNNL_ARG_BIAS, OnednnArg::Source::Input, input, plainDesc(dims, vector.dtype)};
    return true;
  };
  // The op's own bias (input 2), else a leading Bias step, is the primitive's bias.
  bool own_bias_in_steps = false;
  for (const EpilogueStep& step : steps) own_bias_in_steps |= step.kind != EpilogueStep::Kind::Activation && step.input == 2;
  if (context.hasInput(2) && !own_bias_in_steps) {
    biasArg(2);
  } else if (!steps.empty() && steps.front().kind == EpilogueStep::Kind::Bias && context.hasInput(steps.front().input) &&
             biasArg(steps.front().input)) {
    steps.erase(steps.begin());
  }
  dnnl::post_ops post_ops;
  std::vector<OnednnArg> args;
  if (!appendEpilogue(context, steps, dst, 1, post_ops, args)) return nullptr;
  dnnl::primitive_attr attr = scratchpadAttr();
  attr.set_post_ops(post_ops);
  dnnl::memory::desc bias_md = bias ? bias->desc : dnnl::memory::desc();

  std::optional<ConvPrimitive> conv =
      convPrimitive(engine, transpose, src, weights_request, bias_md, dst, geometry, attr, algorithms,
                    implementation);
  std::optional<ConvPrimitive> blocked;
  if (plain && (!conv || !conv->direct())) {
    auto any = [&](const dnnl::memory::desc& desc) {
      return dnnl::memory::desc(desc.dims(), desc.data_type(), dnnl::memory::format_tag::any);
    };
    blocked = convPrimitive(engine, transpose, any(src), weights_request, bias_md, any(dst), geometry, attr,
                            algorithms);
    if (blocked && (!blocked->direct() || context.numInputs() > ReorderedConvKernel::kMaxInputs)) blocked.reset();
  }
  // A layout was chosen for speed: a slow implementation for it is declined, so that the
  // layout assignment keeps this convolution plain instead.
  if (!plain && (!conv || !conv->direct())) return nullptr;
  if (!conv && !blocked) return nullptr;
  auto packed = [&](const ConvPrimitive& chosen, std::vector<OnednnArg> chosen_args) {
    chosen_args.push_back({DNNL_ARG_SRC, OnednnArg::Source::Input, 0, chosen.src});
    chosen_args.push_back({DNNL_ARG_DST, OnednnArg::Source::Output, 0, chosen.dst});
    chosen_args.push_back({DNNL_ARG_SCRATCHPAD, OnednnArg::Source::Scratchpad, 0, chosen.scratchpad});
    OwnedConstants owned;
    if (constant_weights && context.probing()) {
      chosen_args.push_back({DNNL_ARG_WEIGHTS, OnednnArg::Source::Constant, 1, chosen.weights, nullptr});
    } else if (constant_weights) {
      owned.push_back(packedConstant(context, engine, *constant_weights, weights, chosen.weights));
      chosen_args.push_back({DNNL_ARG_WEIGHTS, OnednnArg::Source::Constant, 1, chosen.weights, owned.back()->data()});
    } else {
      chosen_args.push_back({DNNL_ARG_WEIGHTS, OnednnArg::Source::Input, 1, weights});
    }
    if (bias) chosen_args.push_back(*bias);
    return std::make_unique<PackedOnednnKernel>(chosen.label, engine, chosen.primitive, chosen.scratchpad.get_size(),
                                                std::move(chosen_args), std::move(owned));
  };
  std::unique_ptr<Kernel> kernel = packed(blocked ? *blocked : *conv, std::move(args));
  if (!blocked) {
    // A residual of the result's own desc may be overwritten in place: the sum post-op
    // (dst += ...) then replaces the binary add, which oneDNN's fastest 1x1 kernels lack.
    std::optional<size_t> residual;
    for (size_t k = 0; k < steps.size(); ++k) {
      const EpilogueStep& step = steps[k];
      if (step.kind != EpilogueStep::Kind::Residual || step.input < 3 || context.input(step.input) != context.output(0)) {
        continue;
      }
      residual = k;
      break;
    }
    if (!residual) return kernel;
    dnnl::post_ops sum_ops;
    std::vector<OnednnArg> sum_args;
    const std::vector<EpilogueStep> before(steps.begin(), steps.begin() + *residual),
        after(steps.begin() + *residual + 1, steps.end());
    if (!appendEpilogue(context, before, dst, 1, sum_ops, sum_args)) return kernel;
    sum_ops.append_sum(1.f);
    if (!appendEpilogue(context, after, dst, 1, sum_ops, sum_args)) return kernel;
    dnnl::primitive_attr sum_attr = scratchpadAttr();
    sum_attr.set_post_ops(sum_ops);
    std::optional<ConvPrimitive> summed =
        convPrimitive(engine, transpose, src, weights_request, bias_md, dst, geometry, sum_attr, algorithms,
                      implementation);
    if (!summed || !summed->direct()) return kernel;
    return std::make_unique<ResidualInPlaceConvKernel>(std::move(kernel), packed(*summed, std::move(sum_args)),
                                                       steps[*residual].input);
  }
  return std::make_unique<ReorderedConvKernel>(
      reorderKernel(engine, src, blocked->src, "onednn:reorder"), std::move(kernel),
      reorderKernel(engine, blocked->dst, dst, "onednn:reorder"), blocked->src.get_size(), blocked->dst.get_size(),
      context.numInputs());
}

// The geometry as the own direct kernel takes it: 2-D, one group, no dilation.
std::optional<DirectConvShape> directConvShape(const ConvGeometry& geometry) {
  if (geometry.kernel.size() != 2 || geometry.groups != 1) return std::nullopt;
  if (geometry.dilations[0] != 1 || geometry.dilations[1] != 1) return std::nullopt;
  DirectConvShape shape;
  shape.batch = geometry.batch;
  shape.in_channels = geometry.in_channels;
  shape.out_channels = geometry.out_channels;
  shape.in_h = geometry.in[0];
  shape.in_w = geometry.in[1];
  shape.out_h = geometry.out[0];
  shape.out_w = geometry.out[1];
  shape.kernel_h = geometry.kernel[0];
  shape.kernel_w = geometry.kernel[1];
  shape.stride_h = geometry.strides[0];
  shape.stride_w = geometry.strides[1];
  shape.pad_top = geometry.pad_begin[0];
  shape.pad_left = geometry.pad_begin[1];
  return shape;
}

// oneDNN's Winograd kernels exist for AVX-512 only. On a CPU with AVX2 and no AVX-512 the
// rules take Estuary's own instead (winograd_conv.h), on channels-last activations, as the
// tuner does on ResNet-50 there (bench/README: 3x3 layers at batch 8 on 2 threads 7-11 ms
// against oneDNN's direct 19-27 ms).
bool ownWinogradByRule(const KernelBuildContext& context) {
  const std::string isa = cpuOf(context).isa();
  return isa.rfind("avx2", 0) == 0;
}

// Winograd (where winogradApplies), each family of oneDNN's direct kernels (jit_1x1 or the
// general jit for a 1x1 convolution, for instance), and for channels-last f32 Estuary's own
// direct and Winograd kernels (direct_conv.h, winograd_conv.h). A build that tunes times
// them all. The rules take the first that builds: oneDNN's Winograd, else oneDNN's first
// choice; but where ownWinogradByRule and the activations are channels-last, Estuary's
// Winograd for a 3x3 stride-1 convolution and its direct kernel for any other that is not
// 1x1 and has at least 16 input channels (ResNet-50's strided 3x3 layers: 16-18 ms against
// oneDNN's 25-37 at batch 8; its 7x7 stem over 3 channels stays with oneDNN, 13 ms against
// 25).
std::unique_ptr<Kernel> onednnConv(const KernelBuildContext& context, const ConvGeometry& geometry, bool transpose,
                                   const Epilogue& epilogue) {
  const DType dtype = context.output(0).dtype;
  std::vector<KernelTactic> tactics;
  auto addTactic = [&](std::string name, ConvAlgorithms algorithms, std::string implementation) {
    tactics.push_back({std::move(name), [&context, &geometry, &epilogue, transpose, algorithms, implementation] {
                         return onednnConvWith(context, geometry, transpose, epilogue, algorithms, implementation);
                       }});
  };
  const bool onednn_float = dtype == DType::F32 || dtype == DType::BF16 || dtype == DType::F16;
  if (!transpose && onednn_float && context.input(0).dtype == dtype) {
    const dnnl::memory::desc src = layoutDesc(context.input(0));
    const Layout src_layout = context.input(0).layout;
    if (winogradApplies(geometry, src)) addTactic("onednn:winograd", ConvAlgorithms::WinogradOnly, "");
    for (const std::string& name : directConvImplementations(cpuOf(context).engine(), src,
                                                             weightsDesc(geometry, dtype, false),
                                                             layoutDesc(context.output(0)), geometry)) {
      addTactic("onednn:" + name, ConvAlgorithms::DirectOnly, name);
    }
    // The own kernels: after oneDNN's, so that builds that do not tune keep oneDNN's kernel,
    // except where ownWinogradByRule puts them first (Winograd before direct). With one oneDNN
    // implementation or none to choose from, oneDNN's own pick stands against them.
    std::optional<DirectConvShape> shape = directConvShape(geometry);
    if (shape && dtype == DType::F32 && src_layout == Layout::ChannelsLast) {
      if (tactics.size() < 2) {
        tactics.clear();
        addTactic("onednn", ConvAlgorithms::Preferred, "");
      }
      KernelTactic direct{"cpu:conv direct nhwc",
                          [&context, &epilogue, shape] { return makeDirectConvNhwc(context, *shape, epilogue); }};
      std::vector<KernelTactic> own = winogradConvNhwcTactics(context, *shape, epilogue);
      const bool winograd = !own.empty();
      const bool own_first = ownWinogradByRule(context) &&
                             (winograd || ((shape->kernel_h != 1 || shape->kernel_w != 1) && shape->in_channels >= 16));
      own.insert(winograd && own_first ? own.end() : own.begin(), std::move(direct));
      tactics.insert(own_first ? tactics.begin() : tactics.end(), std::make_move_iterator(own.begin()),
                     std::make_move_iterator(own.end()));
    }
  }
  if (tactics.size() < 2) return onednnConvWith(context, geometry, transpose, epilogue, ConvAlgorithms::Preferred, "");
  return context.choose(tactics);
}

// ---------------------------------------------------------------------------- own kernel

// Conv: per image and group, columns[C/g * K, P] = im2col(x), y = W_g x columns + bias.
// ConvTranspose: columns[M/g * K, P_in] = W_g^T x x_g, then scattered (col2im) into y.
// Computation is in f32 (f64 for f64) on the own blocked GEMM, whose left-hand operands are
// the weights: constant weights are converted and packed for it once, when the kernel is
// built; run-time weights on every run.
template <typename T>
class OwnConvKernel final : public Kernel {
  using Acc = ComputeOf<T>;

 public:
  OwnConvKernel(const ConvGeometry& geometry, bool transpose, bool has_bias, const T* constant_weights)
      : geometry_(geometry), transpose_(transpose), has_bias_(has_bias),
        window_(transpose ? windowTable(geometry.out, geometry.in, geometry.kernel, geometry.strides,
                                        geometry.dilations, geometry.pad_begin, false)
                          : windowTable(geometry.in, geometry.out, geometry.kernel, geometry.strides,
                                        geometry.dilations, geometry.pad_begin, false)) {
    const int64_t g = geometry.groups;
    in_group_ = geometry.in_channels / g;
    out_group_ = geometry.out_channels / g;
    in_size_ = product(geometry.in);
    out_size_ = product(geometry.out);
    const int64_t column_rows = (transpose ? out_group_ : in_group_) * window_.kernel;
    columns_ = column_rows * window_.positions;
    product_ = out_group_ * out_size_;
    image_ = transpose ? in_group_ * in_size_ : 0;
    if (constant_weights) packed_weights_ = packWeights(constant_weights);
  }

  size_t scratchBytes() const override { return static_cast<size_t>(columns_ + product_ + image_) * sizeof(Acc); }

  void run(const KernelArgs& args, KernelState*) const override {
    const T* x = static_cast<const T*>(args.inputs[0]);
    const T* bias = has_bias_ ? static_cast<const T*>(args.inputs[2]) : nullptr;
    T* y = static_cast<T*>(args.outputs[0]);
    std::vector<PackedGemmA<Acc>> run_time_weights;
    if (packed_weights_.empty()) run_time_weights = packWeights(static_cast<const T*>(args.inputs[1]));
    const std::vector<PackedGemmA<Acc>>& weights = packed_weights_.empty() ? run_time_weights : packed_weights_;
    Acc* columns = static_cast<Acc*>(args.scratch);
    Acc* result = columns + columns_;
    for (int64_t n = 0; n < geometry_.batch; ++n) {
      for (int64_t g = 0; g < geometry_.groups; ++g) {
        const T* image = x + (n * geometry_.in_channels + g * in_group_) * in_size_;
        T* out = y + (n * geometry_.out_channels + g * out_group_) * out_size_;
        const T* shift = bias ? bias + g * out_group_ : nullptr;
        if (transpose_) {
          Acc* converted = result + product_;  // x_g as Acc, [C/g, P_in]
          ge::parallelFor(image_, 1, args.num_threads, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) converted[i] = loadAs(image[i]);
          });
          ownGemm(weights[g], converted, window_.positions, 1, window_.positions, columns, args.num_threads);
          col2im(columns, shift, result, out, args.num_threads);
        } else {
          im2col(image, columns, args.num_threads);
          ownGemm(weights[g], columns, window_.positions, 1, window_.positions, result, args.num_threads);
          ge::parallelFor(out_group_, static_cast<double>(out_size_), args.num_threads, [&](int64_t begin, int64_t end) {
            for (int64_t m = begin; m < end; ++m) {
              const Acc offset = shift ? loadAs(shift[m]) : Acc(0);
              for (int64_t p = 0; p < out_size_; ++p) out[m * out_size_ + p] = storeAs<T>(result[m * out_size_ + p] + offset);
            }
          });
        }
      }
    }
  }
  std::string name() const override { return transpose_ ? "cpu:conv_transpose" : "cpu:conv"; }

 private:
  // Per group, the GEMM's left-hand operand: Conv's W_g [M/g, C/g * K] as stored, or
  // ConvTranspose's W_g^T [M/g * K, C/g] read from [C/g, M/g * K] through strides.
  std::vector<PackedGemmA<Acc>> packWeights(const T* w) const {
    const int64_t kernel = window_.kernel;
    std::vector<PackedGemmA<Acc>> packed;
    for (int64_t g = 0; g < geometry_.groups; ++g) {
      if (transpose_) {
        const int64_t rows = out_group_ * kernel;
        packed.emplace_back(w + g * in_group_ * rows, 1, rows, rows, in_group_);
      } else {
        const int64_t depth = in_group_ * kernel;
        packed.emplace_back(w + g * out_group_ * depth, depth, 1, out_group_, depth);
      }
    }
    return packed;
  }

  // columns[(c, r), p] = channel c of `image` at kernel offset r of window position p, 0 in
  // the padding.
  void im2col(const T* image, Acc* columns, int num_threads) const {
    const int64_t kernel = window_.kernel, positions = window_.positions;
    ge::parallelFor(in_group_ * kernel, static_cast<double>(positions), num_threads, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T* channel = image + (row / kernel) * in_size_;
        const int64_t* offsets = window_.offsets.data() + (row % kernel) * positions;
        Acc* column = columns + row * positions;
        for (int64_t p = 0; p < positions; ++p) column[p] = offsets[p] < 0 ? Acc(0) : loadAs(channel[offsets[p]]);
      }
    });
  }

  // Scatters columns[(m, r), p] into output channel m at the cell kernel offset r of input
  // position p reaches, plus the bias, through an Acc accumulator per channel (`sums`),
  // then stores the channels into `out`. Threads take whole output channels, so no two
  // write the same element.
  void col2im(const Acc* columns, const T* shift, Acc* sums, T* out, int num_threads) const {
    const int64_t kernel = window_.kernel, positions = window_.positions;
    ge::parallelFor(out_group_, static_cast<double>(kernel * positions + out_size_), num_threads,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t m = begin; m < end; ++m) {
                        Acc* sum = sums + m * out_size_;
                        std::fill(sum, sum + out_size_, shift ? loadAs(shift[m]) : Acc(0));
                        for (int64_t r = 0; r < kernel; ++r) {
                          const int64_t* offsets = window_.offsets.data() + r * positions;
                          const Acc* row = columns + (m * kernel + r) * positions;
                          for (int64_t p = 0; p < positions; ++p) {
                            if (offsets[p] >= 0) sum[offsets[p]] += row[p];
                          }
                        }
                        for (int64_t p = 0; p < out_size_; ++p) out[m * out_size_ + p] = storeAs<T>(sum[p]);
                      }
                    });
  }

  ConvGeometry geometry_;
  bool transpose_;
  bool has_bias_;
  WindowTable window_;
  int64_t in_group_ = 0, out_group_ = 0, in_size_ = 0, out_size_ = 0;
  int64_t columns_ = 0, product_ = 0, image_ = 0;  // scratch, in elements
  std::vector<PackedGemmA<Acc>> packed_weights_;   // empty: the weights are an input
};

std::unique_ptr<Kernel> ownConv(const KernelBuildContext& context, const ConvGeometry& geometry, bool transpose) {
  std::unique_ptr<Kernel> kernel;
  const Tensor* constant_weights = context.probing() ? nullptr : context.constantInput(1);
  dispatch(FloatDTypes{}, context.output(0).dtype, [&](auto type) {
    using T = StorageOf<decltype(type)>;
    kernel = std::make_unique<OwnConvKernel<T>>(geometry, transpose, context.hasInput(2),
                                                constant_weights ? static_cast<const T*>(constant_weights->data())
                                                                 : nullptr);
  });
  // The kernel holds its own packed copy: the weights' pages in a mapped model file can go.
  if (kernel && constant_weights) releaseMappedPages(constant_weights->data(), constant_weights->byteSize());
  return kernel;
}

std::unique_ptr<Kernel> makeConvLike(const KernelBuildContext& context, const Epilogue& epilogue, bool transpose) {
  for (size_t i = 0; i < 3; ++i) {
    if (context.hasInput(i) && context.input(i).dtype != context.output(0).dtype) return nullptr;
  }
  ConvGeometry geometry = convGeometry(context, transpose);
  const bool plain = allPlain(context);
  if (context.output(0).numElements() == 0) {
    return epilogue.empty() && plain ? makeZeroFillKernel(context, "cpu:conv (empty)") : nullptr;
  }
  if (std::unique_ptr<Kernel> kernel = onednnConv(context, geometry, transpose, epilogue)) return kernel;
  if (!epilogue.empty() || !plain) return nullptr;
  return ownConv(context, geometry, transpose);
}

}  // namespace

std::unique_ptr<Kernel> makeConvKernel(const KernelBuildContext& context, const Epilogue& epilogue) {
  if (!allPlain(context) && context.output(0).dtype != DType::F32) return nullptr;  // no f32 detour for layouts
  return buildPreferringF32(context, [&](const KernelBuildContext& c) { return makeConvLike(c, epilogue, false); });
}

std::unique_ptr<Kernel> makeConvTransposeKernel(const KernelBuildContext& context, const Epilogue& epilogue) {
  if (!allPlain(context) && context.output(0).dtype != DType::F32) return nullptr;
  return buildPreferringF32(context, [&](const KernelBuildContext& c) { return makeConvLike(c, epilogue, true); });
}

std::optional<Layout> winogradLayout(const KernelBuildContext& context) {
  const TensorDesc& x = context.input(0);
  if (x.dtype != DType::F32 || x.rank != 4 || !context.hasInput(1)) return std::nullopt;
  ConvGeometry geometry = convGeometry(context, false);
  if (ownWinogradByRule(context)) {
    std::optional<DirectConvShape> shape = directConvShape(geometry);
    if (!shape || !winogradConvNhwcApplies(*shape)) return std::nullopt;
    return Layout::ChannelsLast;
  }
  dnnl::memory::desc src(dnnl::memory::dims(x.dims.begin(), x.dims.begin() + x.rank), dnnl::memory::data_type::f32,
                         dnnl::memory::format_tag::any);
  if (!winogradApplies(geometry, src)) return std::nullopt;
  ScopedOpenMpThreads threads(context.maxThreads());
  const TensorDesc& y = context.output(0);
  dnnl::memory::desc weights = weightsDesc(geometry, x.dtype, false);
  std::optional<ConvPrimitive> conv = convPrimitive(
      cpuOf(context).engine(), false, src,
      dnnl::memory::desc(weights.dims(), weights.data_type(), dnnl::memory::format_tag::any), dnnl::memory::desc(),
      dnnl::memory::desc(dnnl::memory::dims(y.dims.begin(), y.dims.begin() + y.rank), dnnl::memory::data_type::f32,
                         dnnl::memory::format_tag::any),
      geometry, scratchpadAttr());
  if (!conv || conv->label.find("wino") == std::string::npos) return std::nullopt;
  return layoutOf(conv->dst, y);
}

std::optional<Layout> preferredConvLayout(const KernelBuildContext& context) {
  const TensorDesc& x = context.input(0);
  if (x.dtype != DType::F32 || x.rank < 3 || x.rank > 5 || !context.hasInput(1)) return std::nullopt;
  ScopedOpenMpThreads threads(context.maxThreads());
  ConvGeometry geometry = convGeometry(context, false);
  auto any = [](const TensorDesc& desc) {
    return dnnl::memory::desc(dnnl::memory::dims(desc.dims.begin(), desc.dims.begin() + desc.rank),
                              dnnlType(desc.dtype), dnnl::memory::format_tag::any);
  };
  dnnl::memory::desc weights = weightsDesc(geometry, x.dtype, false);
  std::optional<ConvPrimitive> conv =
      convPrimitive(cpuOf(context).engine(), false, any(x),
                    dnnl::memory::desc(weights.dims(), weights.data_type(), dnnl::memory::format_tag::any),
                    dnnl::memory::desc(), any(context.output(0)), geometry, scratchpadAttr());
  if (!conv || !conv->direct()) return std::nullopt;
  return layoutOf(conv->dst, context.output(0));
}

void registerConvKernels(KernelRegistry& registry) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    const bool transpose = op[4] == 'T';
    auto factory = [transpose](const KernelBuildContext& context) {
      return transpose ? makeConvTransposeKernel(context, {}) : makeConvKernel(context, {});
    };
    registry.addLayoutAware(op, "", factory);
  }
}

}  // namespace estuary::ge::cpu
