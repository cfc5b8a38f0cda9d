#include "onnx_decoder.h"

#include "estuary/frontend/frontend.h"
#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "onnx_translators.h"

namespace estuary::onnx_frontend {

OnnxModelContext::OnnxModelContext(std::string path_, const ModelProto& model_, TensorReader& tensors_, int64_t opset_)
    : path(std::move(path_)), model(&model_), tensors(&tensors_), opset(opset_) {
  for (const OperatorSetId& id : model_.opset_imports) domain_versions[std::string(id.domain)] = id.version;
  for (const FunctionProto& function : model_.functions) functions[{function.domain, function.name}] = &function;
}

// --- Nodes ---------------------------------------------------------------------------------

OnnxNodeDecoder::OnnxNodeDecoder(const OnnxModelContext& model, const NodeProto& node, NodeScope scope,
                                 const std::unordered_map<std::string_view, const ValueInfoProto*>* declared)
    : model_(model), node_(node), scope_(scope), declared_(declared) {
  // Subgraphs see the same function scope as the node holding them.
  for (const AttributeProto& attr : node_.attributes) {
    const AttributeProto* resolved = findAttribute(attr.name);
    if (!resolved) continue;
    if (resolved->g) subgraphs_.emplace(resolved->g.get(), std::make_shared<OnnxGraphDecoder>(model_, *resolved->g, scope_));
    for (const auto& graph : resolved->graphs) {
      if (graph) subgraphs_.emplace(graph.get(), std::make_shared<OnnxGraphDecoder>(model_, *graph, scope_));
    }
  }
}

int64_t OnnxNodeDecoder::version() const {
  if (isDefaultDomain(node_.domain)) return scope_.opset;
  auto found = model_.domain_versions.find(node_.domain);
  return found == model_.domain_versions.end() ? 0 : found->second;
}

const AttributeProto* OnnxNodeDecoder::findAttribute(std::string_view name) const {
  for (const AttributeProto& attr : node_.attributes) {
    if (attr.name != name) continue;
    if (attr.ref_attr_name.empty() || !scope_.call) return &attr;
    // The call's attribute by the referenced name, then the function's default.
    if (const AttributeProto* given = scope_.call->findAttribute(attr.ref_attr_name)) return given;
    for (const AttributeProto& fallback : scope_.function->attribute_defaults) {
      if (fallback.name == attr.ref_attr_name) return &fallback;
    }
    return nullptr;  // the call leaves the attribute unset, so the body node does too
  }
  return nullptr;
}

std::vector<std::string_view> OnnxNodeDecoder::attributeNames() const {
  std::vector<std::string_view> names;
  for (const AttributeProto& attr : node_.attributes) {
    if (findAttribute(attr.name)) names.push_back(attr.name);
  }
  return names;
}

TensorType OnnxNodeDecoder::outputType(size_t i) const {
  if (!declared_) return {};
  auto found = declared_->find(node_.outputs[i]);
  if (found == declared_->end() || !found->second->type || found->second->type->kind != "tensor") return {};
  std::optional<DType> dtype = dtypeFromOnnx(found->second->type->elem_type);
  return dtype ? TensorType(*dtype, Shape::unranked()) : TensorType();
}

AttrValue::GraphRef OnnxNodeDecoder::graphOf(const std::shared_ptr<GraphProto>& graph) const {
  if (!graph) return nullptr;
  auto found = subgraphs_.find(graph.get());
  return found == subgraphs_.end() ? nullptr : found->second;
}

std::vector<AttrValue::GraphRef> OnnxNodeDecoder::subgraphs() const {
  std::vector<AttrValue::GraphRef> graphs;
  for (const AttributeProto& attr : node_.attributes) {
    const AttributeProto* resolved = findAttribute(attr.name);
    if (!resolved) continue;
    if (resolved->g) graphs.push_back(graphOf(resolved->g));
    for (const auto& graph : resolved->graphs) graphs.push_back(graphOf(graph));
  }
  return graphs;
}

std::optional<AttrValue> OnnxNodeDecoder::attribute(std::string_view name) const {
  const AttributeProto* attr = findAttribute(name);
  if (!attr) return std::nullopt;
  const std::string where = model_.path + ": " + describeNode(*this, 0);
  if (!attr->ref_attr_name.empty()) {
    raise(where, ": attribute '", name, "' refers to a function attribute, which only nodes of functions may do");
  }
  const std::string what = "attribute '" + std::string(name) + "' of node '" + std::string(node_.name) + "'";
  AttrValue value;
  value.type_name = onnxAttrTypeName(attr->type);
  switch (attr->type) {
    case OnnxAttrType::Float: value.data = static_cast<double>(attr->f); break;
    case OnnxAttrType::Int: value.data = attr->i; break;
    case OnnxAttrType::String: value.data = std::string(attr->s); break;
    case OnnxAttrType::Tensor:
      if (!attr->t) raise(where, ": attribute '", name, "' is of type TENSOR but holds no tensor");
      value.data = model_.tensors->read(*attr->t, what);
      break;
    case OnnxAttrType::SparseTensor:
      if (!attr->sparse_tensor) raise(where, ": attribute '", name, "' is of type SPARSE_TENSOR but holds none");
      value.data = model_.tensors->readSparse(*attr->sparse_tensor, what);
      break;
    case OnnxAttrType::Graph: value.data = graphOf(attr->g); break;
    case OnnxAttrType::Floats: value.data = std::vector<double>(attr->floats.begin(), attr->floats.end()); break;
    case OnnxAttrType::Ints: value.data = attr->ints; break;
    case OnnxAttrType::Strings:
      value.data = std::vector<std::string>(attr->strings.begin(), attr->strings.end());
      break;
    case OnnxAttrType::Tensors: {
      std::vector<Tensor> tensors;
      for (const TensorProto& tensor : attr->tensors) tensors.push_back(model_.tensors->read(tensor, what));
      value.data = std::move(tensors);
      break;
    }
    case OnnxAttrType::Graphs: {
      std::vector<AttrValue::GraphRef> graphs;
      for (const auto& graph : attr->graphs) graphs.push_back(graphOf(graph));
      value.data = std::move(graphs);
      break;
    }
    default: break;  // type protos, sparse tensor lists, UNDEFINED: nothing Estuary reads
  }
  return value;
}

// --- Graphs --------------------------------------------------------------------------------

TensorType valueType(const ValueInfoProto& info, SymbolTable& symbols, const std::string& path, std::string_view what) {
  if (!info.type) return TensorType();
  const TypeProto& type = *info.type;
  // Types Estuary lacks are listed like ops it lacks: the model is not claimed, not broken.
  if (type.kind != "tensor") {
    if (type.kind.empty()) raise(path, ": ", what, " '", info.name, "' has no type");
    throw UnsupportedOpsError(path, {UnsupportedOp{std::string(type.kind) + " values", "", 0, {std::string(info.name)}}});
  }
  DType dtype = DType::Undefined;
  if (type.elem_type != kUndefined) {
    std::optional<DType> known = dtypeFromOnnx(type.elem_type);
    if (!known) {
      throw UnsupportedOpsError(path, {UnsupportedOp{"element type " + onnxDataTypeName(type.elem_type), "", 0,
                                                     {std::string(info.name)}}});
    }
    dtype = *known;
  }
  if (!type.shape) return TensorType(dtype, Shape::unranked());
  std::vector<Dim> dims;
  for (size_t d = 0; d < type.shape->dims.size(); ++d) {
    const DimProto& dim = type.shape->dims[d];
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

OnnxGraphDecoder::OnnxGraphDecoder(const OnnxModelContext& model, const GraphProto& graph, NodeScope scope)
    : model_(model), graph_(graph) {
  for (const ValueInfoProto& info : graph_.value_infos) declared_.emplace(info.name, &info);
  for (const ValueInfoProto& info : graph_.outputs) declared_.emplace(info.name, &info);
  nodes_.reserve(graph_.nodes.size());
  for (const NodeProto& node : graph_.nodes) nodes_.emplace_back(model_, node, scope, &declared_);
}

TensorType OnnxGraphDecoder::inputType(size_t i, SymbolTable& symbols) const {
  return valueType(graph_.inputs[i], symbols, model_.path, "graph input");
}

TensorType OnnxGraphDecoder::outputType(size_t i, SymbolTable& symbols) const {
  return valueType(graph_.outputs[i], symbols, model_.path, "graph output");
}

std::string_view OnnxGraphDecoder::weightName(size_t i) const {
  if (i < graph_.initializers.size()) return graph_.initializers[i].name;
  return graph_.sparse_initializers[i - graph_.initializers.size()].values.name;
}

TensorType OnnxGraphDecoder::weightType(size_t i) const {
  const bool dense = i < graph_.initializers.size();
  const TensorProto& proto = dense ? graph_.initializers[i] : graph_.sparse_initializers[i - graph_.initializers.size()].values;
  const std::vector<int64_t>& dims = dense ? proto.dims : graph_.sparse_initializers[i - graph_.initializers.size()].dims;
  std::vector<Dim> shape;
  for (int64_t dim : dims) {
    if (dim < 0) raise(model_.path, ": initializer '", proto.name, "' has an impossible shape (dimension ", dim, ")");
    shape.emplace_back(dim);
  }
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type);
  return TensorType(dtype.value_or(DType::Undefined), Shape(std::move(shape)));
}

Tensor OnnxGraphDecoder::weight(size_t i) const {
  if (i < graph_.initializers.size()) {
    const TensorProto& tensor = graph_.initializers[i];
    return model_.tensors->read(tensor, "initializer '" + std::string(tensor.name) + "'");
  }
  const SparseTensorProto& sparse = graph_.sparse_initializers[i - graph_.initializers.size()];
  return model_.tensors->readSparse(sparse, "sparse initializer '" + std::string(sparse.values.name) + "'");
}

// --- Functions -----------------------------------------------------------------------------

int64_t functionOpset(const FunctionProto& function, int64_t model_opset, const std::string& path) {
  for (const OperatorSetId& id : function.opset_imports) {
    if (!isDefaultDomain(id.domain)) continue;
    if (id.version > kNewestOpset) {
      raise(path, ": function '", function.domain, "::", function.name, "' imports opset ", id.version,
            " of the default domain, newer than the newest Estuary knows (", kNewestOpset, ")");
    }
    return id.version;
  }
  return model_opset;
}

namespace {

// A function's body as a graph: its formal inputs and outputs, its nodes in the function's
// opset, resolving attribute references against `call`.
class OnnxFunctionDecoder final : public GraphDecoder {
 public:
  OnnxFunctionDecoder(const OnnxModelContext& model, const FunctionProto& function, const OnnxNodeDecoder& call)
      : function_(function) {
    NodeScope scope{functionOpset(function, call.scope().opset, model.path), &function, &call};
    nodes_.reserve(function.nodes.size());
    for (const NodeProto& node : function.nodes) nodes_.emplace_back(model, node, scope, nullptr);
  }

  std::string name() const override { return std::string(function_.name); }
  size_t numInputs() const override { return function_.inputs.size(); }
  std::string_view inputName(size_t i) const override { return function_.inputs[i]; }
  TensorType inputType(size_t, SymbolTable&) const override { return {}; }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return nodes_[i]; }
  size_t numOutputs() const override { return function_.outputs.size(); }
  std::string_view outputName(size_t i) const override { return function_.outputs[i]; }

 private:
  const FunctionProto& function_;
  std::vector<OnnxNodeDecoder> nodes_;
};

}  // namespace

std::shared_ptr<const GraphDecoder> functionCalledBy(const OnnxModelContext& model, const NodeDecoder& node) {
  // Every node of an ONNX model is decoded by OnnxNodeDecoder.
  const auto& call = static_cast<const OnnxNodeDecoder&>(node);
  auto found = model.functions.find({call.proto().domain, call.proto().op_type});
  if (found == model.functions.end()) return nullptr;
  return std::make_shared<OnnxFunctionDecoder>(model, *found->second, call);
}

}  // namespace estuary::onnx_frontend
