// The verifier's checks of IR invariants that the Graph API itself never breaks (use lists,
// node list links, back pointers). To build such graphs, this file opens the IR classes'
// private members; each test restores what it broke before the graph is destroyed.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#define private public
#include "estuary/ir/graph.h"
#undef private

#include "estuary/ir/verifier.h"
#include "estuary/text/parser.h"

namespace estuary {
namespace {

using Messages = std::vector<std::string>;

Messages messages(const Graph& graph) {
  Messages result;
  for (const VerifierDiagnostic& diagnostic : diagnoseGraph(graph)) result.push_back(diagnostic.message);
  return result;
}

std::unique_ptr<Graph> chain() {
  return parseGraph(R"(graph @main(%x: f32[4], %cache: f32[4] mutable) {
  %a = Neg(%x) : f32[4]
  %b = Relu(%a) : f32[4]
  %c = Abs(%b) : f32[4]
  return %c
  update %cache = %a
})");
}

TEST(VerifierCorruption, UseNamingTheWrongOperand) {
  auto graph = chain();
  Value* x = graph->input(0);
  x->uses_[0].operand_index = 5;
  EXPECT_EQ(messages(*graph),
            (Messages{"graph 'main': the use list of %x names operand 5 of node #0 (Neg), which does not hold it",
                      "graph 'main': %x is held by 1 operand but its use list has 0 matching entries"}));
  x->uses_[0].operand_index = 0;
  EXPECT_EQ(messages(*graph), Messages{});
}

TEST(VerifierCorruption, DuplicateAndMissingUses) {
  auto graph = chain();
  Value* a = graph->firstNode()->output();
  a->uses_.push_back(a->uses_[0]);
  EXPECT_EQ(messages(*graph),
            Messages{"graph 'main': node #0 (Neg): the use list of %a names operand 0 of node #1 (Relu) twice"});
  a->uses_.pop_back();
  Use removed = a->uses_.back();
  a->uses_.pop_back();
  EXPECT_EQ(messages(*graph),
            Messages{"graph 'main': node #0 (Neg): %a is held by 2 operands but its use list has 1 matching entry"});
  a->uses_.push_back(removed);
  EXPECT_EQ(messages(*graph), Messages{});
}

TEST(VerifierCorruption, NodeListLinks) {
  auto graph = chain();
  Node* first = graph->firstNode();
  Node* second = first->next();
  Node* third = second->next();
  ++graph->num_nodes_;
  second->prev_ = third;
  graph->tail_ = second;
  EXPECT_EQ(messages(*graph),
            (Messages{"graph 'main': node #1 (Relu): its prev() is not the node before it in the list",
                      "graph 'main': numNodes() is 4 but the node list holds 3 nodes",
                      "graph 'main': lastNode() is not the last node of the list"}));
  --graph->num_nodes_;
  second->prev_ = first;
  graph->tail_ = third;
  // A list that loops back on itself is cut where it repeats.
  third->next_ = first;
  Messages looped = messages(*graph);
  third->next_ = nullptr;
  ASSERT_FALSE(looped.empty());
  EXPECT_EQ(looped[0], "graph 'main': node #0 (Neg): appears twice in the node list (the list loops)");
}

TEST(VerifierCorruption, BackPointers) {
  auto graph = chain();
  Node* first = graph->firstNode();
  Graph other("other");
  first->graph_ = &other;
  first->outputs_[0]->index_ = 3;
  graph->inputs_[0]->index_ = 1;
  Messages found = messages(*graph);
  first->graph_ = graph.get();
  first->outputs_[0]->index_ = 0;
  graph->inputs_[0]->index_ = 0;
  EXPECT_EQ(found, (Messages{"graph 'main': input 0 (%x) does not record itself as input 0 of this graph",
                             "graph 'main': node #0 (Neg): is listed in this graph but records another as its own",
                             "graph 'main': node #0 (Neg): output 0 (%a) does not record itself as output 0 of "
                             "this node"}));
  EXPECT_EQ(messages(*graph), Messages{});
}

TEST(VerifierCorruption, SubgraphParentLink) {
  auto graph = parseGraph(R"(graph @main(%c: bool[], %x: f32[4]) {
  %z = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    return %x
  }} : f32[4]
  return %z
})");
  Graph* branch = graph->firstNode()->subgraphs()[1];
  branch->parent_node_ = nullptr;
  Messages found = messages(*graph);
  branch->parent_node_ = graph->firstNode();
  // Without the link the branch cannot see %x either.
  EXPECT_EQ(found, (Messages{"graph 'main': node #0 (If): subgraph 'then_branch' does not record this node as its "
                             "parent",
                             "graph 'main' > node #0 (If) > graph 'then': the return of graph 'then': output 0 uses "
                             "%x of graph 'main', which is not this graph or an enclosing one"}));
}

TEST(VerifierCorruption, UpdateOfAnInputThatIsNotMutable) {
  auto graph = chain();
  Value* cache = graph->input(1);
  cache->is_mutable_input_ = false;
  Messages found = messages(*graph);
  cache->is_mutable_input_ = true;
  EXPECT_EQ(found, Messages{"graph 'main': update target %cache is not a mutable input"});
}

TEST(VerifierCorruption, ReturnOperandsThatAreNeitherOutputsNorUpdates) {
  auto graph = chain();
  graph->returnNode()->addInput(graph->input(0));
  EXPECT_EQ(messages(*graph),
            Messages{"graph 'main': its return node has 3 operands for 1 outputs and 1 updates"});
  graph->returnNode()->removeInput(2);
}

}  // namespace
}  // namespace estuary
