#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr together
};

CliRun estuary(const std::string& arguments) {
  std::string command = std::string(ESTUARY_CLI) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  CliRun run{0, {}};
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

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

#define EXPECT_CONTAINS(text, piece) \
  EXPECT_NE(std::string(text).find(piece), std::string::npos) << "missing '" << (piece) << "' in:\n" << (text)

TEST_F(Cli, HelpListsCommands) {
  CliRun run = estuary("--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_CONTAINS(run.output, "optimize");
  EXPECT_CONTAINS(run.output, "inspect");
  CliRun optimize_help = estuary("optimize --help");
  EXPECT_EQ(optimize_help.exit_code, 0);
  EXPECT_CONTAINS(optimize_help.output, "--pipeline");
}

TEST_F(Cli, OptimizeRunsTheO2PipelineWithTheFusionPlugin) {
  std::string out = path("out.est");
  CliRun run = estuary("optimize " + example() + " --pipeline O2 -o " + out);
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
  ASSERT_EQ(estuary("optimize " + input + " --passes dce -o " + path("g.estir") + " --quiet").exit_code, 0);
  CliRun back = estuary("optimize " + path("g.estir") + " --passes canonicalize -o " + path("back.est"));
  ASSERT_EQ(back.exit_code, 0) << back.output;
  CliRun inspect = estuary("inspect " + path("back.est"));
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_CONTAINS(inspect.output, "RMSNormalization");
  EXPECT_EQ(inspect.output.find("Exp"), std::string::npos) << inspect.output;
}

TEST_F(Cli, InspectReportsOpsParametersAndShapes) {
  CliRun run = estuary("inspect " + example());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "f32[batch,seq,64]");
  EXPECT_CONTAINS(run.output, "MatMul");
  EXPECT_CONTAINS(run.output, "parameters: 7 in 2 constants");
  EXPECT_CONTAINS(run.output, "symbolic dims: batch seq");
}

TEST_F(Cli, BrokenYamlNamesFileAndLine) {
  std::string yaml = write("bad.yaml", "name: bad\npasses:\n  - dce\n  - [cse\n");
  CliRun run = estuary("optimize " + write("g.est", kSmallGraph) + " --pipeline " + yaml + " -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "bad.yaml:");
}

TEST_F(Cli, UnknownPassIsRefused) {
  CliRun run = estuary("optimize " + write("g.est", kSmallGraph) + " --passes cse,no_such_pass -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "no_such_pass");
}

TEST_F(Cli, UnknownOptionIsRefused) {
  CliRun run = estuary("optimize " + write("g.est", kSmallGraph) + " --passes 'dce{bogus=1}' -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "bogus");
}

TEST_F(Cli, PluginThatFailsToLoadIsNamed) {
  std::string fake = write("libestuary_fake.so", "this is not a shared object");
  CliRun run = estuary("optimize " + write("g.est", kSmallGraph) + " --plugin " + fake + " --passes dce -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "libestuary_fake.so");
  CliRun missing = estuary("optimize " + write("g2.est", kSmallGraph) + " --plugin no_such_plugin --passes dce -o " + path("o.est"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.output, "no_such_plugin");
}

TEST_F(Cli, CorruptedAndTruncatedIrFilesAreRefused) {
  std::string text = write("broken.est", "graph @g(%x: f32[2]) {\n  %y = Neg(%x : f32[2]\n  return %y\n}\n");
  CliRun run = estuary("inspect " + text);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "broken.est:2:");

  std::string binary = path("g.estir");
  ASSERT_EQ(estuary("optimize " + write("g.est", kSmallGraph) + " --passes dce --quiet -o " + binary).exit_code, 0);
  std::string bytes;
  {
    std::ifstream file(binary, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  }
  std::string truncated = write("truncated.estir", bytes.substr(0, bytes.size() / 2));
  CliRun cut = estuary("inspect " + truncated);
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
  CliRun run = estuary("optimize " + input + " --passes dce -o " + path("o.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "not valid IR");
  EXPECT_CONTAINS(run.output, "cycle");
}

TEST_F(Cli, MissingInputFileIsNamed) {
  CliRun run = estuary("inspect " + path("nope.est"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "nope.est");
}

TEST_F(Cli, UnknownCommandAndFlagAreUsageErrors) {
  EXPECT_EQ(estuary("frobnicate").exit_code, 2);
  CliRun run = estuary("inspect --frob " + example());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_CONTAINS(run.output, "--frob");
}

}  // namespace
