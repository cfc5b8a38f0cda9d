// Resource limits on the command line, with ONNX models written byte by byte: a huge static
// shape is refused by `estuary convert` (and no model is written), a huge shape that only a
// run reveals is refused by `estuary run`, and the limits are set by options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_support.h"
#include "npy.h"
#include "onnx_writer.h"

namespace {

namespace fs = std::filesystem;
using namespace estuary::onnx_test;

std::string int64Bytes(const std::vector<int64_t>& values) {
  std::string bytes(values.size() * sizeof(int64_t), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Proto int64Initializer(std::string_view name, const std::vector<int64_t>& values) {
  Proto tensor = tensorHeader(name, kInt64, {static_cast<int64_t>(values.size())});
  tensor.bytes(9, int64Bytes(values));
  return tensor;
}

class LimitsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estuary_limits_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const Proto& graph_proto) {
    std::ofstream(path(name), std::ios::binary) << model(17, graph_proto).str();
    return path(name);
  }
  void writeShape(const std::string& name, const std::vector<int64_t>& shape) {
    estuary::cli::writeNpy(path(name), estuary::Tensor::fromVector<int64_t>(estuary::DType::I64, {2}, shape));
  }

  fs::path dir_;
};

TEST_F(LimitsCli, ConvertRefusesAHugeStaticInputAndWritesNothing) {
  std::string onnx = write("huge_input.onnx", graph("g", {node("Relu", {"x"}, {"y"}, "relu")}, {},
                                                    {valueInfo("x", kFloat, {int64_t{1} << 40})},
                                                    {valueInfo("y", kFloat, {int64_t{1} << 40})}));
  CliRun run = runCli("convert " + onnx + " -o " + path("m.eom"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_CONTAINS(run.output, "input 'x' f32[1099511627776] needs 4.0 TiB, more than the tensor limit");
  EXPECT_FALSE(fs::exists(path("m.eom")));
}

TEST_F(LimitsCli, ConvertRefusesAConstantOfShapeOrExpandToAHugeShape) {
  std::string constant = write("constant_of_shape.onnx",
                               graph("g", {node("ConstantOfShape", {"s"}, {"y"}, "fill")},
                                     {int64Initializer("s", {1 << 20, 1 << 20})}, {},
                                     {valueInfo("y", kFloat, {std::monostate{}, std::monostate{}})}));
  CliRun run = runCli("convert " + constant + " -o " + path("c.eom"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_CONTAINS(run.output, "node 'fill' (ConstantOfShape): value 'y' f32[1048576,1048576] needs 4.0 TiB");
  EXPECT_FALSE(fs::exists(path("c.eom")));

  std::string expand = write("expand.onnx", graph("g", {node("Expand", {"x", "s"}, {"y"}, "grow")},
                                                  {int64Initializer("s", {1 << 20, 1 << 20})},
                                                  {valueInfo("x", kFloat, {1})},
                                                  {valueInfo("y", kFloat, {std::monostate{}, std::monostate{}})}));
  run = runCli("convert " + expand + " -o " + path("e.eom"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_CONTAINS(run.output, "node 'grow' (Expand): value 'y' f32[1048576,1048576] needs 4.0 TiB");
}

TEST_F(LimitsCli, RunRefusesAHugeShapeItsInputsAskForAndLimitsAreOptions) {
  std::string onnx = write("expand_by_input.onnx",
                           graph("g", {node("Expand", {"x", "s"}, {"y"}, "grow")}, {},
                                 {valueInfo("x", kFloat, {1}), valueInfo("s", kInt64, {2})},
                                 {valueInfo("y", kFloat, {std::monostate{}, std::monostate{}})}));
  CliRun converted = runCli("convert " + onnx + " -o " + path("m.eom"));
  ASSERT_EQ(converted.exit_code, 0) << converted.output;
  estuary::cli::writeNpy(path("x.npy"), estuary::Tensor::fromVector<float>(estuary::DType::F32, {1}, {2.5f}));
  writeShape("huge.npy", {1 << 20, 1 << 20});
  writeShape("small.npy", {64, 64});
  const std::string inputs = path("m.eom") + " -o " + path("y.npz") + " --input x=" + path("x.npy") + " --input s=";

  CliRun huge = runCli("run " + inputs + path("huge.npy"));
  EXPECT_EQ(huge.exit_code, 1) << huge.output;
  EXPECT_CONTAINS(huge.output, "f32[1048576,1048576] needs 4.0 TiB, more than the tensor limit");

  CliRun small = runCli("run " + inputs + path("small.npy"));
  EXPECT_EQ(small.exit_code, 0) << small.output;
  std::vector<estuary::cli::NamedArray> outputs = estuary::cli::readNpz(path("y.npz"));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].array.shape(), (std::vector<int64_t>{64, 64}));

  CliRun small_plan = runCli("run " + inputs + path("small.npy") + " --max-run-size 8KiB");
  EXPECT_EQ(small_plan.exit_code, 1) << small_plan.output;
  EXPECT_CONTAINS(small_plan.output, "needs 16.0 KiB, more than the run limit of 8.0 KiB");

  CliRun malformed = runCli("run " + inputs + path("small.npy") + " --max-tensor-size lots");
  EXPECT_EQ(malformed.exit_code, 2) << malformed.output;
  EXPECT_CONTAINS(malformed.output, "--max-tensor-size: 'lots' is not a size");
}

}  // namespace
