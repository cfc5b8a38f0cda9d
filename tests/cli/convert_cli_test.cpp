// `estuary convert` with the test frontend plugin (tests/plugins/test_frontend.cpp), which
// reads IR text under a header line: the stages, the summary, the modes, ATC spellings and
// the errors. The ONNX frontend's own conversions are tested with real models in python/tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_support.h"

namespace {

namespace fs = std::filesystem;

const std::string kPluginPath = "ESTUARY_PLUGIN_PATH=" ESTUARY_TEST_PLUGIN_DIR;

class ConvertCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estuary_convert_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(path("m.testmodel")) << "# estuary test model\n"
                                          "graph @m(%x: f32[batch,8]) {\n"
                                          "  %w = Constant() {value = tensor<f32[2,4]> [1, 2, 3, 4, 5, 6, 7, 8]} : f32[2,4]\n"
                                          "  %s = Constant() {value = tensor<i64[2]> [1, 8]} : i64[2]\n"
                                          "  %r = Reshape(%w, %s) : f32[1,8]\n"
                                          "  %y = Add(%x, %r) : f32[batch,8]\n"
                                          "  %i = Identity(%y) : f32[batch,8]\n"
                                          "  %z = Relu(%i) : f32[batch,8]\n"
                                          "  return %z\n"
                                          "}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  CliRun convert(const std::string& arguments) { return runCli("convert " + arguments, kPluginPath); }

  fs::path dir_;
};

TEST_F(ConvertCli, ConvertsAndSummarizesEveryStage) {
  CliRun run = convert("--model " + path("m.testmodel") + " --framework test -o " + path("m.eom"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "converted " + path("m.testmodel") + " -> " + path("m.eom"));
  EXPECT_CONTAINS(run.output, "inputs: x: f32[batch,8]");
  EXPECT_CONTAINS(run.output, "parameters: 10 (");
  EXPECT_CONTAINS(run.output, "translate");
  EXPECT_CONTAINS(run.output, "ops 6 -> ");
  EXPECT_CONTAINS(run.output, "epilogues fused");
  EXPECT_CONTAINS(run.output, "save");
  EXPECT_CONTAINS(run.output, "planned per input shape at run time");
  EXPECT_TRUE(fs::exists(path("m.eom")));
  // The result runs.
  CliRun bench = runCli("bench " + path("m.eom") + " --input-shape x:2,8 --iterations 3 --warmup 1");
  EXPECT_EQ(bench.exit_code, 0) << bench.output;
}

TEST_F(ConvertCli, FindsTheFrontendAndTakesAtcSpellings) {
  // No --framework: the frontend is picked by content; --input_shape is ATC's spelling, and
  // the .eom extension is added to an output given without one.
  CliRun run = convert(path("m.testmodel") + " --input_shape=x:4,8 --output " + path("fixed"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "inputs: x: f32[4,8]");
  EXPECT_CONTAINS(run.output, "activation memory: ");
  EXPECT_CONTAINS(run.output, " planned, lower bound ");
  EXPECT_TRUE(fs::exists(path("fixed.eom")));
}

TEST_F(ConvertCli, InputShapeRangesBoundSymbolicDims) {
  CliRun run = convert(path("m.testmodel") + " --input-shape 'x:1~4,8' -o " + path("ranged.eom"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "inputs: x: f32[batch,8]");
  EXPECT_CONTAINS(run.output, "dim batch: 1~4");
  CliRun inside = runCli("bench " + path("ranged.eom") + " --input-shape x:4,8 --iterations 2 --warmup 0");
  EXPECT_EQ(inside.exit_code, 0) << inside.output;
  CliRun outside = runCli("bench " + path("ranged.eom") + " --input-shape x:5,8 --iterations 2 --warmup 0");
  EXPECT_EQ(outside.exit_code, 1) << outside.output;
  EXPECT_CONTAINS(outside.output, "dim 0 'batch' is 5, the model accepts 1~4");
  CliRun empty = convert(path("m.testmodel") + " --input-shape 'x:4~1,8' -o " + path("x.eom"));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_CONTAINS(empty.output, "the range 4~1 is empty");
  CliRun fixed_dim = convert(path("m.testmodel") + " --input-shape 'x:-1,1~8' -o " + path("x.eom"));
  EXPECT_EQ(fixed_dim.exit_code, 1);
  EXPECT_CONTAINS(fixed_dim.output, "only a symbolic dim can take a range");
}

TEST_F(ConvertCli, PrintsInfoTextAndJson) {
  CliRun info = convert("--model " + path("m.testmodel") + " --mode 6");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_CONTAINS(info.output, "test model");
  EXPECT_CONTAINS(info.output, "Reshape");
  CliRun text = convert("--model " + path("m.testmodel") + " --mode ir --passes canonicalize,dce");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_CONTAINS(text.output, "graph @m(");
  EXPECT_EQ(text.output.find("Identity"), std::string::npos) << text.output;
  CliRun json = convert("--model " + path("m.testmodel") + " --mode json -o " + path("m.json"));
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::ifstream file(path("m.json"));
  std::string written((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(written, "\"op\": \"Relu\"");
  EXPECT_CONTAINS(written, "\"inputs\": [{\"name\": \"x\", \"type\": \"f32[batch,8]\"}]");
}

TEST_F(ConvertCli, ListsEveryUnsupportedOp) {
  std::ofstream(path("bad.testmodel")) << "# estuary test model\n# unsupported Foo a b\n# unsupported Bar c\n";
  CliRun run = convert("--model " + path("bad.testmodel") + " -o " + path("bad.eom"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_CONTAINS(run.output, "2 ops have no translation (3 nodes)");
  EXPECT_CONTAINS(run.output, "Foo (opset 1): 'a', 'b'");
  EXPECT_CONTAINS(run.output, "Bar (opset 1): 'c'");
  EXPECT_FALSE(fs::exists(path("bad.eom")));
}

TEST_F(ConvertCli, TakesDirectoriesFilePairsAndFrontendOptions) {
  const std::string scaled =
      "# estuary test model\n# weights w 2\n"
      "graph @s(%x: f32[2]) {\n"
      "  %w = Constant() {value = tensor<f32[2]> [0, 0]} : f32[2]\n"
      "  %y = Mul(%x, %w) : f32[2]\n"
      "  return %y\n"
      "}\n";
  const float weights[2] = {2, 3};
  fs::create_directories(dir_ / "saved");
  std::ofstream(dir_ / "saved" / "model.testmodel") << scaled;
  std::ofstream(dir_ / "saved" / "model.testweights", std::ios::binary).write(reinterpret_cast<const char*>(weights), 8);
  CliRun directory = convert(path("saved") + " -o " + path("dir.eom"));
  ASSERT_EQ(directory.exit_code, 0) << directory.output;
  EXPECT_CONTAINS(directory.output, "converted " + path("saved") + " -> ");

  // A model and its weights given as two positionals, the way a program and its
  // parameters file are.
  std::ofstream(path("s.testmodel")) << scaled;
  std::ofstream(path("w.testweights"), std::ios::binary).write(reinterpret_cast<const char*>(weights), 8);
  CliRun pair = convert(path("s.testmodel") + " " + path("w.testweights") + " -o " + path("pair.eom"));
  ASSERT_EQ(pair.exit_code, 0) << pair.output;
  EXPECT_CONTAINS(pair.output, "converted " + path("s.testmodel") + " + " + path("w.testweights"));
  CliRun missing = convert(path("s.testmodel") + " -o " + path("x.eom"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.output, "the weights of 'w' are missing");
  CliRun weights_option = convert(path("s.testmodel") + " --weights " + path("w.testweights") + " -o " + path("w.eom"));
  EXPECT_EQ(weights_option.exit_code, 0) << weights_option.output;

  CliRun option = convert(path("m.testmodel") + " --frontend-option graph-name=renamed --mode ir");
  ASSERT_EQ(option.exit_code, 0) << option.output;
  EXPECT_CONTAINS(option.output, "graph @renamed(");
  CliRun unknown = convert(path("m.testmodel") + " --frontend-option colour=red -o " + path("x.eom"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.output, "the test frontend has no option 'colour'; its options:");
  CliRun malformed = convert(path("m.testmodel") + " --frontend-option colour -o " + path("x.eom"));
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_CONTAINS(malformed.output, "--frontend-option takes KEY=VALUE");

  // ATC's --out_nodes picks values as outputs; ATC's framework numbers name frontends.
  CliRun out_nodes = convert(path("m.testmodel") + " --out_nodes 'y' --mode ir --passes dce");
  ASSERT_EQ(out_nodes.exit_code, 0) << out_nodes.output;
  EXPECT_EQ(out_nodes.output.find("Relu"), std::string::npos) << out_nodes.output;
  CliRun atc_number = convert(path("m.testmodel") + " --framework 5 -o " + path("x.eom"));
  EXPECT_EQ(atc_number.exit_code, 1);
  EXPECT_CONTAINS(atc_number.output, "not a model the onnx frontend reads");
}

TEST_F(ConvertCli, TunesKernelsUnlessToldNotToAndKeepsATimingCache) {
  std::ostringstream weights;
  for (int i = 0; i < 64 * 32; ++i) weights << (i ? ", " : "") << (i % 9) * 0.125 - 0.5;
  std::ofstream(path("linear.testmodel")) << "# estuary test model\n"
                                             "graph @linear(%x: f32[1,64]) {\n"
                                             "  %w = Constant() {value = tensor<f32[64,32]> [" << weights.str()
                                          << "]} : f32[64,32]\n"
                                             "  %y = MatMul(%x, %w) : f32[1,32]\n"
                                             "  return %y\n"
                                             "}\n";
  const std::string model = path("linear.testmodel");
  CliRun tuned = convert(model + " -o " + path("tuned.eom") + " --timing-cache " + path("cache.txt") + " --log debug");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_CONTAINS(tuned.output, "kernel tuning: 1 nodes with a choice of kernels");
  EXPECT_CONTAINS(tuned.output, "(measured: cpu:gemv ");
  EXPECT_TRUE(fs::exists(path("cache.txt")));
  CliRun again = convert(model + " -o " + path("again.eom") + " --timing-cache " + path("cache.txt") + " --log debug");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_CONTAINS(again.output, "(from the timing cache: cpu:gemv ");
  std::ofstream(path("cache.txt"), std::ios::app) << "cut short";
  CliRun corrupt = convert(model + " -o " + path("c.eom") + " --timing-cache " + path("cache.txt") + " --log debug");
  ASSERT_EQ(corrupt.exit_code, 0) << corrupt.output;
  EXPECT_CONTAINS(corrupt.output, "warning: " + path("cache.txt") + ":");
  EXPECT_CONTAINS(corrupt.output, "expected 'key<TAB>tactic<TAB>times', found 'cut short': the timing cache was ignored");
  EXPECT_CONTAINS(corrupt.output, "(measured: cpu:gemv ");

  CliRun rules = convert(model + " -o " + path("rules.eom") + " --tuning off");
  ASSERT_EQ(rules.exit_code, 0) << rules.output;
  EXPECT_EQ(rules.output.find("kernel tuning"), std::string::npos) << rules.output;

  CliRun bad = convert(model + " -o " + path("bad.eom") + " --tuning maybe");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_CONTAINS(bad.output, "build option 'tune_kernels' is a switch");
  CliRun budget = convert(model + " -o " + path("bad.eom") + " --tuning-budget -1");
  EXPECT_EQ(budget.exit_code, 2);
  EXPECT_CONTAINS(budget.output, "build option 'tuning_budget' needs seconds");
}

TEST_F(ConvertCli, RefusesBadUsage) {
  CliRun no_model = convert("-o " + path("x.eom"));
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_CONTAINS(no_model.output, "missing --model");
  CliRun no_output = convert("--model " + path("m.testmodel"));
  EXPECT_EQ(no_output.exit_code, 2);
  EXPECT_CONTAINS(no_output.output, "missing -o");
  CliRun mode = convert("--model " + path("m.testmodel") + " --mode 3");
  EXPECT_EQ(mode.exit_code, 2);
  EXPECT_CONTAINS(mode.output, "--mode must be");
  CliRun framework = convert("--model " + path("m.testmodel") + " --framework tset -o " + path("x.eom"));
  EXPECT_EQ(framework.exit_code, 1);
  EXPECT_CONTAINS(framework.output, "no frontend named 'tset'");
  EXPECT_CONTAINS(framework.output, "did you mean 'test'?");
  std::ofstream(path("other.txt")) << "not a model\n";
  CliRun unknown = convert("--model " + path("other.txt") + " -o " + path("x.eom"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.output, "no frontend supports this input");
  CliRun shape = convert("--model " + path("m.testmodel") + " --input-shape y:1 -o " + path("x.eom"));
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_CONTAINS(shape.output, "the graph has no input 'y' (inputs: x)");
}

}  // namespace
