#include "fx_translation.h"

#include "estuary/frontend/graph_translator.h"

namespace estuary::pytorch {

FxTranslation::FxTranslation(NodeContext& context)
    : context_(context), decoder_(static_cast<const FxNodeDecoder&>(context.decoder())) {}

const FxArg* FxTranslation::arg(size_t position, std::string_view name) const {
  const FxArg* found = nullptr;
  if (position < node().args.size()) {
    found = &node().args[position];
  } else {
    for (const auto& [key, value] : node().kwargs) {
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

Value* FxTranslation::resultOf(const FxArg& reference, size_t i) const {
  if (!reference.isNode()) fail("expected a tensor argument, found a constant");
  const FxGraphDecoder& graph = decoder_.graph();
  Value* value = nullptr;
  if (reference.node >= graph.fx().nodes.size() ||
      !context_.translator().lookup(graph.resultName(reference.node, i), value) || !value) {
    fail("refers to result ", i, " of node #", reference.node, ", which has no tensor value here");
  }
  return value;
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
  const FxNode& source = decoder_.graph().fx().nodes.at(size.node);
  if (source.kind == FxNode::Kind::SymInt) return symbolValue(source.sizes.at(0));
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
  if (i >= node().result_dtypes.size() || node().result_dtypes[i] == DType::Undefined) {
    fail("the dtype of result ", i, " is not known");
  }
  return node().result_dtypes[i];
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

Value* FxTranslation::symbolValue(const std::string& expression) {
  std::map<std::string, Value*>& known = decoder_.graph().symbolValues();
  auto found = known.find(expression);
  if (found != known.end()) return found->second;
  const FxGraph& fx = decoder_.graph().fx();
  for (const FxNode& input : fx.nodes) {
    if (input.kind != FxNode::Kind::Input) continue;
    for (size_t d = 0; d < input.sizes.size(); ++d) {
      if (input.sizes[d] != expression) continue;
      Value* tensor = nullptr;
      context_.translator().lookup(input.name, tensor);
      Node* shape = emit("Shape", {tensor}, {{"start", static_cast<int64_t>(d)}, {"end", static_cast<int64_t>(d + 1)}});
      shape->setName(input.name + "_size" + std::to_string(d));
      return known[expression] = shape->output();
    }
  }
  fail("the symbolic size ", expression, " is not a dim of any tensor input, so its value is unknown at run time");
}

}  // namespace estuary::pytorch
