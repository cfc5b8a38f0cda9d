#include "estuary/transforms/cse.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "estuary/ops/schema.h"

namespace estuary {

namespace {

// Ops whose results differ from one run to the next although their operands do not.
constexpr std::string_view kRandomOps[] = {
    "Bernoulli", "Dropout", "Multinomial", "RandomNormal", "RandomNormalLike",
    "RandomUniform", "RandomUniformLike",
};

bool isRandom(const Node& node) {
  if (!node.domain().empty()) return false;
  return std::find(std::begin(kRandomOps), std::end(kRandomOps), node.opType()) !=
         std::end(kRandomOps);
}

bool hasSubgraphs(const Node& node) {
  for (const auto& [name, attribute] : node.attributes()) {
    if (attribute.kind() == AttrKind::Graph) return true;
  }
  return false;
}

inline size_t combine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// A tensor's hash from its type and at most 128 bytes from each end: equal tensors hash
// alike, and hashing a large weight costs nothing. contentEquals() decides equality.
size_t cheapTensorHash(const Tensor& tensor) {
  size_t seed = std::hash<int>()(static_cast<int>(tensor.dtype()));
  for (int64_t dim : tensor.shape()) seed = combine(seed, std::hash<int64_t>()(dim));
  const auto* bytes = static_cast<const unsigned char*>(tensor.data());
  size_t size = tensor.byteSize();
  if (!bytes || size == 0) return seed;
  constexpr size_t kEdge = 128;
  std::string_view head(reinterpret_cast<const char*>(bytes), std::min(size, kEdge));
  seed = combine(seed, std::hash<std::string_view>()(head));
  if (size > kEdge) {
    size_t tail_size = std::min(size - kEdge, kEdge);
    std::string_view tail(reinterpret_cast<const char*>(bytes + size - tail_size), tail_size);
    seed = combine(seed, std::hash<std::string_view>()(tail));
  }
  return seed;
}

size_t hashNode(const Node& node) {
  size_t seed = std::hash<std::string>()(node.opType());
  if (!node.domain().empty()) seed = combine(seed, std::hash<std::string>()(node.domain()));
  seed = combine(seed, node.numOutputs());
  for (size_t i = 0; i < node.numInputs(); ++i) {
    seed = combine(seed, std::hash<const void*>()(node.input(i)));
  }
  for (const auto& [name, attribute] : node.attributes()) {
    seed = combine(seed, std::hash<std::string>()(name));
    seed = combine(seed, attribute.kind() == AttrKind::Tensor
                             ? cheapTensorHash(attribute.asTensor())
                             : attribute.hash());
  }
  return seed;
}

bool sameAttributes(const AttributeMap& a, const AttributeMap& b) {
  if (a.size() != b.size()) return false;
  for (auto left = a.begin(), right = b.begin(); left != a.end(); ++left, ++right) {
    if (left->first != right->first || left->second.kind() != right->second.kind()) return false;
    if (left->second.kind() == AttrKind::Tensor) {
      if (!left->second.asTensor().contentEquals(right->second.asTensor())) return false;
    } else if (left->second != right->second) {
      return false;
    }
  }
  return true;
}

bool equivalent(const Node& a, const Node& b) {
  if (a.opType() != b.opType() || a.domain() != b.domain() ||
      a.numInputs() != b.numInputs() || a.numOutputs() != b.numOutputs()) {
    return false;
  }
  for (size_t i = 0; i < a.numInputs(); ++i) {
    if (a.input(i) != b.input(i)) return false;
  }
  return sameAttributes(a.attributes(), b.attributes());
}

// Open-addressing hash set of nodes. Much cheaper than std::unordered_set per node: no
// allocation per entry and the hash is stored, never recomputed.
class NodeTable {
 public:
  explicit NodeTable(size_t expected) {
    size_t capacity = 16;
    while (capacity < expected * 2) capacity *= 2;
    slots_.resize(capacity);
  }

  // The equivalent node already in the table, or nullptr after inserting `node`.
  Node* findOrInsert(Node* node, size_t hash) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (!slot.node) {
        slot = {hash, node};
        ++size_;
        return nullptr;
      }
      if (slot.hash == hash && equivalent(*slot.node, *node)) return slot.node;
    }
  }

  Node* find(const Node* node, size_t hash) const {
    size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (!slot.node) return nullptr;
      if (slot.hash == hash && equivalent(*slot.node, *node)) return slot.node;
    }
  }

 private:
  struct Slot {
    size_t hash = 0;
    Node* node = nullptr;
  };
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (!slot.node) continue;
      size_t i = slot.hash & mask;
      while (slots_[i].node) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

class CommonSubexpressionElimination {
 public:
  explicit CommonSubexpressionElimination(const OpRegistry& ops) : ops_(ops) {}

  int64_t run(Graph& graph) {
    std::vector<NodeTable*> scopes;
    return runScope(graph, scopes);
  }

 private:
  // `enclosing` holds the tables of the enclosing graphs, outermost first.
  int64_t runScope(Graph& graph, std::vector<NodeTable*>& enclosing) {
    NodeTable table(graph.numNodes());
    enclosing.push_back(&table);
    int64_t erased = 0;
    Node* next = nullptr;
    for (Node* node = graph.firstNode(); node; node = next) {
      next = node->next();
      if (hasSubgraphs(*node)) {
        for (Graph* subgraph : node->subgraphs()) erased += runScope(*subgraph, enclosing);
        continue;
      }
      if (node->numOutputs() == 0 || !pure(*node)) continue;
      size_t hash = hashNode(*node);
      Node* existing = nullptr;
      for (size_t i = 0; i + 1 < enclosing.size() && !existing; ++i) {
        existing = enclosing[i]->find(node, hash);
      }
      if (!existing) existing = table.findOrInsert(node, hash);
      if (!existing) continue;
      for (size_t i = 0; i < node->numOutputs(); ++i) {
        Value* kept = existing->output(i);
        Value* duplicate = node->output(i);
        if (!kept->type().isKnown() && duplicate->type().isKnown()) kept->setType(duplicate->type());
        duplicate->replaceAllUsesWith(kept);
      }
      graph.eraseNode(node);
      ++erased;
    }
    enclosing.pop_back();
    return erased;
  }

  bool pure(const Node& node) const {
    return !isRandom(node) && ops_.find(node.opType(), node.domain()) != nullptr;
  }

  const OpRegistry& ops_;
};

class CsePass : public Pass {
 public:
  PassResult run(Graph& graph, PassContext& context) override {
    const OpRegistry& ops = context.ops ? *context.ops : OpRegistry::global();
    return {eliminateCommonSubexpressions(graph, ops)};
  }
};

}  // namespace

bool isPure(const Node& node, const OpRegistry& ops) {
  return !isRandom(node) && !hasSubgraphs(node) && ops.find(node) != nullptr;
}

int64_t eliminateCommonSubexpressions(Graph& graph, const OpRegistry& ops) {
  return CommonSubexpressionElimination(ops).run(graph);
}

PassInfo commonSubexpressionEliminationPass() {
  PassInfo info;
  info.name = "cse";
  info.description =
      "Merges nodes with the same op, attributes and operands; never merges random ops or "
      "ops without a schema.";
  info.factory = [](const PassOptions&) { return std::make_unique<CsePass>(); };
  return info;
}

}  // namespace estuary
