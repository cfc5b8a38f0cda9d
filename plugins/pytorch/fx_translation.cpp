#include "fx_translation.h"

#include "fx_importer.h"

namespace estuary::pytorch {

Graph& FxTranslation::graph() { return importer_.graph(); }

const FxArg* FxTranslation::arg(size_t position, std::string_view name) const {
  const FxArg* found = nullptr;
  if (position < node_.args.size()) {
    found = &node_.args[position];
  } else {
    for (const auto& [key, value] : node_.kwargs) {
      if (key == name) found = &value;
    }
  }
  return found && !found->isNone() ? found : nullptr;
}

const FxArg& FxTranslation::requiredArg(size_t position, std::string_view name) const {
  const FxArg* found = arg(position, name);
  if (!found) fail("argument '", name, "' is missing");
  return *found;
}

Value* FxTranslation::valueOf(const FxArg& reference) const { return resultsOf(reference).at(0); }

const std::vector<Value*>& FxTranslation::resultsOf(const FxArg& reference) const {
  if (!reference.isNode()) fail("expected a tensor argument, found a constant");
  return importer_.resultsOf(reference.node, node_);
}

Value* FxTranslation::tensor(size_t position, std::string_view name) const {
  const FxArg& found = requiredArg(position, name);
  if (!found.isNode()) fail("argument '", name, "' must be a tensor");
  return valueOf(found);
}

Value* FxTranslation::optionalTensor(size_t position, std::string_view name) const {
  const FxArg* found = arg(position, name);
  return found ? tensor(position, name) : nullptr;
}

int64_t FxTranslation::intArg(size_t position, std::string_view name, std::optional<int64_t> fallback) const {
  const FxArg* found = arg(position, name);
  if (!found) {
    if (!fallback) fail("argument '", name, "' is missing");
    return *fallback;
  }
  if (found->kind == FxArg::Kind::Bool) return found->bool_value;
  if (found->kind != FxArg::Kind::Int) fail("argument '", name, "' must be a constant integer");
  return found->int_value;
}

double FxTranslation::floatArg(size_t position, std::string_view name, std::optional<double> fallback) const {
  const FxArg* found = arg(position, name);
  if (!found) {
    if (!fallback) fail("argument '", name, "' is missing");
    return *fallback;
  }
  if (found->kind == FxArg::Kind::Int) return static_cast<double>(found->int_value);
  if (found->kind == FxArg::Kind::Bool) return found->bool_value;
  if (found->kind != FxArg::Kind::Float) fail("argument '", name, "' must be a constant number");
  return found->float_value;
}

bool FxTranslation::boolArg(size_t position, std::string_view name, std::optional<bool> fallback) const {
  const FxArg* found = arg(position, name);
  if (!found) {
    if (!fallback) fail("argument '", name, "' is missing");
    return *fallback;
  }
  if (found->kind == FxArg::Kind::Int) return found->int_value != 0;
  if (found->kind != FxArg::Kind::Bool) fail("argument '", name, "' must be a constant bool");
  return found->bool_value;
}

std::string FxTranslation::stringArg(size_t position, std::string_view name,
                                     std::optional<std::string> fallback) const {
  const FxArg* found = arg(position, name);
  if (!found) {
    if (!fallback) fail("argument '", name, "' is missing");
    return *fallback;
  }
  if (found->kind != FxArg::Kind::String) fail("argument '", name, "' must be a string");
  return found->string_value;
}

std::vector<int64_t> FxTranslation::intsArg(size_t position, std::string_view name,
                                            std::optional<std::vector<int64_t>> fallback) const {
  const FxArg* found = arg(position, name);
  if (!found) {
    if (!fallback) fail("argument '", name, "' is missing");
    return *fallback;
  }
  if (found->kind == FxArg::Kind::Int) return {found->int_value};  // int[2] given as one int
  if (found->kind != FxArg::Kind::List) fail("argument '", name, "' must be a list of integers");
  std::vector<int64_t> values;
  for (const FxArg& item : found->list) {
    if (item.kind != FxArg::Kind::Int) fail("argument '", name, "' must hold constant integers");
    values.push_back(item.int_value);
  }
  return values;
}

Value* FxTranslation::sizeValue(const FxArg& size) {
  if (size.kind == FxArg::Kind::Int) return constantInts({size.int_value});
  if (!size.isNode()) fail("a size must be an integer or a symbolic size");
  const FxNode& source = importer_.fx().nodes.at(size.node);
  if (source.kind == FxNode::Kind::SymInt) return importer_.symbolValue(source.sizes.at(0), node_);
  Value* value = valueOf(size);
  if (value->dtype() != DType::I64 || !value->shape().isRanked() || value->shape().rank() > 1) {
    fail("size argument '", source.name, "' is ", value->type().str(), ", expected a symbolic size");
  }
  if (value->shape().rank() == 0) return emitValue("Reshape", {value, constantInts({1})});
  return value;
}

Value* FxTranslation::sizesArg(size_t position, std::string_view name) {
  const FxArg& sizes = requiredArg(position, name);
  if (sizes.kind != FxArg::Kind::List) fail("argument '", name, "' must be a list of sizes");
  return sizesValue(sizes);
}

Value* FxTranslation::sizesValue(const FxArg& sizes) {
  std::vector<int64_t> ints;
  for (const FxArg& item : sizes.list) {
    if (item.kind != FxArg::Kind::Int) {
      std::vector<Value*> pieces;
      for (const FxArg& size : sizes.list) pieces.push_back(sizeValue(size));
      return emitValue("Concat", pieces, {{"axis", int64_t{0}}});
    }
    ints.push_back(item.int_value);
  }
  return constantInts(ints);
}

Value* FxTranslation::tensorOrScalar(size_t position, std::string_view name, DType dtype) {
  const FxArg& found = requiredArg(position, name);
  switch (found.kind) {
    case FxArg::Kind::Node: return cast(valueOf(found), dtype);
    case FxArg::Kind::Int: return scalar(dtype, static_cast<double>(found.int_value));
    case FxArg::Kind::Float: return scalar(dtype, found.float_value);
    case FxArg::Kind::Bool: return scalar(dtype, found.bool_value ? 1.0 : 0.0);
    default: fail("argument '", name, "' must be a tensor or a number");
  }
}

DType FxTranslation::resultDType(size_t i) const {
  if (i >= node_.result_dtypes.size() || node_.result_dtypes[i] == DType::Undefined) {
    fail("the dtype of result ", i, " is not known");
  }
  return node_.result_dtypes[i];
}

int64_t FxTranslation::axis(int64_t dim, size_t rank) const {
  int64_t r = static_cast<int64_t>(rank);
  int64_t normalized = dim < 0 ? dim + std::max<int64_t>(r, 1) : dim;
  if (normalized < 0 || normalized >= std::max<int64_t>(r, 1)) {
    fail("dim ", dim, " is out of range for a tensor of rank ", rank);
  }
  return normalized;
}

size_t FxTranslation::rankOf(const Value* value) const {
  if (!value->shape().isRanked()) fail("the rank of '", value->name(), "' is not known");
  return value->shape().rank();
}

Node* FxTranslation::emit(std::string_view op_type, const std::vector<Value*>& inputs, Attributes attributes,
                          size_t num_outputs) {
  Node* last = graph().lastNode();
  Node* node = graph().createNode(op_type, inputs, num_outputs);
  node->setName(node_.name);
  for (auto& [name, value] : attributes) node->setAttr(name, std::move(value));
  importer_.inferFrom(last, node_);
  return node;
}

Value* FxTranslation::constant(Tensor tensor) {
  Node* last = graph().lastNode();
  Node* node = graph().createNode("Constant", {});
  node->setAttr("value", std::move(tensor));
  importer_.inferFrom(last, node_);
  return node->output();
}

Value* FxTranslation::constantInts(const std::vector<int64_t>& values) {
  return constant(Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values));
}

Value* FxTranslation::scalar(DType dtype, double value) {
  switch (dtype) {
    case DType::F32: return constant(Tensor::scalar<float>(dtype, static_cast<float>(value)));
    case DType::F64: return constant(Tensor::scalar<double>(dtype, value));
    case DType::I64: return constant(Tensor::scalar<int64_t>(dtype, static_cast<int64_t>(value)));
    case DType::I32: return constant(Tensor::scalar<int32_t>(dtype, static_cast<int32_t>(value)));
    case DType::Bool: return constant(Tensor::scalar<uint8_t>(dtype, value != 0.0));
    default: {
      Value* wide = constant(Tensor::scalar<double>(DType::F64, value));
      return cast(wide, dtype);
    }
  }
}

Value* FxTranslation::cast(Value* value, DType dtype) {
  if (value->dtype() == dtype) return value;
  return emitValue("Cast", {value}, {{"to", dtype}});
}

void FxTranslation::failWith(const std::string& message) const {
  raise("FX node '", node_.name, "' (", node_.target, "): ", message);
}

}  // namespace estuary::pytorch
