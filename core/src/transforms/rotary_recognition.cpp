#include "estuary/transforms/rotary_recognition.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "estuary/ops/schema.h"
#include "transforms/transform_helpers.h"

namespace estuary {

namespace {

// The last axis of a rank-`rank` value, as an axis list may give it.
bool isLastAxis(int64_t axis, size_t rank) { return axis == -1 || axis == static_cast<int64_t>(rank) - 1; }

// x[..., from:to] along the last axis of rank-4 `x` with step 1, `to` past the end meaning D.
struct LastAxisSlice {
  Value* x = nullptr;
  int64_t from = 0, to = 0;
};

std::optional<LastAxisSlice> lastAxisSlice(Value* value) {
  Node* slice = value->producer();
  if (!slice || !slice->is("Slice") || slice->numInputs() < 4) return std::nullopt;
  Value* x = slice->input(0);
  if (!hasRank(x, 4) || !x->shape()[3].isStatic()) return std::nullopt;
  std::optional<std::vector<int64_t>> starts = constantInts(slice->input(1));
  std::optional<std::vector<int64_t>> ends = constantInts(slice->input(2));
  std::optional<std::vector<int64_t>> axes = constantInts(slice->input(3));
  std::optional<std::vector<int64_t>> steps =
      slice->numInputs() > 4 && slice->input(4) ? constantInts(slice->input(4)) : std::vector<int64_t>{1};
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 ||
      steps->size() != 1 || (*steps)[0] != 1 || !isLastAxis((*axes)[0], 4)) {
    return std::nullopt;
  }
  const int64_t size = x->shape()[3].value();
  auto clamp = [size](int64_t at) { return std::min(std::max(at < 0 ? at + size : at, int64_t{0}), size); };
  return LastAxisSlice{x, clamp((*starts)[0]), clamp((*ends)[0])};
}

// rotate_half(x) = Concat(Neg(x[..., D/2:]), x[..., :D/2]) on the last axis; returns x.
Value* rotatedHalfOf(Value* value) {
  Node* concat = value->producer();
  if (!concat || !concat->is("Concat") || concat->numInputs() != 2 || !hasRank(value, 4) ||
      !isLastAxis(concat->intAttr("axis", 0), 4)) {
    return nullptr;
  }
  Node* neg = concat->input(0)->producer();
  if (!neg || !neg->is("Neg")) return nullptr;
  std::optional<LastAxisSlice> upper = lastAxisSlice(neg->input(0));
  std::optional<LastAxisSlice> lower = lastAxisSlice(concat->input(1));
  if (!upper || !lower || upper->x != lower->x) return nullptr;
  const int64_t size = upper->x->shape()[3].value();
  if (size % 2 != 0 || lower->from != 0 || lower->to != size / 2 || upper->from != size / 2 || upper->to != size) {
    return nullptr;
  }
  return upper->x;
}

// cos or sin [Bc, 1, S, D] = Unsqueeze(Op(Concat(f, f) on the last axis) [* a], axis 1):
// the angles f [Bc, S, D/2] and the scale a (or nullptr).
struct Angles {
  Value* f = nullptr;
  Value* scale = nullptr;
};

std::optional<Angles> anglesOf(Value* table, std::string_view op) {
  Node* unsqueeze = table->producer();
  if (!unsqueeze || !unsqueeze->is("Unsqueeze") || unsqueeze->numInputs() < 2 || !hasRank(table, 4)) {
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> axes = constantInts(unsqueeze->input(1));
  if (!axes || axes->size() != 1 || ((*axes)[0] != 1 && (*axes)[0] != -3)) return std::nullopt;
  Value* scaled = unsqueeze->input(0);
  Angles angles;
  Node* node = scaled->producer();
  if (node && node->is("Mul")) {
    for (size_t side = 0; side < 2 && !angles.scale; ++side) {
      if (scalarFloatConstant(node->input(1 - side))) {
        angles.scale = node->input(1 - side);
        scaled = node->input(side);
      }
    }
    if (!angles.scale) return std::nullopt;
    node = scaled->producer();
  }
  if (!node || !node->is(op)) return std::nullopt;
  Node* concat = node->input(0)->producer();
  if (!concat || !concat->is("Concat") || concat->numInputs() != 2 || concat->input(0) != concat->input(1) ||
      !hasRank(concat->output(), 3) || !isLastAxis(concat->intAttr("axis", 0), 3)) {
    return std::nullopt;
  }
  angles.f = concat->input(0);
  return angles;
}

struct Match {
  Node* root;
  Value* x;
  Angles angles;
};

class Recognizer {
 public:
  explicit Recognizer(Graph& graph) : graph_(graph) {}

  int64_t run() {
    int64_t found = 0;
    for (Node* node : graph_.nodeList()) {
      for (Graph* subgraph : node->subgraphs()) found += Recognizer(*subgraph).run();
    }
    std::vector<Match> matches;
    for (Node* node : graph_.nodeList()) {
      if (std::optional<Match> match = matchRoot(*node)) matches.push_back(*match);
    }
    for (const Match& match : matches) rewrite(match);
    return found + static_cast<int64_t>(matches.size());
  }

 private:
  // root = Add(Mul(x, cos), Mul(rotate_half(x), sin)), each product in either order.
  static std::optional<Match> matchRoot(Node& root) {
    if (!root.is("Add") || root.numInputs() != 2 || !hasRank(root.output(), 4)) return std::nullopt;
    for (size_t side = 0; side < 2; ++side) {
      Node* direct = root.input(side)->producer();
      Node* rotated = root.input(1 - side)->producer();
      if (!direct || !rotated || !direct->is("Mul") || !rotated->is("Mul")) continue;
      for (size_t d = 0; d < 2; ++d) {
        for (size_t r = 0; r < 2; ++r) {
          Value* x = direct->input(d);
          if (rotatedHalfOf(rotated->input(r)) != x) continue;
          std::optional<Angles> cos = anglesOf(direct->input(1 - d), "Cos");
          std::optional<Angles> sin = anglesOf(rotated->input(1 - r), "Sin");
          if (cos && sin && cos->f == sin->f && sameScale(cos->scale, sin->scale) && fits(x, cos->f, root)) {
            return Match{&root, x, *cos};
          }
        }
      }
    }
    return std::nullopt;
  }

  static bool sameScale(const Value* a, const Value* b) {
    if (!a || !b) return a == b;
    return scalarFloatConstant(a) == scalarFloatConstant(b);
  }

  // x [B, H, S, D] and f [B or 1, S, D/2] as the kernel reads them, the result x's type.
  static bool fits(const Value* x, const Value* f, const Node& root) {
    if (!hasRank(f, 3) || f->dtype() != x->dtype() || root.output()->type() != x->type()) return false;
    const Shape& xs = x->shape();
    const Shape& fs = f->shape();
    bool batch = fs[0].provablyEqual(xs[0]) || (fs[0].isStatic() && fs[0].value() == 1);
    return batch && fs[1].provablyEqual(xs[2]) && fs[2].isStatic() && fs[2].value() * 2 == xs[3].value();
  }

  void rewrite(const Match& match) {
    Node* before = match.root;
    auto table = [&](std::string_view op) {
      Value* values = createInferred(graph_, before, op, {match.angles.f})->output();
      if (match.angles.scale) values = createInferred(graph_, before, "Mul", {values, match.angles.scale})->output();
      return values;
    };
    Value* cos = table("Cos");
    Value* sin = table("Sin");
    Node* rotary = createInferred(graph_, before, "RotaryEmbedding", {match.x, cos, sin}, {{"interleaved", int64_t{0}}});
    rotary->setName(match.root->name());
    rotary->output()->setName(match.root->output()->name());
    match.root->output()->replaceAllUsesWith(rotary->output());
  }

  Graph& graph_;
};

class RotaryRecognition : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override { return {recognizeRotaryEmbeddings(graph)}; }
};

}  // namespace

int64_t recognizeRotaryEmbeddings(Graph& graph) { return Recognizer(graph).run(); }

PassInfo rotaryRecognitionPass() {
  PassInfo info;
  info.name = "recognize_rotary_embedding";
  info.description =
      "Rewrites x * cos + rotate_half(x) * sin, with cos and sin computed from duplicated angles, into "
      "RotaryEmbedding.";
  info.factory = [](const PassOptions&) { return std::make_unique<RotaryRecognition>(); };
  return info;
}

}  // namespace estuary
