// The offline model file: save/load round trips, weights mapped rather than copied, and a
// clear refusal of every kind of bad file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "estuary/ge/model.h"
#include "estuary/ge/offline_model.h"
#include "estuary/text/parser.h"
#include "file_size_limit.h"

namespace estuary::ge {
namespace {

namespace fs = std::filesystem;

// A graph with a 4 KiB weight (stored in the weights section) and a small one (stored in the
// graph), over a symbolic batch.
std::string weightedGraphText() {
  std::ostringstream weight;
  for (int i = 0; i < 1024; ++i) weight << (i ? ", " : "") << (i % 7) * 0.25 - 0.5;
  return "graph @weighted(%x: f32[batch,1024], %y: f32[batch,1024]) {\n"
         "  %w = Constant() {value = tensor<f32[1024]> [" + weight.str() + "]} : f32[1024]\n"
         "  %s = Constant() {value = tensor<f32[1,1]> [-3.0]} : f32[1,1]\n"
         "  %a = Add(%x, %w) : f32[batch,1024]\n"
         "  %m = Mul(%a, %y) : f32[batch,1024]\n"
         "  %d = Div(%m, %w) : f32[batch,1024]\n"
         "  %t = Mul(%a, %s) : f32[batch,1024]\n"
         "  return %d, %t\n"
         "}\n";
}

class OfflineModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estuary_eom_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A built model saved to model.eom, with a plan prebuilt for batch 2.
  std::string savedModel() {
    auto graph = parseGraph(weightedGraphText());
    BuildOptions options;
    options.prebuild_shapes = {{{2, 1024}, {2, 1024}}};
    built_ = CompiledModel::build(*graph, options);
    std::string file = path("model.eom");
    built_->save(file);
    return file;
  }

  static std::string readBytes(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static void writeBytes(const std::string& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  }
  static std::string loadError(const std::string& file, const Device& device = cpuDevice()) {
    try {
      CompiledModel::load(file, {}, device);
    } catch (const Error& error) {
      return error.what();
    }
    return "no error";
  }

  fs::path dir_;
  std::shared_ptr<CompiledModel> built_;
};

struct Inputs {
  std::vector<float> x, y;
  explicit Inputs(int64_t batch) : x(batch * 1024), y(batch * 1024) {
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(i % 13) * 0.5f - 3.0f;
      y[i] = static_cast<float>(i % 5) + 0.25f;
    }
  }
  std::vector<HostTensor> host(int64_t batch) {
    return {HostTensor::of(TensorDesc::of(DType::F32, {batch, 1024}), x.data()),
            HostTensor::of(TensorDesc::of(DType::F32, {batch, 1024}), y.data())};
  }
};

std::vector<std::string> outputsOf(const CompiledModel& model, int64_t batch) {
  Inputs inputs(batch);
  auto context = model.createContext();
  std::vector<std::string> bytes;
  for (const HostTensor& output : context->run(inputs.host(batch))) {
    bytes.emplace_back(static_cast<const char*>(output.data), output.desc().byteSize());
  }
  return bytes;
}

// The path of the file mapped at `address` in this process, from /proc/self/maps; "" if none.
std::string mappedFileAt(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto target = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &start, &end) != 2 || target < start || target >= end) continue;
    size_t slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

const Tensor* constantNamed(const Graph& graph, const std::string& name) {
  for (Node* node : graph.nodes()) {
    if (node->is("Constant") && node->output()->name() == name) return &node->attr("value")->asTensor();
  }
  return nullptr;
}

// Wraps the CPU device under another ISA name, as a machine of another kind would be.
class OtherIsaDevice final : public Device {
 public:
  std::string name() const override { return cpuDevice().name(); }
  std::string isa() const override { return "sse41"; }
  const KernelRegistry& kernels() const override { return cpuDevice().kernels(); }
  std::unique_ptr<DeviceRunState> createRunState() const override { return cpuDevice().createRunState(); }
};

#define EXPECT_CONTAINS(text, piece) \
  EXPECT_NE(std::string(text).find(piece), std::string::npos) << "missing '" << (piece) << "' in:\n" << (text)

TEST_F(OfflineModel, RoundTripRunsToIdenticalOutputs) {
  std::string file = savedModel();
  EXPECT_TRUE(isOfflineModelFile(file));
  auto loaded = CompiledModel::load(file);
  ASSERT_EQ(loaded->inputs().size(), 2u);
  EXPECT_EQ(loaded->inputs()[0].name, "x");
  EXPECT_EQ(loaded->inputs()[1].type.str(), "f32[batch,1024]");
  ASSERT_EQ(loaded->outputs().size(), 2u);
  for (int64_t batch : {2, 3}) {
    std::vector<std::string> expected = outputsOf(*built_, batch), actual = outputsOf(*loaded, batch);
    ASSERT_EQ(expected.size(), 2u);
    EXPECT_EQ(actual, expected) << "batch " << batch;
  }
}

// Version 1 had no plugins section: its header slot (bytes 192..207) is zero.
// A save that fails part-way (a full disk) leaves the good model at the path as it was, and
// no temporary file beside it.
TEST_F(OfflineModel, AFailedSaveLeavesTheOldFileWhole) {
  std::string file = savedModel();
  std::string good = readBytes(file);
  auto bigger = parseGraph(weightedGraphText());
  std::shared_ptr<CompiledModel> model = CompiledModel::build(*bigger);
  std::string message;
  {
    estuary::testing::FileSizeLimit limit(1024);  // the header fits, the weights do not
    try {
      model->save(file);
    } catch (const Error& error) {
      message = error.what();
    }
  }
  EXPECT_EQ(message, file + ": cannot write: " + std::strerror(EFBIG));
  EXPECT_EQ(readBytes(file), good);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // model.eom alone
  CompiledModel::load(file);
}

TEST_F(OfflineModel, VersionOneFilesWithoutAPluginsSectionLoad) {
  std::string file = savedModel();
  std::string bytes = readBytes(file);
  bytes[8] = 1;
  std::fill(bytes.begin() + 192, bytes.begin() + 208, '\0');
  writeBytes(file, bytes);
  auto loaded = CompiledModel::load(file);
  EXPECT_EQ(outputsOf(*loaded, 2), outputsOf(*built_, 2));
}

// Input dim ranges (ATC's "1~16") are enforced by the built model and kept by the file.
TEST_F(OfflineModel, DimRangesAreEnforcedAndSaved) {
  auto graph = parseGraph(weightedGraphText());
  BuildOptions options;
  options.dim_ranges = {{"batch", DimRange{1, 4}}};
  built_ = CompiledModel::build(*graph, options);
  std::string file = path("ranged.eom");
  built_->save(file);
  auto loaded = CompiledModel::load(file);
  ASSERT_EQ(loaded->dimRanges().count("batch"), 1u);
  EXPECT_EQ(loaded->dimRanges().at("batch").max, 4);
  EXPECT_EQ(outputsOf(*loaded, 4), outputsOf(*built_, 4));
  for (const auto& model : {built_, loaded}) {
    try {
      outputsOf(*model, 5);
      ADD_FAILURE() << "batch 5 is outside 1~4";
    } catch (const Error& error) {
      EXPECT_CONTAINS(error.what(), "input 'x' (#0): dim 0 'batch' is 5, the model accepts 1~4");
    }
  }
  BuildOptions unknown;
  unknown.dim_ranges = {{"seq", DimRange{1, 4}}};
  try {
    CompiledModel::build(*graph, unknown);
    ADD_FAILURE() << "no input has a dim 'seq'";
  } catch (const Error& error) {
    EXPECT_CONTAINS(error.what(), "a range is given for dim 'seq', which no input has");
  }
}

TEST_F(OfflineModel, WeightsAreMappedFromTheFileNotCopied) {
  std::string file = savedModel();
  auto loaded = CompiledModel::load(file);
  const Tensor* weight = constantNamed(loaded->graph(), "w");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->byteSize(), 4096u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(weight->data()) % 64, 0u);
  EXPECT_EQ(mappedFileAt(weight->data()), fs::canonical(file).string());
  EXPECT_EQ(weight->data<float>()[3], 0.25f);  // (3 % 7) * 0.25 - 0.5
  // The small tensor lives in the graph section and is decoded into memory of its own.
  const Tensor* small = constantNamed(loaded->graph(), "s");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(mappedFileAt(small->data()), "");
  EXPECT_EQ(small->data<float>()[0], -3.0f);
  EXPECT_EQ(loaded->report().weight_bytes, 4096u);
}

TEST_F(OfflineModel, LoadRebuildsThePrebuiltPlans) {
  std::string file = savedModel();
  auto loaded = CompiledModel::load(file);
  std::vector<std::string> stages;
  for (const BuildReport::Stage& stage : loaded->report().stages) stages.push_back(stage.name);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0], "load");
  EXPECT_EQ(stages[1], "plan f32[2,1024];f32[2,1024];");
  // The plan's four steps (every value lives in place in an output buffer: no arena).
  EXPECT_EQ(loaded->report().kernels.size(), 4u);
}

TEST_F(OfflineModel, SavingOverTheLoadedFileKeepsTheLoadedModelWorking) {
  std::string file = savedModel();
  auto loaded = CompiledModel::load(file);
  std::vector<std::string> before = outputsOf(*loaded, 2);
  loaded->save(file);
  EXPECT_EQ(outputsOf(*loaded, 2), before);
  EXPECT_EQ(outputsOf(*CompiledModel::load(file), 2), before);
}

TEST_F(OfflineModel, SavesTheSameBytesTwice) {
  std::string file = savedModel();
  built_->save(path("again.eom"));
  EXPECT_EQ(readBytes(file), readBytes(path("again.eom")));
}

TEST_F(OfflineModel, MissingFileIsNamed) {
  std::string message = loadError(path("absent.eom"));
  EXPECT_CONTAINS(message, path("absent.eom"));
  EXPECT_CONTAINS(message, "No such file");
  EXPECT_FALSE(isOfflineModelFile(path("absent.eom")));
}

TEST_F(OfflineModel, WrongMagicIsRefused) {
  std::string file = path("text.eom");
  writeBytes(file, "graph @g(%x: f32[2]) { return %x }\n");
  std::string message = loadError(file);
  EXPECT_CONTAINS(message, file + ": not an Estuary offline model (bad magic bytes");
  EXPECT_FALSE(isOfflineModelFile(file));
  writeBytes(file, "EO");
  EXPECT_CONTAINS(loadError(file), "too short");
}

TEST_F(OfflineModel, NewerFormatVersionIsRefused) {
  std::string file = savedModel();
  std::string bytes = readBytes(file);
  bytes[8] = static_cast<char>(kOfflineModelFormatVersion + 1);
  writeBytes(file, bytes);
  std::string message = loadError(file);
  EXPECT_CONTAINS(message, file + ": offline model format version " + std::to_string(kOfflineModelFormatVersion + 1));
  EXPECT_CONTAINS(message, "newer than this build reads (" + std::to_string(kOfflineModelFormatVersion) + ")");
}

TEST_F(OfflineModel, TruncationAnywhereIsRefused) {
  std::string file = savedModel();
  const std::string bytes = readBytes(file);
  for (size_t length : {size_t{100}, size_t{256}, size_t{300}, bytes.size() / 2, bytes.size() - 1}) {
    writeBytes(path("cut.eom"), bytes.substr(0, length));
    std::string message = loadError(path("cut.eom"));
    EXPECT_CONTAINS(message, path("cut.eom") + ": truncated") << "at " << length;
  }
}

TEST_F(OfflineModel, SectionsOutsideTheFileAreRefused) {
  std::string file = savedModel();
  std::string bytes = readBytes(file);
  // The weights section's size (bytes 184-191) made larger than the file.
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(bytes.data() + 184, &huge, 8);
  writeBytes(file, bytes);
  std::string message = loadError(file);
  EXPECT_CONTAINS(message, "the weights section");
  EXPECT_CONTAINS(message, "lies outside the file");
}

TEST_F(OfflineModel, CorruptWeightTableIsRefused) {
  std::string file = savedModel();
  std::string bytes = readBytes(file);
  uint64_t table_offset;
  std::memcpy(&table_offset, bytes.data() + 144, 8);
  // Entry 0's dtype code (after the count and the ordinal) set to an unknown code.
  bytes[table_offset + 16] = 99;
  writeBytes(file, bytes);
  std::string message = loadError(file);
  EXPECT_CONTAINS(message, file + ": weight table section: unknown element type code 99 (corrupt file)");
}

TEST_F(OfflineModel, ModelForAnotherIsaIsRefused) {
  std::string file = savedModel();
  OtherIsaDevice other;
  std::string message = loadError(file, other);
  EXPECT_CONTAINS(message, file + ": built for cpu/" + cpuDevice().isa() + ", this machine is cpu/sse41");
}

}  // namespace
}  // namespace estuary::ge
