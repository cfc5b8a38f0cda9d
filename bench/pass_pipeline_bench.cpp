// Times DCE + CSE + the Add+RMSNorm fusion plugin over a synthetic decoder-like graph.
//
//   pass_pipeline_bench NODES [REPEATS]
//
// Each layer of the graph has nine nodes: a residual Add and its recomputed twin (for CSE),
// an RMS norm on the sum (for the fusion), a MatMul against a shared weight, a Relu, two
// dead nodes (for DCE) and the Add that feeds the next layer. Prints one line of
// key=value figures per repeat; NODES is rounded down to whole layers. Times are wall
// seconds, except pipeline_cpu_s (the pipeline's CPU seconds). The peak RSS is the
// process's (graph and passes).
#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <cstdlib>
#include <iostream>
#include <string>

#include "estuary/ir/graph.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/plugin/loader.h"

using namespace estuary;

namespace {

constexpr int kNodesPerLayer = 9;

std::unique_ptr<Graph> buildGraph(int64_t layers) {
  auto graph = std::make_unique<Graph>("synthetic");
  TensorType activation(DType::F32, Shape{4, 64});
  Value* hidden = graph->addInput("x", activation);
  Value* residual = graph->addInput("r", activation);
  Value* gamma = graph->addInput("gamma", TensorType(DType::F32, Shape{64}));
  Value* weight = graph->addInput("w", TensorType(DType::F32, Shape{64, 64}));
  auto make = [&](const char* op, std::vector<Value*> inputs) {
    Node* node = graph->createNode(op, inputs);
    node->output()->setType(activation);
    return node;
  };
  for (int64_t layer = 0; layer < layers; ++layer) {
    Value* sum = make("Add", {hidden, residual})->output();
    Value* sum_again = make("Add", {hidden, residual})->output();
    Node* norm = make("RMSNormalization", {sum, gamma});
    norm->setAttr("epsilon", 1e-5);
    Value* projected = make("MatMul", {norm->output(), weight})->output();
    Value* activated = make("Relu", {projected})->output();
    Value* dead = make("Exp", {activated})->output();
    make("Neg", {dead});
    hidden = make("Add", {activated, sum_again})->output();
    residual = sum;
  }
  graph->addOutput(hidden);
  return graph;
}

// CPU time of this thread: on a shared machine it varies less with other load than the
// wall time does.
double cpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

double peakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: pass_pipeline_bench NODES [REPEATS]\n";
    return 2;
  }
  int64_t nodes = std::atoll(argv[1]);
  int repeats = argc > 2 ? std::atoi(argv[2]) : 1;
  try {
    PluginLoader::global().load("fusion_add_rms_norm");
    for (int repeat = 0; repeat < repeats; ++repeat) {
      auto start = std::chrono::steady_clock::now();
      std::unique_ptr<Graph> graph = buildGraph(nodes / kNodesPerLayer);
      auto built = std::chrono::steady_clock::now();
      PassManager manager(parsePassList("cse,dce,fuse_add_rms_norm"));
      const double cpu_start = cpuSeconds();
      manager.run(*graph);
      const double pipeline_cpu_s = cpuSeconds() - cpu_start;
      auto done = std::chrono::steady_clock::now();
      std::cout << "nodes=" << nodes / kNodesPerLayer * kNodesPerLayer << " build_s="
                << std::chrono::duration<double>(built - start).count();
      for (const PassRecord& record : manager.records()) {
        std::cout << " " << record.name << "_s=" << record.seconds << " " << record.name
                  << "_changes=" << record.changes;
      }
      std::cout << " pipeline_s=" << std::chrono::duration<double>(done - built).count()
                << " pipeline_cpu_s=" << pipeline_cpu_s
                << " nodes_after=" << graph->numNodes() << " peak_rss_mib=" << peakRssMiB() << "\n";
    }
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
