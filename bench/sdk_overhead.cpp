// The SDK's own cost per run on a graph whose kernels cost almost nothing (Add + Relu of 16
// floats, one thread): a RunContext called directly, against the same model run through a
// RunContextPool, a Session (into the caller's buffers, and into outputs it allocates) and the
// C API. Engines alternate over rounds; medians of per-run times are printed with the overhead
// over the direct call. The target is under 2 us for a session run.
//
//   build/bin/sdk_overhead [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "estuary/ge/model.h"
#include "estuary/sdk/build.h"
#include "estuary/sdk/session.h"
#include "estuary/text/parser.h"
#include "estuary_c.h"

using namespace estuary;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kGraph = R"(graph @tiny(%x: f32[16], %y: f32[16]) {
  %s = Add(%x, %y) : f32[16]
  %r = Relu(%s) : f32[16]
  return %r
})";

constexpr int kRunsPerSample = 2000;

// Seconds per run: one sample of kRunsPerSample runs.
template <typename Run>
double sample(Run&& run) {
  auto start = Clock::now();
  for (int i = 0; i < kRunsPerSample; ++i) run();
  return std::chrono::duration<double>(Clock::now() - start).count() / kRunsPerSample;
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// "AMD EPYC (family 25, model 17)": the name alone does not tell a CPU generation apart.
std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string name = "unknown CPU", family, model;
  for (std::string line; std::getline(cpuinfo, line) && line != "";) {
    size_t colon = line.find(':');
    std::string value = colon == std::string::npos || colon + 2 > line.size() ? "" : line.substr(colon + 2);
    if (line.rfind("model name", 0) == 0) name = value;
    if (line.rfind("cpu family", 0) == 0) family = value;
    if (line.rfind("model\t", 0) == 0) model = value;
  }
  return name + " (family " + family + ", model " + model + ")";
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 30;
  std::unique_ptr<Graph> graph = parseGraph(kGraph);
  std::shared_ptr<ge::CompiledModel> model = sdk::buildGraph(*graph, sdk::BuildConfig::fromMap({{"threads", "1"}}));

  std::vector<float> x(16, 1.5f), y(16, -0.5f), r(16);
  const ge::TensorDesc desc = ge::TensorDesc::of(DType::F32, {16});
  const std::vector<ge::HostTensor> inputs = {ge::HostTensor::of(desc, x.data()), ge::HostTensor::of(desc, y.data())};
  const std::vector<ge::HostTensor> outputs = {ge::HostTensor::of(desc, r.data())};

  std::unique_ptr<ge::RunContext> context = model->createContext();
  ge::RunContextPool pool(model);
  sdk::Session session({{"threads", "1"}});
  session.addCompiledModel(1, model);
  const std::vector<sdk::NamedTensor> named_inputs = {{"x", inputs[0], nullptr}, {"y", inputs[1], nullptr}};
  std::vector<sdk::NamedTensor> named_outputs = {{"r", outputs[0], nullptr}};

  estuary_session* c_session = nullptr;
  estuary_option threads = {"threads", "1"};
  const int64_t dims[1] = {16};
  estuary_tensor c_inputs[2] = {{"x", ESTUARY_F32, 1, dims, x.data()}, {"y", ESTUARY_F32, 1, dims, y.data()}};
  estuary_tensor c_output = {"r", ESTUARY_F32, 1, dims, r.data()};
  if (estuary_session_create(&threads, 1, &c_session) != ESTUARY_OK ||
      estuary_session_add_graph_text(c_session, 1, kGraph, &threads, 1) != ESTUARY_OK ||
      estuary_session_build_graph(c_session, 1) != ESTUARY_OK) {
    std::fprintf(stderr, "sdk_overhead: %s\n", estuary_last_error());
    return 1;
  }

  struct Engine {
    const char* name;
    std::function<void()> run;
    std::vector<double> seconds;
  };
  std::vector<Engine> engines = {
      {"RunContext::run (direct)", [&] { context->run(inputs, outputs); }, {}},
      {"RunContextPool::run", [&] { pool.run(inputs, outputs); }, {}},
      {"Session::runGraph, caller's buffers", [&] { session.runGraph(1, named_inputs, named_outputs); }, {}},
      {"Session::runGraph, outputs allocated", [&] { session.runGraph(1, named_inputs); }, {}},
      {"C API estuary_session_run", [&] { estuary_session_run(c_session, 1, c_inputs, 2, &c_output, 1); }, {}},
  };
  for (Engine& engine : engines) sample(engine.run);  // warm up: plans, contexts, caches
  for (int round = 0; round < rounds; ++round) {
    for (Engine& engine : engines) engine.seconds.push_back(sample(engine.run));
  }
  estuary_session_destroy(c_session);

  std::printf("sdk_overhead: %s, Add+Relu of 16 floats, 1 thread, %d rounds of %d runs, medians\n",
              cpuModel().c_str(), rounds, kRunsPerSample);
  const double direct = median(engines.front().seconds);
  for (const Engine& engine : engines) {
    const double per_run = median(engine.seconds);
    std::printf("  %-40s %8.3f us  overhead %+7.3f us\n", engine.name, per_run * 1e6, (per_run - direct) * 1e6);
  }
  return 0;
}
