#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_support.h"

namespace {

namespace fs = std::filesystem;


class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estuary_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content) {
    fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string example() { return std::string(ESTUARY_SOURCE_DIR) + "/examples/decoder_block.est"; }

  fs::path dir_;
};

const char* kSmallGraph = R"(graph @g(%x: f32[2,4], %w: f32[4]) {
  %id = Identity(%x) : f32[2,4]
  %s = Add(%id, %x) : f32[2,4]
  %n = RMSNormalization(%s, %w) {axis = -1} : f32[2,4]
  %dead = Exp(%n) : f32[2,4]
  return %n
}
)";


TEST_F(Cli, HelpListsCommands) {
  CliRun run = runCli("--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_CONTAINS(run.output, "optimize");
  EXPECT_CONTAINS(run.output, "inspect");
  CliRun optimize_help = runCli("optimize --help");
  EXPECT_EQ(optimize_help.exit_code, 0);
  EXPECT_CONTAINS(optimize_help.output, "--pipeline");
}

TEST_F(Cli, OptimizeRunsTheO2PipelineWithTheFusionPlugin) {
  std::string out = path("out.est");
  CliRun run = runCli("optimize " + example() + " --pipeline O2 -o " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "fuse_add_rms_norm");
  std::ifstream file(out);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_CONTAINS(text, "estuary::AddRMSNorm");
  EXPECT_EQ(text.find("Identity("), std::string::npos) << text;
  EXPECT_EQ(text.find("%unused"), std::string::npos) << text;
}

TEST_F(Cli, BinaryAndTextFormsConvertBothWays) {
  std::string input = write("g.est", kSmallGraph);
  ASSERT_EQ(runCli("optimize " + input + " --passes dce -o " + path("g.estir") + " --quiet").exit_code, 0);
  CliRun back = runCli("optimize " + path("g.estir") + " --passes canonicalize -o " + path("back.est"));
  ASSERT_EQ(back.exit_code, 0) << back.output;
  CliRun inspect = runCli("inspect " + path("back.est"));
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_CONTAINS(inspect.output, "RMSNormalization");
  EXPECT_EQ(inspect.output.find("Exp"), std::string::npos) << inspect.output;
}

TEST_F(Cli, InspectReportsOpsParametersAndShapes) {
  CliRun run = runCli("inspect " + example());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "f32[batch,seq,64]");
  EXPECT_CONTAINS(run.output, "MatMul");
  EXPECT_CONTAINS(run.output, "parameters: 7 in 2 constants");
  EXPECT_CONTAINS(run.output, "symbolic dims: batch seq");
}

TEST_F(Cli, BrokenYamlNamesFileAndLine) {
  std::string yaml = write("bad.yaml", "name: bad\npasses:\n  - dce\n  - [cse\n");
  CliRun run = runCli("optimize " + write("g.est", kSmallGraph) + " --pipeline " + yaml + " -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "bad.yaml:");
}

TEST_F(Cli, UnknownPassIsRefused) {
  CliRun run = runCli("optimize " + write("g.est", kSmallGraph) + " --passes cse,no_such_pass -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "no_such_pass");
}

TEST_F(Cli, UnknownOptionIsRefused) {
  CliRun run = runCli("optimize " + write("g.est", kSmallGraph) + " --passes 'dce{bogus=1}' -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "bogus");
}

TEST_F(Cli, PluginThatFailsToLoadIsNamed) {
  std::string fake = write("libestuary_fake.so", "this is not a shared object");
  CliRun run = runCli("optimize " + write("g.est", kSmallGraph) + " --plugin " + fake + " --passes dce -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "libestuary_fake.so");
  CliRun missing = runCli("optimize " + write("g2.est", kSmallGraph) + " --plugin no_such_plugin --passes dce -o " + path("o.est"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.output, "no_such_plugin");
}

TEST_F(Cli, CorruptedAndTruncatedIrFilesAreRefused) {
  std::string text = write("broken.est", "graph @g(%x: f32[2]) {\n  %y = Neg(%x : f32[2]\n  return %y\n}\n");
  CliRun run = runCli("inspect " + text);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "broken.est:2:");

  std::string binary = path("g.estir");
  ASSERT_EQ(runCli("optimize " + write("g.est", kSmallGraph) + " --passes dce --quiet -o " + binary).exit_code, 0);
  std::string bytes;
  {
    std::ifstream file(binary, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  }
  std::string truncated = write("truncated.estir", bytes.substr(0, bytes.size() / 2));
  CliRun cut = runCli("inspect " + truncated);
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_CONTAINS(cut.output, "truncated.estir");
}

TEST_F(Cli, IrThatFailsVerificationIsRefused) {
  // %s is used before it is defined: a cycle through %a.
  std::string input = write("cycle.est", R"(graph @g(%x: f32[2]) {
  %a = Add(%x, %s) : f32[2]
  %s = Neg(%a) : f32[2]
  return %s
}
)");
  CliRun run = runCli("optimize " + input + " --passes dce -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "not valid IR");
  EXPECT_CONTAINS(run.output, "cycle");
}

TEST_F(Cli, MissingInputFileIsNamed) {
  CliRun run = runCli("inspect " + path("nope.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "nope.est");
}

TEST_F(Cli, UnknownCommandAndFlagAreUsageErrors) {
  EXPECT_EQ(runCli("frobnicate").exit_code, 2);
  CliRun run = runCli("inspect --frob " + example());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_CONTAINS(run.output, "--frob");
}

}  // namespace
