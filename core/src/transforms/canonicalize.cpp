#include "estuary/transforms/canonicalize.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "estuary/support/error.h"
#include "transforms/transform_helpers.h"

namespace estuary {

const std::vector<std::string>& canonicalizationRules() {
  static const std::vector<std::string> rules = {
      "identity", "dropout", "reshape_chain", "transpose", "cast", "squeeze_unsqueeze",
      "same_shape", "constant_if", "pad_into_conv", "flat_matmul"};
  return rules;
}

namespace {

enum Rule : unsigned {
  kIdentity = 1u << 0,
  kDropout = 1u << 1,
  kReshapeChain = 1u << 2,
  kTranspose = 1u << 3,
  kCast = 1u << 4,
  kSqueezeUnsqueeze = 1u << 5,
  kSameShape = 1u << 6,
  kConstantIf = 1u << 7,
  kPadIntoConv = 1u << 8,
  kFlatMatMul = 1u << 9,
};

std::optional<bool> constantBool(const Value* value) {
  const Tensor* tensor = constantTensor(value);
  if (!tensor || tensor->dtype() != DType::Bool || tensor->numElements() != 1) return std::nullopt;
  return *tensor->data<uint8_t>() != 0;
}

// Squeeze/Unsqueeze axes: the `axes` input (opset 13+) or attribute (earlier opsets).
std::optional<std::vector<int64_t>> axesOf(const Node& node) {
  if (const Attribute* axes = node.attr("axes"); axes && axes->kind() == AttrKind::Ints) {
    return axes->asInts();
  }
  if (node.numInputs() > 1 && node.input(1)) return constantInts(node.input(1));
  return std::nullopt;
}

// Axes as a sorted set relative to `rank` (when known); nullopt when out of range.
std::optional<std::vector<int64_t>> normalizedAxes(std::vector<int64_t> axes,
                                                   std::optional<size_t> rank) {
  for (int64_t& axis : axes) {
    if (!rank) continue;
    auto r = static_cast<int64_t>(*rank);
    if (axis < -r || axis >= r) return std::nullopt;
    if (axis < 0) axis += r;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

std::optional<size_t> rankOf(const Value* value) {
  if (value && value->shape().isRanked()) return value->shape().rank();
  return std::nullopt;
}

bool hasSubgraphs(const Node& node) {
  for (const auto& [name, attribute] : node.attributes()) {
    if (attribute.kind() == AttrKind::Graph) return true;
  }
  return false;
}

bool sameDims(const Shape& a, const Shape& b) {
  if (!a.isRanked() || !b.isRanked() || a.rank() != b.rank()) return false;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (!a[i].provablyEqual(b[i])) return false;
  }
  return true;
}

class Canonicalizer {
 public:
  explicit Canonicalizer(unsigned enabled) : enabled_(enabled) {}

  int64_t run(Graph& graph) {
    int64_t changes = 0;
    Node* next = nullptr;
    for (Node* node = graph.firstNode(); node; node = next) {
      next = node->next();
      if (hasSubgraphs(*node)) {
        for (Graph* subgraph : node->subgraphs()) changes += run(*subgraph);
      }
      changes += rewrite(*node);
    }
    return changes;
  }

 private:
  bool on(Rule rule) const { return (enabled_ & rule) != 0; }

  // Returns 1 when the node was rewritten (possibly erased).
  int64_t rewrite(Node& node) {
    // Malformed nodes (no result, no data operand) are the verifier's to report.
    if (!node.domain().empty() || node.numInputs() == 0 || !node.input(0) ||
        node.numOutputs() == 0) {
      return 0;
    }
    const std::string& op = node.opType();
    Value* x = node.input(0);
    if (op == "Identity") {
      if (on(kIdentity) && node.numOutputs() == 1) return replace(node, x);
    } else if (op == "Dropout") {
      if (on(kDropout)) return dropout(node, x);
    } else if (op == "Cast") {
      const Attribute* to = node.attr("to");
      if (on(kCast) && to && to->kind() == AttrKind::Type && x->dtype() != DType::Undefined) {
        if (x->dtype() == to->asType()) return replace(node, x);
        return castScalarConstant(node, x, to->asType());
      }
    } else if (op == "Transpose") {
      if (on(kTranspose)) return transpose(node, x);
    } else if (op == "Reshape") {
      if (on(kSameShape) && reshapeKeepsShape(node, x)) return replace(node, x);
      if (on(kFlatMatMul)) {
        if (int64_t changed = flatMatMul(node, x)) return changed;
      }
      if (on(kReshapeChain)) return reshapeChain(node, x);
    } else if (op == "Expand") {
      if (on(kSameShape) && expandKeepsShape(node, x)) return replace(node, x);
    } else if (op == "Slice") {
      if (on(kSameShape) && sliceKeepsAll(node, x)) return replace(node, x);
    } else if (op == "Squeeze" || op == "Unsqueeze") {
      if (on(kSqueezeUnsqueeze)) return squeezeUnsqueeze(node, x);
    } else if (op == "If") {
      if (on(kConstantIf)) return constantIf(node, x);
    } else if (op == "Conv") {
      if (on(kPadIntoConv)) return padIntoConv(node, x);
    }
    return 0;
  }

  // Conv(Pad(x) with zeros around the spatial dims) is Conv(x) with those pads added to its
  // own: Keras' ZeroPadding2D before a strided convolution. The Pad's copy goes, and with it
  // the break in the activations' layout between convolutions.
  int64_t padIntoConv(Node& conv, Value* x) {
    Node* pad = x->producer();
    if (!pad || !pad->is("Pad") || pad->numInputs() < 2 || !pad->input(0)) return 0;
    if (pad->stringAttr("mode", "constant") != "constant" || (pad->numInputs() > 3 && pad->input(3))) return 0;
    if (pad->numInputs() > 2 && pad->input(2)) {
      const Tensor* fill = constantTensor(pad->input(2));
      if (!fill || fill->numElements() != 1 || fill->dtype() != DType::F32 || *fill->data<float>() != 0.f) return 0;
    }
    std::optional<std::vector<int64_t>> pads = constantInts(pad->input(1));
    std::optional<size_t> rank = rankOf(x);
    if (!pads || !rank || pads->size() != 2 * *rank || *rank < 3) return 0;
    const size_t spatial = *rank - 2;
    // Nothing added to the batch and channel dims, nothing cropped.
    if ((*pads)[0] || (*pads)[1] || (*pads)[*rank] || (*pads)[*rank + 1]) return 0;
    for (int64_t amount : *pads) {
      if (amount < 0) return 0;
    }
    const std::string auto_pad = conv.stringAttr("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID") return 0;
    std::vector<int64_t> merged = conv.intsAttr("pads", std::vector<int64_t>(2 * spatial, 0));
    if (merged.size() != 2 * spatial) return 0;
    for (size_t i = 0; i < spatial; ++i) {
      merged[i] += (*pads)[2 + i];
      merged[spatial + i] += (*pads)[*rank + 2 + i];
    }
    conv.setInput(0, pad->input(0));
    conv.setAttr("pads", merged);
    conv.setAttr("auto_pad", std::string("NOTSET"));
    eraseIfUnused(pad);
    return 1;
  }

  // The branch a constant condition takes replaces the If: its nodes move in before it (the
  // walk has already canonicalized them), its results take the If's uses.
  int64_t constantIf(Node& node, Value* condition) {
    std::optional<bool> taken = constantBool(condition);
    if (!taken) return 0;
    const Attribute* branch_attr = node.attr(*taken ? "then_branch" : "else_branch");
    if (!branch_attr || branch_attr->kind() != AttrKind::Graph) return 0;
    const Graph& branch = *branch_attr->asGraph();
    if (branch.numOutputs() != node.numOutputs() || !branch.inputs().empty()) return 0;
    std::vector<Value*> results = node.graph()->inlineBefore(&node, branch);
    for (size_t i = 0; i < results.size(); ++i) {
      takeOverName(node.output(i), results[i]);
      node.output(i)->replaceAllUsesWith(results[i]);
    }
    node.graph()->eraseNode(&node);
    if (Node* producer = condition->producer()) eraseIfUnused(producer);
    return 1;
  }

  int64_t dropout(Node& node, Value* x) {
    if (node.numOutputs() > 1 && node.output(1)->hasUses()) return 0;
    bool training = false;
    if (node.numInputs() > 2 && node.input(2)) {
      std::optional<bool> mode = constantBool(node.input(2));
      if (!mode) return 0;
      training = *mode;
    }
    return training ? 0 : replace(node, x);
  }

  int64_t transpose(Node& node, Value* x) {
    std::optional<std::vector<int64_t>> perm = permutationOf(node);
    if (!perm) return 0;
    if (isIdentityPermutation(*perm)) return replace(node, x);
    Node* inner = x->producer();
    if (!inner || !inner->is("Transpose") || !inner->input(0)) return reshapeInstead(node, x, *perm);
    std::optional<std::vector<int64_t>> inner_perm = permutationOf(*inner);
    if (!inner_perm || inner_perm->size() != perm->size()) return 0;
    std::vector<int64_t> composed(perm->size());
    for (size_t i = 0; i < perm->size(); ++i) composed[i] = (*inner_perm)[(*perm)[i]];
    Value* source = inner->input(0);
    if (isIdentityPermutation(composed)) return replace(node, source);
    node.setInput(0, source);
    node.setAttr("perm", composed);
    eraseIfUnused(inner);
    return 1;
  }

  // A Transpose that moves only dims of size 1 keeps the elements in order: a Reshape
  // (an [N,1,1,C] scale to [N,C,1,1]), which costs nothing and folds into reshape chains.
  // The target is constant: static dims, 0 for a symbolic dim that keeps its place.
  int64_t reshapeInstead(Node& node, Value* x, const std::vector<int64_t>& perm) {
    const Shape& in = x->shape();
    if (!in.isRanked() || in.rank() != perm.size()) return 0;
    std::vector<int64_t> target;
    int64_t last = -1;
    for (size_t i = 0; i < perm.size(); ++i) {
      const Dim& dim = in[static_cast<size_t>(perm[i])];
      bool unit = dim.isStatic() && dim.value() == 1;
      if (!unit && perm[i] < last) return 0;
      if (!unit) last = perm[i];
      if (dim.isStatic()) {
        target.push_back(dim.value());
      } else if (perm[i] == static_cast<int64_t>(i)) {
        target.push_back(0);
      } else {
        return 0;
      }
    }
    Graph& graph = *node.graph();
    Node* shape = graph.createNodeBefore(&node, "Constant", {});
    shape->setAttr("value", Tensor::fromVector<int64_t>(DType::I64, {static_cast<int64_t>(target.size())}, target));
    shape->output()->setType(TensorType(DType::I64, Shape(std::vector<Dim>{Dim(static_cast<int64_t>(target.size()))})));
    Node* reshape = graph.createNodeBefore(&node, "Reshape", {x, shape->output()});
    reshape->setName(node.name());
    reshape->output()->setType(node.output()->type());
    reshape->output()->setName(node.output()->name());
    return replace(node, reshape->output());
  }

  static bool reshapeKeepsShape(const Node& node, const Value* x) {
    const Shape& in = x->shape();
    if (!in.isRanked()) return false;
    if (node.numOutputs() == 1 && sameDims(in, node.output(0)->shape())) return true;
    if (node.numInputs() < 2) return false;
    std::optional<std::vector<int64_t>> target = constantInts(node.input(1));
    if (!target || target->size() != in.rank()) return false;
    bool allow_zero = node.intAttr("allowzero", 0) != 0;
    for (size_t i = 0; i < in.rank(); ++i) {
      int64_t size = (*target)[i];
      bool copies = size == 0 && !allow_zero;
      bool equal = in[i].isStatic() && in[i].value() == size;
      if (!copies && !equal) return false;
    }
    return true;
  }

  // Reshape(MatMul(Reshape(x, [N, K]), W [K, M]), x's leading dims + [M]) -> MatMul(x, W),
  // and the same around a Gemm (alpha = beta = 1, untransposed, a bias of [M]) -> MatMul(x,
  // W) + bias: PyTorch's Linear on a 3-D input, which AOT decomposes into view + mm/addmm +
  // view. MatMul takes x whole, and the ops after it (a bias, an activation, the gated MLP's
  // product) become its epilogue instead of waiting behind a Reshape.
  int64_t flatMatMul(Node& node, Value* x) {
    Node* product = x->producer();
    if (!product || (!product->is("MatMul") && !product->is("Gemm")) || x->uses().size() != 1 ||
        product->numInputs() < 2 || !product->input(0)->producer() || !product->input(0)->producer()->is("Reshape")) {
      return 0;
    }
    Value* input = product->input(0)->producer()->input(0);
    Value* weight = product->input(1);
    const Shape& in = input->shape();
    const Shape& out = node.output(0)->shape();
    if (!in.isRanked() || in.rank() < 3 || !out.isRanked() || out.rank() != in.rank() || !weight->shape().isRanked() ||
        weight->shape().rank() != 2 || !in[in.rank() - 1].provablyEqual(weight->shape()[0]) ||
        !out[out.rank() - 1].provablyEqual(weight->shape()[1])) {
      return 0;
    }
    for (size_t i = 0; i + 1 < in.rank(); ++i) {
      if (!in[i].provablyEqual(out[i])) return 0;
    }
    Value* bias = nullptr;
    if (product->is("Gemm")) {
      bias = product->numInputs() > 2 ? product->input(2) : nullptr;
      bool plain = product->floatAttr("alpha", 1.0) == 1.0 && product->floatAttr("beta", 1.0) == 1.0 &&
                   product->intAttr("transA", 0) == 0 && product->intAttr("transB", 0) == 0;
      if (!plain || (bias && (!bias->shape().isRanked() || bias->shape().rank() != 1))) return 0;
    }
    Graph& graph = *node.graph();
    Value* result = createInferred(graph, &node, "MatMul", {input, weight})->output();
    if (bias) result = createInferred(graph, &node, "Add", {result, bias})->output();
    if (result->type() != node.output(0)->type()) {
      eraseIfUnused(result->producer());
      return 0;
    }
    return replace(node, result);
  }

  // A Slice whose result has its input's dims, stepping forward, takes every element in
  // order (`x[:, :, None]`'s full slices in PyTorch graphs).
  static bool sliceKeepsAll(const Node& node, const Value* x) {
    if (node.numOutputs() != 1 || !sameDims(x->shape(), node.output(0)->shape())) return false;
    if (node.numInputs() < 5 || !node.input(4)) return true;
    std::optional<std::vector<int64_t>> steps = constantInts(node.input(4));
    return steps && std::all_of(steps->begin(), steps->end(), [](int64_t step) { return step > 0; });
  }

  static bool expandKeepsShape(const Node& node, const Value* x) {
    const Shape& in = x->shape();
    if (!in.isRanked()) return false;
    if (node.numOutputs() == 1 && sameDims(in, node.output(0)->shape())) return true;
    if (node.numInputs() < 2) return false;
    std::optional<std::vector<int64_t>> target = constantInts(node.input(1));
    if (!target || target->size() > in.rank()) return false;
    size_t offset = in.rank() - target->size();
    for (size_t i = 0; i < target->size(); ++i) {
      int64_t size = (*target)[i];
      const Dim& dim = in[offset + i];
      if (size != 1 && !(dim.isStatic() && dim.value() == size)) return false;
    }
    return true;
  }

  int64_t reshapeChain(Node& node, Value* x) {
    Node* inner = x->producer();
    if (!inner || !inner->is("Reshape") || !inner->input(0) || node.numInputs() < 2) return 0;
    if (node.intAttr("allowzero", 0) == 0) {
      std::optional<std::vector<int64_t>> target = constantInts(node.input(1));
      if (!target || std::find(target->begin(), target->end(), 0) != target->end()) return 0;
    }
    // The node's shape does not depend on what it reshapes, so it can skip every Reshape
    // above it, including ones that could not be folded themselves.
    Value* source = inner->input(0);
    while (source->producer() && source->producer()->is("Reshape") && source->producer()->input(0)) {
      source = source->producer()->input(0);
    }
    node.setInput(0, source);
    eraseIfUnused(inner);
    return 1;
  }

  int64_t squeezeUnsqueeze(Node& node, Value* x) {
    Node* inner = x->producer();
    bool unsqueeze = node.is("Unsqueeze");
    if (!inner || !inner->is(unsqueeze ? "Squeeze" : "Unsqueeze") || !inner->input(0)) return 0;
    std::optional<std::vector<int64_t>> outer_axes = axesOf(node);
    std::optional<std::vector<int64_t>> inner_axes = axesOf(*inner);
    if (!outer_axes || !inner_axes) return 0;
    // Both axis lists index the same rank: the un-squeezed one.
    std::optional<size_t> rank;
    if (unsqueeze) {
      rank = rankOf(inner->input(0));
      if (!rank) rank = rankOf(node.output(0));
    } else {
      rank = rankOf(x);
      if (!rank && rankOf(inner->input(0))) rank = *rankOf(inner->input(0)) + inner_axes->size();
    }
    std::optional<std::vector<int64_t>> a = normalizedAxes(*outer_axes, rank);
    std::optional<std::vector<int64_t>> b = normalizedAxes(*inner_axes, rank);
    if (!a || !b || *a != *b) return 0;
    return replace(node, inner->input(0));
  }

  // A Cast of a one-element f64/f32/i64/i32 constant to one of those types is that constant:
  // a model's epsilon or attention scale, which PyTorch hands over as a double, becomes an
  // f32 constant that the recognizers can read.
  int64_t castScalarConstant(Node& node, Value* x, DType to) {
    const Tensor* tensor = constantTensor(x);
    auto is_numeric = [](DType t) { return t == DType::F64 || t == DType::F32 || t == DType::I64 || t == DType::I32; };
    if (!tensor || tensor->numElements() != 1 || !is_numeric(tensor->dtype()) || !is_numeric(to)) return 0;
    double value = 0;
    switch (tensor->dtype()) {
      case DType::F64: value = *tensor->data<double>(); break;
      case DType::F32: value = *tensor->data<float>(); break;
      case DType::I64: value = static_cast<double>(*tensor->data<int64_t>()); break;
      default: value = *tensor->data<int32_t>(); break;
    }
    // Only values every one of these types holds exactly (or rounds, for f32) are folded.
    if (!std::isfinite(value) || std::fabs(value) >= 2147483648.0) return 0;
    std::vector<int64_t> shape(tensor->shape().begin(), tensor->shape().end());
    Tensor folded = Tensor::allocate(to, shape);
    switch (to) {
      case DType::F64: *static_cast<double*>(folded.mutableData()) = value; break;
      case DType::F32: *static_cast<float*>(folded.mutableData()) = static_cast<float>(value); break;
      // Truncation toward zero, as Cast does.
      case DType::I64: *static_cast<int64_t*>(folded.mutableData()) = static_cast<int64_t>(value); break;
      default: *static_cast<int32_t*>(folded.mutableData()) = static_cast<int32_t>(value); break;
    }
    Node* constant = createInferred(*node.graph(), &node, "Constant", {}, {{"value", std::move(folded)}});
    return replace(node, constant->output());
  }

  // Redirects the uses of the node's first result to `replacement` and erases the node
  // (its other results must be unused).
  int64_t replace(Node& node, Value* replacement) {
    for (size_t i = 1; i < node.numOutputs(); ++i) {
      if (node.output(i)->hasUses()) return 0;
    }
    Value* old = node.output(0);
    takeOverName(old, replacement);
    old->replaceAllUsesWith(replacement);
    eraseIfUnused(&node);
    return 1;
  }

  // A graph output keeps its name (callers bind outputs by name); the value taking its
  // place is an intermediate or lives on under the new name.
  static void takeOverName(const Value* old, Value* replacement) {
    if (old->isGraphOutput() && !old->name().empty() && !replacement->isGraphInput() &&
        !replacement->isGraphOutput() && replacement->graph() == old->graph()) {
      replacement->setName(old->name());
    }
  }

  // Erases `node` if nothing uses it any more, then its producers that this left unused.
  // They all precede the node being rewritten, so the walk's next node is never touched.
  void eraseIfUnused(Node* node) {
    std::vector<Node*> pending{node};
    while (!pending.empty()) {
      Node* candidate = pending.back();
      pending.pop_back();
      bool used = false;
      for (size_t i = 0; i < candidate->numOutputs() && !used; ++i) {
        used = candidate->output(i)->hasUses();
      }
      if (used || hasSubgraphs(*candidate)) continue;
      std::vector<Node*> producers;
      for (size_t i = 0; i < candidate->numInputs(); ++i) {
        Value* input = candidate->input(i);
        if (input && input->producer()) producers.push_back(input->producer());
      }
      candidate->graph()->eraseNode(candidate);
      for (Node* producer : producers) {
        if (std::find(pending.begin(), pending.end(), producer) == pending.end()) {
          pending.push_back(producer);
        }
      }
    }
  }

  unsigned enabled_;
};

unsigned enabledRules(const std::vector<std::string>& disabled) {
  const std::vector<std::string>& rules = canonicalizationRules();
  unsigned enabled = (1u << rules.size()) - 1;
  for (const std::string& name : disabled) {
    auto it = std::find(rules.begin(), rules.end(), name);
    if (it == rules.end()) {
      std::string valid;
      for (const std::string& rule : rules) valid += (valid.empty() ? "" : ", ") + rule;
      raise("canonicalize: unknown rule '", name, "' in option 'disable'; rules: ", valid);
    }
    enabled &= ~(1u << (it - rules.begin()));
  }
  return enabled;
}

class CanonicalizePass : public Pass {
 public:
  explicit CanonicalizePass(unsigned enabled) : enabled_(enabled) {}
  PassResult run(Graph& graph, PassContext&) override {
    return {Canonicalizer(enabled_).run(graph)};
  }

 private:
  unsigned enabled_;
};

}  // namespace

int64_t canonicalize(Graph& graph, const CanonicalizeOptions& options) {
  return Canonicalizer(enabledRules(options.disabled)).run(graph);
}

PassInfo canonicalizePass() {
  PassInfo info;
  info.name = "canonicalize";
  info.description =
      "Removes no-op ops (Identity, inference Dropout, same-type Cast, same_shape "
      "Reshape/Expand), folds Reshape chains, Transpose pairs and Squeeze/Unsqueeze pairs, "
      "replaces an If with a constant condition by the branch it takes, folds zero Pads into "
      "Convs, and lets MatMul take the N-D input a Reshape flattened for it.";
  info.options.push_back({"disable", OptionSpec::Kind::StringList, std::vector<std::string>{},
                          "rules to skip: identity, dropout, reshape_chain, transpose, cast, "
                          "squeeze_unsqueeze, same_shape, constant_if, pad_into_conv, flat_matmul"});
  info.factory = [](const PassOptions& options) {
    return std::make_unique<CanonicalizePass>(enabledRules(options.getStringList("disable")));
  };
  return info;
}

}  // namespace estuary
