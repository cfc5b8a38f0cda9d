// The ONNX frontend's reader on models written byte by byte (onnx_writer.h): what it reads
// (symbolic dims, typed fields, external data, weights left in the file) and how it refuses
// broken files, each with an Error naming the file and what is wrong, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "estuary/frontend/frontend.h"
#include "estuary/ir/graph.h"
#include "estuary/text/printer.h"
#include "onnx_loader.h"
#include "onnx_writer.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;
using onnx_frontend::OnnxModel;
using namespace onnx_test;

class OnnxReaderTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("estuary_onnx_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string write(const std::string& name, const Proto& proto) { return write(name, proto.str()); }

  // The message of the Error that loading `path` raises; fails the test if none is raised.
  static std::string loadError(const std::string& path) {
    try {
      OnnxModel(path).toGraph();
    } catch (const Error& error) {
      return error.what();
    }
    ADD_FAILURE() << path << " loaded without error";
    return {};
  }

  fs::path dir_;
};

// x -> Relu -> y, with the input shape given.
Proto reluModel(int64_t opset, const std::vector<DimSpec>& dims) {
  return model(opset, graph("g", {node("Relu", {"x"}, {"y"}, "relu")}, {}, {valueInfo("x", kFloat, dims)},
                            {valueInfo("y", kFloat, dims)}));
}

const Tensor& constantValue(const Graph& graph, std::string_view name) {
  for (const Node* node : graph.nodes()) {
    if (node->is("Constant") && node->output()->name() == name) return node->attr("value")->asTensor();
  }
  throw Error("no constant " + std::string(name));
}

// Whether the tensor's bytes are those at `offset` of the mapping its keep-alive owns (a
// copy's keep-alive owns a fresh buffer starting at its data).
bool wrapsMappingAt(const Tensor& tensor, size_t offset) {
  return static_cast<const char*>(tensor.data()) - static_cast<const char*>(tensor.keepAlive().get()) ==
         static_cast<ptrdiff_t>(offset);
}

TEST_F(OnnxReaderTest, SymbolicDimsBecomeSymbols) {
  // A dim_param shared by two inputs is one symbol; one that is no identifier is spelled as
  // one; unnamed dynamic dims get fresh symbols named after their input.
  Proto g = graph("g", {node("Add", {"a", "b"}, {"y"}, "add")}, {},
                  {valueInfo("a", kFloat, {std::string("batch"), std::string("seq-len"), int64_t{8}}),
                   valueInfo("b", kFloat, {std::string("batch"), std::monostate{}, int64_t{8}})},
                  {valueInfo("y", kFloat, {})});
  std::unique_ptr<Graph> graph = OnnxModel(write("m.onnx", model(17, g))).toGraph();
  EXPECT_EQ(printGraph(*graph),
            "graph @g(%a: f32[batch,seq_len,8], %b: f32[batch,b_dim1,8]) {\n"
            "  %y = Add(%a, %b) : f32[batch,?,8] loc(\"add\")\n"
            "  return %y\n"
            "}\n");
}

TEST_F(OnnxReaderTest, TypedFieldsAreRead) {
  Proto f32 = tensorHeader("f", kFloat, {2});
  f32.fixed32(4, 0x3fc00000).fixed32(4, 0xc0000000);  // float_data unpacked: 1.5, -2
  Proto i64 = tensorHeader("i", kInt64, {3});
  Proto packed;
  i64.bytes(7, std::string("\x01\x7f\x02", 3));  // int64_data packed: 1, -1 (as 10 bytes? no: 127), 2
  Proto f16 = tensorHeader("h", kFloat16, {1});
  f16.varint(5, 0x3c00);  // int32_data holds the f16 bit pattern of 1.0
  Proto g = graph("g", {node("Identity", {"f"}, {"y"}, "id")}, {f32, i64, f16}, {}, {valueInfo("y", kFloat, {})});
  std::unique_ptr<Graph> graph = OnnxModel(write("m.onnx", model(13, g))).toGraph();
  const Tensor& f = constantValue(*graph, "f");
  EXPECT_EQ(f.data<float>()[0], 1.5f);
  EXPECT_EQ(f.data<float>()[1], -2.0f);
  const Tensor& i = constantValue(*graph, "i");
  EXPECT_EQ(std::vector<int64_t>(i.data<int64_t>(), i.data<int64_t>() + 3), (std::vector<int64_t>{1, 127, 2}));
  EXPECT_EQ(constantValue(*graph, "h").data<uint16_t>()[0], 0x3c00);
}

TEST_F(OnnxReaderTest, TypedFieldsOfTheWrongCountAreRefused) {
  Proto t = tensorHeader("w", kFloat, {3});
  t.fixed32(4, 0);
  Proto g = graph("g", {node("Identity", {"w"}, {"y"}, "id")}, {t}, {}, {valueInfo("y", kFloat, {})});
  std::string path = write("m.onnx", model(13, g));
  EXPECT_EQ(loadError(path), path + ": initializer 'w' has 1 values in float_data, its shape [3] needs 3");
}

TEST_F(OnnxReaderTest, SparseIndexOutsideTheShapeIsRefused) {
  Proto values = tensorHeader("s", kFloat, {1});
  values.fixed32(4, 0x3f800000);
  Proto indices = tensorHeader("s_indices", kInt64, {1});
  indices.varint(7, 6);  // linear index 6 of a [2,3] tensor
  Proto sparse;
  sparse.message(1, values).message(2, indices).varint(3, 2).varint(3, 3);
  Proto g = graph("g", {node("Identity", {"s"}, {"y"}, "id")}, {}, {}, {valueInfo("y", kFloat, {})});
  g.message(15, sparse);  // sparse_initializer
  std::string path = write("m.onnx", model(13, g));
  EXPECT_EQ(loadError(path),
            path + ": sparse initializer 's': index 0 of the sparse tensor lies outside its shape [2,3]");
}

TEST_F(OnnxReaderTest, AlignedRawDataStaysInTheFileMisalignedIsCopied) {
  // The same model with 0..3 bytes of padding before the graph: raw_data lands at every
  // offset modulo 4. Kernels read f32 weights through float pointers, so only the aligned
  // one may stay in the mapping; the others are copied to aligned memory.
  const std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f};
  int wrapped = 0;
  for (size_t padding = 0; padding < 4; ++padding) {
    Proto w = tensorHeader("w", kFloat, {4});
    w.bytes(9, floatBytes(values));
    Proto g = graph("g", {node("Identity", {"w"}, {"y"}, "id")}, {w}, {}, {valueInfo("y", kFloat, {})});
    std::string bytes = model(13, g, 1 + padding).str();
    std::string path = write("m" + std::to_string(padding) + ".onnx", bytes);
    OnnxModel onnx(path);
    std::unique_ptr<Graph> graph = onnx.toGraph();
    const Tensor& tensor = constantValue(*graph, "w");
    EXPECT_EQ(std::vector<float>(tensor.data<float>(), tensor.data<float>() + 4), values);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor.data()) % alignof(float), 0u);
    const size_t offset = bytes.find(floatBytes(values));
    if (wrapsMappingAt(tensor, offset)) {
      EXPECT_EQ(offset % alignof(float), 0u);
      ++wrapped;
      EXPECT_EQ(onnx.stats().wrapped_tensors, 1u);
    } else {
      EXPECT_EQ(onnx.stats().copied_tensors, 1u);
    }
  }
  EXPECT_EQ(wrapped, 1);
}

Proto externalTensor(const std::string& location, int64_t offset, int64_t length, int64_t elements) {
  Proto t = tensorHeader("w", kFloat, {elements});
  auto entry = [](std::string_view key, const std::string& value) {
    Proto e;
    e.bytes(1, key).bytes(2, value);
    return e;
  };
  t.message(13, entry("location", location));
  if (offset >= 0) t.message(13, entry("offset", std::to_string(offset)));
  if (length >= 0) t.message(13, entry("length", std::to_string(length)));
  t.varint(14, 1);  // data_location = EXTERNAL
  return t;
}

Proto identityOf(const Proto& initializer, int64_t opset = 13) {
  return model(opset,
               graph("g", {node("Identity", {"w"}, {"y"}, "id")}, {initializer}, {}, {valueInfo("y", kFloat, {})}));
}

TEST_F(OnnxReaderTest, ExternalDataIsMappedInPlace) {
  std::string data = std::string(64, 'x') + floatBytes({5.0f, 6.0f, 7.0f, 8.0f});
  write("weights.bin", data);
  std::unique_ptr<Graph> graph = OnnxModel(write("m.onnx", identityOf(externalTensor("weights.bin", 64, 16, 4)))).toGraph();
  const Tensor& tensor = constantValue(*graph, "w");
  EXPECT_EQ(std::vector<float>(tensor.data<float>(), tensor.data<float>() + 4), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_TRUE(wrapsMappingAt(tensor, 64));
}

TEST_F(OnnxReaderTest, MissingExternalDataFileIsNamed) {
  std::string path = write("m.onnx", identityOf(externalTensor("gone.bin", 0, 16, 4)));
  EXPECT_EQ(loadError(path), path + ": the external data of initializer 'w' cannot be read: " +
                                 (dir_ / "gone.bin").string() +
                                 ": cannot open the file: No such file or directory");
}

TEST_F(OnnxReaderTest, ExternalDataPastTheFileEndIsRefused) {
  write("weights.bin", std::string(20, 'x'));
  std::string path = write("m.onnx", identityOf(externalTensor("weights.bin", 8, 16, 4)));
  EXPECT_EQ(loadError(path), path + ": initializer 'w' reads bytes 8..24 of its external data file 'weights.bin', "
                                    "which has only 20 bytes");
  path = write("m2.onnx", identityOf(externalTensor("weights.bin", 0, 12, 4)));
  EXPECT_EQ(loadError(path), path + ": initializer 'w' has external data of 12 bytes, its type FLOAT[4] needs 16");
  path = write("m3.onnx", identityOf(externalTensor("../weights.bin", 0, 16, 4)));
  EXPECT_NE(loadError(path).find("not a path inside the model's directory"), std::string::npos);
}

TEST_F(OnnxReaderTest, ExternalDataThroughASymbolicLinkMustStayInTheModelsDirectory) {
  // A link inside the model's directory to a file outside it: the file's bytes would become
  // a weight (and a model's outputs could leak /etc/passwd).
  std::filesystem::create_directories(dir_ / "model");
  std::filesystem::create_directories(dir_ / "elsewhere");
  write("elsewhere/secret.bin", floatBytes({1, 2, 3, 4}));
  std::filesystem::create_symlink(dir_ / "elsewhere" / "secret.bin", dir_ / "model" / "weights.bin");
  std::string path = write("model/m.onnx", identityOf(externalTensor("weights.bin", 0, 16, 4)));
  std::string real = std::filesystem::canonical(dir_ / "elsewhere" / "secret.bin").string();
  EXPECT_EQ(loadError(path), path + ": the external data of initializer 'w' is at 'weights.bin', which resolves to '" +
                                 real + "', outside the model's directory '" +
                                 std::filesystem::canonical(dir_ / "model").string() + "' (through a symbolic link)");
  // A link that stays inside (a shard kept under another name) is followed.
  std::filesystem::create_directories(dir_ / "model" / "data");
  write("model/data/shard0.bin", floatBytes({5, 6, 7, 8}));
  std::filesystem::create_symlink("data/shard0.bin", dir_ / "model" / "inside.bin");
  std::unique_ptr<Graph> graph =
      OnnxModel(write("model/m2.onnx", identityOf(externalTensor("inside.bin", 0, 16, 4)))).toGraph();
  const Tensor& tensor = constantValue(*graph, "w");
  EXPECT_EQ(std::vector<float>(tensor.data<float>(), tensor.data<float>() + 4), (std::vector<float>{5, 6, 7, 8}));
}

TEST_F(OnnxReaderTest, ExternalDataBeyondFourGigabytesIsRead) {
  // A sparse file of 5 GiB with the tensor past 4 GiB: offsets and sizes are 64-bit.
  const uint64_t offset = (uint64_t{4} << 30) + 4096;
  std::string data_path = (dir_ / "big.bin").string();
  {
    std::FILE* file = std::fopen(data_path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    ASSERT_EQ(::ftruncate(fileno(file), static_cast<off_t>(uint64_t{5} << 30)), 0);
    ASSERT_EQ(::fseeko(file, static_cast<off_t>(offset), SEEK_SET), 0);
    std::string values = floatBytes({9.0f, 10.0f});
    ASSERT_EQ(std::fwrite(values.data(), 1, values.size(), file), values.size());
    std::fclose(file);
  }
  Proto t = externalTensor("big.bin", static_cast<int64_t>(offset), 8, 2);
  std::unique_ptr<Graph> graph = OnnxModel(write("m.onnx", identityOf(t))).toGraph();
  const Tensor& tensor = constantValue(*graph, "w");
  EXPECT_EQ(tensor.data<float>()[0], 9.0f);
  EXPECT_EQ(tensor.data<float>()[1], 10.0f);
}

TEST_F(OnnxReaderTest, EveryTruncationIsAnError) {
  Proto w = tensorHeader("w", kFloat, {4});
  w.bytes(9, floatBytes({1, 2, 3, 4}));
  std::string bytes = identityOf(w).str();
  ASSERT_NO_THROW(OnnxModel(write("full.onnx", bytes)).toGraph());
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::string path = write("cut.onnx", bytes.substr(0, length));
    std::string message = loadError(path);
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << "cut at " << length << ": " << message;
  }
  // A cut inside the graph says so.
  std::string path = write("cut.onnx", bytes.substr(0, bytes.size() - 3));
  EXPECT_NE(loadError(path).find("ModelProto at byte"), std::string::npos);
}

TEST_F(OnnxReaderTest, CorruptedBytesGiveErrorsNotCrashes) {
  // A model with a subgraph, attributes and typed and raw initializers, with 1 to 4 random
  // bytes overwritten, many times (seeded): each load either succeeds or raises an Error.
  // (Run under AddressSanitizer this found null subgraphs and overflowing shapes.)
  Proto w = tensorHeader("w", kFloat, {2, 2});
  w.bytes(9, floatBytes({1, 2, 3, 4}));
  Proto axes = tensorHeader("axes", kInt64, {1});
  axes.varint(7, 1);
  Proto branch = graph("branch", {node("Softmax", {"x"}, {"t"}, "softmax", {attrInt("axis", 1)})}, {}, {},
                       {valueInfo("t", kFloat, {})});
  Proto g = graph("g",
                  {node("MatMul", {"x", "w"}, {"m"}, "matmul"),
                   node("ReduceSum", {"m", "axes"}, {"r"}, "sum", {attrInt("keepdims", 1)}),
                   node("If", {"cond"}, {"y"}, "if", {attrGraph("then_branch", branch), attrGraph("else_branch", branch)})},
                  {w, axes}, {valueInfo("x", kFloat, {std::string("batch"), int64_t{2}}), valueInfo("cond", 9, {})},
                  {valueInfo("y", kFloat, {}), valueInfo("r", kFloat, {})});
  const std::string original = model(13, g).str();
  ASSERT_NO_THROW(OnnxModel(write("m.onnx", original)).toGraph());
  std::mt19937 random(20261122);
  size_t loaded = 0;
  for (int round = 0; round < 1000; ++round) {
    std::string bytes = original;
    for (uint32_t flips = 1 + random() % 4; flips > 0; --flips) {
      bytes[random() % bytes.size()] = static_cast<char>(random());
    }
    std::string path = write("corrupt.onnx", bytes);
    try {
      OnnxModel onnx(path);
      onnx.describe();
      onnx.toGraph();
      ++loaded;
    } catch (const Error&) {
    }
  }
  // Most corruptions are caught; some hit names or values and still load.
  EXPECT_GT(loaded, 0u);
  EXPECT_LT(loaded, 1000u);
}

TEST_F(OnnxReaderTest, OtherFormatsAndGarbageAreNotOnnx) {
  std::string path = write("zip.onnx", std::string("PK\x03\x04\x14\x00\x00\x00", 8));
  EXPECT_EQ(loadError(path), path + ": not an ONNX model: it starts with bytes 50 4b 03 04 14 00 00 00, which do "
                                    "not begin a protobuf ModelProto");
  path = write("varint.onnx", "\x08" + std::string(12, '\xff'));
  EXPECT_EQ(loadError(path), path + ": ModelProto at byte 1: the varint of field 1 is longer than 10 bytes "
                                    "(the file is truncated or not an ONNX model)");
  path = write("empty.onnx", "");
  EXPECT_EQ(loadError(path), path + ": empty file, not an ONNX model");
  // Valid protobuf, but not a model.
  Proto not_model;
  not_model.varint(1, 8).bytes(2, "x");
  path = write("nograph.onnx", not_model);
  EXPECT_EQ(loadError(path), path + ": not an ONNX model: it decodes as protobuf but has no graph");
}

TEST_F(OnnxReaderTest, FieldOfTheWrongWireTypeIsRefused) {
  Proto m;
  m.varint(1, 8).varint(7, 3);  // graph as a varint
  std::string path = write("m.onnx", m);
  EXPECT_EQ(loadError(path), path + ": ModelProto: field graph (number 7) has wire type varint, which does not "
                                    "match its declaration in onnx.proto (corrupt file)");
}

TEST_F(OnnxReaderTest, OpsetsOutsideTheSupportedRangeAreRefused) {
  std::string path = write("new.onnx", reluModel(29, {int64_t{2}}));
  EXPECT_EQ(loadError(path), path + ": opset 29 of the default ONNX domain is newer than the newest Estuary knows (28)");
}

TEST_F(OnnxReaderTest, OlderOpsetsTranslateOpsWhoseMeaningHasNotChangedSince) {
  // Relu has meant the same since opset 6; Resize-10 is Upsample renamed.
  EXPECT_EQ(OnnxModel(write("relu.onnx", reluModel(7, {int64_t{2}}))).toGraph()->numNodes(), 1u);
  Proto g = graph("g", {node("Resize", {"x", "scales"}, {"y"}, "resize")}, {},
                  {valueInfo("x", kFloat, {int64_t{2}}), valueInfo("scales", kFloat, {int64_t{1}})},
                  {valueInfo("y", kFloat, {})});
  EXPECT_EQ(OnnxModel(write("resize.onnx", model(10, g))).toGraph()->numNodes(), 1u);
  // Mod appeared in opset 10: an opset 9 model using it is listed unsupported, at opset 9.
  g = graph("g", {node("Mod", {"x", "x"}, {"y"}, "mod")}, {}, {valueInfo("x", kFloat, {int64_t{2}})},
            {valueInfo("y", kFloat, {})});
  try {
    OnnxModel(write("mod.onnx", model(9, g))).toGraph();
    FAIL() << "loaded";
  } catch (const UnsupportedOpsError& error) {
    ASSERT_EQ(error.ops().size(), 1u);
    EXPECT_EQ(error.ops()[0].op_type, "Mod");
    EXPECT_EQ(error.ops()[0].opset, 9);
  }
}

TEST_F(OnnxReaderTest, CycleIsReportedWithItsNodes) {
  Proto g = graph("g", {node("Add", {"x", "b"}, {"a"}, "first"), node("Neg", {"a"}, {"b"}, "second")}, {},
                  {valueInfo("x", kFloat, {int64_t{2}})}, {valueInfo("b", kFloat, {})});
  std::string path = write("m.onnx", model(13, g));
  EXPECT_EQ(loadError(path), path + ": graph 'g' has a cycle: 2 nodes cannot be put in an order where every input "
                                    "is defined before its use, among them node 'first' (Add), node 'second' (Neg)");
}

TEST_F(OnnxReaderTest, NodesOutOfOrderAreSorted) {
  Proto g = graph("g", {node("Neg", {"a"}, {"y"}, "second"), node("Abs", {"x"}, {"a"}, "first")}, {},
                  {valueInfo("x", kFloat, {int64_t{2}})}, {valueInfo("y", kFloat, {})});
  std::unique_ptr<Graph> graph = OnnxModel(write("m.onnx", model(13, g))).toGraph();
  EXPECT_EQ(printGraph(*graph),
            "graph @g(%x: f32[2]) {\n"
            "  %a = Abs(%x) : f32[2] loc(\"first\")\n"
            "  %y = Neg(%a) : f32[2] loc(\"second\")\n"
            "  return %y\n"
            "}\n");
}

TEST_F(OnnxReaderTest, UndefinedInputAndDoubleDefinitionAreNamed) {
  Proto g = graph("g", {node("Neg", {"nowhere"}, {"y"}, "neg")}, {}, {valueInfo("x", kFloat, {int64_t{2}})},
                  {valueInfo("y", kFloat, {})});
  std::string path = write("m.onnx", model(13, g));
  EXPECT_EQ(loadError(path), path + ": node 'neg' (Neg, opset 13): input 0 'nowhere' is not defined by any node, "
                                    "weight or graph input");
  g = graph("g", {node("Neg", {"x"}, {"y"}, "neg1"), node("Abs", {"x"}, {"y"}, "abs")}, {},
            {valueInfo("x", kFloat, {int64_t{2}})}, {valueInfo("y", kFloat, {})});
  path = write("m2.onnx", model(13, g));
  EXPECT_EQ(loadError(path), path + ": graph 'g': value 'y' is defined twice (again by node 'abs' (Abs)); a value "
                                    "is defined once");
}

TEST_F(OnnxReaderTest, UnnamedOutputsOfAnIfStay) {
  // The branches return two values; the If names only the first. Its IR node keeps both.
  Proto branch = graph("branch", {node("Neg", {"x"}, {"a"}, "neg"), node("Abs", {"x"}, {"b"}, "abs")}, {}, {},
                       {valueInfo("a", kFloat, {}), valueInfo("b", kFloat, {})});
  Proto g = graph("g", {node("If", {"cond"}, {"y", ""}, "if", {attrGraph("then_branch", branch), attrGraph("else_branch", branch)})},
                  {}, {valueInfo("x", kFloat, {int64_t{2}}), valueInfo("cond", 9, {})}, {valueInfo("y", kFloat, {})});
  std::unique_ptr<Graph> graph = OnnxModel(write("m.onnx", model(16, g))).toGraph();
  EXPECT_EQ(graph->output(0)->producer()->numOutputs(), 2u);
}

TEST_F(OnnxReaderTest, UnsupportedElementTypeIsNamed) {
  std::string path = write("m.onnx", model(13, graph("g", {node("Identity", {"s"}, {"y"}, "id")}, {},
                                                      {valueInfo("s", kString, {int64_t{2}})}, {})));
  EXPECT_EQ(loadError(path), path + ": 1 op has no translation (1 node):\n  element type STRING: 's'");
}

TEST_F(OnnxReaderTest, EveryUnsupportedOpIsListedWithItsNodesAndOpset) {
  // Ops of other domains, ops without translation and ops newer than the model's opset,
  // in the main graph and in subgraphs: all of them, through the plugin.
  Proto branch = graph("branch", {node("FusedMatMul", {"x", "x"}, {"t"}, "in_branch", {}, "com.microsoft")}, {}, {},
                       {valueInfo("t", kFloat, {})});
  Proto g = graph("g",
                  {node("FusedMatMul", {"x", "x"}, {"a"}, "fused1", {}, "com.microsoft"),
                   node("Gelu", {"a"}, {"b"}, "gelu"),
                   node("FusedMatMul", {"b", "x"}, {"c"}, "fused2", {}, "com.microsoft"),
                   node("LpNormalization", {"c"}, {"d"}, "lp"),
                   node("If", {"cond"}, {"y"}, "if", {attrGraph("then_branch", branch), attrGraph("else_branch", branch)})},
                  {}, {valueInfo("x", kFloat, {int64_t{2}, int64_t{2}}), valueInfo("cond", 9, {})},
                  {valueInfo("y", kFloat, {})});
  std::string path = write("m.onnx", model(18, g, 0, {"com.microsoft"}));
  try {
    loadModel(ModelInput::path(path), {}, "onnx");
    FAIL() << "loaded";
  } catch (const UnsupportedOpsError& error) {
    const std::vector<UnsupportedOp>& ops = error.ops();
    ASSERT_EQ(ops.size(), 3u) << error.what();
    EXPECT_EQ(ops[0].op_type, "FusedMatMul");
    EXPECT_EQ(ops[0].domain, "com.microsoft");
    EXPECT_EQ(ops[0].opset, 1);
    EXPECT_EQ(ops[0].nodes, (std::vector<std::string>{"fused1", "fused2", "in_branch", "in_branch"}));
    EXPECT_EQ(ops[1].op_type, "Gelu");  // Gelu is in opset 20, the model imports 18
    EXPECT_EQ(ops[1].domain, "");
    EXPECT_EQ(ops[1].opset, 18);
    EXPECT_EQ(ops[1].nodes, (std::vector<std::string>{"gelu"}));
    EXPECT_EQ(ops[2].op_type, "LpNormalization");
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos);
  }
}

TEST_F(OnnxReaderTest, FrontendRecognizesAndDescribes) {
  std::string path = write("model.bin", reluModel(17, {std::string("batch"), int64_t{3}}));
  EXPECT_EQ(chooseFrontend(ModelInput::path(path), {}), "onnx");
  std::shared_ptr<const Frontend> frontend = loadFrontend("onnx");
  EXPECT_TRUE(frontend->supports(ModelInput::path(path), {}));
  EXPECT_FALSE(frontend->supports(ModelInput::path(write("text.txt", "hello")), {}));
  ModelInfo info = describeModel(ModelInput::path(path));
  EXPECT_EQ(info.frontend, "onnx");
  EXPECT_EQ(info.format, "ONNX");
  EXPECT_EQ(info.producer, "onnx_writer");
  EXPECT_EQ(info.opsets, (std::map<std::string, int64_t>{{"", 17}}));
  ASSERT_EQ(info.inputs.size(), 1u);
  EXPECT_EQ(info.inputs[0].type, "f32[batch,3]");
  EXPECT_EQ(info.op_counts, (std::map<std::string, int64_t>{{"Relu", 1}}));
}

}  // namespace
}  // namespace estuary
