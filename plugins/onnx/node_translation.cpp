#include "node_translation.h"

#include <algorithm>

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "graph_importer.h"

namespace estuary::onnx_frontend {

Graph& NodeTranslation::graph() { return importer_.graph(); }

void NodeTranslation::failWith(const std::string& message) const {
  std::string node = proto_.name.empty() ? "unnamed node" : "node '" + std::string(proto_.name) + "'";
  raise(importer_.model().path, ": ", node, " (", proto_.op_type, ", opset ", opset_, "): ", message);
}

Value* NodeTranslation::input(size_t i) const {
  if (i >= proto_.inputs.size() || proto_.inputs[i].empty()) return nullptr;
  Value* value = importer_.lookup(proto_.inputs[i]);
  if (!value) fail("input ", i, " '", proto_.inputs[i], "' is not defined by any node, initializer or graph input");
  return value;
}

std::vector<Value*> NodeTranslation::inputs() const {
  std::vector<Value*> values;
  for (size_t i = 0; i < proto_.inputs.size(); ++i) values.push_back(input(i));
  // Absent optional inputs at the end are left off, as the IR does.
  while (!values.empty() && values.back() == nullptr) values.pop_back();
  return values;
}

const Tensor* NodeTranslation::constantInput(size_t i) const {
  Value* value = input(i);
  Node* producer = value ? value->producer() : nullptr;
  if (!producer || !producer->is("Constant")) return nullptr;
  const Attribute* attr = producer->attr("value");
  return attr && attr->kind() == AttrKind::Tensor ? &attr->asTensor() : nullptr;
}

const AttributeProto* NodeTranslation::attr(std::string_view name) const {
  for (const AttributeProto& attr : proto_.attributes) {
    if (attr.name == name) return &attr;
  }
  return nullptr;
}

namespace {

void expectType(const NodeTranslation& node, const AttributeProto& attr, OnnxAttrType expected) {
  if (attr.type != expected) {
    node.fail("attribute '", attr.name, "' is ", onnxAttrTypeName(attr.type), ", expected ", onnxAttrTypeName(expected));
  }
}

}  // namespace

int64_t NodeTranslation::intAttr(std::string_view name, int64_t fallback) const {
  const AttributeProto* found = attr(name);
  if (!found) return fallback;
  expectType(*this, *found, OnnxAttrType::Int);
  return found->i;
}

float NodeTranslation::floatAttr(std::string_view name, float fallback) const {
  const AttributeProto* found = attr(name);
  if (!found) return fallback;
  expectType(*this, *found, OnnxAttrType::Float);
  return found->f;
}

std::string NodeTranslation::stringAttr(std::string_view name, std::string fallback) const {
  const AttributeProto* found = attr(name);
  if (!found) return fallback;
  expectType(*this, *found, OnnxAttrType::String);
  return std::string(found->s);
}

std::optional<std::vector<int64_t>> NodeTranslation::intsAttr(std::string_view name) const {
  const AttributeProto* found = attr(name);
  if (!found) return std::nullopt;
  expectType(*this, *found, OnnxAttrType::Ints);
  return found->ints;
}

Node* NodeTranslation::emit(std::string_view op_type, const std::vector<Value*>& inputs, size_t num_outputs) {
  Node* node = graph().createNode(op_type, inputs, num_outputs);
  node->setName(std::string(proto_.name));
  return node;
}

Value* NodeTranslation::constant(Tensor tensor) {
  Node* node = graph().createNode("Constant", {});
  node->setAttr("value", std::move(tensor));
  return node->output();
}

Value* NodeTranslation::constantInts(const std::vector<int64_t>& values) {
  return constant(Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values));
}

Value* NodeTranslation::constantScalar(int64_t value) { return constant(Tensor::scalar<int64_t>(DType::I64, value)); }

void NodeTranslation::copyAttributes(Node* node, std::initializer_list<std::string_view> skip) {
  const OpSchema* schema = OpRegistry::global().find(*node);
  if (!schema) fail("no schema for ", node->qualifiedOpType());
  for (const AttributeProto& attr : proto_.attributes) {
    if (std::find(skip.begin(), skip.end(), attr.name) != skip.end()) continue;
    if (!attr.ref_attr_name.empty()) {
      fail("attribute '", attr.name, "' refers to a function attribute, which only functions may do");
    }
    const AttrSpec* spec = schema->findAttr(attr.name);
    if (!spec) fail("attribute '", attr.name, "' is not an attribute of ", opType(), " in the newest opset");
    std::string name(attr.name);
    auto require = [&](OnnxAttrType expected) {
      if (attr.type != expected) {
        fail("attribute '", attr.name, "' is ", onnxAttrTypeName(attr.type), ", expected ",
             onnxAttrTypeName(expected));
      }
    };
    switch (spec->kind) {
      case AttrKind::Int: require(OnnxAttrType::Int); node->setAttr(name, attr.i); break;
      case AttrKind::Float: require(OnnxAttrType::Float); node->setAttr(name, static_cast<double>(attr.f)); break;
      case AttrKind::String: require(OnnxAttrType::String); node->setAttr(name, std::string(attr.s)); break;
      case AttrKind::Type: {
        require(OnnxAttrType::Int);
        std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(attr.i));
        if (!dtype) {
          fail("attribute '", attr.name, "' is element type ", onnxDataTypeName(static_cast<int32_t>(attr.i)),
               ", which Estuary does not support");
        }
        node->setAttr(name, *dtype);
        break;
      }
      case AttrKind::Tensor:
        require(OnnxAttrType::Tensor);
        node->setAttr(name, importer_.model().tensors->read(*attr.t, "attribute '" + name + "' of node '" +
                                                                          std::string(proto_.name) + "'"));
        break;
      case AttrKind::Graph: require(OnnxAttrType::Graph); node->setAttr(name, importer_.importSubgraph(*attr.g, name)); break;
      case AttrKind::Ints: require(OnnxAttrType::Ints); node->setAttr(name, attr.ints); break;
      case AttrKind::Floats:
        require(OnnxAttrType::Floats);
        node->setAttr(name, std::vector<double>(attr.floats.begin(), attr.floats.end()));
        break;
      case AttrKind::Strings: {
        require(OnnxAttrType::Strings);
        node->setAttr(name, std::vector<std::string>(attr.strings.begin(), attr.strings.end()));
        break;
      }
    }
  }
}

void NodeTranslation::setOutputs(const std::vector<Value*>& values) {
  for (size_t i = 0; i < proto_.outputs.size(); ++i) {
    if (proto_.outputs[i].empty()) continue;
    if (i >= values.size() || values[i] == nullptr) {
      fail("output ", i, " '", proto_.outputs[i], "' is not produced by Estuary's translation of ", opType());
    }
    importer_.define(proto_.outputs[i], values[i], "node '" + std::string(proto_.name) + "'");
  }
}

}  // namespace estuary::onnx_frontend
