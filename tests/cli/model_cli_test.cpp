// End-to-end tests of `estuary build`, `estuary run` and `estuary bench`: each runs the real
// binary on files written here or by NumPy (tests/data/npy).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_support.h"

#include "npy.h"

namespace estuary::cli {
namespace {

namespace fs = std::filesystem;



// c = max((x + y) * w, x), a = x + y, over a symbolic batch; w is a 2 KiB weight, so it is
// stored in the offline model's weights section.
std::string modelText() {
  std::string weight;
  for (int i = 0; i < 512; ++i) weight += (i ? ", " : "") + std::to_string(i % 4 + 1);
  return "graph @m(%x: f32[batch,512], %y: f32[batch,512]) {\n"
         "  %w = Constant() {value = tensor<f32[512]> [" + weight + "]} : f32[512]\n"
         "  %a = Add(%x, %y) : f32[batch,512]\n"
         "  %b = Mul(%a, %w) : f32[batch,512]\n"
         "  %c = Max(%b, %x) : f32[batch,512]\n"
         "  return %c, %a\n"
         "}\n";
}

class ModelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estuary_model_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(path("m.est")) << modelText();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // m.eom built from m.est; its batch stays symbolic.
  std::string builtModel() {
    CliRun run = runCli("build " + path("m.est") + " -o " + path("m.eom") + " --quiet");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return path("m.eom");
  }

  static Tensor input(int64_t batch, float scale, float offset) {
    Tensor array = Tensor::allocate(DType::F32, {batch, 512});
    auto* data = static_cast<float*>(array.mutableData());
    for (int64_t i = 0; i < batch * 512; ++i) data[i] = static_cast<float>(i % 9) * scale + offset;
    return array;
  }

  // Checks out.npz against the closed form of the model for inputs x and y.
  static void expectOutputs(const std::string& file, const Tensor& x, const Tensor& y) {
    std::vector<NamedArray> outputs = readNpz(file);
    ASSERT_EQ(outputs.size(), 2u);
    EXPECT_EQ(outputs[0].name, "c");
    EXPECT_EQ(outputs[1].name, "a");
    ASSERT_EQ(outputs[0].array.shape(), x.shape());
    const float* c = outputs[0].array.data<float>();
    const float* a = outputs[1].array.data<float>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      float sum = x.data<float>()[i] + y.data<float>()[i];
      ASSERT_EQ(a[i], sum) << i;
      ASSERT_EQ(c[i], std::max(sum * static_cast<float>(i % 512 % 4 + 1), x.data<float>()[i])) << i;
    }
  }

  fs::path dir_;
};

TEST_F(ModelCli, HelpListsTheModelCommands) {
  CliRun run = runCli("--help");
  EXPECT_CONTAINS(run.output, "build");
  EXPECT_CONTAINS(run.output, "bench");
  for (const char* command : {"build", "run", "bench"}) {
    CliRun help = runCli(std::string(command) + " --help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_CONTAINS(help.output, "--threads");
  }
}

TEST_F(ModelCli, BuildPrintsStagesOpsAndPlannedMemory) {
  CliRun run = runCli("build " + path("m.est") + " -o " + path("m.eom") + " --input-shape 'x:2,512;y:2,-1' --kernels");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "built " + path("m.eom"));
  EXPECT_CONTAINS(run.output, "inputs: x: f32[2,512] y: f32[2,512]");
  EXPECT_CONTAINS(run.output, "infer shapes");
  EXPECT_CONTAINS(run.output, "plan f32[2,512];f32[2,512];");
  EXPECT_CONTAINS(run.output, "save");
  EXPECT_CONTAINS(run.output, "ops: 4 -> 3");  // the Constant becomes a buffer, not a step
  EXPECT_CONTAINS(run.output, "weights: 2048 bytes (2.0 KiB)");
  std::smatch memory;
  ASSERT_TRUE(std::regex_search(run.output, memory,
                                std::regex("activation memory: (\\d+) bytes planned, lower bound (\\d+) bytes")))
      << run.output;
  EXPECT_GE(std::stoll(memory[1]), std::stoll(memory[2]));
  EXPECT_CONTAINS(run.output, "kernels:");
  EXPECT_TRUE(fs::file_size(path("m.eom")) > 2048);
}

TEST_F(ModelCli, BuildWithSymbolicInputsPlansAtRunTime) {
  CliRun run = runCli("build " + path("m.est") + " -o " + path("m.eom"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "planned per input shape at run time");
}

TEST_F(ModelCli, BuildRefusesBadInputShapes) {
  CliRun unknown = runCli("build " + path("m.est") + " -o " + path("m.eom") + " --input-shape 'z:1,2'");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.output, "input shapes: the graph has no input 'z' (inputs: x, y)");
  CliRun rank = runCli("build " + path("m.est") + " -o " + path("m.eom") + " --input-shape 'x:1,2,3'");
  EXPECT_EQ(rank.exit_code, 1);
  EXPECT_CONTAINS(rank.output, "input 'x' has rank 2 (f32[batch,512]), 3 dims were given");
  CliRun fixed = runCli("build " + path("m.est") + " -o " + path("m.eom") + " --input-shape 'x:1,8'");
  EXPECT_EQ(fixed.exit_code, 1);
  EXPECT_CONTAINS(fixed.output, "input 'x' dim 1 is 512 in the graph");
  CliRun malformed = runCli("build " + path("m.est") + " -o " + path("m.eom") + " --input-shape 'x:1,b'");
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_CONTAINS(malformed.output, "'b' is not a dimension");
  EXPECT_FALSE(fs::exists(path("m.eom")));
}

TEST_F(ModelCli, RunReadsNpyFilesAndWritesNpz) {
  std::string model = builtModel();
  Tensor x = input(2, 0.5f, -2.0f), y = input(2, -0.25f, 1.0f);
  writeNpy(path("x.npy"), x);
  writeNpy(path("y.npy"), y);
  CliRun run = runCli("run " + model + " --input x=" + path("x.npy") + " --input y=" + path("y.npy") + " -o " +
                       path("out.npz"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "c: f32 (2, 512)");
  EXPECT_CONTAINS(run.output, "wrote " + path("out.npz"));
  expectOutputs(path("out.npz"), x, y);
}

TEST_F(ModelCli, RunTakesANumpyArchiveAtAnyBatchAndWritesCompressed) {
  std::string model = builtModel();
  Tensor x = input(3, 1.0f, -4.0f), y = input(3, 0.125f, 0.0f);
  writeNpz(path("in.npz"), {{"y", y}, {"x", x}}, true);
  CliRun run = runCli("run " + model + " --inputs " + path("in.npz") + " -o " + path("out.npz") + " --compress --threads 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  expectOutputs(path("out.npz"), x, y);
}

TEST_F(ModelCli, RunBuildsAnIrFileAndReadsWhatNumpyWrote) {
  // tests/data/npy/xy.npz holds x and y of shape (2, 4): a model over that shape.
  std::ofstream(path("small.est")) << "graph @s(%x: f32[batch,4], %y: f32[batch,4]) {\n"
                                      "  %d = Sub(%x, %y) : f32[batch,4]\n"
                                      "  %q = Div(%d, %y) : f32[batch,4]\n"
                                      "  %m = Min(%q, %x) : f32[batch,4]\n"
                                      "  return %m\n}\n";
  std::string fixture = std::string(ESTUARY_SOURCE_DIR) + "/tests/data/npy/xy.npz";
  CliRun run = runCli("run " + path("small.est") + " --inputs " + fixture + " -o " + path("out.npz") + " --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");
  std::vector<NamedArray> inputs = readNpz(fixture), outputs = readNpz(path("out.npz"));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "m");
  for (int i = 0; i < 8; ++i) {
    float x = inputs[0].array.data<float>()[i], y = inputs[1].array.data<float>()[i];
    EXPECT_EQ(outputs[0].array.data<float>()[i], std::min((x - y) / y, x)) << i;
  }
}

TEST_F(ModelCli, RunNamesMissingAndMismatchedInputs) {
  std::string model = builtModel();
  writeNpy(path("x.npy"), input(2, 1, 0));
  CliRun missing = runCli("run " + model + " --input x=" + path("x.npy") + " -o " + path("out.npz"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.output, "input 'y' (f32[batch,512]) of " + model + " is not given");

  writeNpy(path("narrow.npy"), Tensor::allocate(DType::F32, {2, 3}));
  CliRun shape = runCli("run " + model + " --input x=" + path("x.npy") + " --input y=" + path("narrow.npy") +
                         " -o " + path("out.npz"));
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_CONTAINS(shape.output, path("narrow.npy") + ": input 'y' expects f32[batch,512], the file holds f32 (2, 3)");

  writeNpy(path("ints.npy"), Tensor::allocate(DType::I32, {2, 512}));
  CliRun dtype = runCli("run " + model + " --input x=" + path("x.npy") + " --input y=" + path("ints.npy") +
                         " -o " + path("out.npz"));
  EXPECT_EQ(dtype.exit_code, 1);
  EXPECT_CONTAINS(dtype.output, path("ints.npy") + ": input 'y' expects f32[batch,512], the file holds i32 (2, 512)");

  writeNpy(path("other.npy"), input(4, 1, 0));
  CliRun batch = runCli("run " + model + " --input x=" + path("x.npy") + " --input y=" + path("other.npy") +
                         " -o " + path("out.npz"));
  EXPECT_EQ(batch.exit_code, 1);
  EXPECT_CONTAINS(batch.output, path("other.npy") + ": input 'y' expects f32[batch,512] with batch = 2 (from " +
                                    path("x.npy") + "), the file holds f32 (4, 512)");

  CliRun unknown = runCli("run " + model + " --input z=" + path("x.npy") + " -o " + path("out.npz"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.output, "the model has no input 'z' (inputs: x, y)");
  EXPECT_FALSE(fs::exists(path("out.npz")));
}

TEST_F(ModelCli, RunRefusesBrokenArrayFiles) {
  std::string model = builtModel();
  writeNpy(path("x.npy"), input(2, 1, 0));
  std::string bytes;
  {
    std::ifstream in(path("x.npy"), std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::ofstream(path("cut.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  CliRun cut = runCli("run " + model + " --input x=" + path("x.npy") + " --input y=" + path("cut.npy") + " -o " +
                       path("out.npz"));
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_CONTAINS(cut.output, path("cut.npy") + ": truncated: <f4 (2, 512) needs 4096 data bytes, the file has 3996");
  CliRun npz = runCli("run " + model + " --inputs " + path("x.npy") + " -o " + path("out.npz"));
  EXPECT_EQ(npz.exit_code, 1);
  EXPECT_CONTAINS(npz.output, path("x.npy") + ": not a zip archive");
}

TEST_F(ModelCli, BadOfflineModelsAreRefused) {
  std::string model = builtModel();
  std::string bytes;
  {
    std::ifstream in(model, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  writeNpy(path("x.npy"), input(2, 1, 0));
  const std::string inputs = " --input x=" + path("x.npy") + " --input y=" + path("x.npy") + " -o " + path("out.npz");

  std::ofstream(path("cut.eom"), std::ios::binary) << bytes.substr(0, bytes.size() - 1000);
  CliRun cut = runCli("run " + path("cut.eom") + inputs);
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_CONTAINS(cut.output, path("cut.eom") + ": truncated");

  std::string wrong = bytes;
  wrong[1] = 'X';
  std::ofstream(path("magic.eom"), std::ios::binary) << wrong;
  CliRun magic = runCli("bench " + path("magic.eom"));
  EXPECT_EQ(magic.exit_code, 1);
  EXPECT_CONTAINS(magic.output, path("magic.eom") + ": not an Estuary offline model (bad magic bytes");

  CliRun absent = runCli("run " + path("absent.eom") + inputs);
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_CONTAINS(absent.output, path("absent.eom") + ": cannot open the offline model");

  CliRun rebuild = runCli("build " + model + " -o " + path("again.eom"));
  EXPECT_EQ(rebuild.exit_code, 1);
  EXPECT_CONTAINS(rebuild.output, "is an offline model already");
}

TEST_F(ModelCli, ModelBuiltForAnotherIsaIsRefused) {
  CliRun build = runCli("build " + path("m.est") + " -o " + path("m.eom"));
  ASSERT_EQ(build.exit_code, 0) << build.output;
  std::smatch isa;
  ASSERT_TRUE(std::regex_search(build.output, isa, std::regex("cpu/(\\w+)\\)"))) << build.output;
  // oneDNN's ISA cap makes this machine look like an older one.
  const std::string older = isa[1] == "sse41" ? "" : isa[1] == "avx2" ? "sse41" : "avx2";
  if (older.empty()) GTEST_SKIP() << "this machine's ISA is already the oldest oneDNN knows";
  std::string cap = older == "avx2" ? "AVX2" : "SSE41";
  CliRun bench = runCli("bench " + path("m.eom") + " --batch 1 --iterations 1", "ONEDNN_MAX_CPU_ISA=" + cap);
  EXPECT_EQ(bench.exit_code, 1);
  EXPECT_CONTAINS(bench.output, path("m.eom") + ": built for cpu/" + std::string(isa[1]) + ", this machine is cpu/" + older);
}

TEST_F(ModelCli, BenchReportsLatencyPercentilesThroughputAndMemory) {
  std::string model = builtModel();
  CliRun run = runCli("bench " + model + " --batch 3 --warmup 2 --iterations 20 --threads 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "(offline model, cpu/");
  EXPECT_CONTAINS(run.output, "1 threads");
  EXPECT_CONTAINS(run.output, "x: f32[3,512] y: f32[3,512]");
  EXPECT_CONTAINS(run.output, "load");
  EXPECT_CONTAINS(run.output, "plan f32[3,512];f32[3,512];");
  EXPECT_CONTAINS(run.output, "20 after 2 warm-up runs");
  for (const char* piece : {"min ", "mean ", "p50 ", "p90 ", "p99 ", "inferences/s", "samples/s at batch 3", "peak RSS"}) {
    EXPECT_CONTAINS(run.output, piece);
  }
}

TEST_F(ModelCli, BenchProfileShowsWhereTheTimeGoes) {
  CliRun run = runCli("bench " + path("m.est") + " --input-shape 'x:2,512;y:2,512' --iterations 5 --profile");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "(mean of 5 profiled runs)");
  EXPECT_CONTAINS(run.output, "op -> kernel");
  EXPECT_CONTAINS(run.output, "slowest steps:");
  EXPECT_CONTAINS(run.output, "%  ");
}

TEST_F(ModelCli, BenchTakesShapesFromInputShapeAndBuildsIrFiles) {
  CliRun run = runCli("bench " + path("m.est") + " --input-shape 'y:5,-1' --iterations 3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "(built from IR, cpu/");
  EXPECT_CONTAINS(run.output, "x: f32[5,512] y: f32[5,512]");
}

TEST_F(ModelCli, BenchNeedsSizesForSymbolicDims) {
  std::string model = builtModel();
  CliRun run = runCli("bench " + model);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "input 'x' (f32[batch,512]): dim 0 ('batch') needs a size; give it with --input-shape x:... or --batch");
  CliRun zero = runCli("bench " + model + " --batch 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_CONTAINS(zero.output, "--batch needs an integer of at least 1, got '0'");
}

// The O2 pipeline fuses Add + RMSNormalization into estuary::AddRMSNorm, an op of the
// fusion plugin: building or running the result needs --plugin, and says so without it.
TEST_F(ModelCli, PluginOpsNeedTheirPluginToBuildAndRun) {
  const std::string example = std::string(ESTUARY_SOURCE_DIR) + "/examples/decoder_block.est";
  const std::string fused = path("fused.est"), model = path("fused.eom");
  const std::string shapes = " --input-shape 'x:2,3,64;residual:2,3,64'";
  ASSERT_EQ(runCli("optimize " + example + " --pipeline O2 -o " + fused + " --quiet").exit_code, 0);

  CliRun without = runCli("build " + fused + " -o " + model + shapes);
  EXPECT_EQ(without.exit_code, 1);
  EXPECT_CONTAINS(without.output, fused + ": node #0 (estuary::AddRMSNorm) uses op estuary::AddRMSNorm, which is not "
                                          "registered; if a plugin brings it, load the plugin with --plugin");
  CliRun built = runCli("build " + fused + " -o " + model + shapes + " --plugin fusion_add_rms_norm --kernels");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_CONTAINS(built.output, "fusion_add_rms_norm:f32");

  for (const std::string& command : {"run " + model + " -o " + path("out.npz"), "bench " + model}) {
    CliRun unloaded = runCli(command);
    EXPECT_EQ(unloaded.exit_code, 1) << command;
    EXPECT_CONTAINS(unloaded.output, model + ": node #0 (estuary::AddRMSNorm) uses op estuary::AddRMSNorm from plugin "
                                             "'fusion_add_rms_norm', which is not loaded; load it first");
  }
  CliRun bench = runCli("bench " + model + " --plugin fusion_add_rms_norm --warmup 0 --iterations 2");
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_CONTAINS(bench.output, "x: f32[2,3,64]");
  CliRun bad = runCli("bench " + model + " --plugin no_such_plugin");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_CONTAINS(bad.output, "no_such_plugin");
}

// IR that holds ops the backend's lowering makes (a dump of a lowered graph) builds in a fresh
// process: their schemas are the core's, not a side effect of creating the CPU device.
TEST_F(ModelCli, BuildsIrHoldingTheBackendsOwnOps) {
  std::ofstream(path("lowered.est")) << R"(graph @g(%x: f32[2,8], %w: f32[4,8]) {
  %r = estuary::Reorder(%x) {layout = "plain"}
  %y = estuary::FusedMatMul(%r, %w) {transB = 1, epilogue = graph @epilogue(%p: f32[2,4]) {
    %q = Relu(%p)
    return %q
  }}
  return %y
}
)";
  CliRun built = runCli("build " + path("lowered.est") + " -o " + path("lowered.eom") + " --kernels");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_CONTAINS(built.output, "(estuary::FusedMatMul) -> ");
}

// The device lowering runs through the pass manager: ESTUARY_DEBUG dumps each of its steps,
// and --kernels lists them with their times.
TEST_F(ModelCli, TheDeviceLoweringIsDumpedAndTimedLikeAPipeline) {
  std::ofstream(path("conv.est")) << "graph @g(%x: f32[1,3,8,8], %w: f32[4,3,3,3], %b: f32[4]) {\n"
                                     "  %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]}\n  %r = Relu(%c)\n  return %r\n}\n";
  const std::string dumps = path("dumps");
  CliRun built = runCli("build " + path("conv.est") + " -o " + path("conv.eom") + " --kernels",
                        "ESTUARY_DEBUG=1 ESTUARY_DUMP_DIR=" + dumps);
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_CONTAINS(built.output, "lowering passes:\n  cpu_fold_batch_norms");
  EXPECT_CONTAINS(built.output, "  cpu_assign_layouts");
  std::ifstream before(dumps + "/004_before_cpu_fuse_epilogues.est"), after(dumps + "/004_after_cpu_fuse_epilogues.est");
  std::string before_text((std::istreambuf_iterator<char>(before)), std::istreambuf_iterator<char>());
  std::string after_text((std::istreambuf_iterator<char>(after)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(before_text, "= Relu(%c)");
  EXPECT_CONTAINS(after_text, "estuary::FusedConv(%x, %w, %b) {epilogue = graph @epilogue");
}

// The fusion's kernel computes f32 without broadcasting: a bf16 Add + RMSNormalization stays
// unfused and runs, and a graph that holds the fused op where no kernel takes it is refused by
// the build, naming the node, rather than built and then failing at run. Its gamma is a small
// vector, which the build once took for a possible shape input and so forgave the failed plan.
TEST_F(ModelCli, ABuildNeverSucceedsWithAPlanItCouldNotMake) {
  const std::string header = "graph @g(%x: bf16[2,64], %r: bf16[2,64], %gamma: bf16[64]) {\n";
  std::ofstream(path("bf16.est")) << header
                                  << "  %s = Add(%x, %r)\n  %y = RMSNormalization(%s, %gamma) {axis = -1}\n"
                                     "  return %y, %s\n}\n";
  ASSERT_EQ(runCli("optimize " + path("bf16.est") + " --pipeline O2 -o " + path("bf16_o2.est") + " --quiet").exit_code, 0);
  std::ifstream optimized(path("bf16_o2.est"));
  std::string text((std::istreambuf_iterator<char>(optimized)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("AddRMSNorm"), std::string::npos) << text;
  CliRun built = runCli("build " + path("bf16_o2.est") + " -o " + path("bf16.eom") + " --plugin fusion_add_rms_norm");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  EXPECT_CONTAINS(built.output, "activation memory: 512 bytes planned");

  std::ofstream(path("fused.est")) << header
                                   << "  %y, %s = estuary::AddRMSNorm(%x, %r, %gamma) {axis = -1, epsilon = 1e-05}\n"
                                      "  return %y, %s\n}\n";
  CliRun refused = runCli("build " + path("fused.est") + " -o " + path("fused.eom") + " --plugin fusion_add_rms_norm");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_CONTAINS(refused.output, "(estuary::AddRMSNorm): input 0 'x1' has dtype bf16, allowed: f32");
  EXPECT_FALSE(std::filesystem::exists(path("fused.eom")));
}

TEST_F(ModelCli, UnknownFlagsAndMissingArgumentsAreUsageErrors) {
  CliRun flag = runCli("run " + path("m.est") + " --bogus -o " + path("o.npz"));
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_CONTAINS(flag.output, "estuary run: unknown option '--bogus'");
  CliRun output = runCli("build " + path("m.est"));
  EXPECT_EQ(output.exit_code, 2);
  EXPECT_CONTAINS(output.output, "missing -o OUTPUT.eom");
  CliRun spec = runCli("run " + path("m.est") + " --input x -o " + path("o.npz"));
  EXPECT_EQ(spec.exit_code, 2);
  EXPECT_CONTAINS(spec.output, "--input needs NAME=FILE.npy, got 'x'");
  CliRun iterations = runCli("bench " + path("m.est") + " --iterations many");
  EXPECT_EQ(iterations.exit_code, 2);
  EXPECT_CONTAINS(iterations.output, "--iterations needs an integer");
}

}  // namespace
}  // namespace estuary::cli
