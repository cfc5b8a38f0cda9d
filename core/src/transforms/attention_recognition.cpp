#include "estuary/transforms/attention_recognition.h"

#include <optional>
#include <vector>

#include "estuary/ops/schema.h"
#include "transforms/transform_helpers.h"

namespace estuary {

namespace {

// The one reader of `value`, if it reads it as operand `operand` and is `op`.
Node* soleUser(Value* value, std::string_view op, uint32_t operand) {
  if (value->uses().size() != 1 || value->isGraphOutput()) return nullptr;
  const Use& use = value->uses().front();
  return use.user->is(op) && use.operand_index == operand ? use.user : nullptr;
}

// Whether `flat` is `four` [B, H, X, Y] seen as [B*H, X, Y].
bool flattens(const Value* four, const Value* flat) {
  if (!hasRank(four, 4) || !hasRank(flat, 3)) return false;
  const Shape& a = four->shape();
  const Shape& b = flat->shape();
  return (a[0] * a[1]).provablyEqual(b[0]) && a[2].provablyEqual(b[1]) && a[3].provablyEqual(b[2]);
}

// The rank-4 value an operand of a batched MatMul stands for: itself, or what a Reshape
// flattened into it.
Value* unflattened(Value* operand) {
  if (hasRank(operand, 4)) return operand;
  Node* reshape = operand && operand->producer() && operand->producer()->is("Reshape") ? operand->producer() : nullptr;
  return reshape && flattens(reshape->input(0), operand) ? reshape->input(0) : nullptr;
}

bool swapsLastTwo(const Node& transpose, size_t rank) {
  std::optional<std::vector<int64_t>> perm = permutationOf(transpose);
  if (!perm || perm->size() != rank) return false;
  for (size_t i = 0; i + 2 < rank; ++i) {
    if ((*perm)[i] != static_cast<int64_t>(i)) return false;
  }
  return (*perm)[rank - 2] == static_cast<int64_t>(rank - 1) && (*perm)[rank - 1] == static_cast<int64_t>(rank - 2);
}

// K [B, H, T, D] as a value and the permutation to apply to it (empty: none).
struct Key {
  Value* source = nullptr;
  std::vector<int64_t> perm;
};

// K from the right operand of Q K^T: a Transpose swapping K's last two axes, taken before
// or after flattening. Transpose sinking may have merged it with a Transpose that made K
// (GPT-2's [B, T, H, D] to [B, H, D, T] in one); K is then that source with the merged
// permutation minus the swap.
Key keyOf(Value* right) {
  if (Value* transposed = unflattened(right)) {
    Node* transpose = transposed->producer();
    std::optional<std::vector<int64_t>> perm = transpose && transpose->is("Transpose") ? permutationOf(*transpose)
                                                                                       : std::nullopt;
    if (perm && perm->size() == 4) {
      std::swap((*perm)[2], (*perm)[3]);
      if (isIdentityPermutation(*perm)) return {transpose->input(0), {}};
      return {transpose->input(0), *perm};
    }
  }
  Node* transpose = right->producer();
  if (transpose && transpose->is("Transpose") && hasRank(right, 3) && swapsLastTwo(*transpose, 3)) {
    return {unflattened(transpose->input(0)), {}};
  }
  return {};
}

// K or V [B, Hkv, T, D] that repeat_kv turned into [B, Hkv*n, T, D]: Reshape(Expand(
// Unsqueeze(x, 2) to [B, Hkv, n, T, D])). nullptr when `value` is not repeated.
Value* unrepeated(Value* value) {
  Node* reshape = value->producer();
  if (!reshape || !reshape->is("Reshape") || !hasRank(value, 4)) return nullptr;
  Node* expand = reshape->input(0)->producer();
  if (!expand || !expand->is("Expand") || !hasRank(expand->output(), 5)) return nullptr;
  Node* unsqueeze = expand->input(0)->producer();
  if (!unsqueeze || !unsqueeze->is("Unsqueeze") || unsqueeze->numInputs() < 2) return nullptr;
  std::optional<std::vector<int64_t>> axes = constantInts(unsqueeze->input(1));
  if (!axes || axes->size() != 1 || ((*axes)[0] != 2 && (*axes)[0] != -3)) return nullptr;
  Value* source = unsqueeze->input(0);
  const Shape& expanded = expand->output()->shape();
  const Shape& result = value->shape();
  if (!hasRank(source, 4)) return nullptr;
  const Shape& original = source->shape();
  bool same_dims = original[0].provablyEqual(expanded[0]) && original[1].provablyEqual(expanded[1]) &&
                   original[2].provablyEqual(expanded[3]) && original[3].provablyEqual(expanded[4]);
  bool merged = result[0].provablyEqual(expanded[0]) && (expanded[1] * expanded[2]).provablyEqual(result[1]) &&
                result[2].provablyEqual(expanded[3]) && result[3].provablyEqual(expanded[4]);
  return same_dims && merged ? source : nullptr;
}

// Whether an additive mask broadcasts to scores [B, H, S, T] as the Attention kernel reads
// it: leading dims 1 or equal, the last one exactly T (the kernel masks positions past it,
// where Add would broadcast a 1).
bool fitsAsMask(const Value* mask, const Shape& scores) {
  if (!mask->shape().isRanked() || mask->dtype() != DType::F32) return false;
  const Shape& shape = mask->shape();
  if (shape.rank() < 1 || shape.rank() > 4 || !shape[shape.rank() - 1].provablyEqual(scores[3])) return false;
  for (size_t i = 0; i + 1 < shape.rank(); ++i) {
    const Dim& dim = shape[i];
    const Dim& target = scores[4 - shape.rank() + i];
    if (!(dim.isStatic() && dim.value() == 1) && !dim.provablyEqual(target)) return false;
  }
  return true;
}

struct Match {
  Value* q;
  Key k;
  Value* v;
  std::vector<Value*> masks;  // additive masks, summed into the Attention's one
  double scale = 1.0;
  Value* result;  // the value Y replaces: [B, H, S, Dv]
};

class Recognizer {
 public:
  explicit Recognizer(Graph& graph) : graph_(graph) {}

  int64_t run() {
    int64_t changed = 0;
    for (Node* node : graph_.nodeList()) {
      for (Graph* subgraph : node->subgraphs()) changed += Recognizer(*subgraph).run();
    }
    std::vector<Match> matches;
    for (Node* node : graph_.nodeList()) {
      if (std::optional<Match> match = matchSoftmax(*node)) matches.push_back(*match);
    }
    for (const Match& match : matches) rewrite(match);
    changed += static_cast<int64_t>(matches.size());
    for (Node* node : graph_.nodeList()) {
      if (node->is("Attention")) changed += unrepeatKeysAndValues(*node);
    }
    return changed;
  }

 private:
  std::optional<Match> matchSoftmax(Node& softmax) {
    if (!softmax.is("Softmax") || !hasRank(softmax.output(), 4)) return std::nullopt;
    const int64_t axis = softmax.intAttr("axis", -1);
    if (axis != -1 && axis != 3) return std::nullopt;
    Match match;
    if (!matchProbabilitiesTimesValues(softmax.output(), match)) return std::nullopt;
    Value* logits = softmax.input(0);
    if (!matchMaskedScores(logits, logits->shape(), match)) return std::nullopt;
    return finish(match, logits->shape());
  }

  // logits = scores + mask + ... : the scaled scores under Adds of additive masks (T5 adds a
  // position bias, then the causal or padding mask), each Add read once.
  static bool matchMaskedScores(Value* logits, const Shape& scores, Match& match) {
    if (matchScaledScores(logits, match)) return true;
    Node* add = soleProducer(logits, "Add");
    if (!add || match.masks.size() >= kMostMasks) return false;
    for (size_t side = 0; side < 2; ++side) {
      if (!fitsAsMask(add->input(1 - side), scores) || !add->input(side)->shape().isRanked() ||
          add->input(side)->shape() != scores) {
        continue;
      }
      match.masks.push_back(add->input(1 - side));
      if (matchMaskedScores(add->input(side), scores, match)) return true;
      match.masks.pop_back();
    }
    return false;
  }

  static constexpr size_t kMostMasks = 4;

  // P V, from the Softmax's probabilities P: the MatMul reading them (through a flattening
  // Reshape) and the value taking Y's place.
  static bool matchProbabilitiesTimesValues(Value* probabilities, Match& match) {
    Value* left = probabilities;
    if (probabilities->uses().size() == 1 && probabilities->uses().front().user->is("Reshape")) {
      Node* reshape = probabilities->uses().front().user;
      if (!flattens(probabilities, reshape->output())) return false;
      left = reshape->output();
    }
    Node* matmul = soleUser(left, "MatMul", 0);
    if (!matmul || (left == probabilities && probabilities->uses().size() != 1)) return false;
    match.v = unflattened(matmul->input(1));
    if (!match.v) return false;
    if (hasRank(matmul->output(), 4)) {
      match.result = matmul->output();
      return true;
    }
    Node* unflatten = soleUser(matmul->output(), "Reshape", 0);
    if (!unflatten || !flattens(unflatten->output(), matmul->output())) return false;
    match.result = unflatten->output();
    return true;
  }

  // scores * c, scores / c or scores, where scores = Q K^T [B, H, S, T].
  static bool matchScaledScores(Value* scaled, Match& match) {
    Value* scores = scaled;
    match.scale = 1.0;
    Node* node = scaled->producer();
    if (node && (node->is("Mul") || node->is("Div")) && scaled->uses().size() == 1) {
      for (size_t side = 0; side < 2; ++side) {
        std::optional<double> factor = scalarFloatConstant(node->input(1 - side));
        if (!factor || *factor == 0.0 || (node->is("Div") && side == 1)) continue;
        match.scale = node->is("Mul") ? *factor : 1.0 / *factor;
        scores = node->input(side);
        break;
      }
    }
    Node* matmul = soleProducer(scores, "MatMul");
    if (!matmul && hasRank(scores, 4)) {
      // Q K^T computed flattened, then unflattened.
      Node* reshape = soleProducer(scores, "Reshape");
      Node* flat = reshape ? soleProducer(reshape->input(0), "MatMul") : nullptr;
      if (flat && flattens(scores, reshape->input(0))) matmul = flat;
    }
    if (!matmul || !hasRank(scores, 4)) return false;
    match.q = unflattened(matmul->input(0));
    match.k = match.q ? keyOf(matmul->input(1)) : Key{};
    return match.k.source != nullptr;
  }

  static std::optional<Match> finish(Match match, const Shape& scores) {
    if (!hasRank(match.k.source, 4) || !hasRank(match.v, 4)) return std::nullopt;
    const Shape& q = match.q->shape();
    Shape k = match.k.source->shape();
    for (size_t i = 0; i < match.k.perm.size(); ++i) k[i] = match.k.source->shape()[match.k.perm[i]];
    const Shape& v = match.v->shape();
    bool shapes = q[3].provablyEqual(k[3]) && k[2].provablyEqual(v[2]) && k[1].provablyEqual(v[1]) &&
                  scores[2].provablyEqual(q[2]) && scores[3].provablyEqual(k[2]);
    if (!shapes || !isFloat(match.q->dtype()) || match.q->dtype() != match.k.source->dtype()) return std::nullopt;
    if (!match.masks.empty() && match.q->dtype() != DType::F32) return std::nullopt;  // the kernel's masks are f32
    const Shape& result = match.result->shape();
    if (!hasRank(match.result, 4) || match.result->dtype() != match.q->dtype() || !result[0].provablyEqual(q[0]) ||
        !result[1].provablyEqual(q[1]) || !result[2].provablyEqual(q[2]) || !result[3].provablyEqual(v[3])) {
      return std::nullopt;
    }
    return match;
  }

  static bool isFloat(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

  void rewrite(const Match& match) {
    Node* before = match.result->producer();
    Value* key = match.k.source;
    if (!match.k.perm.empty()) key = createInferred(graph_, before, "Transpose", {key}, {{"perm", match.k.perm}})->output();
    std::vector<Value*> inputs = {match.q, key, match.v};
    if (!match.masks.empty()) {
      Value* mask = match.masks.front();
      for (size_t i = 1; i < match.masks.size(); ++i) {
        mask = createInferred(graph_, before, "Add", {mask, match.masks[i]})->output();
      }
      inputs.push_back(mask);
    }
    Node* attention = createInferred(graph_, before, "Attention", inputs, {{"scale", match.scale}});
    attention->setName(before->name());
    attention->output()->setName(match.result->name());
    match.result->replaceAllUsesWith(attention->output());
  }

  // Attention reads K and V with fewer heads than Q itself (grouped-query attention), so
  // the copies repeat_kv makes are not needed.
  static int64_t unrepeatKeysAndValues(Node& attention) {
    if (attention.numInputs() < 3 || attention.numInputs() > 4 || !hasRank(attention.input(0), 4)) return 0;
    Value* key = unrepeated(attention.input(1));
    Value* value = unrepeated(attention.input(2));
    if (!key || !value || !key->shape()[1].provablyEqual(value->shape()[1])) return 0;
    attention.setInput(1, key);
    attention.setInput(2, value);
    return 1;
  }

  Graph& graph_;
};

class AttentionRecognition : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override { return {recognizeAttention(graph)}; }
};

}  // namespace

int64_t recognizeAttention(Graph& graph) { return Recognizer(graph).run(); }

PassInfo attentionRecognitionPass() {
  PassInfo info;
  info.name = "recognize_attention";
  info.description =
      "Rewrites Softmax(Q K^T * scale + masks) V, written out in MatMuls (flattened or not), into Attention; "
      "K and V repeated over head groups (repeat_kv) are read un-repeated.";
  info.factory = [](const PassOptions&) { return std::make_unique<AttentionRecognition>(); };
  return info;
}

}  // namespace estuary
