// Saving and loading graphs: exact round trips, the weights side file, and refusal of bad
// files with messages that name the file.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "estuary/serialize/serialize.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "file_size_limit.h"

namespace estuary {
namespace {

// Every construct of the text form: all attribute kinds, symbolic dims, nested subgraphs
// capturing outer values, mutable inputs and updates, absent operands, quoted and loc
// names, unnamed values, multi- and zero-output nodes, and a forward reference (a cycle).
const char* const kEverything = R"(graph @"the model"(%x: f32[batch,16], %w: f32[16], %cache: f32[4,16] mutable, %cond: bool[], %u: ?[*]) {
  %c = Constant() {value = tensor<f32[2]> [1.0, 2.5]} : f32[2]
  %s = Add(%x, %x) : f32[batch,16]
  %y, %sum = estuary::AddRMSNorm(%x, %s, %w) {epsilon = 1e-06} : f32[batch,16], f32[batch,16] loc("layer0/norm")
  %r = Resize(%x, _, %c) : ?[*]
  %z = If(%cond) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then(%k: i64[] mutable) {
    %t = Neg(%x) : f32[batch,16]
    %0 = Loop(%k) {body = graph @body() {
      %deep = Mul(%t, %y) : f32[batch,16]
      return %deep
    }} : f32[batch,16]
    return %0
    update %k = %k
  }} : f32[batch,16]
  %"odd name" = "weird op"(%z) {"attr name" = "a \"string\"\n", f = 0.1, fs = [1.0, -2.5, inf, nan], i = -3, is = [1, 2, 3], ss = ["a", ""], t = bf16} : f32[2*seq+1,past+1,?]
  my.domain::Sink(%"odd name", %1)
  %1, %2 = Split(%2) {axis = 0, empty = ints[], empty_f = floats[], empty_s = strings[]} : f16[], bf16[]
  %new_cache = Identity(%cache) : f32[4,16]
  Print(%u)
  return %y, %sum, %x
  update %cache = %new_cache
}
)";

std::string tempPath(const std::string& name) {
  return std::string(ESTUARY_BINARY_DIR) + "/serialize_test_" + name;
}

std::string readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::string loadError(const std::string& path) {
  try {
    loadGraph(path);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

std::string bytesError(const std::string& bytes) {
  try {
    loadGraphFromBytes(bytes, "mem");
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// A graph with one weight above and one below the default inline limit.
std::unique_ptr<Graph> graphWithWeights() {
  auto graph = std::make_unique<Graph>();
  std::vector<float> big(1000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.25f;
  Node* weight = graph->createNode("Constant", {}, 1);
  weight->setAttr("value", Tensor::fromVector<float>(DType::F32, {10, 100}, big));
  Node* bias = graph->createNode("Constant", {}, 1);
  bias->setAttr("value", Tensor::fromVector<float>(DType::F32, {3}, {1.0f, 2.0f, 3.0f}));
  Node* add = graph->createNode("Add", {weight->output(), bias->output()});
  graph->addOutput(add->output());
  return graph;
}

TEST(Serialize, FileRoundTripKeepsEverythingTheTextShows) {
  auto graph = parseGraph(kEverything);
  const std::string path = tempPath("everything.estb");
  saveGraph(*graph, path);
  auto loaded = loadGraph(path);
  EXPECT_EQ(printGraph(*loaded), kEverything);
  EXPECT_FALSE(exists(path + ".weights"));  // nothing above the inline limit
  std::remove(path.c_str());
}

TEST(Serialize, BytesRoundTripKeepsEverythingTheTextShows) {
  auto graph = parseGraph(kEverything);
  std::string bytes = saveGraphToBytes(*graph);
  EXPECT_EQ(bytes.substr(0, 8), std::string("ESTUARY\x01", 8));
  EXPECT_EQ(printGraph(*loadGraphFromBytes(bytes)), kEverything);
  // Saving is deterministic.
  EXPECT_EQ(saveGraphToBytes(*loadGraphFromBytes(bytes)), bytes);
}

TEST(Serialize, TensorsOfEveryDtypeRoundTrip) {
  Graph graph;
  Node* node = graph.createNode("Constants", {}, 0);
  for (DType dtype : kAllDTypes) {
    Tensor tensor = Tensor::allocate(dtype, {3, 5});
    auto* bytes = static_cast<unsigned char*>(tensor.mutableData());
    for (size_t i = 0; i < tensor.byteSize(); ++i) bytes[i] = static_cast<unsigned char>(i * 37 + 1);
    if (dtype == DType::Bool) std::memset(bytes, 1, tensor.byteSize());
    node->setAttr(std::string(dtypeName(dtype)), tensor);
  }
  node->setAttr("scalar", Tensor::scalar<int64_t>(DType::I64, -5));
  node->setAttr("empty", Tensor::allocate(DType::F16, {0, 4}));
  SaveOptions options;
  options.inline_tensor_limit = 40;  // some of them go to the side file
  const std::string path = tempPath("dtypes.estb");
  saveGraph(graph, path, options);
  auto loaded = loadGraph(path);
  for (const auto& [name, attr] : node->attributes()) {
    const Attribute* back = loaded->firstNode()->attr(name);
    ASSERT_NE(back, nullptr) << name;
    EXPECT_TRUE(back->asTensor().contentEquals(attr.asTensor())) << name;
  }
  EXPECT_EQ(printGraph(*loaded), printGraph(graph));
  std::remove(path.c_str());
  std::remove((path + ".weights").c_str());
}

TEST(Serialize, LargeTensorsGoToAnAlignedSideFileAndLoadWithoutCopies) {
  auto graph = graphWithWeights();
  const std::string path = tempPath("weights.estb");
  saveGraph(*graph, path);
  ASSERT_TRUE(exists(path + ".weights"));
  // 64-byte header, then the 4000-byte weight at offset 64.
  std::string side = readFile(path + ".weights");
  EXPECT_EQ(side.size(), 64u + 4000u);
  EXPECT_EQ(side.substr(0, 8), "ESTUARYW");
  EXPECT_LT(readFile(path).size(), 1000u);  // the weight is not inline

  Tensor weight;
  {
    auto loaded = loadGraph(path);
    weight = loaded->firstNode()->attr("value")->asTensor();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(weight.data()) % 64, 0u);
    EXPECT_TRUE(weight.contentEquals(graph->firstNode()->attr("value")->asTensor()));
    EXPECT_EQ(printGraph(*loaded), printGraph(*graph));
  }
  // The tensor keeps the mapping alive after its graph is gone, even with the file removed.
  std::remove(path.c_str());
  std::remove((path + ".weights").c_str());
  EXPECT_EQ(weight.data<float>()[999], 999 * 0.25f);
}

// Saves that fail part-way (a full disk) leave what was at the path, the graph and its side
// file alike, and no temporary file.
TEST(Serialize, AFailedSaveLeavesTheOldFilesWhole) {
  auto graph = graphWithWeights();
  const std::string path = tempPath("full_disk.estb"), text_path = tempPath("full_disk.est");
  saveGraph(*graph, path);
  printGraphToFile(*graph, text_path);
  const std::string graph_bytes = readFile(path), side_bytes = readFile(path + ".weights");
  const std::string text = readFile(text_path);
  std::string binary_error, text_error;
  {
    estuary::testing::FileSizeLimit limit(1000);  // less than the side file's 4 KB weight, and the text
    try {
      saveGraph(*graph, path);
    } catch (const Error& error) {
      binary_error = error.what();
    }
    try {
      printGraphToFile(*graph, text_path);
    } catch (const Error& error) {
      text_error = error.what();
    }
  }
  EXPECT_EQ(binary_error, path + ".weights: cannot write: " + std::strerror(EFBIG));
  EXPECT_EQ(text_error, text_path + ": cannot write: " + std::strerror(EFBIG));
  EXPECT_EQ(readFile(path), graph_bytes);
  EXPECT_EQ(readFile(path + ".weights"), side_bytes);
  EXPECT_EQ(readFile(text_path), text);
  for (const auto& entry : std::filesystem::directory_iterator(ESTUARY_BINARY_DIR)) {
    const std::string name = entry.path().filename().string();
    EXPECT_FALSE(name.rfind("serialize_test_full_disk.", 0) == 0 && name.find(".tmp") != std::string::npos) << name;
  }
  for (const std::string& file : {path, path + ".weights", text_path}) std::remove(file.c_str());
}

TEST(Serialize, SavingOverTheLoadedFileKeepsItsTensorsValid) {
  const std::string path = tempPath("overwrite.estb");
  saveGraph(*graphWithWeights(), path);
  auto loaded = loadGraph(path);
  const Tensor weight = loaded->firstNode()->attr("value")->asTensor();
  loaded->firstNode()->setName("renamed");
  saveGraph(*loaded, path);  // the side file being written is the one `weight` maps
  EXPECT_EQ(weight.data<float>()[999], 999 * 0.25f);
  auto again = loadGraph(path);
  EXPECT_EQ(printGraph(*again), printGraph(*loaded));
  EXPECT_EQ(again->firstNode()->name(), "renamed");
  std::remove(path.c_str());
  std::remove((path + ".weights").c_str());
}

TEST(Serialize, SharedBuffersAreStoredOnce) {
  auto graph = graphWithWeights();
  Tensor shared = graph->firstNode()->attr("value")->asTensor();
  graph->createNode("Constant", {}, 1)->setAttr("value", shared);  // tied weights
  const std::string path = tempPath("tied.estb");
  saveGraph(*graph, path);
  EXPECT_EQ(readFile(path + ".weights").size(), 64u + 4000u);
  auto loaded = loadGraph(path);
  EXPECT_EQ(loaded->lastNode()->attr("value")->asTensor().data(),
            loaded->firstNode()->attr("value")->asTensor().data());
  std::remove(path.c_str());
  std::remove((path + ".weights").c_str());
}

TEST(Serialize, SecondLargeTensorStartsAtTheNextAlignedOffset) {
  auto graph = graphWithWeights();
  graph->createNode("Constant", {}, 1)->setAttr("value", Tensor::allocate(DType::U8, {2000}));
  graph->createNode("Constant", {}, 1)->setAttr("value", Tensor::allocate(DType::U8, {1025}));
  const std::string path = tempPath("aligned.estb");
  saveGraph(*graph, path);
  // Header 64, weight 64..4064; next at 4096..6096; next at 6144..7169.
  EXPECT_EQ(readFile(path + ".weights").size(), 7169u);
  auto loaded = loadGraph(path);
  for (Node* node : loaded->nodes()) {
    if (const Attribute* value = node->attr("value")) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(value->asTensor().data()) % 64, 0u);
    }
  }
  std::remove(path.c_str());
  std::remove((path + ".weights").c_str());
}

TEST(Serialize, InlineLimitKeepsEverythingInOneFile) {
  auto graph = graphWithWeights();
  SaveOptions options;
  options.inline_tensor_limit = SIZE_MAX;
  const std::string path = tempPath("inline.estb");
  std::remove((path + ".weights").c_str());
  saveGraph(*graph, path, options);
  EXPECT_FALSE(exists(path + ".weights"));
  EXPECT_EQ(printGraph(*loadGraph(path)), printGraph(*graph));
  std::remove(path.c_str());
}

TEST(Serialize, RefusesFilesThatAreNotGraphs) {
  const std::string path = tempPath("not_a_graph.estb");
  writeFile(path, "PK\x03\x04 this is a zip file, not a graph at all");
  EXPECT_EQ(loadError(path), path + ": not an Estuary graph file (bad magic bytes)");
  writeFile(path, "graph @main() {\n  return\n}\n");
  EXPECT_EQ(loadError(path),
            path + ": not an Estuary graph file (bad magic bytes); it looks like the text form: use parseGraphFile()");
  writeFile(path, "");
  EXPECT_EQ(loadError(path), path + ": not an Estuary graph file (bad magic bytes)");
  writeFile(path, std::string("ESTUARYW", 8) + std::string(56, '\0'));
  EXPECT_EQ(loadError(path), path + ": this is a weights side file; load the graph file it belongs to");
  std::remove(path.c_str());
  EXPECT_EQ(loadError(tempPath("missing.estb")),
            tempPath("missing.estb") + ": cannot open: No such file or directory");
}

TEST(Serialize, RefusesUnknownVersions) {
  std::string bytes = saveGraphToBytes(*parseGraph(kEverything));
  std::string newer = bytes;
  newer[8] = 2;
  EXPECT_EQ(bytesError(newer),
            "mem: format version 2 is newer than this build of Estuary reads (1); upgrade Estuary to load it");
  newer[8] = 0;
  newer[11] = 1;  // 2^24
  EXPECT_EQ(bytesError(newer),
            "mem: format version 16777216 is newer than this build of Estuary reads (1); upgrade Estuary to load it");
  std::string zero = bytes;
  zero[8] = 0;
  EXPECT_EQ(bytesError(zero), "mem: format version 0 is invalid (corrupt header)");
}

TEST(Serialize, RefusesTruncatedFiles) {
  const std::string path = tempPath("truncated.estb");
  auto graph = parseGraph(kEverything);
  saveGraph(*graph, path);
  const std::string bytes = readFile(path);
  const size_t payload = bytes.size() - 24;
  writeFile(path, bytes.substr(0, 12));
  EXPECT_EQ(loadError(path), path + ": truncated: 12 bytes, shorter than the 24-byte header");
  writeFile(path, bytes.substr(0, 24));
  EXPECT_EQ(loadError(path), path + ": truncated: the header announces " + std::to_string(payload) +
                                 " bytes of graph data, 0 follow");
  writeFile(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(loadError(path), path + ": truncated: the header announces " + std::to_string(payload) +
                                 " bytes of graph data, " + std::to_string(payload - 1) + " follow");
  writeFile(path, bytes + "xyz");
  EXPECT_EQ(loadError(path), path + ": 3 unexpected bytes after the graph data");
  std::remove(path.c_str());
}

TEST(Serialize, RefusesCorruptGraphData) {
  std::string bytes = saveGraphToBytes(*parseGraph(kEverything));
  for (size_t i = 24; i < bytes.size(); ++i) bytes[i] = '\xff';
  EXPECT_EQ(bytesError(bytes), "mem: corrupt graph data (not a valid protobuf message, or subgraphs nested more than 200 deep)");
}

// --- Hand-made files, for what saveGraph never writes ----------------------------------------

// A minimal protobuf encoder: enough to build the messages of ir.proto by field number.
std::string varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
  return out;
}
std::string field(int number, uint64_t value) { return varint(static_cast<uint64_t>(number) << 3) + varint(value); }
std::string field(int number, const std::string& bytes) {
  return varint((static_cast<uint64_t>(number) << 3) | 2) + varint(bytes.size()) + bytes;
}

std::string graphFile(const std::string& model) {
  std::string header("ESTUARY\x01", 8);
  header += std::string("\x01\0\0\0\0\0\0\0", 8);
  for (int i = 0; i < 8; ++i) header += static_cast<char>(model.size() >> (8 * i));
  return header + model;
}

// Model{version 1, graph {name g, graph_extra, nodes: [node]}, side_file, types}; by default
// the type table holds one type (?[]), which every value refers to unless told otherwise.
std::string modelWithNode(const std::string& node, const std::string& side_file = "",
                          const std::string& graph_extra = "", const std::string& types = field(5, std::string())) {
  return field(1, 1) + field(3, field(1, std::string("g")) + graph_extra + field(3, node)) +
         (side_file.empty() ? "" : field(4, side_file)) + types;
}

// Node{op Constant, one output, attribute value = tensor}.
std::string constantNode(const std::string& tensor) {
  return field(1, std::string("Constant")) + field(6, std::string()) +  // output of type 0
         field(7, field(1, std::string("value")) + field(6, tensor));
}

// Tensor{f32, dims, external{offset, size}}.
std::string externalTensor(std::vector<int64_t> dims, uint64_t offset, uint64_t size) {
  std::string tensor = field(1, 1);
  for (int64_t dim : dims) tensor += field(2, static_cast<uint64_t>(dim));
  return tensor + field(4, field(1, offset) + field(2, size));
}

std::string sideFile(uint64_t size) {
  std::string bytes("ESTUARYW", 8);
  bytes += std::string("\x01\0\0\0\0\0\0\0", 8);
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>(size >> (8 * i));
  bytes.resize(size, '\0');
  return bytes;
}

class SideFileErrors : public ::testing::Test {
 protected:
  // A file per test: ctest runs the tests of this fixture in parallel processes.
  void SetUp() override {
    file_name_ = std::string("handmade_") +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".estb";
    path_ = tempPath(file_name_);
  }
  void TearDown() override {
    std::remove(path_.c_str());
    std::remove((path_ + ".weights").c_str());
  }
  // Writes a graph file whose Constant holds `tensor`, with a side file of `side_size`.
  std::string load(const std::string& tensor, uint64_t side_size, uint64_t recorded_size) {
    writeFile(path_, graphFile(modelWithNode(constantNode(tensor),
                                             field(1, "serialize_test_" + file_name_ + ".weights") + field(2, recorded_size))));
    writeFile(path_ + ".weights", sideFile(side_size));
    return loadError(path_);
  }
  std::string file_name_;
  std::string path_;
};

TEST_F(SideFileErrors, AValidHandmadeFileLoads) {
  EXPECT_EQ(load(externalTensor({4}, 64, 16), 128, 128), "no error");
}

TEST_F(SideFileErrors, MissingSideFile) {
  load(externalTensor({4}, 64, 16), 128, 128);
  std::remove((path_ + ".weights").c_str());
  EXPECT_EQ(loadError(path_), path_ + ": cannot open its weights side file '" + path_ +
                                  ".weights': No such file or directory");
}

TEST_F(SideFileErrors, TruncatedOrForeignSideFile) {
  EXPECT_EQ(load(externalTensor({4}, 64, 16), 100, 128),
            path_ + ".weights: truncated: 100 bytes, the graph file '" + path_ + "' expects 128");
  EXPECT_EQ(load(externalTensor({4}, 64, 16), 192, 128),
            path_ + ".weights: does not belong to this graph: 192 bytes, the graph file '" + path_ +
                "' expects 128");
  writeFile(path_ + ".weights", std::string(128, 'x'));
  EXPECT_EQ(loadError(path_), path_ + ".weights: not an Estuary weights file (bad magic bytes)");
  EXPECT_EQ(load(externalTensor({4}, 64, 16), 32, 32),
            path_ + ": records a side file of 32 bytes, smaller than its 64-byte header (corrupt file)");
}

TEST_F(SideFileErrors, TensorOutOfRange) {
  EXPECT_EQ(load(externalTensor({32}, 64, 128), 128, 128),
            path_ + ": graph 'g', node #0 (Constant), attribute 'value': tensor<f32[32]> has data at offset 64 of "
                    "128 bytes, beyond the end of the side file (128 bytes)");
  EXPECT_EQ(load(externalTensor({4}, 0xffffffffffffffc0ull, 16), 128, 128),
            path_ + ": graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> has data at offset "
                    "18446744073709551552 of 16 bytes, beyond the end of the side file (128 bytes)");
  EXPECT_EQ(load(externalTensor({4}, 96, 16), 128, 128),
            path_ + ": graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> has data at offset 96, "
                    "which is not a 64-byte aligned offset past the side file header");
  EXPECT_EQ(load(externalTensor({4}, 0, 16), 128, 128),
            path_ + ": graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> has data at offset 0, "
                    "which is not a 64-byte aligned offset past the side file header");
}

TEST_F(SideFileErrors, SizeDisagreesWithDtypeAndShape) {
  EXPECT_EQ(load(externalTensor({4}, 64, 12), 128, 128),
            path_ + ": graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> needs 16 bytes, the side "
                    "file entry has 12");
}

TEST_F(SideFileErrors, SideFileNameMustBePlain) {
  writeFile(path_, graphFile(modelWithNode(constantNode(externalTensor({4}, 64, 16)),
                                           field(1, std::string("../etc/x")) + field(2, 128))));
  EXPECT_EQ(loadError(path_), path_ + ": side file name '../etc/x' is not a plain file name (corrupt file)");
}

TEST(Serialize, RefusesInconsistentGraphData) {
  auto error = [](const std::string& model) { return bytesError(graphFile(model)); };
  // Inline tensor bytes that disagree with dtype and shape.
  EXPECT_EQ(error(modelWithNode(constantNode(field(1, 1) + field(2, 4) + field(3, std::string(12, '\0'))))),
            "mem: graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> needs 16 bytes, the file has 12");
  EXPECT_EQ(error(modelWithNode(constantNode(field(1, 1) + field(2, 4)))),
            "mem: graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> has no data");
  EXPECT_EQ(error(modelWithNode(constantNode(field(1, 1) + field(2, static_cast<uint64_t>(-3)) +
                                             field(3, std::string())))),
            "mem: graph 'g', node #0 (Constant), attribute 'value': a tensor with negative dimension -3");
  EXPECT_EQ(error(modelWithNode(constantNode(field(1, 0) + field(3, std::string())))),
            "mem: graph 'g', node #0 (Constant), attribute 'value': a tensor without an element type");
  EXPECT_EQ(error(modelWithNode(constantNode(field(1, 99) + field(3, std::string())))),
            "mem: graph 'g', node #0 (Constant), attribute 'value': unknown element type code 99");
  EXPECT_EQ(error(modelWithNode(constantNode(externalTensor({4}, 64, 16)))),
            "mem: graph 'g', node #0 (Constant), attribute 'value': tensor<f32[4]> is stored in a side file, "
            "but there is none");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Op")) + field(7, field(1, std::string("a"))))),
            "mem: graph 'g', node #0 (Op), attribute 'a': has no value (written by a newer Estuary, or corrupt)");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Op")) + field(7, field(1, std::string("a")) + field(2, 1)) +
                                field(7, field(1, std::string("a")) + field(2, 2)))),
            "mem: graph 'g', node #0 (Op), attribute 'a': appears twice");
  // Dangling value references.
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")) + field(4, 5))),
            "mem: graph 'g', node #0 (Neg): operand 0 refers to value 4 of a graph that defines 0 values");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")) + field(4, 1) + field(5, 3))),
            "mem: graph 'g', node #0 (Neg): operand 0 refers to a graph 3 levels up, but this graph is nested only 0 "
            "deep");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")) + field(4, 1) + field(4, 1) + field(5, 0))),
            "mem: graph 'g', node #0 (Neg): 1 operand depths for 2 operands");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")), "", field(4, 7))),
            "mem: graph 'g', the return of graph 'g': output 0 refers to value 6 of a graph that defines 0 values");
  // Types: the model's table (Model.types = 5) and references into it.
  const std::string neg = field(1, std::string("Neg")) + field(6, field(2, 0));
  EXPECT_EQ(error(modelWithNode(neg, "", "", field(5, field(1, 1) + field(3, field(2, std::string("a+")))))),
            "mem: type 0: bad symbolic dimension 'a+'");
  EXPECT_EQ(error(modelWithNode(neg, "", "", field(5, field(1, 1) + field(3, field(1, static_cast<uint64_t>(-2)))))),
            "mem: type 0: negative dimension -2");
  EXPECT_EQ(error(modelWithNode(neg, "", "", field(5, field(1, 1)) + field(5, field(1, 42)))),
            "mem: type 1: unknown element type code 42");
  EXPECT_EQ(error(modelWithNode(neg, "", "", field(5, field(2, 1) + field(3, std::string())))),
            "mem: type 0: an unranked type has 1 dims");
  EXPECT_EQ(error(modelWithNode(neg, "", "", "")),
            "mem: graph 'g', node #0 (Neg): type 0 of a type table with 0 entries");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")) + field(6, field(3, 1)), "", "", field(5, ""))),
            "mem: graph 'g', node #0 (Neg): output 0 is marked mutable; only graph inputs can be");
  // Updates.
  const std::string input = field(2, field(1, std::string("in")));
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")), "", input + field(6, field(1, 0) + field(2, 1)))),
            "mem: graph 'g', the return of graph 'g': update of input 'in', which is not mutable");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")), "", input + field(6, field(1, 4) + field(2, 1)))),
            "mem: graph 'g', the return of graph 'g': update of input 4, but the graph has 1 inputs");
  const std::string mutable_input = field(2, field(1, std::string("in")) + field(3, 1));
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")), "", mutable_input + field(6, field(1, 0)))),
            "mem: graph 'g', the return of graph 'g': update of input 'in' has no value");
  EXPECT_EQ(error(modelWithNode(field(1, std::string("Neg")), "",
                                mutable_input + field(6, field(1, 0) + field(2, 1)) + field(6, field(1, 0) + field(2, 1)))),
            "mem: graph 'g', the return of graph 'g': input 'in' is updated twice");
  // Header and message disagree; no graph at all.
  EXPECT_EQ(bytesError(graphFile(field(1, 7))),
            "mem: the header says format version 1 but the graph data says 7 (corrupt file)");
  EXPECT_EQ(bytesError(graphFile(field(1, 1))), "mem: the file holds no graph");
  // A graph with a side file cannot come from bytes.
  EXPECT_EQ(bytesError(graphFile(modelWithNode(constantNode(externalTensor({4}, 64, 16)),
                                               field(1, std::string("w.weights")) + field(2, 128)))),
            "mem: the graph keeps tensors in side file 'w.weights'; load it from its file with loadGraph()");
}

// Every single-byte corruption of a file either loads (into a graph that prints) or is
// refused with an Error; none crashes.
TEST(Serialize, CorruptedBytesNeverCrash) {
  const std::string bytes = saveGraphToBytes(*parseGraph(kEverything));
  size_t loaded = 0, refused = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      if (static_cast<unsigned char>(bytes[i]) == value) continue;
      std::string corrupt = bytes;
      corrupt[i] = static_cast<char>(value);
      try {
        printGraph(*loadGraphFromBytes(corrupt));
        ++loaded;
      } catch (const Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(loaded, 0u);  // e.g. a changed character of a name
}

TEST(Serialize, RefusesDeeplyNestedData) {
  // Graph{nodes: [Node{attributes: [Attribute{graph_value: Graph{...}}]}]}, 300 levels.
  std::string graph = field(1, std::string("leaf"));
  for (int i = 0; i < 300; ++i) {
    graph = field(3, field(1, std::string("If")) + field(7, field(1, std::string("g")) + field(7, graph)));
  }
  std::string error = bytesError(graphFile(field(1, 1) + field(3, graph)));
  EXPECT_EQ(error, "mem: corrupt graph data (not a valid protobuf message, or subgraphs nested more than 200 deep)");
}

TEST(Serialize, SaveErrors) {
  auto graph = parseGraph("graph @main(%c: bool[], %x: f32[2]) {\n"
                          "  %z = If(%c) {then_branch = graph @then() {\n"
                          "    %t = Neg(%x) : f32[2]\n"
                          "    return %t\n"
                          "  }} : f32[2]\n"
                          "  return %z\n"
                          "}\n");
  Graph* branch = graph->firstNode()->subgraphs()[0];
  try {
    saveGraphToBytes(*branch);
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot save graph 'then': node #0 (Neg) uses value 'x', which is not defined in its graph or an "
              "enclosing one");
  }
  try {
    saveGraph(*graph, "/nonexistent/dir/model.estb");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "/nonexistent/dir/model.estb: cannot open for writing: No such file or directory");
  }
  Graph null_tensor;
  null_tensor.createNode("Constant", {}, 1)->setAttr("value", Tensor());
  try {
    saveGraphToBytes(null_tensor);
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "cannot save node #0 (Constant): attribute 'value' holds a tensor without an element type");
  }
}

}  // namespace
}  // namespace estuary
