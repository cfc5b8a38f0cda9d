#pragma once
// The TensorFlow node view: GraphDef nodes and FunctionDef bodies seen through the frontend
// layer's decoders.
//
// Value names: a node's outputs are "node:0", "node:1", ... everywhere. GraphDef inputs say
// "node" for "node:0" and "^node" for a control input; function bodies say
// "node:output_arg:index", which is made flat ("node:k") with the op's output arguments
// (tf_op_outputs.h), and name the function's arguments plainly. Only outputs something reads
// are outputs of the view, so translators may leave out results nobody uses (FusedBatchNorm's
// statistics). Attributes decode on request; a function attribute ("f", "then_branch",
// "body") is the function's body, decoded once per model.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/frontend/weights.h"
#include "estuary/ir/graph.h"
#include "tf_messages.h"

namespace estuary::tensorflow_frontend {

class TfFunctionDecoder;

// What every decoder of one model shares: the functions, the bytes' owner, the weights.
class TfModelContext {
 public:
  TfModelContext(std::string model, const FunctionDefLibrary* library, std::shared_ptr<const void> owner,
                 WeightSource& weights);

  const std::string& model() const { return model_; }
  WeightSource& weights() const { return weights_; }
  const std::shared_ptr<const void>& owner() const { return owner_; }
  // The body of the library's function `name`, or nullptr when the library has none.
  std::shared_ptr<const TfFunctionDecoder> function(std::string_view name) const;
  // A variable's value by the name its VarHandleOp shares (set for SavedModels).
  std::function<Tensor(std::string_view shared_name, const std::string& node)> variables;
  // The values a concrete function captures, by the name of the Placeholder standing for
  // each (set for functions handed over in memory).
  std::map<std::string, Tensor, std::less<>> captures;

  // The empty TensorLists TensorListReserve made, which a While fills one element per
  // iteration (see tf_ops_graph.cpp).
  void noteReservedList(const Value* list) const { reserved_lists_.insert(list); }
  bool isReservedList(const Value* list) const { return reserved_lists_.count(list) > 0; }

 private:
  std::string model_;
  std::map<std::string_view, const FunctionDef*> functions_;
  std::shared_ptr<const void> owner_;
  WeightSource& weights_;
  mutable std::map<std::string_view, std::shared_ptr<const TfFunctionDecoder>> decoded_;
  mutable std::set<const Value*> reserved_lists_;
};

// A node of a TensorFlow graph: one of its NodeDefs, or a node Estuary made from several (a
// TF 1 while loop rebuilt as a While, tf_control_flow.h).
class TfNode : public NodeDecoder {
 public:
  virtual const TfModelContext& model() const = 0;
  // The NodeDef, or nullptr for a made node.
  virtual const NodeDef* def() const = 0;
};

// The TfModelContext of the node a translator translates.
const TfModelContext& modelOf(const NodeDecoder& node);

class TfNodeDecoder final : public TfNode {
 public:
  // `input_names` are the node's data inputs and `controls` its control inputs, both as
  // value names; `outputs` has a name for each output something reads ("" for the rest).
  TfNodeDecoder(const TfModelContext& model, const NodeDef& node, std::vector<std::string> input_names,
                std::vector<std::string> controls, std::vector<std::string> outputs);

  const TfModelContext& model() const override { return model_; }
  const NodeDef* def() const override { return &node_; }

  std::string_view opType() const override { return node_.op; }
  std::string_view name() const override { return node_.name; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  std::vector<std::string_view> controlInputs() const override { return {controls_.begin(), controls_.end()}; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }
  std::vector<std::string_view> attributeNames() const override;
  bool hasAttribute(std::string_view name) const override { return find(name) != nullptr; }
  std::optional<AttrValue> attribute(std::string_view name) const override;
  std::vector<AttrValue::GraphRef> subgraphs() const override;

 private:
  const AttrValueProto* find(std::string_view name) const;

  const TfModelContext& model_;
  const NodeDef& node_;
  std::vector<std::string> inputs_;
  std::vector<std::string> controls_;
  std::vector<std::string> outputs_;
};

// A GraphDef as a graph: its Placeholders are the inputs, the nodes the outputs need are its
// nodes (a SavedModel's graph holds its saver and every signature's calls too; TF 1 control
// flow among them rebuilt as If and While nodes), and
// `outputs` ("node:0", or "node" for "node:0") are its outputs. `inputs` pairs a Placeholder's value ("x:0") with the name the
// graph input takes ("x"); without inputs, every Placeholder the outputs need, named after
// its node, in the file's order.
class TfGraphDecoder final : public GraphDecoder {
 public:
  TfGraphDecoder(const TfModelContext& model, const GraphDef& graph, std::string name,
                 std::vector<std::pair<std::string, std::string>> inputs, std::vector<std::string> outputs);
  TfGraphDecoder(const TfGraphDecoder&) = delete;
  TfGraphDecoder& operator=(const TfGraphDecoder&) = delete;

  std::string name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i].second; }
  TensorType inputType(size_t i, SymbolTable& symbols) const override;
  size_t numNodes() const override { return top_.size(); }
  const NodeDecoder& node(size_t i) const override { return *top_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }
  TensorType outputType(size_t i, SymbolTable& symbols) const override { return {}; }

  // The Placeholder node of input i.
  const NodeDef& inputNode(size_t i) const { return *inputs_[i].first; }

 private:
  const TfModelContext& model_;
  std::string name_;
  std::vector<std::pair<const NodeDef*, std::string>> inputs_;  // Placeholder, its value name
  std::vector<TfNodeDecoder> nodes_;
  std::vector<std::unique_ptr<TfNode>> made_;  // the rebuilt control flow's nodes
  std::vector<const TfNode*> top_;             // what the graph holds: nodes_ and made_
  std::vector<std::string> outputs_;
};

class TfFunctionDecoder final : public GraphDecoder {
 public:
  TfFunctionDecoder(const TfModelContext& model, const FunctionDef& function);
  TfFunctionDecoder(const TfFunctionDecoder&) = delete;
  TfFunctionDecoder& operator=(const TfFunctionDecoder&) = delete;

  std::string name() const override { return std::string(function_.signature.name); }
  size_t numInputs() const override { return function_.signature.input_arg.size(); }
  std::string_view inputName(size_t i) const override { return function_.signature.input_arg[i].name; }
  TensorType inputType(size_t, SymbolTable&) const override { return {}; }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return nodes_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }

 private:
  const FunctionDef& function_;
  std::vector<TfNodeDecoder> nodes_;
  std::vector<std::string> outputs_;
};

// "node:0" for "node", "node:1" as it is; control inputs ("^node") are not values.
std::string valueName(std::string_view input);

}  // namespace estuary::tensorflow_frontend
