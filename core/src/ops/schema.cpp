#include "estuary/ops/schema.h"

#include <algorithm>
#include <set>

#include "ops/register.h"

namespace estuary {

// --- Type-constraint helpers ---------------------------------------------------------------

std::vector<DType> floatTypes() { return {DType::F32, DType::F16, DType::BF16, DType::F64}; }

std::vector<DType> integerTypes() {
  return {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8};
}

std::vector<DType> signedTypes() {
  return {DType::F32, DType::F16, DType::BF16, DType::F64,
          DType::I8,  DType::I16, DType::I32,  DType::I64};
}

std::vector<DType> numericTypes() {
  std::vector<DType> types = floatTypes();
  for (DType type : integerTypes()) types.push_back(type);
  return types;
}

std::vector<DType> allTypes() {
  std::vector<DType> types = numericTypes();
  types.push_back(DType::Bool);
  return types;
}

std::string joinDTypes(const std::vector<DType>& types) {
  std::string text;
  for (DType type : types) {
    if (!text.empty()) text += ", ";
    text += dtypeName(type);
  }
  return text;
}

namespace {

// A fixed element type written in place of a type variable ("i64"); "?" is not one.
std::optional<DType> fixedDType(std::string_view type_var) {
  std::optional<DType> type = parseDType(type_var);
  if (type == DType::Undefined) return std::nullopt;
  return type;
}

// The spec of operand `index` (the last, variadic spec covers the tail).
const OperandSpec* specAt(const std::vector<OperandSpec>& specs, size_t index) {
  if (index < specs.size()) return &specs[index];
  if (!specs.empty() && specs.back().arity == Arity::Variadic) return &specs.back();
  return nullptr;
}

// The fewest operands a node may have: every Single operand present, and the variadic
// tail's min_count.
size_t minimumCount(const std::vector<OperandSpec>& specs) {
  size_t minimum = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].arity == Arity::Single) minimum = i + 1;
    if (specs[i].arity == Arity::Variadic) minimum = i + specs[i].min_count;
  }
  return minimum;
}

std::string operandNames(const std::vector<OperandSpec>& specs) {
  std::string text;
  for (const OperandSpec& spec : specs) {
    if (!text.empty()) text += ", ";
    text += spec.name;
    if (spec.arity == Arity::Optional) text += '?';
    if (spec.arity == Arity::Variadic) text += "...";
  }
  return text;
}

// "2 inputs (A, B)"
std::string describeCount(size_t count, const char* noun, const std::vector<OperandSpec>& specs) {
  std::string text = std::to_string(count) + ' ' + noun + (count == 1 ? "" : "s");
  if (!specs.empty()) text += " (" + operandNames(specs) + ")";
  return text;
}

}  // namespace

// --- InferenceContext ----------------------------------------------------------------------

InferenceContext::InferenceContext(const Node& node, const OpSchema& schema,
                                   KnownValueMap* known_values, const OpRegistry* registry)
    : node_(node),
      schema_(schema),
      known_values_(known_values),
      registry_(registry ? registry : &OpRegistry::global()),
      bindings_(schema.typeConstraints().size(), DType::Undefined),
      outputs_(node.numOutputs()),
      output_values_(node.numOutputs()) {}

const TensorType& InferenceContext::inputType(size_t i) const {
  static const TensorType kAbsent;
  return hasInput(i) ? node_.input(i)->type() : kAbsent;
}

const Tensor* InferenceContext::constantInput(size_t i) const {
  if (!hasInput(i)) return nullptr;
  const Node* producer = node_.input(i)->producer();
  if (!producer || !producer->is("Constant")) return nullptr;
  const Attribute* value = producer->attr("value");
  if (!value || value->kind() != AttrKind::Tensor) return nullptr;
  return &value->asTensor();
}

namespace {

bool readInteger(const Tensor& tensor, int64_t index, int64_t& out) {
  switch (tensor.dtype()) {
    case DType::I64: out = tensor.data<int64_t>()[index]; return true;
    case DType::I32: out = tensor.data<int32_t>()[index]; return true;
    case DType::I16: out = tensor.data<int16_t>()[index]; return true;
    case DType::I8: out = tensor.data<int8_t>()[index]; return true;
    case DType::U8: out = tensor.data<uint8_t>()[index]; return true;
    case DType::Bool: out = tensor.data<uint8_t>()[index] != 0; return true;
    default: return false;
  }
}

}  // namespace

std::optional<std::vector<SymInt>> InferenceContext::knownValues(size_t i) const {
  if (!hasInput(i)) return std::nullopt;
  const Value* value = node_.input(i);
  if (std::optional<std::vector<SymInt>> values = knownValuesOf(value)) return values;
  if (const Tensor* tensor = constantInput(i)) {
    if (tensor->shape().size() > 1 || tensor->numElements() > int64_t(kMaxKnownValues)) {
      return std::nullopt;
    }
    std::vector<SymInt> values;
    for (int64_t k = 0; k < tensor->numElements(); ++k) {
      int64_t element;
      if (!readInteger(*tensor, k, element)) return std::nullopt;
      values.emplace_back(element);
    }
    return values;
  }
  // An empty integer tensor needs no producer to be known.
  const TensorType& type = value->type();
  if ((isInteger(type.dtype) || type.dtype == DType::Bool) && type.shape.isRanked() &&
      type.shape.rank() == 1 && type.shape[0] == Dim(0)) {
    return std::vector<SymInt>{};
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> InferenceContext::knownInts(size_t i) const {
  std::optional<std::vector<SymInt>> values = knownValues(i);
  if (!values) return std::nullopt;
  std::vector<int64_t> ints;
  ints.reserve(values->size());
  for (const SymInt& element : *values) {
    if (!element.isInt()) return std::nullopt;
    ints.push_back(element.intValue());
  }
  return ints;
}

const Attribute* InferenceContext::attr(std::string_view name) const {
  if (const Attribute* value = node_.attr(name)) return value;
  const AttrSpec* spec = schema_.findAttr(name);
  return spec && spec->default_value ? &*spec->default_value : nullptr;
}

const Attribute& InferenceContext::requireAttr(std::string_view name) const {
  const Attribute* value = attr(name);
  if (!value) fail("attribute '", name, "' is required");
  return *value;
}

int64_t InferenceContext::intAttr(std::string_view name) const { return requireAttr(name).asInt(); }
double InferenceContext::floatAttr(std::string_view name) const {
  return requireAttr(name).asFloat();
}
const std::string& InferenceContext::stringAttr(std::string_view name) const {
  return requireAttr(name).asString();
}
DType InferenceContext::typeAttr(std::string_view name) const { return requireAttr(name).asType(); }
const std::vector<int64_t>& InferenceContext::intsAttr(std::string_view name) const {
  return requireAttr(name).asInts();
}
const std::vector<double>& InferenceContext::floatsAttr(std::string_view name) const {
  return requireAttr(name).asFloats();
}

DType InferenceContext::outputDType(size_t i) const {
  const OperandSpec* spec = schema_.outputSpec(i);
  if (!spec) return DType::Undefined;
  if (const TypeConstraint* constraint = schema_.findTypeConstraint(spec->type_var)) {
    DType bound = bindings_[constraint - schema_.typeConstraints().data()];
    if (bound != DType::Undefined) return bound;
    return constraint->allowed.size() == 1 ? constraint->allowed[0] : DType::Undefined;
  }
  return fixedDType(spec->type_var).value_or(DType::Undefined);
}

void InferenceContext::setOutputType(size_t i, TensorType type) {
  if (i < outputs_.size()) outputs_[i] = std::move(type);
}

void InferenceContext::setOutputShape(size_t i, Shape shape) {
  if (i < outputs_.size()) outputs_[i] = TensorType(outputDType(i), std::move(shape));
}

void InferenceContext::setOutputValues(size_t i, std::vector<SymInt> values) {
  if (i < output_values_.size() && values.size() <= kMaxKnownValues) {
    output_values_[i] = std::move(values);
  }
}

std::vector<TensorType> InferenceContext::inferSubgraph(Graph& graph,
                                                        const std::vector<TensorType>& input_types) {
  const std::vector<Value*>& inputs = graph.inputs();
  for (size_t k = 0; k < input_types.size() && k < inputs.size(); ++k) {
    std::optional<TensorType> merged = mergeTypes(inputs[k]->type(), input_types[k]);
    if (!merged) {
      fail("subgraph '", graph.name(), "' input ", k, " '", inputs[k]->name(), "' is declared ",
           inputs[k]->type().str(), " but receives ", input_types[k].str());
    }
    inputs[k]->setType(std::move(*merged));
  }
  KnownValueMap local;
  KnownValueMap& known = known_values_ ? *known_values_ : local;
  for (Node* inner : graph.nodes()) inferNode(*inner, known, *registry_);
  std::vector<TensorType> types;
  types.reserve(graph.numOutputs());
  for (size_t k = 0; k < graph.numOutputs(); ++k) types.push_back(graph.output(k)->type());
  return types;
}

std::optional<std::vector<SymInt>> InferenceContext::knownValuesOf(const Value* value) const {
  if (!known_values_) return std::nullopt;
  auto found = known_values_->find(value);
  if (found == known_values_->end()) return std::nullopt;
  return found->second;
}

void InferenceContext::failWith(const std::string& message) const {
  raise(node_.describe(), ": ", message);
}

// --- OpSchema --------------------------------------------------------------------------------

OpSchema::OpSchema(std::string op_type, std::string domain)
    : op_type_(std::move(op_type)), domain_(std::move(domain)) {}

OpSchema& OpSchema::doc(std::string text) {
  doc_ = std::move(text);
  return *this;
}

OpSchema& OpSchema::input(std::string name, std::string type_var, Arity arity, bool homogeneous,
                          uint32_t min_count) {
  inputs_.push_back({std::move(name), std::move(type_var), arity, homogeneous, min_count});
  return *this;
}

OpSchema& OpSchema::output(std::string name, std::string type_var, Arity arity, bool homogeneous,
                           uint32_t min_count) {
  outputs_.push_back({std::move(name), std::move(type_var), arity, homogeneous, min_count});
  return *this;
}

OpSchema& OpSchema::attr(std::string name, AttrKind kind, std::optional<Attribute> default_value,
                         bool required) {
  attrs_.push_back({std::move(name), kind, std::move(default_value), required});
  return *this;
}

OpSchema& OpSchema::typeConstraint(std::string var, std::vector<DType> allowed) {
  type_constraints_.push_back({std::move(var), std::move(allowed)});
  return *this;
}

OpSchema& OpSchema::inference(InferenceFn fn) {
  inference_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::keepAlive(std::shared_ptr<const void> owner) {
  keep_alive_ = std::move(owner);
  return *this;
}

std::string OpSchema::qualifiedName() const {
  return domain_.empty() ? op_type_ : domain_ + "::" + op_type_;
}

const OperandSpec* OpSchema::inputSpec(size_t i) const { return specAt(inputs_, i); }

const OperandSpec* OpSchema::outputSpec(size_t i) const { return specAt(outputs_, i); }

const AttrSpec* OpSchema::findAttr(std::string_view name) const {
  for (const AttrSpec& spec : attrs_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const TypeConstraint* OpSchema::findTypeConstraint(std::string_view var) const {
  for (const TypeConstraint& constraint : type_constraints_) {
    if (constraint.var == var) return &constraint;
  }
  return nullptr;
}

void OpSchema::check() const {
  const std::string name = qualifiedName();
  if (op_type_.empty()) raise("op schema with an empty op type (domain '", domain_, "')");
  std::set<std::string_view> seen;
  for (const TypeConstraint& constraint : type_constraints_) {
    if (!seen.insert(constraint.var).second) {
      raise("op schema '", name, "': type constraint '", constraint.var, "' is declared twice");
    }
    if (constraint.allowed.empty()) {
      raise("op schema '", name, "': type constraint '", constraint.var, "' allows no type");
    }
    if (fixedDType(constraint.var)) {
      raise("op schema '", name, "': type constraint '", constraint.var,
            "' is named like an element type");
    }
  }
  auto check_operands = [&](const std::vector<OperandSpec>& specs, const char* what) {
    std::set<std::string_view> names;
    for (size_t i = 0; i < specs.size(); ++i) {
      const OperandSpec& spec = specs[i];
      if (!names.insert(spec.name).second) {
        raise("op schema '", name, "': ", what, " '", spec.name, "' is declared twice");
      }
      if (spec.arity == Arity::Variadic && i + 1 != specs.size()) {
        raise("op schema '", name, "': variadic ", what, " '", spec.name, "' is not the last");
      }
      if (!findTypeConstraint(spec.type_var) && !fixedDType(spec.type_var)) {
        raise("op schema '", name, "': ", what, " '", spec.name, "' has type '", spec.type_var,
              "', which is neither a type constraint nor an element type");
      }
    }
  };
  check_operands(inputs_, "input");
  check_operands(outputs_, "output");
  std::set<std::string_view> attr_names;
  for (const AttrSpec& spec : attrs_) {
    if (!attr_names.insert(spec.name).second) {
      raise("op schema '", name, "': attribute '", spec.name, "' is declared twice");
    }
    if (spec.default_value && spec.default_value->kind() != spec.kind) {
      raise("op schema '", name, "': attribute '", spec.name, "' is ", attrKindName(spec.kind),
            " but its default is ", attrKindName(spec.default_value->kind()));
    }
    if (spec.default_value && spec.required) {
      raise("op schema '", name, "': attribute '", spec.name, "' is required yet has a default");
    }
  }
}

void OpSchema::bindTypes(const Node& node, std::vector<DType>& bindings) const {
  bindings.assign(type_constraints_.size(), DType::Undefined);
  std::vector<size_t> binder(type_constraints_.size());  // the input that bound each variable
  for (size_t i = 0; i < node.numInputs(); ++i) {
    const Value* value = node.input(i);
    const OperandSpec* spec = inputSpec(i);
    if (!value || !spec || value->dtype() == DType::Undefined) continue;
    DType dtype = value->dtype();
    const TypeConstraint* constraint = findTypeConstraint(spec->type_var);
    if (!constraint) {
      std::optional<DType> fixed = fixedDType(spec->type_var);
      if (fixed && dtype != *fixed) {
        raise(node.describe(), ": input ", i, " '", spec->name, "' has dtype ", dtypeName(dtype),
              ", expected ", dtypeName(*fixed));
      }
      continue;
    }
    if (std::find(constraint->allowed.begin(), constraint->allowed.end(), dtype) ==
        constraint->allowed.end()) {
      raise(node.describe(), ": input ", i, " '", spec->name, "' has dtype ", dtypeName(dtype),
            ", allowed: ", joinDTypes(constraint->allowed));
    }
    if (!spec->homogeneous) continue;
    size_t index = constraint - type_constraints_.data();
    if (bindings[index] == DType::Undefined) {
      bindings[index] = dtype;
      binder[index] = i;
    } else if (bindings[index] != dtype) {
      size_t first = binder[index];
      raise(node.describe(), ": input ", i, " '", spec->name, "' has dtype ", dtypeName(dtype),
            " but input ", first, " '", inputSpec(first)->name, "' has ",
            dtypeName(bindings[index]), "; both are of type ", constraint->var,
            " and must agree");
    }
  }
}

void OpSchema::checkStructure(const Node& node) const {
  auto check_count = [&](size_t count, const std::vector<OperandSpec>& specs, const char* noun) {
    bool variadic = !specs.empty() && specs.back().arity == Arity::Variadic;
    size_t minimum = minimumCount(specs);
    if (!variadic && count > specs.size()) {
      raise(node.describe(), ": takes at most ", describeCount(specs.size(), noun, specs), ", got ",
            count);
    }
    if (count < minimum) {
      raise(node.describe(), ": takes at least ", describeCount(minimum, noun, specs), ", got ",
            count);
    }
  };
  check_count(node.numInputs(), inputs_, "input");
  check_count(node.numOutputs(), outputs_, "output");
  for (size_t i = 0; i < node.numInputs(); ++i) {
    const OperandSpec* spec = inputSpec(i);
    if (!node.input(i) && spec->arity != Arity::Optional) {
      raise(node.describe(), ": input ", i, " '", spec->name, "' is required but absent");
    }
  }
  for (const auto& [name, value] : node.attributes()) {
    const AttrSpec* spec = findAttr(name);
    if (!spec) {
      std::string known;
      for (const AttrSpec& candidate : attrs_) {
        known += known.empty() ? "" : ", ";
        known += candidate.name;
      }
      raise(node.describe(), ": unknown attribute '", name, "'; ", qualifiedName(),
            known.empty() ? " takes no attributes" : " takes: " + known);
    }
    if (value.kind() != spec->kind) {
      raise(node.describe(), ": attribute '", name, "' must be ", attrKindName(spec->kind), ", got ",
            attrKindName(value.kind()));
    }
  }
  for (const AttrSpec& spec : attrs_) {
    if (spec.required && !node.hasAttr(spec.name)) {
      raise(node.describe(), ": missing required attribute '", spec.name, "' (",
            attrKindName(spec.kind), ")");
    }
  }
}

void OpSchema::validate(const Node& node) const {
  checkStructure(node);
  std::vector<DType> bindings;
  bindTypes(node, bindings);
}

void OpSchema::infer(InferenceContext& context) const {
  const Node& node = context.node();
  checkStructure(node);
  bindTypes(node, context.bindings_);
  for (size_t i = 0; i < context.outputs_.size(); ++i) {
    context.outputs_[i] = TensorType(context.outputDType(i), Shape::unranked());
  }
  if (inference_) inference_(context);
}

// --- OpRegistry ------------------------------------------------------------------------------

OpRegistry& OpRegistry::global() {
  // Never destroyed: schemas registered by plugins hold their libraries, and unloading
  // those during static destruction would happen in no defined order.
  static OpRegistry* registry = [] {
    auto* created = new OpRegistry;
    registerCoreOps(*created);
    return created;
  }();
  return *registry;
}

void OpRegistry::add(OpSchema schema) {
  schema.check();
  auto& entries = schemas_[schema.opType()];
  for (const auto& existing : entries) {
    if (existing->domain() == schema.domain()) {
      raise("op '", schema.qualifiedName(), "' is already registered");
    }
  }
  entries.push_back(std::make_unique<OpSchema>(std::move(schema)));
  ++size_;
}

const OpSchema* OpRegistry::find(std::string_view op_type, std::string_view domain) const {
  auto found = schemas_.find(op_type);
  if (found == schemas_.end()) return nullptr;
  for (const auto& schema : found->second) {
    if (schema->domain() == domain) return schema.get();
  }
  return nullptr;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> result;
  result.reserve(size_);
  for (const auto& [op_type, entries] : schemas_) {
    for (const auto& schema : entries) result.push_back(schema.get());
  }
  std::sort(result.begin(), result.end(), [](const OpSchema* a, const OpSchema* b) {
    return a->qualifiedName() < b->qualifiedName();
  });
  return result;
}

// --- Merging and per-node inference ---------------------------------------------------------

namespace {

bool mergeDim(const Dim& existing, const Dim& inferred, Dim& out) {
  if (existing.isStatic()) {
    if (inferred.isStatic() && inferred.value() != existing.value()) return false;
    out = existing;
  } else if (inferred.isUnknown()) {
    out = existing;
  } else {
    out = inferred;
  }
  return true;
}

}  // namespace

std::optional<TensorType> mergeTypes(const TensorType& existing, const TensorType& inferred) {
  TensorType merged;
  if (existing.dtype != DType::Undefined && inferred.dtype != DType::Undefined &&
      existing.dtype != inferred.dtype) {
    return std::nullopt;
  }
  merged.dtype = inferred.dtype != DType::Undefined ? inferred.dtype : existing.dtype;
  if (!inferred.shape.isRanked()) {
    merged.shape = existing.shape;
  } else if (!existing.shape.isRanked()) {
    merged.shape = inferred.shape;
  } else {
    if (existing.shape.rank() != inferred.shape.rank()) return std::nullopt;
    std::vector<Dim> dims(existing.shape.rank());
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!mergeDim(existing.shape[d], inferred.shape[d], dims[d])) return std::nullopt;
    }
    merged.shape = Shape(std::move(dims));
  }
  return merged;
}

InferStatus inferNode(Node& node, KnownValueMap& known_values, const OpRegistry& registry) {
  const OpSchema* schema = registry.find(node);
  if (!schema) {
    for (Value* output : node.outputs()) known_values.erase(output);
    return InferStatus::NoSchema;
  }
  InferenceContext context(node, *schema, &known_values, &registry);
  schema->infer(context);
  bool changed = false;
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    Value* output = node.output(i);
    const TensorType& inferred = context.outputTypes()[i];
    std::optional<TensorType> merged = mergeTypes(output->type(), inferred);
    if (!merged) {
      std::string label = output->name().empty() ? "" : " '" + output->name() + "'";
      raise(node.describe(), ": output ", i, label, " is declared ", output->type().str(),
            " but inference gives ", inferred.str());
    }
    if (*merged != output->type()) {
      output->setType(std::move(*merged));
      changed = true;
    }
    const std::optional<std::vector<SymInt>>& values = context.outputValues()[i];
    if (values) {
      known_values[output] = *values;
    } else {
      known_values.erase(output);
    }
  }
  return changed ? InferStatus::Changed : InferStatus::Unchanged;
}

}  // namespace estuary
