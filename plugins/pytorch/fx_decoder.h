#pragma once
// The FX node view: an FxGraph (fx_graph.h) seen through the frontend layer's decoders, so
// that the shared graph translator walks it. Tensor inputs become graph inputs, parameters
// weights (sharing the tensors' memory), call_function nodes the nodes. A node's arguments
// are its inputs (positional, then keyword; those holding a tensor have its name) and, when
// they are Python constants, its attributes by schema name, which is how conversion
// extensions read them; the FX translators read the arguments themselves (fx_translation.h).
//
// Results: a node's first result is named after the node; further results of a node that
// returns several (max_pool2d_with_indices, split) are "<node>#<i>", a name no FX node has.
// Only the results the graph uses are outputs of the node view, so translators may leave
// out results nobody reads (pooling indices).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/ir/graph.h"
#include "estuary/pytorch/fx_graph.h"

namespace estuary::pytorch {

class FxGraphDecoder;

class FxNodeDecoder final : public NodeDecoder {
 public:
  FxNodeDecoder(const FxGraphDecoder& graph, size_t index);

  const FxNode& node() const;
  const FxGraphDecoder& graph() const { return graph_; }

  std::string_view opType() const override { return node().target; }
  std::string_view name() const override { return node().name; }
  size_t numInputs() const override;
  std::string_view inputName(size_t i) const override;
  std::optional<size_t> inputIndex(std::string_view slot) const override;
  std::vector<std::string_view> controlInputs() const override { return {list_reads_.begin(), list_reads_.end()}; }
  size_t numOutputs() const override { return output_names_.size(); }
  std::string_view outputName(size_t i) const override { return output_names_[i]; }
  TensorType outputType(size_t i) const override;
  std::vector<std::string_view> attributeNames() const override;
  std::optional<AttrValue> attribute(std::string_view name) const override;

 private:
  // The argument at input position i: positional arguments, then keyword arguments.
  const FxArg& argumentAt(size_t i) const;

  const FxGraphDecoder& graph_;
  size_t index_;
  std::vector<std::string> input_names_;   // per argument: the tensor's name, or ""
  std::vector<std::string> output_names_;  // per result: its name, or "" when unused
  std::vector<std::string> list_reads_;    // tensors read inside list arguments
};

class FxGraphDecoder final : public GraphDecoder {
 public:
  explicit FxGraphDecoder(const FxGraph& fx);
  FxGraphDecoder(const FxGraphDecoder&) = delete;
  FxGraphDecoder& operator=(const FxGraphDecoder&) = delete;

  const FxGraph& fx() const { return fx_; }
  // The name of result `result` of FX node `node` (see above).
  std::string resultName(size_t node, size_t result) const;
  // Whether result `result` of FX node `node` is read by another node or returned.
  bool isUsed(size_t node, size_t result) const;

  // The value of a symbolic size expression ("s27"), made once per translation: see
  // FxTranslation::sizeValue.
  std::map<std::string, Value*>& symbolValues() const { return symbol_values_; }

  std::string name() const override { return fx_.name.empty() ? "torch_fx" : fx_.name; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return fx_.nodes[inputs_[i]].name; }
  TensorType inputType(size_t i, SymbolTable& symbols) const override;
  size_t numWeights() const override { return weights_.size(); }
  std::string_view weightName(size_t i) const override { return fx_.nodes[weights_[i]].name; }
  TensorType weightType(size_t i) const override;
  Tensor weight(size_t i) const override;
  size_t numNodes() const override { return calls_.size(); }
  const NodeDecoder& node(size_t i) const override { return calls_[i]; }
  size_t numOutputs() const override { return output_names_.size(); }
  std::string_view outputName(size_t i) const override { return output_names_[i]; }

 private:
  const FxGraph& fx_;
  std::vector<size_t> inputs_;   // FX node indices of tensor inputs
  std::vector<size_t> weights_;  // of parameters and buffers
  std::vector<std::vector<bool>> used_;  // per FX node and result
  std::vector<FxNodeDecoder> calls_;
  std::vector<std::string> output_names_;
  mutable std::map<std::string, Value*> symbol_values_;
};

// The IR type an FX placeholder states ("f32[s0,4]"). Raises naming the node for a size
// that is not a dim expression.
TensorType placeholderType(const FxNode& node);

}  // namespace estuary::pytorch
