#pragma once
// Helpers shared by the rewrite tests: graphs in the text form in, text form out.
#include <gtest/gtest.h>

#include <string>
#include <unordered_set>

#include "estuary/rewrite/rewriter.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "error_of.h"

namespace estuary::testing {

// Fails the test unless every operand of every node (subgraphs included) is defined
// before it in list order.
inline void expectTopological(const Graph& graph) {
  std::unordered_set<const Value*> defined(graph.inputs().begin(), graph.inputs().end());
  for (Node* node : graph.nodes()) {
    for (Value* input : node->inputs()) {
      if (input && input->graph() == &graph) {
        EXPECT_TRUE(defined.count(input)) << node->describe() << " uses %" << input->name()
                                          << " before its definition";
      }
    }
    for (Graph* subgraph : node->subgraphs()) expectTopological(*subgraph);
    for (Value* output : node->outputs()) defined.insert(output);
  }
}

// Parses `text`, applies `patterns`, checks the node order, and returns the printed graph.
inline std::string rewrite(const std::string& text, const PatternSet& patterns,
                           RewriteStats* stats = nullptr) {
  std::unique_ptr<Graph> graph = parseGraph(text);
  RewriteStats result = applyPatterns(*graph, patterns);
  expectTopological(*graph);
  if (stats) *stats = result;
  return printGraph(*graph);
}

inline PatternSet setOf(Pattern pattern) {
  PatternSet set;
  set.add(std::move(pattern));
  return set;
}

}  // namespace estuary::testing
