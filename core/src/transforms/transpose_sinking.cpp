#include "estuary/transforms/transpose_sinking.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "estuary/ops/schema.h"
#include "transforms/transform_helpers.h"

namespace estuary {

namespace {

enum class Kind { None, Elementwise, Pad, Reduce, Concat };

Kind kindOf(const Node& node) {
  static const std::unordered_set<std::string_view> kElementwise = {
      "Abs",   "Neg",    "Relu",     "Sigmoid",     "Tanh",     "Exp",       "Log",        "Sqrt",
      "Reciprocal", "Erf", "Floor",  "Ceil",        "Round",    "Sign",      "Sin",        "Cos",
      "Identity", "Not", "Cast",     "LeakyRelu",   "Elu",      "Selu",      "Softplus",   "Softsign",
      "HardSigmoid", "HardSwish", "Gelu", "Mish",   "Celu",     "ThresholdedRelu", "IsNaN", "IsInf",
      "Clip",  "Add",    "Sub",      "Mul",         "Div",      "Pow",       "Max",        "Min",
      "Sum",   "Mean",   "Where",    "Equal",       "Less",     "Greater",   "LessOrEqual", "GreaterOrEqual",
      "And",   "Or",     "Xor",      "Mod",         "PRelu"};
  static const std::unordered_set<std::string_view> kReductions = {
      "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
      "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  if (!node.domain().empty() || node.numOutputs() != 1 || !node.subgraphs().empty()) return Kind::None;
  if (kElementwise.count(node.opType())) return Kind::Elementwise;
  if (kReductions.count(node.opType())) return Kind::Reduce;
  if (node.is("Pad")) return Kind::Pad;
  if (node.is("Concat")) return Kind::Concat;
  return Kind::None;
}

std::vector<int64_t> inverseOf(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

bool rankedWithin(const Value* value, size_t rank) {
  return value->shape().isRanked() && value->shape().rank() <= rank;
}

// Whether every dim is a static 1: such a value broadcasts the same in any axis order.
bool allOnes(const Value* value) {
  if (!value->shape().isRanked()) return false;
  for (const Dim& dim : value->shape().dims()) {
    if (!dim.isStatic() || dim.value() != 1) return false;
  }
  return true;
}

// Whether `value`, made rank `inverse.size()` with leading 1s, keeps the order of its dims
// that may not be 1 under the permutation `inverse`: permuting it is then a reshape
// (a squeeze-and-excite's [N,1,1,C] scale), which canonicalization makes one.
bool permutesForFree(const Value* value, const std::vector<int64_t>& inverse) {
  if (!rankedWithin(value, inverse.size())) return false;
  const std::vector<Dim>& dims = value->shape().dims();
  const size_t pad = inverse.size() - dims.size();
  int64_t last = -1;
  for (int64_t axis : inverse) {
    if (static_cast<size_t>(axis) < pad) continue;
    const Dim& dim = dims[static_cast<size_t>(axis) - pad];
    if (dim.isStatic() && dim.value() == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

class Sinker {
 public:
  explicit Sinker(Graph& graph) : graph_(graph) {}

  int64_t run() {
    int64_t changes = 0;
    // A move erases nodes after the one moved (the Transposes it cancels), so each walk
    // starts again from the top; it ends when a whole walk moves nothing.
    for (Node* node = graph_.firstNode(); node;) {
      int64_t done = sink(*node);
      changes += done;
      node = done ? graph_.firstNode() : node->next();
    }
    for (Node* node = graph_.firstNode(); node; node = node->next()) {
      for (Graph* subgraph : node->subgraphs()) changes += Sinker(*subgraph).run();
    }
    return changes;
  }

 private:
  // Whether `value` is computed from Constants alone (and so folds at build time).
  bool isConstant(const Value* value) {
    auto known = constant_.find(value);
    if (known != constant_.end()) return known->second;
    const Node* producer = value->producer();
    bool constant = producer && producer->graph() == &graph_ && producer->subgraphs().empty() &&
                    (producer->is("Constant") || producer->numInputs() > 0);
    for (size_t i = 0; constant && producer && i < producer->numInputs(); ++i) {
      constant = !producer->input(i) || isConstant(producer->input(i));
    }
    constant_[value] = constant;
    return constant;
  }

  // The Transpose producing `value` if it may move: in this graph, over a value that is
  // not a constant (a Transpose of a weight folds instead).
  Node* movable(const Value* value) {
    Node* producer = value ? value->producer() : nullptr;
    if (!producer || !producer->is("Transpose") || producer->graph() != &graph_ || !producer->input(0) ||
        isConstant(producer->input(0)) || !permutationOf(*producer)) {
      return nullptr;
    }
    return producer;
  }

  // The permutation a Transpose must have for `node` to take it, when `node` can.
  std::optional<std::vector<int64_t>> takes(const Node& node) {
    auto known = takes_.find(&node);
    if (known != takes_.end()) return known->second;
    std::optional<std::vector<int64_t>> perm = decideTakes(node);
    takes_[&node] = perm;
    return perm;
  }

  std::optional<std::vector<int64_t>> decideTakes(const Node& node) {
    Kind kind = kindOf(node);
    if (kind == Kind::None) return std::nullopt;
    std::optional<std::vector<int64_t>> perm;
    for (size_t i = 0; i < node.numInputs() && !perm; ++i) {
      if (Node* transpose = movable(node.input(i))) perm = permutationOf(*transpose);
    }
    if (!perm) return std::nullopt;
    const size_t rank = perm->size();
    auto transposed = [&](const Value* value) {
      Node* transpose = movable(value);
      return transpose && permutationOf(*transpose) == perm;
    };
    switch (kind) {
      case Kind::Elementwise:
        if (!node.output(0)->shape().isRanked() || node.output(0)->shape().rank() != rank) return std::nullopt;
        for (Value* input : node.inputs()) {
          if (!input || transposed(input) || permutesForFree(input, inverseOf(*perm))) continue;
          if (isConstant(input) && rankedWithin(input, rank)) continue;
          if (follows(input, *perm)) continue;
          return std::nullopt;
        }
        return perm;
      case Kind::Pad: {
        std::optional<std::vector<int64_t>> pads = node.numInputs() > 1 ? constantInts(node.input(1)) : std::nullopt;
        bool axes = node.numInputs() > 3 && node.input(3);
        if (!transposed(node.input(0)) || !pads || pads->size() != 2 * rank || axes) return std::nullopt;
        return perm;
      }
      case Kind::Reduce: {
        std::optional<std::vector<int64_t>> axes = node.numInputs() > 1 ? constantInts(node.input(1)) : std::nullopt;
        if (!transposed(node.input(0)) || !axes || axes->empty()) return std::nullopt;
        for (int64_t axis : *axes) {
          if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank)) return std::nullopt;
        }
        return perm;
      }
      case Kind::Concat:
        for (Value* input : node.inputs()) {
          if (!input || !(transposed(input) || (isConstant(input) && input->shape().isRanked()))) return std::nullopt;
          if (input->shape().rank() != rank) return std::nullopt;
        }
        return perm;
      case Kind::None:
        break;
    }
    return std::nullopt;
  }

  // Whether `value` is computed element-wise from values transposed by `perm` (and
  // constants): x * sigmoid(beta * x) reads x transposed twice. Once its nodes have taken
  // the Transpose, `value` is transposed alike.
  bool follows(const Value* value, const std::vector<int64_t>& perm) {
    const Node* producer = value->producer();
    if (!producer || producer->graph() != &graph_ || kindOf(*producer) != Kind::Elementwise ||
        !value->shape().isRanked() || value->shape().rank() != perm.size()) {
      return false;
    }
    const auto key = std::make_pair(value, perm);
    auto known = follows_.find(key);
    if (known != follows_.end()) return known->second;
    bool derived = false, all = true;
    for (Value* input : producer->inputs()) {
      if (!input) continue;
      Node* transpose = movable(input);
      if (transpose && permutationOf(*transpose) == perm) {
        derived = true;
      } else if (follows(input, perm)) {
        derived = true;
      } else if (!permutesForFree(input, inverseOf(perm)) && !(isConstant(input) && rankedWithin(input, perm.size()))) {
        all = false;
      }
    }
    follows_[key] = derived && all;
    return derived && all;
  }

  // Whether every user of `transpose` takes it, so that it goes once moved past them all.
  bool usersTake(const Node& transpose, const std::vector<int64_t>& perm) {
    for (const Use& use : transpose.output(0)->uses()) {
      const Node& user = *use.user;
      if (user.isReturn() || user.graph() != &graph_) return false;
      if (user.is("Transpose")) continue;
      if (takes(user) != perm) return false;
    }
    return true;
  }

  // `value` in the axis order before the permutation: an operand broadcast against the
  // transposed ones, made rank `rank` and permuted back.
  Value* permutedBack(Value* value, const std::vector<int64_t>& inverse, Node* before) {
    const size_t rank = inverse.size();
    if (allOnes(value) && value->shape().rank() <= rank) return value;
    if (value->shape().rank() < rank) {
      std::vector<int64_t> leading(rank - value->shape().rank());
      for (size_t i = 0; i < leading.size(); ++i) leading[i] = static_cast<int64_t>(i);
      value = createInferred(graph_, before, "Unsqueeze", {value, intsConstant(leading, before)})->output();
    }
    return createInferred(graph_, before, "Transpose", {value}, {{"perm", inverse}})->output();
  }

  Value* intsConstant(const std::vector<int64_t>& values, Node* before) {
    Tensor tensor = Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(values.size())}, values);
    return createInferred(graph_, before, "Constant", {}, {{"value", std::move(tensor)}})->output();
  }

  int64_t sink(Node& node) {
    std::optional<std::vector<int64_t>> perm = takes(node);
    if (!perm) return 0;
    std::vector<Node*> transposes;
    for (Value* input : node.inputs()) {
      Node* transpose = movable(input);
      if (!transpose || permutationOf(*transpose) != perm) continue;
      if (!usersTake(*transpose, *perm)) return 0;
      if (std::find(transposes.begin(), transposes.end(), transpose) == transposes.end()) transposes.push_back(transpose);
    }
    const std::vector<int64_t> inverse = inverseOf(*perm);
    const auto rank = static_cast<int64_t>(perm->size());
    std::vector<Value*> inputs;
    for (size_t i = 0; i < node.numInputs(); ++i) {
      Value* input = node.input(i);
      Node* transpose = movable(input);
      if (transpose && permutationOf(*transpose) == perm) {
        inputs.push_back(transpose->input(0));
      } else if (input && (kindOf(node) == Kind::Elementwise || kindOf(node) == Kind::Concat)) {
        inputs.push_back(permutedBack(input, inverse, &node));
      } else {
        inputs.push_back(input);
      }
    }
    std::vector<std::pair<std::string, Attribute>> attributes;
    for (const auto& [name, value] : node.attributes()) attributes.emplace_back(name, value);
    std::vector<int64_t> result_perm = *perm;
    // Operand i of the transposed tensor is axis perm[i] of the tensor before it.
    auto before = [&](int64_t axis) { return (*perm)[static_cast<size_t>(axis < 0 ? axis + rank : axis)]; };
    switch (kindOf(node)) {
      case Kind::Pad: {
        std::vector<int64_t> pads = *constantInts(node.input(1)), moved(pads.size());
        for (int64_t i = 0; i < rank; ++i) {
          moved[static_cast<size_t>(before(i))] = pads[static_cast<size_t>(i)];
          moved[static_cast<size_t>(before(i) + rank)] = pads[static_cast<size_t>(i + rank)];
        }
        inputs[1] = intsConstant(moved, &node);
        break;
      }
      case Kind::Reduce: {
        std::vector<int64_t> axes, given = *constantInts(node.input(1));
        for (int64_t axis : given) axes.push_back(before(axis));
        inputs[1] = intsConstant(axes, &node);
        if (node.intAttr("keepdims", 1) == 0) {
          // The kept axes stay in their order before the Transpose: the result's
          // permutation is the kept part of `perm`, renumbered.
          std::vector<int64_t> kept;
          for (int64_t i = 0; i < rank; ++i) {
            if (std::find(axes.begin(), axes.end(), before(i)) == axes.end()) kept.push_back(before(i));
          }
          std::vector<int64_t> sorted = kept;
          std::sort(sorted.begin(), sorted.end());
          result_perm.clear();
          for (int64_t axis : kept) {
            result_perm.push_back(std::lower_bound(sorted.begin(), sorted.end(), axis) - sorted.begin());
          }
        }
        break;
      }
      case Kind::Concat:
        for (auto& [name, value] : attributes) {
          if (name == "axis") value = Attribute(before(node.intAttr("axis", 0)));
        }
        break;
      default:
        break;
    }
    Node* moved = createInferred(graph_, &node, node.opType(), inputs, attributes);
    moved->setName(node.name());
    Value* result = moved->output();
    int64_t changes = 1;
    if (!isIdentityPermutation(result_perm)) {
      Node* transpose = createInferred(graph_, &node, "Transpose", {result}, {{"perm", result_perm}});
      transpose->setName(node.name());
      result = transpose->output();
    }
    // The name stays with a graph output (callers bind outputs by name); otherwise it goes
    // with the same values in the other axis order.
    (node.output()->isGraphOutput() ? result : moved->output())->setName(node.output()->name());
    node.output()->replaceAllUsesWith(result);
    graph_.eraseNode(&node);
    for (Node* transpose : transposes) {
      if (!transpose->output()->hasUses()) graph_.eraseNode(transpose);
    }
    // A Transpose that undoes the moved one goes with it.
    if (result != moved->output()) {
      std::vector<Node*> users;
      for (const Use& use : result->uses()) users.push_back(use.user);
      for (Node* user : users) {
        std::optional<std::vector<int64_t>> undo = user->is("Transpose") ? permutationOf(*user) : std::nullopt;
        if (!undo || undo->size() != result_perm.size() || user->graph() != &graph_) continue;
        std::vector<int64_t> composed(undo->size());
        for (size_t i = 0; i < undo->size(); ++i) composed[i] = result_perm[static_cast<size_t>((*undo)[i])];
        if (!isIdentityPermutation(composed)) continue;
        user->output()->replaceAllUsesWith(moved->output());
        graph_.eraseNode(user);
        ++changes;
      }
      if (!result->hasUses()) graph_.eraseNode(result->producer());
    }
    // Nodes were erased and made: their addresses may come back.
    constant_.clear();
    takes_.clear();
    follows_.clear();
    return changes;
  }

  Graph& graph_;
  std::unordered_map<const Value*, bool> constant_;
  std::unordered_map<const Node*, std::optional<std::vector<int64_t>>> takes_;
  std::map<std::pair<const Value*, std::vector<int64_t>>, bool> follows_;
};

class TransposeSinking : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override { return {sinkTransposes(graph)}; }
};

}  // namespace

int64_t sinkTransposes(Graph& graph) { return Sinker(graph).run(); }

PassInfo transposeSinkingPass() {
  PassInfo info;
  info.name = "sink_transposes";
  info.description =
      "Moves Transposes down past element-wise ops, Pad, reductions and Concat until they meet "
      "their inverse and cancel (a channels-last CNN's Transposes around each Conv); never adds "
      "Transposes.";
  info.factory = [](const PassOptions&) { return std::make_unique<TransposeSinking>(); };
  return info;
}

}  // namespace estuary
