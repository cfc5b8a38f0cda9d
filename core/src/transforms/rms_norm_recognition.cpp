#include "estuary/transforms/rms_norm_recognition.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "estuary/ops/schema.h"
#include "transforms/transform_helpers.h"

namespace estuary {

namespace {

struct RmsNorm {
  Value* x;
  Value* gamma;
  double epsilon;
  int64_t axis;
};

class Recognizer {
 public:
  explicit Recognizer(Graph& graph) : graph_(graph) {}

  int64_t run() {
    int64_t found = 0;
    for (Node* node : graph_.nodeList()) {
      for (Graph* subgraph : node->subgraphs()) found += Recognizer(*subgraph).run();
    }
    // Roots first, then rewrite: a rewrite erases nodes the walk would meet later.
    std::vector<std::pair<Node*, RmsNorm>> matches;
    for (Node* node : graph_.nodeList()) {
      if (std::optional<RmsNorm> match = matchScaled(*node)) matches.emplace_back(node, *match);
    }
    for (auto& [root, match] : matches) {
      rewrite(*root, match);
      ++found;
    }
    return found;
  }

 private:
  // root = Mul(normalized, gamma) in either order.
  std::optional<RmsNorm> matchScaled(Node& root) {
    if (!root.is("Mul") || root.numInputs() != 2) return std::nullopt;
    for (size_t side = 0; side < 2; ++side) {
      Value* gamma = root.input(1 - side);
      std::optional<RmsNorm> match = matchNormalized(root.input(side));
      if (!match || !constantTensor(gamma) || !gamma->shape().isRanked()) continue;
      match->gamma = gamma;
      if (fitsNormalizedDims(*match, root)) return match;
    }
    return std::nullopt;
  }

  // normalized = Mul(x, Reciprocal(Sqrt(v))) or Div(x, Sqrt(v)), v = Add(mean(x^2), eps).
  std::optional<RmsNorm> matchNormalized(Value* normalized) {
    Node* node = normalized->producer();
    if (!node || normalized->uses().size() != 1 || node->numInputs() != 2) return std::nullopt;
    if (node->is("Div")) {
      Node* root = soleProducer(node->input(1), "Sqrt");
      return root ? matchVariance(node->input(0), root->input(0)) : std::nullopt;
    }
    if (!node->is("Mul")) return std::nullopt;
    for (size_t side = 0; side < 2; ++side) {
      Node* reciprocal = soleProducer(node->input(1 - side), "Reciprocal");
      Node* root = reciprocal ? soleProducer(reciprocal->input(0), "Sqrt") : nullptr;
      if (!root) continue;
      if (std::optional<RmsNorm> match = matchVariance(node->input(side), root->input(0))) return match;
    }
    return std::nullopt;
  }

  // shifted = Add(ReduceMean(square(x), axes, keepdims=1), epsilon).
  std::optional<RmsNorm> matchVariance(Value* x, Value* shifted) {
    Node* add = soleProducer(shifted, "Add");
    if (!add || add->numInputs() != 2) return std::nullopt;
    for (size_t side = 0; side < 2; ++side) {
      std::optional<double> epsilon = scalarFloatConstant(add->input(1 - side));
      Node* mean = soleProducer(add->input(side), "ReduceMean");
      if (!epsilon || !mean || mean->intAttr("keepdims", 1) != 1 || mean->numInputs() < 2) continue;
      if (!isSquareOf(mean->input(0), x)) continue;
      std::optional<int64_t> axis = trailingAxes(mean->input(1), x);
      if (axis) return RmsNorm{x, nullptr, *epsilon, *axis};
    }
    return std::nullopt;
  }

  static bool isSquareOf(Value* square, const Value* x) {
    Node* node = square->producer();
    if (!node || square->uses().size() != 1 || node->numInputs() != 2) return false;
    if (node->is("Mul")) return node->input(0) == x && node->input(1) == x;
    std::optional<double> exponent = node->is("Pow") ? scalarFloatConstant(node->input(1)) : std::nullopt;
    return node->input(0) == x && exponent == 2.0;
  }

  // The first axis of `axes` when they are [axis, rank) of x.
  static std::optional<int64_t> trailingAxes(const Value* axes_value, const Value* x) {
    std::optional<std::vector<int64_t>> axes = constantInts(axes_value);
    if (!axes || axes->empty() || !x->shape().isRanked()) return std::nullopt;
    const auto rank = static_cast<int64_t>(x->shape().rank());
    for (int64_t& axis : *axes) {
      if (axis < -rank || axis >= rank) return std::nullopt;
      if (axis < 0) axis += rank;
    }
    std::sort(axes->begin(), axes->end());
    for (size_t i = 0; i < axes->size(); ++i) {
      if ((*axes)[i] != rank - static_cast<int64_t>(axes->size()) + static_cast<int64_t>(i)) return std::nullopt;
    }
    return axes->front();
  }

  // gamma must broadcast to the normalized dims alone: dims before them only 1s.
  static bool fitsNormalizedDims(const RmsNorm& match, const Node& root) {
    const Shape& gamma = match.gamma->shape();
    const auto normalized = static_cast<size_t>(static_cast<int64_t>(match.x->shape().rank()) - match.axis);
    for (size_t i = 0; i + normalized < gamma.rank(); ++i) {
      if (!gamma[i].isStatic() || gamma[i].value() != 1) return false;
    }
    return root.output()->type() == match.x->type();
  }

  void rewrite(Node& root, const RmsNorm& match) {
    Value* gamma = match.gamma;
    const auto normalized = static_cast<size_t>(static_cast<int64_t>(match.x->shape().rank()) - match.axis);
    if (gamma->shape().rank() > normalized) {
      std::vector<int64_t> dims;
      for (size_t i = gamma->shape().rank() - normalized; i < gamma->shape().rank(); ++i) {
        dims.push_back(gamma->shape()[i].value());
      }
      Node* shape = createInferred(graph_, &root, "Constant", {},
                           {{"value", Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(dims.size())}, dims)}});
      gamma = createInferred(graph_, &root, "Reshape", {gamma, shape->output()}, {})->output();
    }
    Node* norm = createInferred(graph_, &root, "RMSNormalization", {match.x, gamma},
                        {{"axis", match.axis}, {"epsilon", match.epsilon}, {"stash_type", DType::F32}});
    norm->setName(root.name());
    norm->output()->setName(root.output()->name());
    root.output()->replaceAllUsesWith(norm->output());
    // The written-out nodes, now unread, from the root up.
    std::vector<Node*> pending = {&root};
    while (!pending.empty()) {
      Node* node = pending.back();
      pending.pop_back();
      if (node->output()->hasUses() || node->is("Constant")) continue;
      std::vector<Node*> producers;
      for (Value* input : node->inputs()) {
        if (input && input->producer() && input != match.x && input->producer()->graph() == &graph_) {
          producers.push_back(input->producer());
        }
      }
      graph_.eraseNode(node);
      for (Node* producer : producers) {
        if (std::find(pending.begin(), pending.end(), producer) == pending.end()) pending.push_back(producer);
      }
    }
  }

  Graph& graph_;
};

class RmsNormRecognition : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override { return {recognizeRmsNorms(graph)}; }
};

}  // namespace

int64_t recognizeRmsNorms(Graph& graph) { return Recognizer(graph).run(); }

PassInfo rmsNormRecognitionPass() {
  PassInfo info;
  info.name = "recognize_rms_norm";
  info.description =
      "Rewrites x * rsqrt(mean(x^2) + epsilon) * gamma, written out in element-wise ops, into "
      "RMSNormalization.";
  info.factory = [](const PassOptions&) { return std::make_unique<RmsNormRecognition>(); };
  return info;
}

}  // namespace estuary
