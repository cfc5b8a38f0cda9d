// Conv and ConvTranspose kernels against direct reference loops in double: 1-D to 3-D,
// groups and depthwise, strides, dilations, explicit and automatic padding, bias, constant
// (pre-packed) and run-time weights; epilogues and blocked activation layouts.
#include "../../ge_backend/src/cpu/post_ops.h"
#include "estuary/ge/device.h"
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

struct ConvCase {
  std::vector<int64_t> x;       // N, C, spatial...
  int64_t out_channels;
  std::vector<int64_t> kernel;
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // empty: defaults
  std::string auto_pad = "NOTSET";
  bool bias = true;
  std::vector<int64_t> output_padding = {};       // ConvTranspose
};

std::string ints(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// Geometry with defaults filled and auto_pad resolved, as ONNX defines it.
struct Resolved {
  std::vector<int64_t> strides, dilations, pad_begin, out;
};

Resolved resolve(const ConvCase& c, bool transpose) {
  const size_t spatial = c.kernel.size();
  Resolved r;
  r.strides = c.strides;
  if (r.strides.empty()) r.strides.assign(spatial, 1);
  r.dilations = c.dilations;
  if (r.dilations.empty()) r.dilations.assign(spatial, 1);
  std::vector<int64_t> pads = c.pads;
  if (pads.empty()) pads.assign(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = c.x[2 + i], extent = (c.kernel[i] - 1) * r.dilations[i] + 1;
    const int64_t output_padding = c.output_padding.empty() ? 0 : c.output_padding[i];
    int64_t begin = pads[i], end = pads[i + spatial], out;
    if (!transpose) {
      if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
        out = (in + r.strides[i] - 1) / r.strides[i];
        int64_t total = std::max<int64_t>(0, (out - 1) * r.strides[i] + extent - in);
        begin = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        out = (in + begin + end - extent) / r.strides[i] + 1;
      }
    } else {
      if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
        out = in * r.strides[i];
        int64_t total = r.strides[i] * (in - 1) + output_padding + extent - out;
        begin = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        out = r.strides[i] * (in - 1) + output_padding + extent - begin - end;
      }
    }
    r.pad_begin.push_back(begin);
    r.out.push_back(out);
  }
  return r;
}

// Direct convolution (or its transpose, as a scatter) in double.
std::vector<double> referenceConv(const ConvCase& c, const Resolved& r, const TestTensor& x, const TestTensor& w,
                                  const TestTensor* bias, bool transpose) {
  const size_t spatial = c.kernel.size();
  const int64_t n_batch = c.x[0], channels = c.x[1], groups = c.group;
  const int64_t in_group = channels / groups, out_group = c.out_channels / groups;
  int64_t in_size = 1, out_size = 1, kernel_size = 1;
  for (size_t i = 0; i < spatial; ++i) {
    in_size *= c.x[2 + i];
    out_size *= r.out[i];
    kernel_size *= c.kernel[i];
  }
  std::vector<double> y(static_cast<size_t>(n_batch * c.out_channels * out_size), 0.0);
  // Window positions enumerate (window index, kernel offset): conv windows are output
  // positions reading input cells; transpose windows are input positions writing outputs.
  const std::vector<int64_t> window_grid = transpose ? std::vector<int64_t>(c.x.begin() + 2, c.x.end()) : r.out;
  const std::vector<int64_t> cell_grid = transpose ? r.out : std::vector<int64_t>(c.x.begin() + 2, c.x.end());
  int64_t windows = 1;
  for (int64_t d : window_grid) windows *= d;
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t ci = 0; ci < in_group; ++ci) {
        for (int64_t mo = 0; mo < out_group; ++mo) {
          for (int64_t p = 0; p < windows; ++p) {
            for (int64_t k = 0; k < kernel_size; ++k) {
              int64_t rest_p = p, rest_k = k, cell = 0, scale = 1;
              bool inside = true;
              std::vector<int64_t> pos(spatial), off(spatial);
              for (size_t d = spatial; d-- > 0;) {
                pos[d] = rest_p % window_grid[d];
                rest_p /= window_grid[d];
                off[d] = rest_k % c.kernel[d];
                rest_k /= c.kernel[d];
              }
              for (size_t d = spatial; d-- > 0;) {
                int64_t at = pos[d] * r.strides[d] - r.pad_begin[d] + off[d] * r.dilations[d];
                inside &= at >= 0 && at < cell_grid[d];
                cell += at * scale;
                scale *= cell_grid[d];
              }
              if (!inside) continue;
              const int64_t in_channel = g * in_group + ci, out_channel = g * out_group + mo;
              if (!transpose) {
                double weight = w.values[(out_channel * in_group + ci) * kernel_size + k];
                y[(n * c.out_channels + out_channel) * out_size + p] +=
                    weight * x.values[(n * channels + in_channel) * in_size + cell];
              } else {
                double weight = w.values[(in_channel * out_group + mo) * kernel_size + k];
                y[(n * c.out_channels + out_channel) * out_size + cell] +=
                    weight * x.values[(n * channels + in_channel) * in_size + p];
              }
            }
          }
        }
      }
    }
  }
  if (bias) {
    for (int64_t n = 0; n < n_batch; ++n) {
      for (int64_t m = 0; m < c.out_channels; ++m) {
        for (int64_t p = 0; p < out_size; ++p) y[(n * c.out_channels + m) * out_size + p] += bias->values[m];
      }
    }
  }
  return y;
}

std::string convAttributes(const ConvCase& c, bool transpose) {
  std::string attrs = "auto_pad = \"" + c.auto_pad + "\"";
  if (!c.dilations.empty()) attrs += ", dilations = " + ints(c.dilations);
  attrs += ", group = " + std::to_string(c.group);
  if (transpose && !c.output_padding.empty()) attrs += ", output_padding = " + ints(c.output_padding);
  if (!c.pads.empty()) attrs += ", pads = " + ints(c.pads);
  if (!c.strides.empty()) attrs += ", strides = " + ints(c.strides);
  return attrs;
}

void checkConv(DType dtype, const ConvCase& c, bool transpose, bool constant_weights, uint32_t seed) {
  const std::string t(dtypeName(dtype));
  std::vector<int64_t> w_dims = transpose ? std::vector<int64_t>{c.x[1], c.out_channels / c.group}
                                          : std::vector<int64_t>{c.out_channels, c.x[1] / c.group};
  w_dims.insert(w_dims.end(), c.kernel.begin(), c.kernel.end());
  TestTensor x = randomTensor(dtype, c.x, seed), w = randomTensor(dtype, w_dims, seed + 1);
  TestTensor b = randomTensor(dtype, {c.out_channels}, seed + 2);
  Resolved r = resolve(c, transpose);
  std::vector<int64_t> y_dims{c.x[0], c.out_channels};
  y_dims.insert(y_dims.end(), r.out.begin(), r.out.end());
  TestTensor y_type{dtype, y_dims, {}};
  std::string text = "graph @g(%x: " + x.type() + (constant_weights ? "" : ", %w: " + w.type()) +
                     (c.bias ? ", %b: " + b.type() : "") + ") {\n";
  if (constant_weights) text += constantLine("w", w);
  text += std::string("  %y = ") + (transpose ? "ConvTranspose" : "Conv") + "(%x, %w" + (c.bias ? ", %b" : "") +
          ") {" + convAttributes(c, transpose) + "} : " + y_type.type() + "\n  return %y\n}";
  std::vector<TestTensor> inputs{x};
  if (!constant_weights) inputs.push_back(w);
  if (c.bias) inputs.push_back(b);
  RunResult result = runGraph(text, inputs);
  ASSERT_EQ(result.outputs[0].dims, y_dims) << text;
  std::vector<double> expected = referenceConv(c, r, x, w, c.bias ? &b : nullptr, transpose);
  int64_t terms = (transpose ? c.out_channels / c.group : c.x[1] / c.group);
  for (int64_t k : c.kernel) terms *= k;
  const double tolerance = dtypeTolerance(dtype) * std::max(1.0, std::sqrt(static_cast<double>(terms)));
  expectNear(result.outputs[0], expected, tolerance, tolerance * 0.1,
             (transpose ? "ConvTranspose " : "Conv ") + t + " x" + ints(c.x) + " k" + ints(c.kernel) + " {" +
                 convAttributes(c, transpose) + "}" + (constant_weights ? " constant W" : "") + " via " +
                 result.kernels[0]);
}

const std::vector<ConvCase> kConvCases = {
    {{1, 3, 10, 10}, 8, {3, 3}},
    {{2, 4, 9, 11}, 6, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}},
    {{1, 8, 12, 12}, 8, {3, 3}, 8, {}, {}, {1, 1, 1, 1}},              // depthwise
    {{1, 6, 10, 10}, 9, {3, 3}, 3, {1, 2}, {2, 1}, {2, 1, 0, 2}},      // groups, dilation, odd pads
    {{1, 16, 7, 7}, 32, {1, 1}, 1, {}, {}, {}, "NOTSET", false},       // 1x1, no bias
    {{1, 5, 13}, 7, {4}, 1, {3}, {}, {1, 2}},                          // 1-D
    {{1, 3, 5, 6, 7}, 4, {3, 2, 3}, 1, {1, 2, 1}, {}, {1, 0, 1, 1, 1, 0}},  // 3-D
    {{1, 4, 11, 8}, 4, {3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
    {{1, 4, 11, 8}, 4, {4, 4}, 2, {2, 3}, {}, {}, "SAME_LOWER"},
    {{1, 4, 6, 6}, 4, {3, 3}, 1, {}, {}, {}, "VALID"},
    {{1, 2, 3, 3, 3, 3}, 3, {2, 2, 2, 2}},                             // 4 spatial axes: own kernel
};

TEST(ConvKernels, ConvAgainstReference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const ConvCase& c : kConvCases) {
      checkConv(dtype, c, false, true, 3);
      if (dtype == DType::F32 || dtype == DType::F64) checkConv(dtype, c, false, false, 4);
    }
  }
}

const std::vector<ConvCase> kTransposeCases = {
    {{1, 4, 5, 5}, 6, {3, 3}},
    {{2, 4, 5, 6}, 6, {3, 3}, 2, {2, 2}, {}, {1, 1, 1, 1}},
    {{1, 6, 4, 4}, 6, {3, 3}, 6, {2, 2}, {}, {1, 1, 1, 1}, "NOTSET", true, {1, 1}},  // depthwise, output_padding
    {{1, 3, 7}, 5, {4}, 1, {3}, {2}, {1, 2}},
    {{1, 2, 3, 4, 3}, 4, {2, 3, 2}, 1, {2, 1, 2}},
    {{1, 4, 5, 5}, 4, {3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
    {{1, 2, 2, 3, 2, 2}, 3, {2, 2, 1, 2}},  // 4 spatial axes: own kernel
};

TEST(ConvKernels, ConvTransposeAgainstReference) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (const ConvCase& c : kTransposeCases) {
      checkConv(dtype, c, true, true, 5);
      if (dtype == DType::F32) checkConv(dtype, c, true, false, 6);
    }
  }
}

// The own kernel (f64 here) on sizes past its GEMM's blocks (96 output channels, a depth of
// 128, 512 positions: GemmBlocking in nn_support.h), with weights packed at build and at run
// time, and ConvTranspose's col2im split across threads by output channel within groups.
TEST(ConvKernels, OwnKernelAcrossGemmBlocksAndParallelCol2im) {
  const ConvCase wide{{1, 15, 24, 24}, 100, {3, 3}, 1, {}, {}, {1, 1, 1, 1}};  // depth 135, 576 positions
  const ConvCase grouped{{2, 8, 32, 32}, 16, {3, 3}, 2, {2, 2}, {}, {1, 1, 1, 1}};
  for (bool constant_weights : {true, false}) {
    checkConv(DType::F64, wide, false, constant_weights, 7);
    checkConv(DType::F64, grouped, true, constant_weights, 8);
    checkConv(DType::F64, ConvCase{{1, 4, 9, 9}, 4, {3, 3}, 4, {2, 2}}, true, constant_weights, 9);  // depthwise
  }
}

// A 1x1 kernel: 3x3 stride-1 ones take Estuary's own Winograd on AVX2 CPUs (conv.cpp).
TEST(ConvKernels, FloatConvsUseOnednnWithPackedWeights) {
  TestTensor x = randomTensor(DType::F32, {1, 16, 8, 8}, 1), w = randomTensor(DType::F32, {16, 16, 1, 1}, 2);
  RunResult result = runGraph("graph @g(%x: f32[1,16,8,8]) {\n" + constantLine("w", w) +
                                  "  %y = Conv(%x, %w) : f32[1,16,8,8]\n  return %y\n}",
                              {x});
  EXPECT_TRUE(usesKernel(result, "onednn:conv")) << result.kernels[0];
}

// A run given fewer threads than the kernel was built for (a busy machine) runs a copy of
// the primitive made for that many (onednn_kernel.h), with the same results.
TEST(ConvKernels, ARunOnFewerThreadsGivesTheSameResults) {
  TestTensor x = randomTensor(DType::F32, {1, 32, 28, 28}, 1), w = randomTensor(DType::F32, {64, 32, 3, 3}, 2);
  const std::string text = "graph @g(%x: f32[1,32,28,28], %w: f32[64,32,3,3]) {\n"
                           "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,64,28,28]\n  return %y\n}";
  const TestTensor shape{DType::F32, {1, 64, 28, 28}, {}};
  std::vector<TestTensor> built_for_two = runKernelDirectly(text, {x, w}, {false, true}, {shape}, 2);
  std::vector<TestTensor> run_on_one = runKernelDirectly(text, {x, w}, {false, true}, {shape}, 2, 1);
  EXPECT_EQ(run_on_one[0].values, built_for_two[0].values);
}

// ---------------------------------------------------------------------------- epilogues, layouts

struct DirectRun {
  std::vector<std::byte> output;
  std::string name;
};

// Builds Conv with makeConvKernel(epilogue) and runs it on raw input buffers; the output is
// in `output_layout`, the inputs in their descs' layouts.
DirectRun runConvKernel(const std::string& text, const std::vector<TensorDesc>& descs,
                        const std::vector<std::vector<std::byte>>& buffers, const cpu::Epilogue& epilogue,
                        Layout output_layout, size_t output_bytes) {
  auto graph = parseGraph(text);
  Node* node = nullptr;
  for (Node* candidate : graph->nodes()) node = candidate;
  // W is a constant, as in a real model: the kernel pre-packs it.
  Tensor weights = Tensor::copyOf(descs[1].dtype, descs[1].dimVector(), buffers[1].data());
  std::vector<const Tensor*> constants(descs.size(), nullptr);
  constants[1] = &weights;
  TensorDesc output = TensorDesc::of(node->output()->type());
  output.layout = output_layout;
  KernelBuildContext context(*node, descs, {output}, constants, cpuDevice(), 2);
  std::unique_ptr<Kernel> kernel = cpu::makeConvKernel(context, epilogue);
  DirectRun run;
  if (!kernel) {
    ADD_FAILURE() << "no kernel";
    return run;
  }
  run.name = kernel->name();
  std::vector<const void*> inputs;
  for (const auto& buffer : buffers) inputs.push_back(buffer.empty() ? nullptr : buffer.data());
  run.output.resize(output_bytes);
  void* outputs[] = {run.output.data()};
  std::vector<std::byte> scratch(kernel->scratchBytes() + 64);
  auto device = cpuDevice().createRunState();
  auto state = kernel->createState();
  kernel->run(KernelArgs{inputs.data(), outputs, scratch.data(), 2, device.get()}, state.get());
  return run;
}

TEST(ConvEpilogues, BiasReluResidualScaleAndBlockedLayout) {
  const ConvCase c{{1, 16, 9, 9}, 32, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "NOTSET", false};
  Resolved r = resolve(c, false);
  TestTensor x = randomTensor(DType::F32, c.x, 1), w = randomTensor(DType::F32, {32, 16, 3, 3}, 2);
  TestTensor bias = randomTensor(DType::F32, {32}, 3), residual = randomTensor(DType::F32, {1, 32, 9, 9}, 4);
  std::vector<double> expected = referenceConv(c, r, x, w, &bias, false);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = 2.0 * (std::max(0.0, expected[i]) + residual.values[i]);
  const std::string text =
      "graph @g(%x: f32[1,16,9,9], %w: f32[32,16,3,3]) {\n  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : "
      "f32[1,32,9,9]\n  return %y\n}";
  cpu::Epilogue epilogue;
  // Fused-node inputs: Conv's own (X, W, absent B), then the epilogue's operands.
  epilogue.steps = {cpu::EpilogueStep::bias(3), cpu::EpilogueStep::eltwise(dnnl::algorithm::eltwise_relu),
                    cpu::EpilogueStep::residual(4), cpu::EpilogueStep::scale(2.f)};
  std::vector<TensorDesc> descs{TensorDesc::of(DType::F32, c.x), TensorDesc::of(DType::F32, {32, 16, 3, 3}),
                                TensorDesc{}, TensorDesc::of(DType::F32, {32}),
                                TensorDesc::of(DType::F32, {1, 32, 9, 9})};
  DirectRun plain = runConvKernel(text, descs, {encode(x), encode(w), {}, encode(bias), encode(residual)}, epilogue,
                                  Layout::Plain, expected.size() * 4);
  TestTensor actual{DType::F32, {1, 32, 9, 9}, {}};
  for (size_t i = 0; i < expected.size(); ++i) actual.values.push_back(decodeOne(DType::F32, plain.output.data(), i));
  expectNear(actual, expected, 1e-4, 1e-5, "Conv + bias + relu + residual + scale via " + plain.name);

  // The same with blocked activations: x, the residual and y in blocks of 16 channels (nChw16c),
  // or of 8 on a CPU without AVX-512, whose oneDNN convolutions have no 16-channel kernels.
  const bool avx512 = cpuDevice().isa().rfind("avx512", 0) == 0;
  const Layout layout = avx512 ? Layout::Blocked16 : Layout::Blocked8;
  const int64_t block = channelBlock(layout);
  auto toBlocked = [block](const TestTensor& plain_tensor) {
    const int64_t channels = plain_tensor.dims[1], spatial = plain_tensor.dims[2] * plain_tensor.dims[3];
    TestTensor blocked = plain_tensor;
    for (int64_t ch = 0; ch < channels; ++ch) {
      for (int64_t s = 0; s < spatial; ++s) {
        blocked.values[((ch / block) * spatial + s) * block + ch % block] = plain_tensor.values[ch * spatial + s];
      }
    }
    return blocked;
  };
  std::vector<TensorDesc> blocked_descs = descs;
  blocked_descs[0].layout = blocked_descs[4].layout = layout;
  DirectRun blocked = runConvKernel(text, blocked_descs,
                                    {encode(toBlocked(x)), encode(w), {}, encode(bias), encode(toBlocked(residual))},
                                    epilogue, layout, expected.size() * 4);
  ASSERT_FALSE(blocked.output.empty()) << "no " << layoutName(layout) << " kernel";
  EXPECT_NE(blocked.name.find("jit"), std::string::npos) << blocked.name;
  TestTensor expected_plain{DType::F32, {1, 32, 9, 9}, expected};
  TestTensor expected_blocked = toBlocked(expected_plain);
  TestTensor blocked_actual{DType::F32, {1, 32, 9, 9}, {}};
  for (size_t i = 0; i < expected.size(); ++i) {
    blocked_actual.values.push_back(decodeOne(DType::F32, blocked.output.data(), i));
  }
  expectNear(blocked_actual, expected_blocked.values, 1e-4, 1e-5, "nChw16c Conv with epilogue via " + blocked.name);
}

TEST(ConvEpilogues, RepeatedActivationWithOtherParametersIsDeclined) {
  const std::string text =
      "graph @g(%x: f32[1,16,5,5], %w: f32[16,16,3,3]) {\n  %y = Conv(%x, %w) : f32[1,16,3,3]\n  return %y\n}";
  auto graph = parseGraph(text);
  Node* node = nullptr;
  for (Node* candidate : graph->nodes()) node = candidate;
  KernelBuildContext context(*node, {TensorDesc::of(DType::F32, {1, 16, 5, 5}), TensorDesc::of(DType::F32, {16, 16, 3, 3})},
                             {TensorDesc::of(DType::F32, {1, 16, 3, 3})}, {nullptr, nullptr}, cpuDevice(), 1);
  cpu::Epilogue epilogue;
  epilogue.steps = {cpu::EpilogueStep::eltwise(dnnl::algorithm::eltwise_relu, 0.1f),
                    cpu::EpilogueStep::eltwise(dnnl::algorithm::eltwise_tanh),
                    cpu::EpilogueStep::eltwise(dnnl::algorithm::eltwise_relu, 0.2f)};
  EXPECT_EQ(cpu::makeConvKernel(context, epilogue), nullptr);
  epilogue.steps = {cpu::EpilogueStep::scale(2.f), cpu::EpilogueStep::scale(3.f),
                    cpu::EpilogueStep::eltwise(dnnl::algorithm::eltwise_tanh)};
  EXPECT_NE(cpu::makeConvKernel(context, epilogue), nullptr) << "consecutive scales fold into one";
}

}  // namespace
}  // namespace estuary::ge::tensor_test
