#include "fx_translation.h"

#include <algorithm>
#include <cctype>
#include <functional>

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
    case FxArg::Kind::Node: {
      // A symbolic size used as an operand is a number: a 0-d tensor, like the int it stands for.
      const FxNode& source = decoder_.graph().fx().nodes.at(found.node);
      if (source.kind != FxNode::Kind::SymInt) return cast(valueOf(found), dtype);
      return cast(emitValue("Reshape", {sizeValue(found), constantInts({})}), dtype);
    }
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

namespace {

// A symbolic size as sympy prints it ("s27", "64*s77", "s0 + 1", "-s1 + 2*s0", "(s0//2)",
// "Max(1, s0)", "Mod(s0, 4)", "s0**2"), built into a 1-element i64 value from the values of
// its symbols: sizes are non-negative, so // is Div.
class SizeExpression {
 public:
  SizeExpression(FxTranslation& t, const std::string& text, std::function<Value*(const std::string&)> symbol)
      : t_(t), text_(text), symbol_(std::move(symbol)) {}

  Value* build() {
    Value* value = sum();
    skipSpaces();
    if (at_ != text_.size()) fail("unexpected '" + text_.substr(at_) + "'");
    return value;
  }

 private:
  Value* sum() {
    Value* value = product();
    for (skipSpaces(); at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-'); skipSpaces()) {
      const char op = text_[at_++];
      value = t_.emitValue(op == '+' ? "Add" : "Sub", {value, product()});
    }
    return value;
  }

  Value* product() {
    Value* value = power();
    for (skipSpaces(); at_ < text_.size(); skipSpaces()) {
      if (text_.compare(at_, 2, "//") == 0) {
        at_ += 2;
        value = t_.emitValue("Div", {value, power()});
      } else if (text_[at_] == '*' && text_.compare(at_, 2, "**") != 0) {
        ++at_;
        value = t_.emitValue("Mul", {value, power()});
      } else if (text_[at_] == '/') {
        fail("a true division, which a size cannot hold");
      } else {
        break;
      }
    }
    return value;
  }

  Value* power() {
    Value* base = unary();
    skipSpaces();
    if (text_.compare(at_, 2, "**") != 0) return base;
    at_ += 2;
    skipSpaces();
    const int64_t exponent = integer();
    if (exponent < 1 || exponent > 8) fail("the power " + std::to_string(exponent));
    Value* value = base;
    for (int64_t i = 1; i < exponent; ++i) value = t_.emitValue("Mul", {value, base});
    return value;
  }

  Value* unary() {
    skipSpaces();
    if (at_ < text_.size() && text_[at_] == '-') {
      ++at_;
      return t_.emitValue("Neg", {unary()});
    }
    return primary();
  }

  Value* primary() {
    skipSpaces();
    if (at_ >= text_.size()) fail("it ends early");
    if (text_[at_] == '(') {
      ++at_;
      Value* value = sum();
      expect(')');
      return value;
    }
    if (std::isdigit(static_cast<unsigned char>(text_[at_]))) return t_.constantInts({integer()});
    std::string name;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) {
      name.push_back(text_[at_++]);
    }
    if (name.empty()) fail("unexpected '" + text_.substr(at_) + "'");
    skipSpaces();
    if (at_ >= text_.size() || text_[at_] != '(') return symbol_(name);
    ++at_;
    std::vector<Value*> arguments = {sum()};
    for (skipSpaces(); at_ < text_.size() && text_[at_] == ','; skipSpaces()) {
      ++at_;
      arguments.push_back(sum());
    }
    expect(')');
    if ((name == "Max" || name == "Min") && !arguments.empty()) return t_.emitValue(name, arguments);
    if ((name == "Mod" || name == "PythonMod") && arguments.size() == 2) {
      return t_.emitValue("Mod", arguments, {{"fmod", int64_t{0}}});
    }
    if (name == "FloorDiv" && arguments.size() == 2) return t_.emitValue("Div", arguments);
    if (name == "CeilDiv" && arguments.size() == 2) {  // (a + b - 1) // b
      Value* numerator = t_.emitValue("Sub", {t_.emitValue("Add", arguments), t_.constantInts({1})});
      return t_.emitValue("Div", {numerator, arguments[1]});
    }
    fail("the function " + name + " with " + std::to_string(arguments.size()) + " arguments");
  }

  int64_t integer() {
    size_t end = at_;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
    if (end == at_) fail("expected an integer at '" + text_.substr(at_) + "'");
    int64_t value = std::stoll(text_.substr(at_, end - at_));
    at_ = end;
    return value;
  }

  void expect(char c) {
    skipSpaces();
    if (at_ >= text_.size() || text_[at_] != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  void skipSpaces() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    t_.fail("the symbolic size ", text_, " is not translated: ", what);
  }

  FxTranslation& t_;
  const std::string& text_;
  std::function<Value*(const std::string&)> symbol_;
  size_t at_ = 0;
};

bool isSymbolName(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

Value* FxTranslation::symbolValue(const std::string& expression) {
  std::map<std::string, Value*>& known = decoder_.graph().symbolValues();
  auto found = known.find(expression);
  if (found != known.end()) return found->second;
  const FxGraph& fx = decoder_.graph().fx();
  // A size the caller passes at run time.
  for (const FxNode& input : fx.nodes) {
    if (input.kind != FxNode::Kind::SymInt || !input.runtime || input.sizes.at(0) != expression) continue;
    Value* scalar = nullptr;
    context_.translator().lookup(input.name, scalar);
    Node* size = emit("Reshape", {scalar, constantInts({1})});
    size->setName(input.name + "_value");
    return known[expression] = size->output();
  }
  // A dim of a tensor input.
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
  if (isSymbolName(expression)) {
    fail("the symbolic size ", expression, " is neither a dim of a tensor input nor given at run time, so its value "
         "is unknown");
  }
  // An expression of symbols known here.
  return known[expression] = SizeExpression(*this, expression, [this](const std::string& symbol) {
    return symbolValue(symbol);
  }).build();
}

}  // namespace estuary::pytorch
