// Layout assignment: convolution chains run in oneDNN's preferred (or a forced) layout with
// reorders only at the edges, give the plain path's results, and the memory planner sizes
// and separates the padded buffers. Also BatchNormalization folding into convolutions.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "cnn_graphs.h"
#include "estuary/ge/model.h"
#include "estuary/text/parser.h"
#include "plan.h"

namespace estuary::ge {
namespace {

struct Result {
  std::vector<float> values;
  BuildReport report;
  std::shared_ptr<const Plan> plan;
};

Result run(const Graph& graph, std::optional<Layout> layout, const std::vector<std::vector<float>>& inputs) {
  BuildOptions options;
  options.num_threads = 2;
  options.activation_layout = layout;
  auto model = CompiledModel::build(graph, options);
  std::vector<HostTensor> tensors;
  std::vector<TensorDesc> descs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    descs.push_back(TensorDesc::of(model->inputs()[i].type));
    tensors.push_back(HostTensor::of(descs.back(), const_cast<float*>(inputs[i].data())));
  }
  auto context = model->createContext();
  const auto& outputs = context->run(tensors);
  const float* data = static_cast<const float*>(outputs[0].data);
  return {std::vector<float>(data, data + outputs[0].desc().numElements()), model->report(), model->planFor(descs)};
}

// Parses `text` and turns the graph inputs named `names` into constants of random values
// (positive for "var", a variance): weights are constants in real models, and only
// constant weights are pre-packed into the layouts the fast convolutions need.
std::unique_ptr<Graph> withConstants(const std::string& text, const std::vector<std::string>& names) {
  auto graph = parseGraph(text);
  std::mt19937 random(9);
  std::normal_distribution<float> normal(0.f, 0.3f);
  for (const std::string& name : names) {
    size_t index = 0;
    while (graph->input(index)->name() != name) ++index;
    Value* input = graph->input(index);
    Tensor tensor = Tensor::allocate(DType::F32, input->shape().staticDims());
    auto* values = static_cast<float*>(tensor.mutableData());
    for (int64_t i = 0; i < tensor.numElements(); ++i) {
      values[i] = name == "var" ? std::abs(normal(random)) + 0.5f : normal(random);
    }
    Node* constant = graph->createNodeBefore(graph->firstNode(), "Constant", {});
    constant->output()->setType(input->type());
    constant->setAttr("value", std::move(tensor));
    input->replaceAllUsesWith(constant->output());
    graph->removeInput(index);
  }
  return graph;
}

const std::vector<std::string> kOddChannelsWeights{"w1", "w2", "w3", "w4", "scale", "shift", "mean", "var"};

std::vector<std::vector<float>> randomInputs(const Graph& graph) {
  std::mt19937 random(3);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> inputs;
  for (const Value* input : graph.inputs()) {
    inputs.emplace_back(TensorDesc::of(input->type()).numElements());
    for (float& v : inputs.back()) v = normal(random);
  }
  return inputs;
}

void expectClose(const std::vector<float>& actual, const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  float scale = 0;
  for (float v : expected) scale = std::max(scale, std::abs(v));
  size_t bad = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(std::abs(actual[i] - expected[i]) <= 1e-4f * (std::abs(expected[i]) + 1e-2f * scale))) {
      if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

std::vector<std::string> reorderLines(const BuildReport& report) {
  std::vector<std::string> lines;
  for (const std::string& line : report.kernels) {
    if (line.find("(estuary::Reorder)") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

const Layout kLayouts[] = {Layout::ChannelsLast, Layout::Blocked8, Layout::Blocked16};

// oneDNN's direct convolutions on 16-channel blocks, and its Winograd ones, need AVX-512; on an
// AVX2 CPU (a Zen 1-3 EPYC, a Haswell) its blocks are 8 channels wide.
bool hasAvx512() { return cpuDevice().isa().rfind("avx512", 0) == 0; }
bool layoutRunsHere(Layout layout) { return layout != Layout::Blocked16 || hasAvx512(); }
// The widest blocked layout this CPU's convolutions run on.
Layout widestBlocks() { return hasAvx512() ? Layout::Blocked16 : Layout::Blocked8; }

TEST(LayoutAssignment, BottleneckChainMatchesPlainWithReordersOnlyAtTheEdges) {
  auto graph = cnn::bottleneckChain(2, 64, 12, 3);
  auto inputs = randomInputs(*graph);
  Result plain = run(*graph, Layout::Plain, inputs);
  EXPECT_TRUE(reorderLines(plain.report).empty());
  EXPECT_EQ(plain.report.folded_batch_norms, 9u);
  for (std::optional<Layout> layout : {std::optional<Layout>(), std::optional<Layout>(Layout::ChannelsLast),
                                       std::optional<Layout>(Layout::Blocked8), std::optional<Layout>(Layout::Blocked16)}) {
    const std::string name = layout ? layoutName(*layout) : "preferred";
    Result result = run(*graph, layout, inputs);
    expectClose(result.values, plain.values, name);
    // One reorder into the chain before the first convolution, one out of it for the output;
    // none where this CPU has no convolutions in the layout asked for (it stays plain).
    std::vector<std::string> reorders = reorderLines(result.report);
    if (layout && !layoutRunsHere(*layout)) {
      EXPECT_TRUE(reorders.empty()) << name;
      continue;
    }
    ASSERT_EQ(reorders.size(), 2u) << name;
    EXPECT_NE(reorders[0].find("plain -> "), std::string::npos) << reorders[0];
    EXPECT_NE(reorders[1].find(" -> plain"), std::string::npos) << reorders[1];
    EXPECT_EQ(result.report.kernels.front(), reorders[0]);
    EXPECT_EQ(result.report.kernels.back(), reorders[1]);
    for (const std::string& line : result.report.kernels) {
      // Every convolution runs a direct kernel on the chain's layout: no reorder inside.
      if (line.find("Conv)") != std::string::npos) {
        EXPECT_EQ(line.find("blocked inside"), std::string::npos) << line;
      }
    }
    // The last convolution of each block adds the block's input, which nothing reads
    // afterwards: it writes over it and sums it with oneDNN's sum post-op.
    size_t in_place = 0;
    for (const Step& step : result.plan->steps) {
      if (step.label.find("residual summed in place") == std::string::npos) continue;
      const Slot& output = result.plan->slots[step.first_slot + step.num_inputs];
      const Slot& residual = result.plan->slots[step.first_slot + step.num_inputs - 1];
      in_place += output.kind == Slot::Kind::Arena && residual.kind == Slot::Kind::Arena &&
                  output.offset == residual.offset;
    }
    EXPECT_EQ(in_place, 3u) << name;  // block 1 adds the reordered graph input, also an arena buffer
  }
}

// oneDNN has Winograd kernels for AVX-512 only, on 16-channel blocks; on AVX2 CPUs the rules
// take Estuary's own, on channels-last (conv.cpp).
TEST(LayoutAssignment, WinogradRunsTheThreeByThreeConvolutionsInItsLayout) {
  const bool own_winograd = cpuDevice().isa().rfind("avx2", 0) == 0;
  if (!hasAvx512() && !own_winograd) GTEST_SKIP() << "no Winograd kernel on " << cpuDevice().isa();
  auto graph = cnn::bottleneckChain(1, 64, 14, 2);
  auto inputs = randomInputs(*graph);
  Result preferred = run(*graph, std::nullopt, inputs);
  size_t winograd = 0;
  for (const std::string& line : preferred.report.kernels) {
    if (line.find("wino") == std::string::npos) continue;
    ++winograd;
    EXPECT_NE(line.find("Conv)"), std::string::npos) << line;
  }
  EXPECT_EQ(winograd, 2u);  // one 3x3 convolution per block; the 1x1 ones run direct kernels
  std::vector<std::string> reorders = reorderLines(preferred.report);
  ASSERT_EQ(reorders.size(), 2u);
  const Layout winograd_layout = hasAvx512() ? Layout::Blocked16 : Layout::ChannelsLast;
  EXPECT_NE(reorders[0].find(std::string("plain -> ") + layoutName(winograd_layout)), std::string::npos)
      << reorders[0];
  // The other layout has no Winograd kernel: the direct convolutions' results, within
  // Winograd's rounding.
  Result direct = run(*graph, hasAvx512() ? Layout::ChannelsLast : Layout::Blocked8, inputs);
  for (const std::string& line : direct.report.kernels) EXPECT_EQ(line.find("wino"), std::string::npos) << line;
  float scale = 0, worst = 0;
  for (size_t i = 0; i < direct.values.size(); ++i) {
    scale = std::max(scale, std::abs(direct.values[i]));
    worst = std::max(worst, std::abs(preferred.values[i] - direct.values[i]));
  }
  EXPECT_LE(worst, 1e-5f * scale) << "largest difference " << worst << " of values up to " << scale;

  // On 7x7 oneDNN's transformed weights cost more than the multiplications save: direct
  // kernels. Estuary's own take F(2x2, 3x3) there, whose weights are 16/9 of the kernel's
  // rather than F(4x4, 3x3)'s 4x, and F(4x4, 3x3) from 14x14.
  auto small = cnn::bottleneckChain(1, 64, 7, 2);
  Result small_result = run(*small, std::nullopt, randomInputs(*small));
  auto count = [](const Result& result, const char* kernel) {
    return std::count_if(result.report.kernels.begin(), result.report.kernels.end(),
                         [kernel](const std::string& line) { return line.find(kernel) != std::string::npos; });
  };
  EXPECT_EQ(count(small_result, "wino"), own_winograd ? 2 : 0);
  EXPECT_EQ(count(small_result, "winograd 2x2"), own_winograd ? 2 : 0);
  EXPECT_EQ(count(preferred, "winograd 4x4"), own_winograd ? 2 : 0);

  // Weights that are graph inputs cannot be transformed or packed at build: the convolution
  // stays plain, without Winograd or a reorder to nhwc.
  const std::string text = "graph @g(%x: f32[1,16,14,14], %w: f32[16,16,3,3]) {\n"
                           "  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,16,14,14]\n"
                           "  %y = Relu(%c) : f32[1,16,14,14]\n  return %y\n}";
  auto graph_weights = parseGraph(text);
  const std::vector<std::vector<float>> graph_inputs = randomInputs(*graph_weights);
  Result graph_weights_result = run(*graph_weights, std::nullopt, graph_inputs);
  EXPECT_EQ(count(graph_weights_result, "wino"), 0);
  for (const std::string& line : reorderLines(graph_weights_result.report)) {
    EXPECT_EQ(line.find("nhwc"), std::string::npos) << line;
  }
  expectClose(graph_weights_result.values, run(*graph_weights, Layout::Plain, graph_inputs).values, "graph weights");
}

// Channel counts that are not multiples of 8 or 16 (the padding of blocked layouts), batch
// 3, pooling (max pooling with pads on all sides), a BatchNormalization that cannot be folded, a standalone activation, an Add of
// two chain tensors and a residual fused into a convolution.
constexpr const char* kOddChannels = R"(graph @g(%x: f32[3,5,13,13], %w1: f32[20,5,3,3], %w2: f32[20,20,1,1], %w3: f32[20,20,3,3], %w4: f32[30,20,3,3], %scale: f32[20], %shift: f32[20], %mean: f32[20], %var: f32[20]) {
  %c1 = Conv(%x, %w1) {pads = [1, 1, 1, 1]} : f32[3,20,13,13]
  %r1 = Relu(%c1) : f32[3,20,13,13]
  %p1 = MaxPool(%r1) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : f32[3,20,7,7]
  %bn = BatchNormalization(%p1, %scale, %shift, %mean, %var) : f32[3,20,7,7]
  %s = Sigmoid(%bn) : f32[3,20,7,7]
  %c2 = Conv(%s, %w2) : f32[3,20,7,7]
  %c3 = Conv(%s, %w3) {pads = [1, 1, 1, 1]} : f32[3,20,7,7]
  %t2 = Tanh(%c2) : f32[3,20,7,7]
  %sum = Add(%t2, %c3) : f32[3,20,7,7]
  %c4 = Conv(%sum, %w3) {pads = [1, 1, 1, 1]} : f32[3,20,7,7]
  %res = Add(%c4, %sum) : f32[3,20,7,7]
  %c5 = Conv(%res, %w4) {pads = [1, 1, 1, 1], strides = [2, 2]} : f32[3,30,4,4]
  %a = AveragePool(%c5) {kernel_shape = [2, 2], strides = [1, 1]} : f32[3,30,3,3]
  %g = GlobalAveragePool(%a) : f32[3,30,1,1]
  return %g
})";

TEST(LayoutAssignment, OddChannelCountsPoolingAndNormalizationMatchPlain) {
  auto graph = withConstants(kOddChannels, kOddChannelsWeights);
  auto inputs = randomInputs(*graph);
  Result plain = run(*graph, Layout::Plain, inputs);
  for (Layout layout : kLayouts) {
    Result result = run(*graph, layout, inputs);
    expectClose(result.values, plain.values, layoutName(layout));
    if (!layoutRunsHere(layout)) {
      EXPECT_EQ(result.report.layout_reorders, 0u) << layoutName(layout);
      continue;
    }
    // Out for the output, and in before the first convolution unless it reads its 5
    // channels as they are and writes the layout (oneDNN's kernels for a few input channels
    // read plain): everything between stays in the layout.
    const std::vector<std::string> reorders = reorderLines(result.report);
    ASSERT_GE(reorders.size(), 1u) << layoutName(layout);
    ASSERT_LE(reorders.size(), 2u) << layoutName(layout);
    EXPECT_EQ(result.report.layout_reorders, reorders.size());
    EXPECT_EQ(result.report.kernels.back(), reorders.back());
    EXPECT_NE(reorders.back().find(" -> plain"), std::string::npos) << reorders.back();
    if (reorders.size() == 2) {
      EXPECT_EQ(result.report.kernels.front(), reorders.front());
    }
    for (const std::string& line : result.report.kernels) {
      // Max pooling in channels-last has an own kernel (20 channels: two vectors and a tail of 4).
      if (line.find("(MaxPool)") != std::string::npos && layout == Layout::ChannelsLast) {
        EXPECT_NE(line.find("cpu:max_pool nhwc"), std::string::npos) << line;
        continue;
      }
      if (line.find("Pool)") != std::string::npos || line.find("(BatchNormalization)") != std::string::npos ||
          line.find("(Add)") != std::string::npos || line.find("(Sigmoid)") != std::string::npos) {
        EXPECT_EQ(line.find("cpu:"), std::string::npos) << line << " should run a oneDNN kernel in the layout";
      }
    }
  }
}

// Every value an observer sees, by name, for a run in `layout`.
std::map<std::string, std::vector<float>> observedValues(const Graph& graph, Layout layout,
                                                         const std::vector<std::vector<float>>& inputs) {
  BuildOptions options;
  options.activation_layout = layout;
  auto model = CompiledModel::build(graph, options);
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    tensors.push_back(HostTensor::of(TensorDesc::of(model->inputs()[i].type), const_cast<float*>(inputs[i].data())));
  }
  auto context = model->createContext();
  std::map<std::string, std::vector<float>> seen;
  context->setObserver([&](const ObservedValue& value) {
    const auto* data = static_cast<const float*>(value.tensor.data);
    const std::string& name = value.node.output(value.output)->name();
    EXPECT_TRUE(seen.emplace(name, std::vector<float>(data, data + value.tensor.desc().numElements())).second) << name;
  });
  const auto& outputs = context->run(tensors);
  const auto* output = static_cast<const float*>(outputs[0].data);
  EXPECT_EQ(seen.at(model->outputs()[0].name), std::vector<float>(output, output + outputs[0].desc().numElements()));
  context->setObserver(nullptr);
  const size_t observed = seen.size();
  context->run(tensors);
  EXPECT_EQ(seen.size(), observed);  // off again
  return seen;
}

TEST(LayoutAssignment, AnObserverSeesEveryResultRowMajorInEveryLayout) {
  auto graph = withConstants(kOddChannels, kOddChannelsWeights);
  auto inputs = randomInputs(*graph);
  std::map<std::string, std::vector<float>> plain = observedValues(*graph, Layout::Plain, inputs);
  for (Layout layout : kLayouts) {
    std::map<std::string, std::vector<float>> seen = observedValues(*graph, layout, inputs);
    size_t shared = 0;
    for (const auto& [name, values] : seen) {
      auto found = plain.find(name);
      if (found == plain.end()) continue;  // a reorder's result
      ++shared;
      expectClose(values, found->second, std::string(layoutName(layout)) + " value " + name);
    }
    // 20 and 30 channels are padded in the blocked layouts: every value but the reorders' is compared.
    EXPECT_GE(shared + 2, seen.size()) << layoutName(layout);
    EXPECT_GE(shared, 6u) << layoutName(layout);
  }
}

TEST(LayoutAssignment, ANodeWithoutALayoutKernelGetsPlainInputs) {
  // Softmax has no kernel for other layouts: the chain is reordered to plain before it, and
  // the convolution after it starts a new chain.
  auto graph = withConstants(R"(graph @g(%x: f32[1,16,6,6], %w: f32[16,16,3,3]) {
  %c1 = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,16,6,6]
  %s = Softmax(%c1) {axis = 1} : f32[1,16,6,6]
  %c2 = Conv(%s, %w) {pads = [1, 1, 1, 1]} : f32[1,16,6,6]
  return %c2, %c1
})", {"w"});
  auto inputs = randomInputs(*graph);
  Result plain = run(*graph, Layout::Plain, inputs);
  Result blocked = run(*graph, widestBlocks(), inputs);
  expectClose(blocked.values, plain.values, layoutName(widestBlocks()));
  // x in, c1 out to Softmax and to the graph (one shared reorder), s in, c2 out.
  EXPECT_EQ(reorderLines(blocked.report).size(), 4u);
}

TEST(LayoutAssignment, ChannelConcatStaysInTheLayout) {
  // Two branches of 16 and 20 channels concatenated (an Inception/DenseNet pattern), batch 2.
  auto graph = withConstants(R"(graph @g(%x: f32[2,8,9,9], %wa: f32[16,8,1,1], %wb: f32[20,8,3,3], %wc: f32[12,36,3,3]) {
  %a = Conv(%x, %wa) : f32[2,16,9,9]
  %b = Conv(%x, %wb) {pads = [1, 1, 1, 1]} : f32[2,20,9,9]
  %ra = Relu(%a) : f32[2,16,9,9]
  %cat = Concat(%ra, %b) {axis = 1} : f32[2,36,9,9]
  %y = Conv(%cat, %wc) {pads = [1, 1, 1, 1]} : f32[2,12,9,9]
  return %y
})", {"wa", "wb", "wc"});
  auto inputs = randomInputs(*graph);
  Result plain = run(*graph, Layout::Plain, inputs);
  for (Layout layout : kLayouts) {
    Result result = run(*graph, layout, inputs);
    expectClose(result.values, plain.values, layoutName(layout));
  }
  // Channels last splits at any channel: the concat runs in the layout, two reorders stay.
  Result nhwc = run(*graph, Layout::ChannelsLast, inputs);
  EXPECT_EQ(reorderLines(nhwc.report).size(), 2u);
  bool concat_in_layout = false;
  for (const std::string& line : nhwc.report.kernels) concat_in_layout |= line.find("onednn:concat") != std::string::npos;
  EXPECT_TRUE(concat_in_layout);
}

// The planner's invariant on the plan itself: every arena argument is sized for its desc
// (padded channels included), and a value written at one step is not overwritten by another
// step before its last reader.
TEST(LayoutAssignment, PaddedBuffersAreSizedAndNeverOverlapWhileAlive) {
  auto graph = withConstants(kOddChannels, kOddChannelsWeights);
  auto inputs = randomInputs(*graph);
  Result result = run(*graph, widestBlocks(), inputs);
  const Plan& plan = *result.plan;
  struct Written {
    size_t offset, bytes, step;
    TensorDesc desc;
  };
  std::vector<Written> writes;
  size_t padded = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    for (uint32_t k = 0; k < step.num_inputs + step.num_outputs; ++k) {
      const Slot& slot = plan.slots[step.first_slot + k];
      if (slot.kind != Slot::Kind::Arena) continue;
      const size_t bytes = slot.desc.byteSize();
      EXPECT_LE(slot.offset + bytes, plan.arena_bytes) << step.label;
      if (k >= step.num_inputs) {
        padded += slot.desc.storedElements() > slot.desc.numElements();
        writes.push_back({slot.offset, bytes, s, slot.desc});
        continue;
      }
      // The most recent write of this argument's bytes must be the value read here.
      const Written* last = nullptr;
      for (const Written& write : writes) {
        if (write.step < s && write.offset < slot.offset + bytes && slot.offset < write.offset + write.bytes) last = &write;
      }
      ASSERT_NE(last, nullptr) << step.label;
      EXPECT_EQ(last->offset, slot.offset) << step.label << " reads bytes another step overwrote";
      EXPECT_EQ(last->desc, slot.desc) << step.label << " reads bytes another step overwrote";
    }
  }
  EXPECT_GT(padded, 0u) << "20 and 30 channels pad to 32 in nChw16c, to 24 and 32 in nChw8c";
  // 20 channels of 7x7 in nChw16c take 32 channels' bytes.
  TensorDesc desc = TensorDesc::of(DType::F32, {3, 20, 7, 7});
  desc.layout = Layout::Blocked16;
  EXPECT_EQ(desc.byteSize(), 3u * 32 * 49 * 4);
  desc.layout = Layout::ChannelsLast;
  EXPECT_EQ(desc.byteSize(), 3u * 20 * 49 * 4);
}

TEST(LayoutAssignment, BatchNormalizationIsFoldedIntoTheConvolution) {
  // The same network with constant statistics (folded) and with statistics as inputs (kept).
  auto text = [](const std::string& parameters, const std::string& constants) {
    return "graph @g(%x: f32[2,4,8,8], %w: f32[6,4,3,3], %b: f32[6]" + parameters + ") {\n" + constants +
           "  %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]} : f32[2,6,8,8]\n"
           "  %y = BatchNormalization(%c, %scale, %shift, %mean, %var) {epsilon = 0.001} : f32[2,6,8,8]\n"
           "  return %y\n}";
  };
  const char* statistics[] = {"scale", "shift", "mean", "var"};
  const float values[4][6] = {{1.5f, 0.5f, -1.f, 2.f, 0.25f, 1.f},
                              {0.1f, -0.2f, 0.3f, 0.f, 1.f, -1.f},
                              {0.5f, -0.5f, 0.f, 1.f, -1.f, 0.2f},
                              {1.f, 0.5f, 2.f, 0.1f, 3.f, 0.8f}};
  std::string parameters, constants;
  for (int i = 0; i < 4; ++i) {
    parameters += std::string(", %") + statistics[i] + ": f32[6]";
    constants += std::string("  %") + statistics[i] + " = Constant() {value = tensor<f32[6]> [";
    for (int c = 0; c < 6; ++c) constants += (c ? ", " : "") + std::to_string(values[i][c]);
    constants += "]} : f32[6]\n";
  }
  auto folded_graph = withConstants(text("", constants), {"w", "b"});
  auto kept_graph = withConstants(text(parameters, ""), {"w", "b"});
  auto inputs = randomInputs(*folded_graph);
  Result folded = run(*folded_graph, std::nullopt, inputs);
  EXPECT_EQ(folded.report.folded_batch_norms, 1u);
  for (const auto& row : values) inputs.emplace_back(row, row + 6);
  Result kept = run(*kept_graph, std::nullopt, inputs);
  EXPECT_EQ(kept.report.folded_batch_norms, 0u);
  expectClose(folded.values, kept.values, "folded BatchNormalization");
}

TEST(LayoutAssignment, PerChannelScaleAndShiftFoldIntoTheConvolution) {
  // A batch norm as Keras 3 writes it after a bias add: (conv + b) * scale - shift, then a
  // division by a scalar; constants shaped [6,1,1], [1,6,1,1] and []. Folded when they are
  // constants, kept when the same values arrive as inputs; the results agree.
  auto graph = withConstants(
      "graph @g(%x: f32[2,4,8,8], %w: f32[6,4,3,3], %bias: f32[6,1,1], %scale: f32[6,1,1], "
      "%shift: f32[1,6,1,1], %divisor: f32[]) {\n"
      "  %c = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[2,6,8,8]\n"
      "  %biased = Add(%c, %bias) : f32[2,6,8,8]\n"
      "  %scaled = Mul(%scale, %biased) : f32[2,6,8,8]\n"
      "  %shifted = Sub(%scaled, %shift) : f32[2,6,8,8]\n"
      "  %y = Div(%shifted, %divisor) : f32[2,6,8,8]\n"
      "  return %y\n}",
      {"w"});
  std::vector<std::vector<float>> inputs = randomInputs(*graph);
  inputs.back() = {2.5f};  // the divisor, away from 0
  Result kept = run(*graph, std::nullopt, inputs);
  EXPECT_EQ(kept.report.folded_batch_norms, 0u);
  // The same values as constants.
  while (graph->inputs().size() > 1) {
    Value* input = graph->input(1);
    Node* constant = graph->createNodeBefore(graph->firstNode(), "Constant", {});
    constant->output()->setType(input->type());
    constant->setAttr("value", Tensor::copyOf(DType::F32, input->shape().staticDims(), inputs[1].data()));
    input->replaceAllUsesWith(constant->output());
    graph->removeInput(1);
    inputs.erase(inputs.begin() + 1);
  }
  Result folded = run(*graph, std::nullopt, inputs);
  EXPECT_EQ(folded.report.folded_batch_norms, 4u);
  EXPECT_EQ(folded.report.ops_after.count("Add") + folded.report.ops_after.count("Mul") +
                folded.report.ops_after.count("Sub") + folded.report.ops_after.count("Div"),
            0u);
  expectClose(folded.values, kept.values, "folded scale and shift");
}

}  // namespace
}  // namespace estuary::ge
