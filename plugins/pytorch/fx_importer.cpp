#include "fx_importer.h"

#include "estuary/frontend/frontend.h"
#include "fx_translation.h"

namespace estuary::pytorch {

FxImporter::FxImporter(const FxGraph& fx)
    : fx_(fx), graph_(std::make_unique<Graph>(fx.name.empty() ? "torch_fx" : fx.name)),
      results_(fx.nodes.size()) {}

std::unique_ptr<Graph> FxImporter::import() {
  // Every untranslatable target at once, so that a user sees the whole list.
  std::map<std::string, std::vector<std::string>> missing;
  for (const FxNode& node : fx_.nodes) {
    if (node.kind == FxNode::Kind::Call && !findTranslator(node.target)) missing[node.target].push_back(node.name);
  }
  if (!missing.empty()) {
    std::vector<UnsupportedOp> ops;
    for (auto& [target, nodes] : missing) ops.push_back(UnsupportedOp{target, "", 0, std::move(nodes)});
    throw UnsupportedOpsError("FX graph '" + graph_->name() + "'", std::move(ops));
  }
  for (size_t i = 0; i < fx_.nodes.size(); ++i) {
    if (fx_.nodes[i].kind == FxNode::Kind::Call) {
      importCall(i);
    } else {
      importPlaceholder(i);
    }
  }
  FxNode output_node;
  output_node.name = "output";
  for (const FxArg& output : fx_.outputs) {
    if (!output.isNode()) raise("FX graph '", graph_->name(), "': an output is not a tensor node");
    graph_->addOutput(resultsOf(output.node, output_node).at(0));
  }
  return std::move(graph_);
}

const std::vector<Value*>& FxImporter::resultsOf(size_t node, const FxNode& user) const {
  if (node >= results_.size() || results_[node].empty()) {
    raise("FX node '", user.name, "' refers to node #", node, ", which has no tensor result here");
  }
  return results_[node];
}

void FxImporter::inferFrom(Node* before, const FxNode& fx_node) {
  for (Node* made = before ? before->next() : graph_->firstNode(); made; made = made->next()) {
    try {
      inferNode(*made, known_values_);
    } catch (const Error& error) {
      raise("FX node '", fx_node.name, "' (", fx_node.target, "): ", error.what());
    }
  }
}

Value* FxImporter::symbolValue(const std::string& expression, const FxNode& user) {
  auto found = symbols_.find(expression);
  if (found != symbols_.end()) return found->second;
  for (size_t i = 0; i < fx_.nodes.size(); ++i) {
    const FxNode& node = fx_.nodes[i];
    if (node.kind != FxNode::Kind::Input) continue;
    for (size_t d = 0; d < node.sizes.size(); ++d) {
      if (node.sizes[d] != expression) continue;
      Node* last = graph_->lastNode();
      Node* shape = graph_->createNode("Shape", {results_[i].at(0)});
      shape->setAttr("start", static_cast<int64_t>(d));
      shape->setAttr("end", static_cast<int64_t>(d + 1));
      shape->setName(node.name + "_size" + std::to_string(d));
      inferFrom(last, user);
      return symbols_[expression] = shape->output();
    }
  }
  raise("FX node '", user.name, "': the symbolic size ", expression,
        " is not a dim of any tensor input, so its value is unknown at run time");
}

void FxImporter::importPlaceholder(size_t index) {
  const FxNode& node = fx_.nodes[index];
  if (node.kind == FxNode::Kind::SymInt) return;  // made on first use, see symbolValue()
  std::vector<Dim> dims;
  for (const std::string& size : node.sizes) {
    std::optional<Dim> dim = Dim::parse(size);
    if (!dim) raise("FX placeholder '", node.name, "': size '", size, "' is not a dim expression");
    dims.push_back(*dim);
  }
  TensorType type(node.dtype, Shape(std::move(dims)));
  if (node.kind == FxNode::Kind::Input) {
    results_[index] = {graph_->addInput(node.name, type)};
    return;
  }
  if (node.weight.dtype() != node.dtype || Shape::ofStatic(node.weight.shape()) != type.shape) {
    raise("FX placeholder '", node.name, "': its tensor is ", dtypeName(node.weight.dtype()),
          Shape::ofStatic(node.weight.shape()).str(), ", the graph expects ", type.str());
  }
  Node* last = graph_->lastNode();
  Node* constant = graph_->createNode("Constant", {});
  constant->setAttr("value", node.weight);
  constant->setName(node.name);
  constant->output()->setName(node.name);
  inferFrom(last, node);
  results_[index] = {constant->output()};
}

void FxImporter::importCall(size_t index) {
  const FxNode& node = fx_.nodes[index];
  FxTranslation translation(*this, node);
  std::vector<Value*> results = (*findTranslator(node.target))(translation);
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i] && results[i]->name().empty() && !results[i]->isGraphInput()) {
      results[i]->setName(results.size() == 1 ? node.name : node.name + "_" + std::to_string(i));
    }
  }
  results_[index] = std::move(results);
}

}  // namespace estuary::pytorch
