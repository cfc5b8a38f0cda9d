// The C++ SDK as an integration uses it: options as a map, the parser API on an ONNX file
// written byte by byte, graphs edited before building, offline models in memory and on disk,
// and a session with several graphs run from several threads, synchronously and not.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <thread>

#include "estuary/sdk/build.h"
#include "estuary/sdk/parser.h"
#include "estuary/sdk/session.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "onnx_writer.h"

namespace estuary::sdk {
namespace {

namespace fs = std::filesystem;
using namespace onnx_test;

constexpr int kIn = 4, kOut = 3;

std::vector<float> weights() {
  std::vector<float> w(kIn * kOut);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  return w;
}

// y = Relu(x @ W), x: f32[batch, 4], W: f32[4, 3].
std::string linearReluOnnx() {
  Proto w = tensorHeader("W", kFloat, {kIn, kOut});
  w.bytes(9, floatBytes(weights()));
  Proto g = graph("linear", {node("MatMul", {"x", "W"}, {"h"}, "matmul"), node("Relu", {"h"}, {"y"}, "relu")}, {w},
                  {valueInfo("x", kFloat, {std::string("batch"), int64_t{kIn}})},
                  {valueInfo("y", kFloat, {std::string("batch"), int64_t{kOut}})});
  return model(17, g).str();
}

std::vector<float> linearReference(const std::vector<float>& x, bool relu) {
  std::vector<float> w = weights(), y(x.size() / kIn * kOut, 0.0f);
  for (size_t b = 0; b < x.size() / kIn; ++b) {
    for (int o = 0; o < kOut; ++o) {
      float sum = 0;
      for (int i = 0; i < kIn; ++i) sum += x[b * kIn + i] * w[i * kOut + o];
      y[b * kOut + o] = relu ? std::max(sum, 0.0f) : 1.0f / (1.0f + std::exp(-sum));
    }
  }
  return y;
}

std::vector<float> inputOf(int64_t batch, float offset = 0) {
  std::vector<float> x(static_cast<size_t>(batch) * kIn);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.37f * static_cast<float>(i) - 1.9f + offset;
  return x;
}

NamedTensor tensorOf(const std::string& name, std::vector<float>& data, std::vector<int64_t> dims) {
  return {name, ge::HostTensor::of(ge::TensorDesc::of(DType::F32, dims), data.data()), nullptr};
}

std::vector<float> valuesOf(const NamedTensor& tensor) {
  const float* data = static_cast<const float*>(tensor.tensor.data);
  return {data, data + tensor.tensor.desc().numElements()};
}

void expectNear(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-5) << "element " << i;
}

class SdkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("estuary_sdk_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    onnx_path_ = (dir_ / "linear.onnx").string();
    std::ofstream(onnx_path_, std::ios::binary) << linearReluOnnx();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string onnx_path_;
};

TEST(BuildConfigTest, TakesOptionsAsAStringMap) {
  BuildConfig config = BuildConfig::fromMap({{"input_shape", "x:1~8,4;y:2,-1"},
                                             {"pipeline", "O3"},
                                             {"threads", "2"},
                                             {"framework", "5"},
                                             {"out_nodes", "a;b"},
                                             {"max_tensor_size", "1GiB"},
                                             {"fuse_epilogues", "off"},
                                             {"frontend.opset", "17"}});
  EXPECT_EQ(config.input_shapes.at("x"), (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(config.input_shapes.at("y"), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(config.input_ranges.at("x").at(0).min, 1);
  EXPECT_EQ(config.input_ranges.at("x").at(0).max, 8);
  EXPECT_EQ(config.pipeline, "O3");
  EXPECT_EQ(config.backend.num_threads, 2);
  EXPECT_EQ(config.framework, "onnx");
  EXPECT_EQ(config.frontend.outputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(config.backend.limits.tensor_bytes, size_t{1} << 30);
  EXPECT_FALSE(config.backend.fuse_epilogues);
  EXPECT_EQ(config.frontend.keys.at("opset"), "17");
}

TEST(BuildConfigTest, RefusesUnknownKeysAndMalformedValuesNamingThem) {
  try {
    BuildConfig::fromMap({{"input_shapes", "x:1"}});
    FAIL() << "an unknown key was accepted";
  } catch (const InputValueError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown build option 'input_shapes'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("input_shape,"), std::string::npos) << "lists the known keys";
  }
  EXPECT_THROW(BuildConfig::fromMap({{"threads", "two"}}), InputValueError);
  EXPECT_THROW(BuildConfig::fromMap({{"threads", "-1"}}), InputValueError);
  EXPECT_THROW(BuildConfig::fromMap({{"debug", "maybe"}}), InputValueError);
  EXPECT_THROW(BuildConfig::fromMap({{"input_shape", "x:8~1"}}), InputValueError);
  EXPECT_THROW(BuildConfig::fromMap({{"input_shape", "x:1;x:2"}}), InputValueError);
  EXPECT_THROW(BuildConfig::fromMap({{"max_plan_size", "lots"}}), InputValueError);
  for (const BuildConfig::Key& key : BuildConfig::keys()) EXPECT_NE(std::string(key.help), "") << key.name;
}

TEST_F(SdkTest, ParsesBuildsAndRunsAnOnnxModel) {
  std::unique_ptr<Graph> graph = parseOnnx(onnx_path_);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->name(), "x");
  std::unique_ptr<Graph> picked = parseModel(onnx_path_);  // the frontend found from the file
  EXPECT_EQ(picked->numNodes(), graph->numNodes());

  std::shared_ptr<ge::CompiledModel> model = buildGraph(*graph, BuildConfig::fromMap({{"threads", "1"}}));
  Session session;
  session.addCompiledModel(1, model);
  std::vector<float> x = inputOf(3);
  std::vector<NamedTensor> outputs = session.runGraph(1, {tensorOf("x", x, {3, kIn})});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "y");
  expectNear(valuesOf(outputs[0]), linearReference(x, true));
}

TEST_F(SdkTest, NamedParserRefusesAnotherFrameworksFile) {
  try {
    parseTensorFlow(onnx_path_);
    FAIL() << "the TensorFlow parser took an ONNX file";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("linear.onnx"), std::string::npos) << error.what();
  }
  EXPECT_THROW(parseOnnx((dir_ / "missing.onnx").string()), Error);
}

TEST_F(SdkTest, AParsedGraphCanBeEditedBeforeItIsBuilt) {
  std::unique_ptr<Graph> graph = parseOnnx(onnx_path_);
  Node* relu = nullptr;
  for (Node* node : graph->nodes()) {
    if (node->is("Relu")) relu = node;
  }
  ASSERT_NE(relu, nullptr);
  Node* sigmoid = graph->createNodeBefore(relu, "Sigmoid", {relu->input(0)});
  sigmoid->output()->setType(relu->output()->type());
  relu->output()->replaceAllUsesWith(sigmoid->output());
  graph->eraseNode(relu);

  std::shared_ptr<ge::CompiledModel> model = buildGraph(*graph);
  std::vector<float> x = inputOf(2);
  std::vector<float> y(2 * kOut);
  ge::RunContextPool contexts(model);
  contexts.run({ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {2, kIn}), x.data())},
               {ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {2, kOut}), y.data())});
  expectNear(y, linearReference(x, false));
}

TEST_F(SdkTest, OfflineModelsGoToMemoryAndFilesAndBack) {
  std::shared_ptr<ge::CompiledModel> built =
      convertModel(ModelInput::path(onnx_path_), BuildConfig::fromMap({{"input_shape", "x:2,4"}}));
  std::string bytes = built->saveToBytes();
  const std::string eom = (dir_ / "linear.eom").string();
  built->save(eom);
  std::ifstream file(eom, std::ios::binary);
  std::string from_file((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, from_file) << "the same model saves to the same bytes in memory and on disk";

  std::vector<float> x = inputOf(2);
  for (const std::shared_ptr<ge::CompiledModel>& model :
       {openModelFromMemory(bytes.data(), bytes.size()), openModel(eom)}) {
    Session session;
    session.addCompiledModel(1, model);
    expectNear(valuesOf(session.runGraph(1, {tensorOf("x", x, {2, kIn})})[0]), linearReference(x, true));
  }
  std::string damaged = bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(openModelFromMemory(damaged.data(), damaged.size()), Error);
}

TEST_F(SdkTest, SessionRunsTwoGraphsFromFourThreadsAtOnce) {
  Session session({{"threads", "1"}});
  session.addModel(1, ModelInput::path(onnx_path_));
  std::unique_ptr<Graph> graph = parseOnnx(onnx_path_);
  session.addGraph(2, *graph, {{"pipeline", "O1"}});
  std::vector<GraphId> ids = session.graphIds();
  EXPECT_EQ(ids, (std::vector<GraphId>{1, 2}));

  std::atomic<int> wrong{0}, runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        int64_t batch = 1 + (t + i) % 4;
        std::vector<float> x = inputOf(batch, static_cast<float>(t));
        std::vector<float> y(static_cast<size_t>(batch) * kOut);
        std::vector<NamedTensor> outputs = {tensorOf("y", y, {batch, kOut})};
        GraphId id = (t + i) % 2 == 0 ? 1 : 2;
        session.runGraph(id, {tensorOf("x", x, {batch, kIn})}, outputs);
        std::vector<float> expected = linearReference(x, true);
        for (size_t k = 0; k < y.size(); ++k) wrong += std::fabs(y[k] - expected[k]) > 1e-5;
        ++runs;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(runs.load(), 200);
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(SdkTest, TheLeanFormRunsTensorsInGraphOrder) {
  Session session({{"threads", "1"}});
  session.addModel(1, ModelInput::path(onnx_path_));
  std::vector<float> x = inputOf(2);
  std::vector<ge::HostTensor> inputs = {ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {2, kIn}), x.data())};
  std::vector<ge::TensorDesc> descs = session.outputDescs(1, inputs);
  ASSERT_EQ(descs.size(), 1u);
  EXPECT_EQ(descs[0].str(), "f32[2,3]");
  std::vector<float> y(2 * kOut);
  session.runGraph(1, inputs, {ge::HostTensor::of(descs[0], y.data())});
  expectNear(y, linearReference(x, true));
  std::vector<float> small(kOut);
  EXPECT_THROW(session.runGraph(1, inputs, {ge::HostTensor::of(ge::TensorDesc::of(DType::F32, {1, kOut}), small.data())}),
               Error);
}

TEST_F(SdkTest, AsyncRunsCallBackWithOutputsOrTheError) {
  Session session({{"async_workers", "2"}});
  session.addModel(1, ModelInput::path(onnx_path_));
  std::mutex mutex;
  std::condition_variable done;
  int finished = 0, correct = 0;
  std::string error_message;
  std::vector<std::vector<float>> xs;
  for (int i = 0; i < 8; ++i) xs.push_back(inputOf(1 + i % 3, static_cast<float>(i)));
  for (int i = 0; i < 8; ++i) {
    int64_t batch = 1 + i % 3;
    session.runGraphAsync(1, {tensorOf("x", xs[i], {batch, kIn})},
                          [&, i](std::exception_ptr error, std::vector<NamedTensor> outputs) {
                            std::lock_guard<std::mutex> lock(mutex);
                            if (!error && outputs.size() == 1) {
                              std::vector<float> expected = linearReference(xs[i], true), actual = valuesOf(outputs[0]);
                              bool same = actual.size() == expected.size();
                              for (size_t k = 0; same && k < actual.size(); ++k) {
                                same = std::fabs(actual[k] - expected[k]) < 1e-5;
                              }
                              correct += same;
                            }
                            ++finished;
                            done.notify_one();
                          });
  }
  std::vector<float> x = inputOf(1);
  session.runGraphAsync(1, {tensorOf("wrong", x, {1, kIn})}, [&](std::exception_ptr error, std::vector<NamedTensor>) {
    std::lock_guard<std::mutex> lock(mutex);
    try {
      if (error) std::rethrow_exception(error);
    } catch (const InputValueError& raised) {
      error_message = raised.what();
    }
    ++finished;
    done.notify_one();
  });
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return finished == 9; });
  EXPECT_EQ(correct, 8);
  EXPECT_NE(error_message.find("'wrong'"), std::string::npos) << error_message;
  EXPECT_THROW(session.runGraphAsync(5, {}, [](std::exception_ptr, std::vector<NamedTensor>) {}), InputValueError);
}

TEST_F(SdkTest, SessionErrorsNameTheGraphInputOrOutput) {
  Session session;
  session.addModel(1, ModelInput::path(onnx_path_), {{"input_shape", "x:1~4,4"}});
  EXPECT_THROW(session.addModel(1, ModelInput::path(onnx_path_)), InputValueError);
  EXPECT_THROW(session.addGraph(2, *parseOnnx(onnx_path_), {{"no_such_option", "1"}}), InputValueError);
  EXPECT_FALSE(session.hasGraph(2)) << "a refused graph is not added";
  EXPECT_THROW(session.runGraph(3, {}), InputValueError);

  std::vector<float> x = inputOf(2);
  auto message = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  EXPECT_NE(message([&] { session.runGraph(1, {}); }).find("input 'x' was not given"), std::string::npos);
  EXPECT_NE(message([&] { session.runGraph(1, {tensorOf("x", x, {2, kIn}), tensorOf("x", x, {2, kIn})}); })
                .find("given twice"),
            std::string::npos);
  std::vector<float> big = inputOf(5);
  EXPECT_NE(message([&] { session.runGraph(1, {tensorOf("x", big, {5, kIn})}); }).find("accepts 1~4"), std::string::npos);
  std::vector<float> y(2 * kOut);
  std::vector<NamedTensor> wrong_output = {tensorOf("z", y, {2, kOut})};
  EXPECT_NE(message([&] { session.runGraph(1, {tensorOf("x", x, {2, kIn})}, wrong_output); }).find("no output named 'z'"),
            std::string::npos);
  // The session still runs after every refusal.
  expectNear(valuesOf(session.runGraph(1, {tensorOf("x", x, {2, kIn})})[0]), linearReference(x, true));
  session.removeGraph(1);
  EXPECT_FALSE(session.hasGraph(1));
}

}  // namespace
}  // namespace estuary::sdk
