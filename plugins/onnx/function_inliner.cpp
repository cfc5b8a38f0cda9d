#include "function_inliner.h"

#include <functional>
#include <memory>
#include <unordered_map>

#include "estuary/support/error.h"
#include "graph_importer.h"
#include "node_translation.h"

namespace estuary::onnx_frontend {
FunctionInliner::FunctionInliner(const ModelProto& model, std::string path) : path_(std::move(path)) {
  for (const FunctionProto& function : model.functions) {
    functions_[{function.domain, function.name}] = &function;
  }
}

const FunctionProto* FunctionInliner::find(const NodeProto& node) const {
  auto found = functions_.find({node.domain, node.op_type});
  return found == functions_.end() ? nullptr : found->second;
}

int64_t FunctionInliner::opsetOf(const FunctionProto& function, int64_t model_opset) const {
  for (const OperatorSetId& id : function.opset_imports) {
    if (isDefaultDomain(id.domain)) {
      if (id.version > kNewestOpset) {
        raise(path_, ": function '", function.domain, "::", function.name, "' imports opset ", id.version,
              " of the default domain, newer than the newest Estuary knows (", kNewestOpset, ")");
      }
      return id.version;
    }
  }
  return model_opset;
}

std::string_view FunctionInliner::keep(std::string name) { return names_.emplace_back(std::move(name)); }

std::vector<PlacedNode> FunctionInliner::expand(const std::vector<NodeProto>& nodes, int64_t opset) {
  std::vector<PlacedNode> out;
  out.reserve(nodes.size());
  for (const NodeProto& node : nodes) expandInto(node, opset, 0, out);
  return out;
}

void FunctionInliner::expandInto(const NodeProto& call, int64_t opset, int depth, std::vector<PlacedNode>& out) {
  const FunctionProto* function = find(call);
  if (!function) {
    out.push_back({call, opset});
    return;
  }
  if (depth >= kMaxCallDepth) {
    raise(path_, ": function '", function->name, "' calls functions more than ", kMaxCallDepth,
          " levels deep (a call cycle?)");
  }
  // Values of the body: formal parameters are the call's values, the rest get a prefix
  // unique to this call.
  std::string base = call.name.empty() ? std::string(function->name) : std::string(call.name);
  int& count = calls_[base];
  std::string prefix = count++ == 0 ? base : base + "_" + std::to_string(count - 1);
  std::unordered_map<std::string_view, std::string_view> names;
  for (size_t i = 0; i < function->inputs.size(); ++i) {
    names[function->inputs[i]] = i < call.inputs.size() ? call.inputs[i] : std::string_view();
  }
  for (size_t i = 0; i < function->outputs.size(); ++i) {
    if (i < call.outputs.size() && !call.outputs[i].empty()) names[function->outputs[i]] = call.outputs[i];
  }
  auto rename = [&](std::string_view name) -> std::string_view {
    if (name.empty()) return name;
    auto found = names.find(name);
    if (found != names.end()) return found->second;
    std::string_view fresh = keep(prefix + "/" + std::string(name));
    names.emplace(name, fresh);
    return fresh;
  };
  // The call's attributes by name, then the function's defaults.
  auto referenced = [&](std::string_view name) -> const AttributeProto* {
    for (const AttributeProto& attr : call.attributes) {
      if (attr.name == name) return &attr;
    }
    for (const AttributeProto& attr : function->attribute_defaults) {
      if (attr.name == name) return &attr;
    }
    return nullptr;
  };
  std::function<void(NodeProto&)> renameNode;
  std::function<std::shared_ptr<GraphProto>(const GraphProto&)> renameGraph = [&](const GraphProto& graph) {
    auto copy = std::make_shared<GraphProto>(graph);
    for (ValueInfoProto& info : copy->inputs) info.name = rename(info.name);
    for (ValueInfoProto& info : copy->outputs) info.name = rename(info.name);
    for (ValueInfoProto& info : copy->value_infos) info.name = rename(info.name);
    for (TensorProto& tensor : copy->initializers) tensor.name = rename(tensor.name);
    for (NodeProto& node : copy->nodes) renameNode(node);
    return copy;
  };
  renameNode = [&](NodeProto& node) {
    for (std::string_view& input : node.inputs) input = rename(input);
    for (std::string_view& output : node.outputs) output = rename(output);
    node.name = keep(prefix + "/" + std::string(node.name.empty() ? node.op_type : node.name));
    std::vector<AttributeProto> attributes;
    for (const AttributeProto& attr : node.attributes) {
      if (attr.ref_attr_name.empty()) {
        attributes.push_back(attr);
      } else if (const AttributeProto* value = referenced(attr.ref_attr_name)) {
        attributes.push_back(*value);
        attributes.back().name = attr.name;
      }  // else: the call leaves the attribute unset, so the body node does too
    }
    for (AttributeProto& attr : attributes) {
      if (attr.g) attr.g = renameGraph(*attr.g);
      for (auto& graph : attr.graphs) graph = renameGraph(*graph);
    }
    node.attributes = std::move(attributes);
  };
  const int64_t body_opset = opsetOf(*function, opset);
  for (const NodeProto& body_node : function->nodes) {
    NodeProto node = body_node;
    renameNode(node);
    expandInto(node, body_opset, depth + 1, out);
  }
}

}  // namespace estuary::onnx_frontend
