#include "estuary/transforms/dce.h"

namespace estuary {

namespace {

bool hasSubgraphs(const Node& node) {
  for (const auto& [name, attribute] : node.attributes()) {
    if (attribute.kind() == AttrKind::Graph) return true;
  }
  return false;
}

bool isUsed(const Node& node) {
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    if (node.output(i)->hasUses()) return true;
  }
  return false;
}

}  // namespace

int64_t eliminateDeadCode(Graph& graph) {
  // The node list is topologically ordered, with uses inside a subgraph ordered as uses by
  // the node owning it. Walking backwards, every user of a node has been visited (and erased
  // if dead) before the node itself, so one walk finds every dead node.
  int64_t erased = 0;
  Node* node = graph.lastNode();
  while (node) {
    Node* previous = node->prev();
    bool nested = hasSubgraphs(*node);
    if (!isUsed(*node)) {
      erased += 1;
      if (nested) {
        for (Graph* subgraph : node->subgraphs()) {
          erased += static_cast<int64_t>(subgraph->numNodesRecursive());
        }
      }
      graph.eraseNode(node);
    } else if (nested) {
      // Cleaning the subgraph first drops its uses of outer values, so that outer nodes only
      // the dead part of the subgraph used are found dead further up this walk.
      for (Graph* subgraph : node->subgraphs()) erased += eliminateDeadCode(*subgraph);
    }
    node = previous;
  }
  return erased;
}

namespace {

class DeadCodeElimination : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override { return {eliminateDeadCode(graph)}; }
};

}  // namespace

PassInfo deadCodeEliminationPass() {
  PassInfo info;
  info.name = "dce";
  info.description =
      "Erases nodes whose results are unused; keeps graph outputs, mutable-input updates and "
      "what they depend on, including values captured by subgraphs.";
  info.factory = [](const PassOptions&) { return std::make_unique<DeadCodeElimination>(); };
  return info;
}

}  // namespace estuary
