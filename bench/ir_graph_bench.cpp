// Times the IR's bulk operations on a large graph and measures its heap use per node.
//
//   ir_graph_bench NODES [REPEATS]
//
// The graph is a chain of residual blocks (Add, Mul, Relu on f32[4,64] values, each block
// also reading the input of the block before), so every node has two operands and most
// values two users. Figures per repeat, one key=value line:
//   build_s            creating the nodes with Graph::createNode
//   heap_bytes_per_node  heap in use after building, divided by the node count
//   churn_s            erasing every Relu and creating a replacement before its user
//   topo_sorted_s      Graph::topologicalOrder() on the list as built (already sorted)
//   topo_shuffled_s    the same after the list was put in random order
//   clone_s            Graph::clone()
#include <malloc.h>

#include <algorithm>
#include <ctime>
#include <cstdlib>
#include <iostream>
#include <random>

#include "estuary/ir/graph.h"

using namespace estuary;

namespace {

constexpr int kNodesPerBlock = 3;

std::unique_ptr<Graph> buildGraph(int64_t blocks) {
  auto graph = std::make_unique<Graph>("blocks");
  TensorType activation(DType::F32, Shape{4, 64});
  Value* hidden = graph->addInput("x", activation);
  Value* skip = graph->addInput("skip", activation);
  for (int64_t block = 0; block < blocks; ++block) {
    Node* add = graph->createNode("Add", {hidden, skip});
    add->output()->setType(activation);
    Node* mul = graph->createNode("Mul", {add->output(), hidden});
    mul->output()->setType(activation);
    Node* relu = graph->createNode("Relu", {mul->output()});
    relu->output()->setType(activation);
    skip = hidden;
    hidden = relu->output();
  }
  graph->addOutput(hidden);
  return graph;
}

size_t heapInUse() { return mallinfo2().uordblks; }

// CPU time of this thread: the machine the figures come from is shared, and CPU time
// varies less with other load than wall time does.
double cpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ir_graph_bench NODES [REPEATS]\n";
    return 2;
  }
  const int64_t blocks = std::atoll(argv[1]) / kNodesPerBlock;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 1;
  try {
    for (int repeat = 0; repeat < repeats; ++repeat) {
      const size_t heap_before = heapInUse();
      double start = cpuSeconds();
      std::unique_ptr<Graph> graph = buildGraph(blocks);
      const double build_s = cpuSeconds() - start;
      const double nodes = static_cast<double>(graph->numNodes());
      const double heap_per_node = static_cast<double>(heapInUse() - heap_before) / nodes;

      start = cpuSeconds();
      for (Node* node : graph->nodeList()) {
        if (!node->is("Relu")) continue;
        Value* output = node->output();
        Node* twin = graph->createNodeBefore(node, "Relu", {node->input(0)});
        twin->output()->setType(output->type());
        output->replaceAllUsesWith(twin->output());
        graph->eraseNode(node);
      }
      const double churn_s = cpuSeconds() - start;

      start = cpuSeconds();
      std::vector<Node*> order = graph->topologicalOrder();
      const double topo_sorted_s = cpuSeconds() - start;

      std::vector<Node*> shuffled = graph->nodeList();
      std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
      for (Node* node : shuffled) node->moveBefore(nullptr);
      start = cpuSeconds();
      order = graph->topologicalOrder();
      const double topo_shuffled_s = cpuSeconds() - start;
      graph->sortTopologically();

      start = cpuSeconds();
      std::unique_ptr<Graph> copy = graph->clone();
      const double clone_s = cpuSeconds() - start;
      copy.reset();

      std::cout << "nodes=" << graph->numNodes() << " build_s=" << build_s
                << " heap_bytes_per_node=" << heap_per_node << " churn_s=" << churn_s
                << " topo_sorted_s=" << topo_sorted_s << " topo_shuffled_s=" << topo_shuffled_s
                << " clone_s=" << clone_s << "\n";
    }
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
