#pragma once
// Translates an FxGraph into core IR: placeholders first (inputs, weights, symbolic sizes),
// then each call_function node through its op translator, then the outputs.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "estuary/ops/schema.h"
#include "estuary/pytorch/fx_graph.h"

namespace estuary::pytorch {

class FxImporter {
 public:
  explicit FxImporter(const FxGraph& fx);
  std::unique_ptr<Graph> import();

  // For FxTranslation.
  Graph& graph() { return *graph_; }
  const FxGraph& fx() const { return fx_; }
  const std::vector<Value*>& resultsOf(size_t node, const FxNode& user) const;
  // Infers the types of the nodes appended after `before` (nullptr: from the start).
  void inferFrom(Node* before, const FxNode& fx_node);
  // The value of a symbolic size expression ("s27") as a 1-element i64 tensor: the Shape of
  // a tensor input that has it as a dim.
  Value* symbolValue(const std::string& expression, const FxNode& user);

 private:
  void importPlaceholder(size_t index);
  void importCall(size_t index);

  const FxGraph& fx_;
  std::unique_ptr<Graph> graph_;
  KnownValueMap known_values_;
  std::vector<std::vector<Value*>> results_;  // per FX node
  std::map<std::string, Value*> symbols_;     // expression -> its i64[1] value, made once
};

}  // namespace estuary::pytorch
