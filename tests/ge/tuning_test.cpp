// Kernel choice measured at build (BuildOptions::tune_kernels): each tactic timed, the
// fastest kept, the choice reused from the timing cache and the offline model, the budget
// and the off switch respected, and a bad cache file refused by name and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDepth = 128, kWidth = 256;

// x[1,128] x W[128,256] + b, then Relu: a product with few rows, which Estuary's GEMV and
// oneDNN's gemm:jit both compute.
std::string linearGraphText() {
  std::ostringstream weights, bias;
  for (int64_t i = 0; i < kDepth * kWidth; ++i) weights << (i ? ", " : "") << ((i * 37) % 17) * 0.0625 - 0.5;
  for (int64_t i = 0; i < kWidth; ++i) bias << (i ? ", " : "") << (i % 5) * 0.25;
  return "graph @linear(%x: f32[1,128]) {\n"
         "  %w = Constant() {value = tensor<f32[128,256]> [" + weights.str() + "]} : f32[128,256]\n"
         "  %b = Constant() {value = tensor<f32[256]> [" + bias.str() + "]} : f32[256]\n"
         "  %p = MatMul(%x, %w) : f32[1,256]\n"
         "  %a = Add(%p, %b) : f32[1,256]\n"
         "  %y = Relu(%a) : f32[1,256]\n"
         "  return %y\n"
         "}\n";
}

// The same with a symbolic batch: a plan is built for each number of rows on first use.
std::string symbolicBatchLinearGraphText() {
  std::string text = linearGraphText();
  for (size_t at = text.find("f32[1,"); at != std::string::npos; at = text.find("f32[1,", at)) {
    text.replace(at, 6, "f32[batch,");
  }
  return text;
}

// Two 3x3 convolutions with Relu: a chain whose activations the rules keep blocked.
std::string convChainGraphText() {
  auto weights = [](int seed) {
    std::ostringstream text;
    for (int i = 0; i < 16 * 16 * 9; ++i) text << (i ? ", " : "") << ((i * seed) % 13) * 0.02 - 0.12;
    return text.str();
  };
  return "graph @chain(%x: f32[1,16,28,28]) {\n"
         "  %w1 = Constant() {value = tensor<f32[16,16,3,3]> [" + weights(7) + "]} : f32[16,16,3,3]\n"
         "  %w2 = Constant() {value = tensor<f32[16,16,3,3]> [" + weights(11) + "]} : f32[16,16,3,3]\n"
         "  %c1 = Conv(%x, %w1) {pads = [1, 1, 1, 1]} : f32[1,16,28,28]\n"
         "  %r1 = Relu(%c1) : f32[1,16,28,28]\n"
         "  %c2 = Conv(%r1, %w2) {pads = [1, 1, 1, 1]} : f32[1,16,28,28]\n"
         "  %y = Relu(%c2) : f32[1,16,28,28]\n"
         "  return %y\n"
         "}\n";
}

class Tuning : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estuary_tuning_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::create_directories(dir_);
    graph_ = parseGraph(linearGraphText());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  BuildOptions tuned() const {
    BuildOptions options;
    options.num_threads = 1;
    options.tune_kernels = true;
    options.timing_cache = path("timing.cache");
    return options;
  }
  // The kernel the plan runs for the product (its line in the build report).
  static std::string productKernel(const CompiledModel& model) {
    for (const std::string& line : model.report().kernels) {
      if (line.find("MatMul") != std::string::npos) return line.substr(line.find(" -> ") + 4);
    }
    return "none";
  }
  static void runRows(const CompiledModel& model, int64_t rows) {
    std::vector<float> x(rows * kDepth, 0.5f);
    model.createContext()->run({HostTensor::of(TensorDesc::of(DType::F32, {rows, kDepth}), x.data())});
  }
  static std::vector<float> run(const CompiledModel& model) {
    std::vector<float> x(kDepth);
    for (int64_t k = 0; k < kDepth; ++k) x[k] = std::sin(0.1f * static_cast<float>(k));
    auto context = model.createContext();
    HostTensor input = HostTensor::of(TensorDesc::of(DType::F32, {1, kDepth}), x.data());
    const HostTensor& output = context->run({input})[0];
    const float* values = static_cast<const float*>(output.data);
    return std::vector<float>(values, values + kWidth);
  }

  fs::path dir_;
  std::unique_ptr<Graph> graph_;
};

TEST_F(Tuning, TimesEachTacticKeepsTheFastestAndComputesTheSameResult) {
  auto rules = CompiledModel::build(*graph_, BuildOptions{});
  EXPECT_TRUE(rules->report().tuning.empty());  // off unless asked
  EXPECT_NE(productKernel(*rules).find("cpu:gemv"), std::string::npos) << productKernel(*rules);

  auto model = CompiledModel::build(*graph_, tuned());
  ASSERT_EQ(model->report().tuning.size(), 1u);
  const std::string& line = model->report().tuning[0];
  EXPECT_NE(line.find("measured: cpu:gemv "), std::string::npos) << line;
  EXPECT_NE(line.find(", onednn:gemm:jit "), std::string::npos) << line;
  EXPECT_GT(model->report().tuning_seconds, 0);
  // The report names the tactic the plan runs.
  const size_t start = line.find("): ") + 3;
  const std::string chosen = line.substr(start, line.find(" (", start) - start);
  EXPECT_NE(productKernel(*model).find(chosen == "cpu:gemv" ? "cpu:gemv" : "gemm:jit"), std::string::npos)
      << chosen << " vs " << productKernel(*model);

  const std::vector<float> expected = run(*rules), got = run(*model);
  for (int64_t n = 0; n < kWidth; ++n) EXPECT_NEAR(got[n], expected[n], 1e-4f) << n;
}

TEST_F(Tuning, ATimingCacheAndTheOfflineModelKeepTheChoice) {
  auto first = CompiledModel::build(*graph_, tuned());
  ASSERT_TRUE(fs::exists(path("timing.cache")));
  const std::string chosen = productKernel(*first);

  auto second = CompiledModel::build(*graph_, tuned());
  ASSERT_EQ(second->report().tuning.size(), 1u);
  EXPECT_NE(second->report().tuning[0].find("from the timing cache"), std::string::npos) << second->report().tuning[0];
  EXPECT_EQ(second->report().tuning_seconds, 0);
  EXPECT_EQ(productKernel(*second), chosen);

  first->save(path("model.eom"));
  BuildOptions untuned;
  untuned.num_threads = 1;
  auto loaded = CompiledModel::load(path("model.eom"), untuned);
  ASSERT_EQ(loaded->report().tuning.size(), 1u);
  EXPECT_NE(loaded->report().tuning[0].find("from the offline model"), std::string::npos)
      << loaded->report().tuning[0];
  EXPECT_EQ(productKernel(*loaded), chosen);
  EXPECT_EQ(loaded->report().tuning_seconds, 0);
}

// A model with a symbolic batch plans each batch size on first use (as estuary.serve's
// replicas do at start): what those plans measure reaches the timing cache too.
TEST_F(Tuning, APlanBuiltOnFirstUseKeepsItsMeasurementsInTheTimingCache) {
  auto graph = parseGraph(symbolicBatchLinearGraphText());
  auto first = CompiledModel::build(*graph, tuned());
  EXPECT_TRUE(first->report().tuning.empty());  // no shape to plan for yet
  runRows(*first, 4);
  ASSERT_EQ(first->report().tuning.size(), 1u);
  EXPECT_NE(first->report().tuning[0].find("measured: "), std::string::npos) << first->report().tuning[0];

  auto second = CompiledModel::build(*graph, tuned());
  runRows(*second, 4);
  ASSERT_EQ(second->report().tuning.size(), 1u);
  EXPECT_NE(second->report().tuning[0].find("from the timing cache"), std::string::npos) << second->report().tuning[0];
  EXPECT_EQ(second->report().tuning_seconds, 0);

  // A cache that cannot be written any more (here a directory took its name): the run that
  // plans a new shape still answers, and the report says why the cache was not updated.
  fs::remove(path("timing.cache"));
  fs::create_directory(path("timing.cache"));
  runRows(*second, 6);
  ASSERT_FALSE(second->report().warnings.empty());
  EXPECT_EQ(second->report().warnings.back().rfind("the timing cache was not updated: " + path("timing.cache"), 0),
            0u)
      << second->report().warnings.back();
}

// Replicas on one node share a timing cache: a build that saves keeps what another wrote
// since it read the file, and one that measured nothing leaves the file alone.
TEST_F(Tuning, ModelsSharingATimingCacheKeepEachOthersMeasurements) {
  auto graph = parseGraph(symbolicBatchLinearGraphText());
  auto first = CompiledModel::build(*graph, tuned());
  auto second = CompiledModel::build(*graph, tuned());  // both read no cache
  runRows(*first, 4);
  runRows(*second, 6);

  auto third = CompiledModel::build(*graph, tuned());
  for (int64_t rows : {4, 6}) {
    runRows(*third, rows);
    ASSERT_EQ(third->report().tuning.size(), 1u);  // the report tells of the last plan
    EXPECT_NE(third->report().tuning[0].find("from the timing cache"), std::string::npos) << third->report().tuning[0];
  }

  // A second name for the file: a rewrite (a new file renamed over the cache) would leave
  // the cache with a link count of 1.
  fs::create_hard_link(path("timing.cache"), path("timing.cache.seen"));
  auto fourth = CompiledModel::build(*graph, tuned());
  runRows(*fourth, 4);
  EXPECT_EQ(fs::hard_link_count(path("timing.cache")), 2u) << "a build that measured nothing rewrote the cache";
}

// Builds that share a cache tune in turn: of two models planning the same shape at once,
// one measures and the other, waiting for the cache's lock, takes what the first saved.
TEST_F(Tuning, BuildsSharingATimingCacheTuneInTurn) {
  auto graph = parseGraph(symbolicBatchLinearGraphText());
  std::shared_ptr<CompiledModel> models[] = {CompiledModel::build(*graph, tuned()),
                                             CompiledModel::build(*graph, tuned())};  // both read no cache
  std::thread other([&] { runRows(*models[1], 4); });
  runRows(*models[0], 4);
  other.join();
  int measured = 0, from_cache = 0;
  for (const auto& model : models) {
    ASSERT_EQ(model->report().tuning.size(), 1u);
    const std::string& line = model->report().tuning[0];
    measured += line.find("measured: ") != std::string::npos;
    from_cache += line.find("from the timing cache") != std::string::npos;
  }
  EXPECT_EQ(measured, 1);
  EXPECT_EQ(from_cache, 1);
}

TEST_F(Tuning, TimesThePlanInEachActivationLayoutAndKeepsTheChoice) {
  auto chain = parseGraph(convChainGraphText());
  BuildOptions untuned;
  untuned.num_threads = 1;
  auto rules = CompiledModel::build(*chain, untuned);
  auto model = CompiledModel::build(*chain, tuned());
  ASSERT_FALSE(model->report().tuning.empty());
  const std::string& line = model->report().tuning[0];
  EXPECT_EQ(line.rfind("plan for inputs f32[1,16,28,28];: layout:", 0), 0u) << line;
  // The rules keep the layout Winograd runs on here (layout_assignment.h): oneDNN's nChw16c
  // on AVX-512, channels-last for Estuary's own on AVX2.
  const bool avx512 = cpuDevice().isa().rfind("avx512", 0) == 0;
  EXPECT_NE(line.find(avx512 ? "the rules keep nChw" : "the rules keep nhwc"), std::string::npos) << line;
  EXPECT_NE(line.find("measured: layout:rules "), std::string::npos) << line;
  EXPECT_NE(line.find(avx512 ? ", layout:nhwc " : ", layout:nChw8c "), std::string::npos) << line;

  std::vector<float> x(16 * 28 * 28);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.01f * static_cast<float>(i));
  auto outputOf = [&](const CompiledModel& built) {
    auto context = built.createContext();
    const HostTensor& y = context->run({HostTensor::of(TensorDesc::of(DType::F32, {1, 16, 28, 28}), x.data())})[0];
    return std::vector<float>(static_cast<const float*>(y.data), static_cast<const float*>(y.data) + x.size());
  };
  const std::vector<float> expected = outputOf(*rules), got = outputOf(*model);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4f) << i;

  model->save(path("chain.eom"));
  auto loaded = CompiledModel::load(path("chain.eom"), untuned);
  ASSERT_FALSE(loaded->report().tuning.empty());
  EXPECT_NE(loaded->report().tuning[0].find("(from the offline model"), std::string::npos) << loaded->report().tuning[0];
  EXPECT_EQ(loaded->report().kernels, model->report().kernels);
}

// B's rows 4 KiB apart (1024 floats): the rules take a copy with padded rows, and the plain
// weights are one more tactic. The plain one, chosen through the timing cache (so that the
// test does not depend on which is faster here), computes what the padded copy computes.
TEST_F(Tuning, WeightsWithRowsAPageApartArePaddedAndPlainIsATactic) {
  constexpr int64_t kRows = 8, kDepth4k = 32, kWidth4k = 1024;
  std::ostringstream weights;
  for (int64_t i = 0; i < kDepth4k * kWidth4k; ++i) weights << (i ? ", " : "") << ((i * 29) % 23) * 0.03125 - 0.34;
  auto graph = parseGraph("graph @wide(%x: f32[8,32]) {\n"
                          "  %w = Constant() {value = tensor<f32[32,1024]> [" + weights.str() + "]} : f32[32,1024]\n"
                          "  %y = MatMul(%x, %w) : f32[8,1024]\n"
                          "  return %y\n"
                          "}\n");
  auto outputOf = [&](const CompiledModel& built) {
    std::vector<float> x(kRows * kDepth4k);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.07f * static_cast<float>(i));
    auto context = built.createContext();
    const HostTensor& y = context->run({HostTensor::of(TensorDesc::of(DType::F32, {kRows, kDepth4k}), x.data())})[0];
    return std::vector<float>(static_cast<const float*>(y.data), static_cast<const float*>(y.data) + kRows * kWidth4k);
  };
  BuildOptions untuned;
  untuned.num_threads = 1;
  auto by_rules = CompiledModel::build(*graph, untuned);
  ASSERT_EQ(by_rules->report().kernels.size(), 1u);
  EXPECT_EQ(productKernel(*by_rules), "onednn:matmul gemm:jit (B rows padded)");

  auto measured = CompiledModel::build(*graph, tuned());
  ASSERT_EQ(measured->report().tuning.size(), 1u);
  const std::string plain = "onednn:gemm:jit", padded = "onednn:gemm:jit (B rows padded)";
  EXPECT_NE(measured->report().tuning[0].find(padded + " "), std::string::npos) << measured->report().tuning[0];
  EXPECT_NE(measured->report().tuning[0].find(plain + " "), std::string::npos) << measured->report().tuning[0];

  // The cache's one record, with the plain tactic as its choice.
  std::ifstream cache_in(path("timing.cache"));
  std::string header, record;
  std::getline(cache_in, header);
  std::getline(cache_in, record);
  cache_in.close();
  const size_t first = record.find('\t'), second = record.find('\t', first + 1);
  ASSERT_NE(second, std::string::npos) << record;
  std::ofstream(path("timing.cache")) << header << "\n"
                                      << record.substr(0, first + 1) << plain << record.substr(second) << "\n";
  auto forced = CompiledModel::build(*graph, tuned());
  ASSERT_EQ(forced->report().tuning.size(), 1u);
  EXPECT_EQ(forced->report().tuning[0].find("): " + plain + " (from the timing cache"),
            forced->report().tuning[0].find("): "))
      << forced->report().tuning[0];

  const std::vector<float> expected = outputOf(*forced), got = outputOf(*by_rules);
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4f) << i;
}

// Which rows the rules pad: a multiple of 1 KiB apart (BERT's 768 and 2304 floats wide
// included), and not 2.5 KiB (640 floats) apart.
TEST(PaddedRows, TheRulesPadWeightsWhoseRowsAreAMultipleOf1KiBApart) {
  for (const auto& [width, padded] : std::vector<std::pair<int64_t, bool>>{{256, true}, {640, false}, {768, true},
                                                                          {2304, true}}) {
    std::ostringstream weights;
    for (int64_t i = 0; i < 16 * width; ++i) weights << (i ? ", " : "") << (i % 7) * 0.125;
    const std::string w = "f32[16," + std::to_string(width) + "]";
    auto graph = parseGraph("graph @wide(%x: f32[8,16]) {\n"
                            "  %w = Constant() {value = tensor<" + w + "> [" + weights.str() + "]} : " + w + "\n"
                            "  %y = MatMul(%x, %w) : f32[8," + std::to_string(width) + "]\n"
                            "  return %y\n"
                            "}\n");
    BuildOptions untuned;
    untuned.num_threads = 1;
    auto model = CompiledModel::build(*graph, untuned);
    ASSERT_EQ(model->report().kernels.size(), 1u);
    EXPECT_EQ(model->report().kernels[0].find("(B rows padded)") != std::string::npos, padded)
        << width << ": " << model->report().kernels[0];
  }
}

// `count` values in [-0.09, 0.09], a different sequence for each seed.
std::string testValues(int64_t count, int seed) {
  std::ostringstream text;
  for (int64_t i = 0; i < count; ++i) text << (i ? ", " : "") << ((i * seed) % 19) * 0.01 - 0.09;
  return text.str();
}

// Builds `graph` in channels-last layout with `tactic` forced through the timing cache on
// every convolution that timed it (`expected_nodes` of them), at 1 and 2 threads, and
// checks that it computes what oneDNN computes in the plain layout.
void expectForcedTacticComputesWhatOnednnComputes(const Graph& graph, const BuildOptions& tuned,
                                                  const std::string& cache, const std::string& tactic,
                                                  int expected_nodes, const TensorDesc& input, float tolerance) {
  std::vector<float> x(static_cast<size_t>(input.numElements()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  auto outputOf = [&](const CompiledModel& built) {
    auto context = built.createContext();
    const HostTensor& y = context->run({HostTensor::of(input, x.data())})[0];
    const auto* data = static_cast<const float*>(y.data);
    return std::vector<float>(data, data + y.desc().numElements());
  };
  BuildOptions plain;
  plain.num_threads = 1;
  plain.activation_layout = Layout::Plain;
  const std::vector<float> expected = outputOf(*CompiledModel::build(graph, plain));

  for (int threads : {1, 2}) {
    BuildOptions options = tuned;
    options.num_threads = threads;
    options.activation_layout = Layout::ChannelsLast;
    fs::remove(cache);
    auto measured = CompiledModel::build(graph, options);
    // Every record that timed the tactic now chooses it.
    std::ifstream cache_in(cache);
    std::string line, rewritten;
    int records = 0;
    for (std::getline(cache_in, line), rewritten = line + "\n"; std::getline(cache_in, line);) {
      const size_t first = line.find('\t'), second = line.find('\t', first + 1);
      if (second != std::string::npos && line.find(tactic + " ", second) != std::string::npos) {
        line = line.substr(0, first + 1) + tactic + line.substr(second);
        ++records;
      }
      rewritten += line + "\n";
    }
    cache_in.close();
    EXPECT_EQ(records, expected_nodes) << rewritten;
    std::ofstream(cache) << rewritten;
    auto forced = CompiledModel::build(graph, options);
    const std::vector<std::string>& kernels = forced->report().kernels;
    EXPECT_EQ(std::count_if(kernels.begin(), kernels.end(),
                            [&](const std::string& kernel) { return kernel.find(" -> " + tactic) != std::string::npos; }),
              expected_nodes)
        << ::testing::PrintToString(kernels);
    const std::vector<float> got = outputOf(*forced);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(got[i], expected[i], tolerance * (1 + std::abs(expected[i]))) << i << " at " << threads << " threads";
    }
  }
}

// Estuary's own direct kernel (cpu/direct_conv.h): 3x3 with the op's bias and Relu, a 3x3
// stride 2 with asymmetric pads and a bias Add, a 1x1 with a residual and LeakyRelu; 225
// and 49 pixels (no multiple of the kernel's 6-pixel tiles), two images.
TEST_F(Tuning, OwnDirectConvolutionComputesWhatOnednnComputes) {
  auto graph = parseGraph(
      "graph @convs(%x: f32[2,32,15,15]) {\n"
      "  %w1 = Constant() {value = tensor<f32[32,32,3,3]> [" + testValues(32 * 32 * 9, 7) + "]} : f32[32,32,3,3]\n"
      "  %b1 = Constant() {value = tensor<f32[32]> [" + testValues(32, 3) + "]} : f32[32]\n"
      "  %w2 = Constant() {value = tensor<f32[48,32,3,3]> [" + testValues(48 * 32 * 9, 11) + "]} : f32[48,32,3,3]\n"
      "  %b2 = Constant() {value = tensor<f32[1,48,1,1]> [" + testValues(48, 5) + "]} : f32[1,48,1,1]\n"
      "  %w3 = Constant() {value = tensor<f32[48,48,1,1]> [" + testValues(48 * 48, 13) + "]} : f32[48,48,1,1]\n"
      "  %c1 = Conv(%x, %w1, %b1) {pads = [1, 1, 1, 1]} : f32[2,32,15,15]\n"
      "  %r1 = Relu(%c1) : f32[2,32,15,15]\n"
      "  %c2 = Conv(%r1, %w2) {pads = [0, 0, 1, 1], strides = [2, 2]} : f32[2,48,7,7]\n"
      "  %a2 = Add(%c2, %b2) : f32[2,48,7,7]\n"
      "  %c3 = Conv(%a2, %w3) : f32[2,48,7,7]\n"
      "  %s3 = Add(%c3, %a2) : f32[2,48,7,7]\n"
      "  %y = LeakyRelu(%s3) {alpha = 0.25} : f32[2,48,7,7]\n"
      "  return %y\n"
      "}\n");
  expectForcedTacticComputesWhatOnednnComputes(*graph, tuned(), path("timing.cache"), "cpu:conv direct nhwc", 3,
                                               TensorDesc::of(DType::F32, {2, 32, 15, 15}), 1e-4f);
}

// Estuary's own Winograd kernels F(4x4, 3x3) and F(2x2, 3x3) (cpu/winograd_conv.h), each
// item transforming its own tiles' input: 3x3 with the op's bias and Relu on 128 and 450
// tiles, asymmetric pads and a bias Add with partial tiles at the bottom and right (29x29
// outputs), and a residual with LeakyRelu. Then two on a 7x7 image, whose few tiles make
// the items on 2 threads share the transformed input and split the output channels.
TEST_F(Tuning, OwnWinogradConvolutionComputesWhatOnednnComputes) {
  auto graph = parseGraph(
      "graph @convs(%x: f32[2,16,30,30]) {\n"
      "  %w1 = Constant() {value = tensor<f32[32,16,3,3]> [" + testValues(32 * 16 * 9, 7) + "]} : f32[32,16,3,3]\n"
      "  %b1 = Constant() {value = tensor<f32[32]> [" + testValues(32, 3) + "]} : f32[32]\n"
      "  %w2 = Constant() {value = tensor<f32[48,32,3,3]> [" + testValues(48 * 32 * 9, 11) + "]} : f32[48,32,3,3]\n"
      "  %b2 = Constant() {value = tensor<f32[1,48,1,1]> [" + testValues(48, 5) + "]} : f32[1,48,1,1]\n"
      "  %w3 = Constant() {value = tensor<f32[48,48,3,3]> [" + testValues(48 * 48 * 9, 13) + "]} : f32[48,48,3,3]\n"
      "  %c1 = Conv(%x, %w1, %b1) {pads = [1, 1, 1, 1]} : f32[2,32,30,30]\n"
      "  %r1 = Relu(%c1) : f32[2,32,30,30]\n"
      "  %c2 = Conv(%r1, %w2) {pads = [1, 0, 0, 1]} : f32[2,48,29,29]\n"
      "  %a2 = Add(%c2, %b2) : f32[2,48,29,29]\n"
      "  %c3 = Conv(%a2, %w3) {pads = [1, 1, 1, 1]} : f32[2,48,29,29]\n"
      "  %s3 = Add(%c3, %a2) : f32[2,48,29,29]\n"
      "  %y = LeakyRelu(%s3) {alpha = 0.25} : f32[2,48,29,29]\n"
      "  return %y\n"
      "}\n");
  // Few tiles (4 or 16), so that on 2 threads items split the output channels.
  auto deep = parseGraph(
      "graph @deep(%x: f32[1,64,7,7]) {\n"
      "  %w1 = Constant() {value = tensor<f32[64,64,3,3]> [" + testValues(64 * 64 * 9, 7) + "]} : f32[64,64,3,3]\n"
      "  %b1 = Constant() {value = tensor<f32[64]> [" + testValues(64, 3) + "]} : f32[64]\n"
      "  %w2 = Constant() {value = tensor<f32[64,64,3,3]> [" + testValues(64 * 64 * 9, 11) + "]} : f32[64,64,3,3]\n"
      "  %c1 = Conv(%x, %w1, %b1) {pads = [1, 1, 1, 1]} : f32[1,64,7,7]\n"
      "  %r1 = Relu(%c1) : f32[1,64,7,7]\n"
      "  %c2 = Conv(%r1, %w2) {pads = [1, 1, 1, 1]} : f32[1,64,7,7]\n"
      "  %y = Add(%c2, %r1) : f32[1,64,7,7]\n"
      "  return %y\n"
      "}\n");
  for (const char* tactic : {"cpu:conv winograd 4x4 nhwc", "cpu:conv winograd 2x2 nhwc"}) {
    SCOPED_TRACE(tactic);
    expectForcedTacticComputesWhatOnednnComputes(*graph, tuned(), path("timing.cache"), tactic, 3,
                                                 TensorDesc::of(DType::F32, {2, 16, 30, 30}), 1e-4f);
    expectForcedTacticComputesWhatOnednnComputes(*deep, tuned(), path("timing.cache"), tactic, 2,
                                                 TensorDesc::of(DType::F32, {1, 64, 7, 7}), 1e-4f);
  }
}

TEST_F(Tuning, ASpentBudgetLeavesTheChoiceToTheRules) {
  BuildOptions options = tuned();
  options.tuning_budget_seconds = 0;
  auto model = CompiledModel::build(*graph_, options);
  ASSERT_EQ(model->report().tuning.size(), 1u);
  EXPECT_NE(model->report().tuning[0].find("budget of 0 s was spent"), std::string::npos) << model->report().tuning[0];
  EXPECT_NE(productKernel(*model).find("cpu:gemv"), std::string::npos);
  EXPECT_EQ(model->report().tuning_seconds, 0);
}

// A cache that does not read back whole is not trusted in part (TensorRT ignores a corrupt
// timing cache with a warning): the build measures afresh and says why, naming file and line.
TEST_F(Tuning, ABadTimingCacheIsIgnoredWithAWarning) {
  const std::string cache = path("timing.cache");
  std::ofstream(cache) << "# estuary timing cache 1\nkey without tabs\n";
  auto model = CompiledModel::build(*graph_, tuned());
  ASSERT_EQ(model->report().warnings.size(), 1u);
  EXPECT_NE(model->report().warnings[0].find("timing.cache:2: expected 'key<TAB>tactic<TAB>times'"),
            std::string::npos)
      << model->report().warnings[0];
  ASSERT_EQ(model->report().tuning.size(), 1u);
  EXPECT_NE(model->report().tuning[0].find("measured"), std::string::npos) << model->report().tuning[0];
  // Estuary's own cache, cut short or edited: rewritten whole with this build's timings.
  std::ifstream rewritten(cache);
  std::string header, record;
  std::getline(rewritten, header);
  std::getline(rewritten, record);
  EXPECT_EQ(header, "# estuary timing cache 1");
  EXPECT_EQ(std::count(record.begin(), record.end(), '\t'), 2) << record;

  // Not a timing cache at all (the wrong file given): ignored and left as it was.
  std::ofstream(cache) << "{\"not\": \"a cache\"}\n";
  model = CompiledModel::build(*graph_, tuned());
  ASSERT_EQ(model->report().warnings.size(), 1u);
  EXPECT_NE(model->report().warnings[0].find("timing.cache:1: not an Estuary timing cache"), std::string::npos)
      << model->report().warnings[0];
  std::ifstream untouched(cache);
  std::string content((std::istreambuf_iterator<char>(untouched)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "{\"not\": \"a cache\"}\n");
}

}  // namespace
}  // namespace estuary::ge
