#include "graph_importer.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <queue>

#include "estuary/frontend/frontend.h"
#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "node_translation.h"

namespace estuary::onnx_frontend {

std::string describeNode(const NodeProto& node, size_t index) {
  std::string text = node.name.empty() ? "node #" + std::to_string(index) : "node '" + std::string(node.name) + "'";
  return text + " (" + (node.domain.empty() ? "" : std::string(node.domain) + "::") + std::string(node.op_type) + ")";
}

// --- Symbols -------------------------------------------------------------------------------

std::string SymbolTable::unique(std::string name) {
  // Dims are identifiers in the IR: other characters become '_'.
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) name = "d_" + name;
  std::string candidate = name;
  for (int suffix = 1; taken_.count(candidate); ++suffix) candidate = name + "_" + std::to_string(suffix);
  taken_[candidate] = true;
  return candidate;
}

Dim SymbolTable::named(std::string_view dim_param) {
  auto found = by_param_.find(dim_param);
  if (found == by_param_.end()) {
    found = by_param_.emplace(std::string(dim_param), unique(std::string(dim_param))).first;
  }
  return Dim::symbol(found->second);
}

Dim SymbolTable::fresh(const std::string& hint) { return Dim::symbol(unique(hint)); }

// --- Graphs --------------------------------------------------------------------------------

Value* GraphImporter::lookup(std::string_view name) const {
  for (const GraphImporter* scope = this; scope; scope = scope->parent_) {
    auto found = scope->values_.find(name);
    if (found != scope->values_.end()) return found->second;
  }
  return nullptr;
}

void GraphImporter::define(std::string_view name, Value* value, std::string_view by) {
  if (!values_.emplace(name, value).second) {
    raise(model_.path, ": graph '", proto_.name, "': value '", name, "' is defined twice (again by ", by,
          "); ONNX values are defined once");
  }
  if (value->name().empty()) value->setName(std::string(name));
}

TensorType valueType(const ValueInfoProto& info, SymbolTable& symbols, const std::string& path, std::string_view what) {
  if (!info.has_type) return TensorType();
  const TypeProto& type = info.type;
  // Types Estuary lacks are listed like ops it lacks: the model is not claimed, not broken.
  if (type.kind != "tensor") {
    if (type.kind.empty()) raise(path, ": ", what, " '", info.name, "' has no type");
    throw UnsupportedOpsError(path, {UnsupportedOp{std::string(type.kind) + " values", "", 0, {std::string(info.name)}}});
  }
  DType dtype = DType::Undefined;
  if (type.elem_type != kUndefined) {
    std::optional<DType> known = dtypeFromOnnx(type.elem_type);
    if (!known) {
      throw UnsupportedOpsError(
          path, {UnsupportedOp{"element type " + std::string(onnxDataTypeName(type.elem_type)), "", 0,
                               {std::string(info.name)}}});
    }
    dtype = *known;
  }
  if (!type.has_shape) return TensorType(dtype, Shape::unranked());
  std::vector<Dim> dims;
  for (size_t d = 0; d < type.dims.size(); ++d) {
    const DimProto& dim = type.dims[d];
    if (dim.value && *dim.value >= 0) {
      dims.emplace_back(*dim.value);
    } else if (!dim.param.empty()) {
      dims.push_back(symbols.named(dim.param));
    } else {
      dims.push_back(symbols.fresh(std::string(info.name) + "_dim" + std::to_string(d)));
    }
  }
  return TensorType(dtype, Shape(std::move(dims)));
}

TensorType GraphImporter::typeOf(const ValueInfoProto& info, std::string_view what) {
  return valueType(info, model_.symbols, model_.path, what);
}

namespace {

// Every name the nodes of `graph` (and of their subgraphs) read.
void collectReads(const GraphProto& graph, std::vector<std::string_view>& names) {
  for (const NodeProto& node : graph.nodes) {
    for (std::string_view input : node.inputs) names.push_back(input);
    for (const AttributeProto& attr : node.attributes) {
      if (attr.g) collectReads(*attr.g, names);
      for (const auto& g : attr.graphs) collectReads(*g, names);
    }
  }
}

}  // namespace

std::vector<const PlacedNode*> GraphImporter::sortedNodes(const std::vector<PlacedNode>& nodes) const {
  // ONNX requires nodes in topological order but not every exporter obeys; the order is
  // restored here (stable: ready nodes are taken in file order) and a cycle is an error.
  const size_t count = nodes.size();
  std::unordered_map<std::string_view, size_t> producer;
  for (size_t i = 0; i < count; ++i) {
    for (std::string_view output : nodes[i].node.outputs) {
      if (!output.empty()) producer.emplace(output, i);
    }
  }
  std::vector<std::vector<size_t>> users(count);
  std::vector<size_t> pending(count, 0);
  for (size_t i = 0; i < count; ++i) {
    std::vector<std::string_view> reads(nodes[i].node.inputs.begin(), nodes[i].node.inputs.end());
    for (const AttributeProto& attr : nodes[i].node.attributes) {
      if (attr.g) collectReads(*attr.g, reads);
      for (const auto& g : attr.graphs) collectReads(*g, reads);
    }
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (std::string_view name : reads) {
      auto found = producer.find(name);
      if (name.empty() || found == producer.end() || found->second == i) {
        if (found != producer.end() && found->second == i && !name.empty()) {
          raise(model_.path, ": graph '", proto_.name, "': ", describeNode(nodes[i].node, i),
                " reads its own output '", name, "' (a cycle)");
        }
        continue;
      }
      users[found->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < count; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<const PlacedNode*> order;
  order.reserve(count);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(&nodes[i]);
    for (size_t user : users[i]) {
      if (--pending[user] == 0) ready.push(user);
    }
  }
  if (order.size() != count) {
    std::string stuck;
    size_t listed = 0;
    for (size_t i = 0; i < count && listed < 8; ++i) {
      if (pending[i] == 0) continue;
      stuck += (listed++ ? ", " : "") + describeNode(nodes[i].node, i);
    }
    raise(model_.path, ": graph '", proto_.name, "' has a cycle: ", count - order.size(),
          " nodes cannot be put in an order where every input is defined before its use, among them ", stuck);
  }
  return order;
}

void GraphImporter::inferAfter(Node* before) {
  // Types are inferred as nodes are made, so that translators see their inputs' types.
  for (Node* made = before ? before->next() : graph_.firstNode(); made; made = made->next()) {
    try {
      inferNode(*made, model_.known_values);
    } catch (const Error& error) {
      // A branch may be invalid for inputs it never runs on (ONNX's AffineGrid splits the
      // size into 4 in the branch for 2-D, which a 3-D size never takes): a subgraph's node
      // is judged when its If or Loop is inferred, knowing the condition where it is known.
      if (parent_) continue;
      raise(model_.path, ": ", error.what());
    }
  }
}

void GraphImporter::import() {
  // Initializers first: a graph input of the same name (models of IR version < 4 list every
  // initializer as an input too) is then a constant, not an input.
  std::vector<std::pair<std::string_view, Value*>> initializers;
  for (const TensorProto& tensor : proto_.initializers) {
    std::string what = "initializer '" + std::string(tensor.name) + "'";
    Node* constant = graph_.createNode("Constant", {});
    constant->setAttr("value", model_.tensors->read(tensor, what));
    initializers.emplace_back(tensor.name, constant->output());
  }
  for (const SparseTensorProto& sparse : proto_.sparse_initializers) {
    Node* constant = graph_.createNode("Constant", {});
    std::string what = "sparse initializer '" + std::string(sparse.values.name) + "'";
    constant->setAttr("value", model_.tensors->readSparse(sparse, what));
    initializers.emplace_back(sparse.values.name, constant->output());
  }
  inferAfter(nullptr);
  for (const ValueInfoProto& input : proto_.inputs) {
    bool is_initializer = std::any_of(initializers.begin(), initializers.end(),
                                      [&](const auto& entry) { return entry.first == input.name; });
    if (is_initializer) continue;
    Value* value = graph_.addInput(std::string(input.name), typeOf(input, "graph input"));
    define(input.name, value, "a graph input");
  }
  for (const auto& [name, value] : initializers) define(name, value, "an initializer");

  const std::vector<PlacedNode> nodes = model_.functions->expand(proto_.nodes, model_.opset);
  for (const PlacedNode* placed : sortedNodes(nodes)) {
    const NodeProto* node = &placed->node;
    const OpTranslator* translator = findTranslator(node->op_type);
    // The frontend checks every op before translating any (collecting all unsupported ones),
    // so a node without translator here is a bug of that check.
    if (!translator) raise(model_.path, ": no translator for ", describeNode(*node, 0));
    NodeTranslation translation(*this, *node, placed->opset);
    Node* before = graph_.lastNode();
    translator->translate(translation);
    inferAfter(before);
  }

  for (const ValueInfoProto& output : proto_.outputs) {
    Value* value = lookup(output.name);
    if (!value) {
      raise(model_.path, ": graph '", proto_.name, "': output '", output.name,
            "' is not defined by any node, initializer or input");
    }
    graph_.addOutput(value);
  }
}

std::shared_ptr<Graph> GraphImporter::importSubgraph(const GraphProto& proto, std::string_view attribute_name) {
  auto subgraph = std::make_shared<Graph>(proto.name.empty() ? std::string(attribute_name) : std::string(proto.name));
  GraphImporter(model_, proto, *subgraph, this).import();
  return subgraph;
}

}  // namespace estuary::onnx_frontend
