#include "estuary/transforms/einsum_lowering.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "transforms/transform_helpers.h"

namespace estuary {

namespace {

struct Equation {
  std::string a, b, out;
};

// "abc, cde -> abde" as its terms; nullopt for other operand counts, an ellipsis, or a label
// repeated within a term.
std::optional<Equation> parse(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  if (text.find("...") != std::string::npos) return std::nullopt;
  size_t arrow = text.find("->");
  std::string inputs = text.substr(0, arrow);
  size_t comma = inputs.find(',');
  if (comma == std::string::npos || inputs.find(',', comma + 1) != std::string::npos) return std::nullopt;
  Equation equation{inputs.substr(0, comma), inputs.substr(comma + 1), {}};
  if (arrow != std::string::npos) {
    equation.out = text.substr(arrow + 2);
  } else {
    // The implicit output: the labels that appear once, in alphabetical order.
    for (char label = 'A'; label <= 'z'; ++label) {
      auto count = std::count(inputs.begin(), inputs.end(), label);
      if (count == 1) equation.out.push_back(label);
    }
  }
  for (const std::string* term : {&equation.a, &equation.b, &equation.out}) {
    std::string sorted = *term;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
    for (char label : *term) {
      if (!std::isalpha(static_cast<unsigned char>(label))) return std::nullopt;
    }
  }
  return equation;
}

bool has(const std::string& term, char label) { return term.find(label) != std::string::npos; }

// Where each label of `to` is in `from`: a Transpose's perm.
std::vector<int64_t> permutation(const std::string& from, const std::string& to) {
  std::vector<int64_t> perm;
  for (char label : to) perm.push_back(static_cast<int64_t>(from.find(label)));
  return perm;
}

std::optional<int64_t> dimOf(const Value* value, const std::string& labels, char label) {
  const Dim& dim = value->shape()[labels.find(label)];
  return dim.isStatic() ? std::optional<int64_t>(dim.value()) : std::nullopt;
}

// One way to lower an Einsum: `x` (labels `a`) as the MatMul's left operand, `y` (labels `b`)
// as its right, and the shapes of the Reshapes that merge label groups (empty: none).
struct Plan {
  Value* x;
  Value* y;
  std::string a, b, batch, contracted, left, right;
  std::vector<int64_t> lhs_shape, rhs_shape, product_shape;
  bool in_output_order;  // the product needs no Transpose
};

std::optional<Plan> planFor(Value* x, const std::string& a, Value* y, const std::string& b, const std::string& out) {
  Plan plan{x, y, a, b, {}, {}, {}, {}, {}, {}, {}, false};
  for (char label : out) {
    if (has(a, label) && has(b, label)) plan.batch.push_back(label);
    if (has(a, label) && !has(b, label)) plan.left.push_back(label);
    if (!has(a, label) && has(b, label)) plan.right.push_back(label);
    if (!has(a, label) && !has(b, label)) return std::nullopt;
  }
  for (char label : a + b) {
    bool both = has(a, label) && has(b, label);
    if (!both && !has(out, label)) return std::nullopt;  // summed away in one operand
    if (both && !has(out, label) && has(a, label) && !has(plan.contracted, label)) plan.contracted.push_back(label);
  }
  if (plan.contracted.empty() || plan.left.empty() || plan.right.empty()) return std::nullopt;
  // A size of each label, from whichever operand knows it.
  auto size = [&](char label) {
    std::optional<int64_t> known = has(a, label) ? dimOf(x, a, label) : std::nullopt;
    return known ? known : (has(b, label) ? dimOf(y, b, label) : std::nullopt);
  };
  std::optional<int64_t> k = 1;
  for (char label : plan.contracted) k = k && size(label) ? std::optional<int64_t>(*k * *size(label)) : std::nullopt;
  const size_t leading = plan.batch.size();
  // MatMul broadcasts the leading dims of a 2-D right operand's partner, so without batch
  // labels the left labels stay apart; with them, each group is one dim.
  const bool merge_left = leading > 0 && plan.left.size() > 1;
  if (plan.contracted.size() > 1 || merge_left) {
    if (!k) return std::nullopt;
    plan.lhs_shape.assign(leading == 0 ? plan.left.size() : leading, 0);
    if (leading > 0) plan.lhs_shape.push_back(-1);
    plan.lhs_shape.push_back(*k);
  }
  if (plan.contracted.size() > 1 || plan.right.size() > 1) {
    if (!k) return std::nullopt;
    plan.rhs_shape.assign(leading, 0);
    plan.rhs_shape.push_back(*k);
    plan.rhs_shape.push_back(-1);
  }
  if (merge_left || plan.right.size() > 1) {
    plan.product_shape.assign(leading == 0 ? plan.left.size() : leading, 0);
    int unknown = 0;
    for (char label : (leading == 0 ? plan.right : plan.left + plan.right)) {
      std::optional<int64_t> dim = size(label);
      unknown += !dim;
      plan.product_shape.push_back(dim.value_or(-1));
    }
    if (unknown > 1) return std::nullopt;
  }
  plan.in_output_order = plan.batch + plan.left + plan.right == out;
  return plan;
}

class Emitter {
 public:
  Emitter(Graph& graph, Node& einsum) : graph_(graph), einsum_(einsum) {}

  Value* emit(const Plan& plan, const std::string& out) {
    Value* lhs = reshaped(permuted(plan.x, plan.a, plan.batch + plan.left + plan.contracted), plan.lhs_shape);
    Value* rhs = reshaped(permuted(plan.y, plan.b, plan.batch + plan.contracted + plan.right), plan.rhs_shape);
    Value* product = createInferred(graph_, &einsum_, "MatMul", {lhs, rhs})->output();
    return permuted(reshaped(product, plan.product_shape), plan.batch + plan.left + plan.right, out);
  }

 private:
  Value* permuted(Value* value, const std::string& from, const std::string& to) {
    if (from == to) return value;
    return createInferred(graph_, &einsum_, "Transpose", {value}, {{"perm", permutation(from, to)}})->output();
  }

  Value* reshaped(Value* value, const std::vector<int64_t>& shape) {
    if (shape.empty()) return value;
    Tensor target = Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(shape.size())}, shape);
    Value* constant = createInferred(graph_, &einsum_, "Constant", {}, {{"value", std::move(target)}})->output();
    return createInferred(graph_, &einsum_, "Reshape", {value, constant})->output();
  }

  Graph& graph_;
  Node& einsum_;
};

bool ranked(const Value* value, const std::string& term) {
  return value && value->shape().isRanked() && value->shape().rank() == term.size();
}

int64_t lowerIn(Graph& graph) {
  int64_t lowered = 0;
  for (Node* node : graph.nodeList()) {
    for (Graph* subgraph : node->subgraphs()) lowered += lowerIn(*subgraph);
    if (!node->is("Einsum") || node->numInputs() != 2 || node->numOutputs() != 1) continue;
    std::optional<Equation> equation = parse(node->stringAttr("equation", ""));
    if (!equation || !ranked(node->input(0), equation->a) || !ranked(node->input(1), equation->b)) continue;
    // Either operand may be the left one; the order whose product is already in the output's
    // order needs no Transpose after the MatMul.
    std::optional<Plan> plan = planFor(node->input(0), equation->a, node->input(1), equation->b, equation->out);
    if (!plan || !plan->in_output_order) {
      std::optional<Plan> swapped = planFor(node->input(1), equation->b, node->input(0), equation->a, equation->out);
      if (swapped && (!plan || swapped->in_output_order)) plan = swapped;
    }
    if (!plan) continue;
    Value* result = Emitter(graph, *node).emit(*plan, equation->out);
    result->setName(node->output()->name());
    node->output()->replaceAllUsesWith(result);
    graph.eraseNode(node);
    ++lowered;
  }
  return lowered;
}

class EinsumLowering : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override { return {lowerEinsums(graph)}; }
};

}  // namespace

int64_t lowerEinsums(Graph& graph) { return lowerIn(graph); }

PassInfo einsumLoweringPass() {
  PassInfo info;
  info.name = "lower_einsum";
  info.description =
      "Rewrites two-operand Einsums that are (batched) matrix products into Transposes, "
      "Reshapes and a MatMul.";
  info.factory = [](const PassOptions&) { return std::make_unique<EinsumLowering>(); };
  return info;
}

}  // namespace estuary
