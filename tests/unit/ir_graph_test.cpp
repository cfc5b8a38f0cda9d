#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>

#include "estuary/ir/graph.h"

namespace estuary {
namespace {

TensorType f32(std::initializer_list<Dim> dims) { return TensorType(DType::F32, Shape(dims)); }

// Every use points back at an operand holding the value, and every operand has exactly
// one use: the number of operands naming a value equals the length of its use list.
void expectUseListsConsistent(const Graph& graph) {
  std::unordered_map<const Value*, size_t> operand_count;
  auto count_operands = [&](const Node* node) {
    for (size_t i = 0; i < node->numInputs(); ++i) {
      if (node->input(i)) ++operand_count[node->input(i)];
    }
  };
  for (Node* node : graph.nodes()) count_operands(node);
  count_operands(graph.returnNode());
  for (const auto& [value, count] : operand_count) {
    EXPECT_EQ(value->uses().size(), count) << value->name();
    for (const Use& use : value->uses()) EXPECT_EQ(use.user->input(use.operand_index), value);
  }
}

TEST(Graph, GraphsBuiltOnSeveralThreadsKeepTheirOpNames) {
  // Op names are interned in one process-wide table.
  auto build = [](int thread, std::vector<std::string>* seen) {
    Graph graph;
    Value* x = graph.addInput("x", f32({4}));
    for (int i = 0; i < 2000; ++i) {
      std::string op = "Op" + std::to_string((i + thread) % 37);
      std::string domain = i % 3 ? "" : "d" + std::to_string(i % 5);
      Node* node = graph.createNode(op, {x}, 1, domain);
      seen->push_back(node->qualifiedOpType() == (domain.empty() ? op : domain + "::" + op)
                          ? "ok"
                          : node->qualifiedOpType());
    }
  };
  std::vector<std::vector<std::string>> seen(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(build, t, &seen[t]);
  for (std::thread& thread : threads) thread.join();
  for (const auto& results : seen) {
    EXPECT_EQ(results, std::vector<std::string>(2000, "ok"));
  }
}

TEST(Graph, BuildsNodesWithUseLists) {
  Graph graph;
  Value* x = graph.addInput("x", f32({2, 3}));
  Node* add = graph.createNode("Add", {x, x});
  Node* relu = graph.createNode("Relu", {add->output()});
  graph.addOutput(relu->output());

  EXPECT_EQ(graph.numNodes(), 2u);
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(add->output()->uses().size(), 1u);
  EXPECT_TRUE(relu->output()->isGraphOutput());
  EXPECT_EQ(add->output()->producer(), add);
  EXPECT_TRUE(x->isGraphInput());
  expectUseListsConsistent(graph);
}

TEST(Graph, ReplaceAllUsesRedirectsOutputsToo) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Node* neg = graph.createNode("Neg", {x});
  Node* abs = graph.createNode("Abs", {neg->output()});
  graph.addOutput(neg->output());
  graph.addOutput(abs->output());

  neg->output()->replaceAllUsesWith(x);
  EXPECT_FALSE(neg->output()->hasUses());
  EXPECT_EQ(abs->input(0), x);
  EXPECT_EQ(graph.output(0), x);
  graph.eraseNode(neg);
  EXPECT_EQ(graph.numNodes(), 1u);
  expectUseListsConsistent(graph);
}

TEST(Graph, EraseRefusesNodeWithUses) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Node* neg = graph.createNode("Neg", {x});
  neg->setName("negate");
  graph.addOutput(neg->output());
  try {
    graph.eraseNode(neg);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("node 'negate' (Neg)"), std::string::npos) << error.what();
  }
}

TEST(Graph, OperandEditsKeepUseListsConsistent) {
  Graph graph;
  Value* a = graph.addInput("a", f32({1}));
  Value* b = graph.addInput("b", f32({1}));
  Node* concat = graph.createNode("Concat", {a, b, a});
  concat->insertInput(1, b);
  concat->removeInput(0);
  concat->addInput(nullptr);
  concat->setInput(0, a);
  EXPECT_EQ(concat->inputs(), (std::vector<Value*>{a, b, a, nullptr}));
  EXPECT_EQ(a->uses().size(), 2u);
  EXPECT_EQ(b->uses().size(), 1u);
  graph.addOutput(concat->output());
  expectUseListsConsistent(graph);
}

TEST(Graph, ManyUsesOfOneValueStayLinear) {
  Graph graph;
  Value* x = graph.addInput("x", f32({1}));
  std::vector<Node*> users;
  for (int i = 0; i < 100000; ++i) users.push_back(graph.createNode("Neg", {x}));
  EXPECT_EQ(x->uses().size(), 100000u);
  for (size_t i = 0; i < users.size(); i += 2) graph.eraseNode(users[i]);
  EXPECT_EQ(x->uses().size(), 50000u);
  expectUseListsConsistent(graph);
}

TEST(Graph, MutableInputUpdates) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Value* cache = graph.addInput("cache", f32({4}), /*is_mutable=*/true);
  Node* add = graph.createNode("Add", {cache, x});
  graph.addOutput(x);
  graph.setInputUpdate(cache, add->output());
  EXPECT_EQ(graph.inputUpdate(cache), add->output());
  EXPECT_TRUE(add->output()->isGraphOutput());
  // Outputs added later keep the updates after them.
  graph.addOutput(add->output());
  EXPECT_EQ(graph.numOutputs(), 2u);
  EXPECT_EQ(graph.inputUpdates().size(), 1u);
  EXPECT_EQ(graph.inputUpdates()[0].new_value, add->output());
  EXPECT_THROW(graph.setInputUpdate(x, add->output()), Error);
  EXPECT_THROW(graph.setInputUpdate(cache, nullptr), Error);
  EXPECT_THROW(graph.addOutput(nullptr), Error);
  graph.removeInputUpdate(cache);
  EXPECT_EQ(graph.inputUpdate(cache), nullptr);
  expectUseListsConsistent(graph);
}

TEST(Graph, TopologicalOrderIsStableAndSorts) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Node* a = graph.createNode("Neg", {x});
  Node* b = graph.createNode("Abs", {a->output()});
  Node* c = graph.createNode("Exp", {x});
  EXPECT_EQ(graph.topologicalOrder(), (std::vector<Node*>{a, b, c}));
  a->moveAfter(b);  // now out of order
  EXPECT_EQ(graph.nodeList(), (std::vector<Node*>{b, a, c}));
  graph.sortTopologically();
  EXPECT_EQ(graph.nodeList(), (std::vector<Node*>{a, b, c}));
}

// The order topologicalOrder() promises, computed naively: each time, the first node in
// list order whose producers (of its operands and of values its subgraphs capture) are
// all placed.
std::vector<Node*> earliestReadyOrder(const Graph& graph) {
  std::vector<Node*> remaining = graph.nodeList();
  std::vector<Node*> order;
  auto placed = [&](const Value* value) {
    Node* producer = value ? value->producer() : nullptr;
    return !producer || producer->graph() != &graph ||
           std::find(order.begin(), order.end(), producer) != order.end();
  };
  std::function<bool(const Node*)> ready = [&](const Node* node) {
    for (Value* input : node->inputs()) {
      if (!placed(input)) return false;
    }
    for (Graph* subgraph : node->subgraphs()) {
      for (Node* inner : subgraph->nodes()) {
        if (!ready(inner)) return false;
      }
      for (Value* output : subgraph->outputs()) {
        if (!placed(output)) return false;
      }
    }
    return true;
  };
  while (!remaining.empty()) {
    auto next = std::find_if(remaining.begin(), remaining.end(), ready);
    if (next == remaining.end()) {
      ADD_FAILURE() << "no ready node: the graph has a cycle";
      break;
    }
    order.push_back(*next);
    remaining.erase(next);
  }
  return order;
}

TEST(Graph, TopologicalOrderOfAShuffledGraphTakesTheEarliestReadyNode) {
  Graph graph;
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  Value* x = graph.addInput("x", f32({4}));
  std::mt19937 random(42);
  std::vector<Value*> values{x};
  for (int i = 0; i < 300; ++i) {
    Value* a = values[random() % values.size()];
    Value* b = values[random() % values.size()];
    Node* node;
    if (i % 25 == 0) {
      // An If whose branch captures an earlier value: that use orders it too.
      node = graph.createNode("If", {cond});
      auto branch = std::make_shared<Graph>("then");
      branch->addOutput(branch->createNode("Neg", {a})->output());
      node->setAttr("then_branch", branch);
    } else {
      node = graph.createNode(i % 2 ? "Add" : "Mul", {a, b});
    }
    values.push_back(node->output());
  }
  graph.addOutput(values.back());
  const std::vector<Node*> built = graph.nodeList();

  std::vector<Node*> shuffled = built;
  std::shuffle(shuffled.begin(), shuffled.end(), random);
  for (Node* node : shuffled) node->moveBefore(nullptr);
  ASSERT_EQ(graph.nodeList(), shuffled);
  std::vector<Node*> order = graph.topologicalOrder();
  EXPECT_EQ(order, earliestReadyOrder(graph));
  EXPECT_NE(order, built);  // the shuffle reordered independent nodes too

  // Sorted, the list comes back unchanged; and so does the list as built.
  graph.sortTopologically();
  EXPECT_EQ(graph.nodeList(), order);
  EXPECT_EQ(graph.topologicalOrder(), order);
  for (Node* node : built) node->moveBefore(nullptr);
  EXPECT_EQ(graph.topologicalOrder(), built);
}

TEST(Graph, CycleThroughASubgraphCaptureIsReported) {
  Graph graph;
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  Value* x = graph.addInput("x", f32({4}));
  Node* if_node = graph.createNode("If", {cond});
  if_node->setName("branch");
  Node* neg = graph.createNode("Neg", {if_node->output()});
  neg->setName("neg");
  auto then_branch = std::make_shared<Graph>("then");
  then_branch->addOutput(then_branch->createNode("Abs", {neg->output()})->output());
  if_node->setAttr("then_branch", then_branch);
  graph.createNode("Exp", {x});  // a node outside the cycle comes out first
  try {
    graph.topologicalOrder();
    FAIL() << "expected a cycle error";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("node 'branch' (If)"), std::string::npos) << message;
    EXPECT_NE(message.find("node 'neg' (Neg)"), std::string::npos) << message;
    EXPECT_EQ(message.find("Exp"), std::string::npos) << message;
  }
}

TEST(Graph, CycleIsReportedWithItsNodes) {
  Graph graph;
  Value* x = graph.addInput("x", f32({4}));
  Node* a = graph.createNode("Add", {x, x});
  a->setName("a");
  Node* b = graph.createNode("Mul", {a->output(), x});
  b->setName("b");
  a->setInput(1, b->output());
  try {
    graph.topologicalOrder();
    FAIL() << "expected a cycle error";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("cycle"), std::string::npos) << message;
    EXPECT_NE(message.find("node 'a' (Add)"), std::string::npos) << message;
    EXPECT_NE(message.find("node 'b' (Mul)"), std::string::npos) << message;
  }
}

TEST(Graph, SubgraphCapturesCountAsDependencies) {
  Graph graph;
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  Value* x = graph.addInput("x", f32({4}));
  auto then_branch = std::make_shared<Graph>("then");
  Node* if_node = graph.createNode("If", {cond});
  Node* neg = graph.createNode("Neg", {x});
  Node* inner = then_branch->createNode("Abs", {neg->output()});  // captures %neg
  then_branch->addOutput(inner->output());
  if_node->setAttr("then_branch", then_branch);
  EXPECT_EQ(then_branch->parentGraph(), &graph);
  EXPECT_TRUE(then_branch->canSee(neg->output()));
  EXPECT_EQ(neg->output()->uses().size(), 1u);
  EXPECT_EQ(graph.topologicalOrder(), (std::vector<Node*>{neg, if_node}));
  EXPECT_EQ(graph.numNodesRecursive(), 3u);
}

TEST(Graph, CloneIsDeepAndIndependent) {
  Graph graph("g");
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  Value* cache = graph.addInput("cache", f32({Dim::symbol("n")}), true);
  Node* neg = graph.createNode("Neg", {cache});
  neg->output()->setName("negated");
  neg->setAttr("alpha", 0.5);
  Node* if_node = graph.createNode("If", {cond});
  auto branch = std::make_shared<Graph>("then");
  Node* inner = branch->createNode("Abs", {neg->output()});
  branch->addOutput(inner->output());
  if_node->setAttr("then_branch", branch);
  graph.addOutput(if_node->output());
  graph.setInputUpdate(cache, neg->output());

  std::unique_ptr<Graph> copy = graph.clone();
  ASSERT_EQ(copy->numNodes(), 2u);
  Node* copied_neg = copy->firstNode();
  EXPECT_NE(copied_neg, neg);
  EXPECT_EQ(copied_neg->output()->name(), "negated");
  EXPECT_EQ(copied_neg->floatAttr("alpha", 0), 0.5);
  EXPECT_EQ(copied_neg->input(0), copy->input(1));
  EXPECT_TRUE(copy->input(1)->isMutableInput());
  EXPECT_EQ(copy->inputUpdate(copy->input(1)), copied_neg->output());
  Graph* copied_branch = copied_neg->next()->subgraphs().at(0);
  EXPECT_NE(copied_branch, branch.get());
  EXPECT_EQ(copied_branch->firstNode()->input(0), copied_neg->output());
  EXPECT_EQ(copied_branch->parentNode(), copied_neg->next());
  // The original is untouched.
  EXPECT_EQ(neg->output()->uses().size(), 2u);
}

TEST(Graph, CloneMapsCapturesAcrossNestingLevels) {
  Graph graph("g");
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  Value* x = graph.addInput("x", f32({4}));
  Node* outer_if = graph.createNode("If", {cond});
  Node* exp = graph.createNode("Exp", {x});  // defined after the If that captures it
  auto middle = std::make_shared<Graph>("middle");
  Node* inner_if = middle->createNode("If", {cond});
  Node* middle_neg = middle->createNode("Neg", {x});
  auto inner = std::make_shared<Graph>("inner");
  // Captures from two and one levels up, and an output that is a captured value.
  Node* add = inner->createNode("Add", {exp->output(), middle_neg->output()});
  inner->addOutput(add->output());
  inner->addOutput(x);
  inner_if->setAttr("then_branch", inner);
  middle->addOutput(inner_if->output());
  outer_if->setAttr("then_branch", middle);
  graph.addOutput(outer_if->output());

  std::unique_ptr<Graph> copy = graph.clone();
  Node* copied_exp = copy->lastNode();
  Graph* copied_middle = copy->firstNode()->subgraphs().at(0);
  Node* copied_middle_neg = copied_middle->lastNode();
  Graph* copied_inner = copied_middle->firstNode()->subgraphs().at(0);
  Node* copied_add = copied_inner->firstNode();
  EXPECT_EQ(copied_add->input(0), copied_exp->output());
  EXPECT_EQ(copied_add->input(1), copied_middle_neg->output());
  EXPECT_EQ(copied_middle_neg->input(0), copy->input(1));
  EXPECT_EQ(copied_inner->output(1), copy->input(1));
  EXPECT_EQ(copied_middle->firstNode()->input(0), copy->input(0));
  EXPECT_EQ(exp->output()->uses().size(), 1u);
  EXPECT_EQ(copied_exp->output()->uses().size(), 1u);

  // Cloned alone, a subgraph keeps referring to the values it captures from outside.
  std::unique_ptr<Graph> inner_copy = inner->clone();
  EXPECT_EQ(inner_copy->firstNode()->input(0), exp->output());
  EXPECT_EQ(inner_copy->firstNode()->input(1), middle_neg->output());
  EXPECT_EQ(inner_copy->output(1), x);
  inner_copy.reset();
  EXPECT_EQ(exp->output()->uses().size(), 1u);
}

TEST(Graph, InlineBeforeCopiesABranchInPlaceOfItsIf) {
  Graph graph("g");
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  Value* x = graph.addInput("x", f32({4}));
  Node* first = graph.createNode("Relu", {x});
  Node* branch_if = graph.createNode("If", {cond});
  auto branch = std::make_shared<Graph>("branch");
  Node* neg = branch->createNode("Neg", {first->output()});
  auto nested = std::make_shared<Graph>("nested");
  Node* nested_exp = nested->createNode("Exp", {neg->output()});  // captures the branch's value
  nested->addOutput(nested_exp->output());
  Node* nested_if = branch->createNode("If", {cond});
  nested_if->setAttr("then_branch", nested);
  branch->addOutput(nested_if->output());
  branch->addOutput(x);
  branch_if->setAttr("then_branch", branch);

  std::vector<Value*> results = graph.inlineBefore(branch_if, *branch);
  ASSERT_EQ(results.size(), 2u);
  Node* copied_neg = first->next();
  Node* copied_if = copied_neg->next();
  EXPECT_EQ(copied_if->next(), branch_if);
  EXPECT_TRUE(copied_neg->is("Neg"));
  EXPECT_EQ(copied_neg->input(0), first->output());
  EXPECT_EQ(results[0], copied_if->output());
  EXPECT_EQ(results[1], x);  // a captured value is used directly
  EXPECT_EQ(copied_if->subgraphs().at(0)->firstNode()->input(0), copied_neg->output());
  EXPECT_EQ(neg->output()->uses().size(), 1u);  // the original branch is untouched

  Graph body("body");
  body.addInput("i", TensorType(DType::I64, Shape()));
  try {
    graph.inlineBefore(nullptr, body);
    FAIL() << "a subgraph with inputs was inlined";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("takes 1 inputs"), std::string::npos) << error.what();
  }
}

TEST(Graph, AGraphCannotBeNestedInItsOwnNodes) {
  auto graph = std::make_shared<Graph>("g");
  Value* cond = graph->addInput("cond", TensorType(DType::Bool, Shape()));
  Node* if_node = graph->createNode("If", {cond});
  EXPECT_THROW(if_node->setAttr("then_branch", graph), Error);
  auto branch = std::make_shared<Graph>("branch");
  Node* inner = branch->createNode("If", {cond});
  if_node->setAttr("then_branch", branch);
  EXPECT_THROW(inner->setAttr("then_branch", graph), Error);
  EXPECT_FALSE(inner->hasAttr("then_branch"));
  // A graph owned by another node is copied, so nesting a copy of an enclosing graph is fine.
  inner->setAttr("else_branch", branch);
  EXPECT_NE(inner->subgraphs().at(0), branch.get());
  EXPECT_EQ(graph->parentNode(), nullptr);
}

TEST(Graph, TheReturnNodeStaysOutOfTheNodeList) {
  Graph graph("g");
  Value* x = graph.addInput("x", f32({4}));
  Node* neg = graph.createNode("Neg", {x});
  graph.addOutput(neg->output());
  Node* ret = graph.returnNode();
  EXPECT_THROW(graph.eraseNode(ret), Error);
  EXPECT_THROW(ret->moveBefore(neg), Error);
  EXPECT_THROW(ret->moveAfter(neg), Error);
  EXPECT_THROW(neg->moveAfter(ret), Error);
  EXPECT_THROW(neg->moveAfter(nullptr), Error);
  // Before the terminator is at the end of the list.
  Node* abs = graph.createNodeBefore(ret, "Abs", {x});
  Node* exp = graph.createNode("Exp", {x});
  abs->moveBefore(ret);
  EXPECT_EQ(graph.nodeList(), (std::vector<Node*>{neg, exp, abs}));
  EXPECT_EQ(graph.lastNode(), abs);
  EXPECT_EQ(graph.numNodes(), 3u);
  expectUseListsConsistent(graph);
}

TEST(Graph, AnInputUpdatedInPlaceCannotBeRemoved) {
  Graph graph("g");
  Value* cache = graph.addInput("cache", f32({4}), /*is_mutable=*/true);
  Value* x = graph.addInput("x", f32({4}));
  graph.setInputUpdate(cache, x);
  EXPECT_THROW(graph.removeInput(0), Error);
  graph.removeInputUpdate(cache);
  graph.removeInput(0);
  EXPECT_EQ(graph.inputs(), std::vector<Value*>{x});
  EXPECT_TRUE(graph.inputUpdates().empty());
}

TEST(Graph, ASubgraphHeldElsewhereOutlivesItsNodeWithoutOuterUses) {
  std::shared_ptr<Graph> kept_from_erase;
  std::shared_ptr<Graph> kept_from_destruction;
  {
    Graph graph("g");
    Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
    Value* x = graph.addInput("x", f32({4}));
    auto make_branch = [&](const char* name) {
      auto branch = std::make_shared<Graph>(name);
      Node* neg = branch->createNode("Neg", {x});  // captures %x
      auto inner = std::make_shared<Graph>("inner");
      inner->addOutput(inner->createNode("Abs", {neg->output()})->output());
      inner->addOutput(x);
      branch->createNode("If", {cond})->setAttr("then_branch", inner);
      branch->addOutput(neg->output());
      branch->addOutput(x);
      Node* if_node = graph.createNode("If", {cond});
      if_node->setAttr("then_branch", branch);
      return if_node;
    };
    Node* erased = make_branch("erased");
    Node* destroyed = make_branch("destroyed");
    graph.addOutput(destroyed->output());
    // Copies of the attributes, as a binding or a pattern might keep.
    kept_from_erase = erased->attr("then_branch")->asGraph();
    kept_from_destruction = destroyed->attr("then_branch")->asGraph();
    graph.eraseNode(erased);
    EXPECT_EQ(kept_from_erase->parentNode(), nullptr);
    EXPECT_EQ(kept_from_erase->firstNode()->input(0), nullptr);
    EXPECT_EQ(kept_from_erase->output(0), kept_from_erase->firstNode()->output());
    EXPECT_EQ(kept_from_erase->returnNode()->input(1), nullptr);
    Graph* inner = kept_from_erase->lastNode()->subgraphs().at(0);
    EXPECT_EQ(inner->firstNode()->input(0), kept_from_erase->firstNode()->output());
    EXPECT_EQ(inner->returnNode()->input(1), nullptr);
    EXPECT_EQ(x->uses().size(), 3u);  // by the other branch: its Neg, its return, its inner return
  }
  // The graph and its values are gone; the kept subgraphs hold no uses of them.
  EXPECT_EQ(kept_from_destruction->firstNode()->input(0), nullptr);
  kept_from_erase.reset();
  kept_from_destruction.reset();
}

TEST(Graph, SharingASubgraphCopiesIt) {
  Graph graph;
  Value* cond = graph.addInput("cond", TensorType(DType::Bool, Shape()));
  auto branch = std::make_shared<Graph>("b");
  Node* first = graph.createNode("If", {cond});
  Node* second = graph.createNode("If", {cond});
  first->setAttr("then_branch", branch);
  second->setAttr("then_branch", branch);
  EXPECT_NE(first->subgraphs()[0], second->subgraphs()[0]);
  EXPECT_EQ(second->subgraphs()[0]->parentNode(), second);
}

TEST(Graph, AttributeKindsAreChecked) {
  Graph graph;
  Node* node = graph.createNode("Conv", {});
  node->setAttr("group", 2);
  node->setAttr("pads", std::vector<int64_t>{1, 1, 1, 1});
  node->setAttr("auto_pad", "NOTSET");
  EXPECT_EQ(node->intAttr("group", 1), 2);
  EXPECT_EQ(node->intAttr("missing", 7), 7);
  EXPECT_EQ(node->intsAttr("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(node->stringAttr("auto_pad", ""), "NOTSET");
  EXPECT_THROW(node->intAttr("pads", 0), Error);
  std::vector<std::string> names;
  for (const auto& entry : node->attributes()) names.push_back(entry.first);
  EXPECT_EQ(names, (std::vector<std::string>{"auto_pad", "group", "pads"}));
}

TEST(Tensor, WrapsWithoutCopyingAndComparesContent) {
  auto storage = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  Tensor wrapped = Tensor::wrap(DType::F32, {2, 2}, storage->data(), storage);
  EXPECT_EQ(wrapped.data<float>(), storage->data());
  EXPECT_EQ(wrapped.byteSize(), 16u);
  Tensor copy = Tensor::copyOf(DType::F32, {2, 2}, storage->data());
  EXPECT_NE(copy.data(), wrapped.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % 64, 0u);
  EXPECT_TRUE(copy.contentEquals(wrapped));
  EXPECT_EQ(copy.contentHash(), wrapped.contentHash());
  EXPECT_FALSE(copy.contentEquals(Tensor::fromVector<float>(DType::F32, {4}, {1, 2, 3, 4})));
  EXPECT_THROW(Tensor::fromVector<float>(DType::F32, {3}, {1, 2}), Error);
}

TEST(Tensor, RefusesShapesWhoseSizeOverflows) {
  const int64_t big = int64_t{1} << 31;
  try {
    Tensor::allocate(DType::F32, {big, big, 4});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "tensor shape [2147483648,2147483648,4] has more elements than a tensor can hold");
  }
  float one = 1;
  EXPECT_THROW(Tensor::wrap(DType::F32, {big, big, big}, &one, nullptr), Error);
  EXPECT_EQ(Tensor::allocate(DType::F64, {0, big, big, big}).byteSize(), 0u);
}

TEST(Attribute, FloatListsCompareBitwiseLikeTheirHash) {
  const double nan = std::nan("");
  Attribute zero(std::vector<double>{0.0, 1.5});
  Attribute negative_zero(std::vector<double>{-0.0, 1.5});
  EXPECT_NE(zero, negative_zero);
  Attribute with_nan(std::vector<double>{nan});
  EXPECT_EQ(with_nan, Attribute(std::vector<double>{nan}));
  EXPECT_EQ(with_nan.hash(), Attribute(std::vector<double>{nan}).hash());
  EXPECT_EQ(Attribute(std::vector<double>{}), Attribute(std::vector<double>{}));
  EXPECT_NE(zero, Attribute(std::vector<double>{0.0}));
}

}  // namespace
}  // namespace estuary
