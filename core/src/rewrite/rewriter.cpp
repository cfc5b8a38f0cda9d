#include "estuary/rewrite/rewriter.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"

namespace estuary {

Node* Rewriter::create(std::string_view op, const std::vector<Value*>& inputs,
                       size_t num_outputs) {
  auto [domain, op_type] = splitQualifiedOp(op);
  Node* node = graph_->createNodeBefore(insert_before_, op_type, inputs, num_outputs, domain);
  created_.push_back(node);
  return node;
}

void PatternSet::add(Pattern pattern) {
  pattern.validate();
  patterns_.push_back(std::move(pattern));
}

namespace {

using ValueKind = Pattern::ValueInfo::Kind;

// How the matcher reaches a pattern node: already bound through an operand edge of an
// earlier node, or by trying each user of an earlier node's output.
struct Step {
  uint32_t node;
  bool via_users;
  uint32_t from_value;
};

// One edge on the way from a pattern node to the root, walked in the graph to find the
// roots a changed node could now be part of.
struct PathStep {
  bool down;        // to the users of output `output`; else to the producers of operands
  uint32_t output;  // down: output of the current node; up: output index of the producer
  uint32_t target;  // the pattern node reached; its op filters the candidates
};

struct CompiledPattern {
  const Pattern* pattern;
  uint32_t index;  // in the PatternSet
  uint32_t root;
  std::vector<Step> steps;
  std::vector<uint32_t> slot_count;   // per value: operand slots of the pattern using it
  std::vector<bool> is_result;        // per value
  std::vector<std::vector<PathStep>> to_root;  // per node
  std::vector<const OpSchema*> schemas;        // per node, for attribute defaults
};

CompiledPattern compile(const Pattern& pattern, uint32_t index, const OpRegistry& registry) {
  const auto& nodes = pattern.nodes();
  const auto& values = pattern.values();
  CompiledPattern c;
  c.pattern = &pattern;
  c.index = index;
  c.slot_count.assign(values.size(), 0);
  c.is_result.assign(values.size(), false);
  for (uint32_t result : pattern.resultIds()) c.is_result[result] = true;
  std::vector<uint32_t> users(nodes.size(), 0);
  for (const auto& node : nodes) {
    for (uint32_t operand : node.operands) {
      ++c.slot_count[operand];
      if (values[operand].kind == ValueKind::NodeOutput) ++users[values[operand].node];
    }
  }
  for (const auto& node : nodes) c.schemas.push_back(registry.find(node.op_type, node.domain));

  // The root is the sink with the most ancestors (ties: the later node), so that most of
  // the pattern is reached through operand edges, which need no search.
  std::vector<uint32_t> ancestors(nodes.size(), 0);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    std::vector<bool> seen(nodes.size(), false);
    std::vector<uint32_t> stack{i};
    while (!stack.empty()) {
      uint32_t n = stack.back();
      stack.pop_back();
      for (uint32_t operand : nodes[n].operands) {
        if (values[operand].kind != ValueKind::NodeOutput || seen[values[operand].node]) continue;
        seen[values[operand].node] = true;
        ++ancestors[i];
        stack.push_back(values[operand].node);
      }
    }
  }
  c.root = 0;
  bool have_root = false;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (users[i] != 0) continue;
    if (!have_root || ancestors[i] >= ancestors[c.root]) c.root = i;
    have_root = true;
  }

  std::vector<bool> ordered(nodes.size(), false);
  c.to_root.assign(nodes.size(), {});
  c.steps.push_back(Step{c.root, false, 0});
  ordered[c.root] = true;
  for (size_t next = 0; c.steps.size() < nodes.size(); ++next) {
    if (next == c.steps.size()) {
      // Everything above the ordered nodes is ordered: continue below them, at a node
      // using an output of an ordered node.
      bool found = false;
      for (uint32_t r = 0; r < nodes.size() && !found; ++r) {
        if (ordered[r]) continue;
        for (uint32_t operand : nodes[r].operands) {
          const auto& value = values[operand];
          if (value.kind != ValueKind::NodeOutput || !ordered[value.node]) continue;
          c.steps.push_back(Step{r, true, operand});
          ordered[r] = true;
          c.to_root[r].push_back(PathStep{false, value.output, value.node});
          c.to_root[r].insert(c.to_root[r].end(), c.to_root[value.node].begin(),
                              c.to_root[value.node].end());
          found = true;
          break;
        }
      }
      continue;  // validate() guarantees connectivity, so a node was found
    }
    uint32_t n = c.steps[next].node;
    for (uint32_t operand : nodes[n].operands) {
      const auto& value = values[operand];
      if (value.kind != ValueKind::NodeOutput || ordered[value.node]) continue;
      c.steps.push_back(Step{value.node, false, 0});
      ordered[value.node] = true;
      c.to_root[value.node].push_back(PathStep{true, value.output, n});
      c.to_root[value.node].insert(c.to_root[value.node].end(), c.to_root[n].begin(),
                                   c.to_root[n].end());
    }
  }
  return c;
}

// Ops index: op type -> (domain, entries) pairs, looked up without building strings.
template <typename Entry>
class OpIndex {
 public:
  void add(const std::string& op_type, const std::string& domain, Entry entry) {
    lengths_ |= lengthBit(op_type.size());
    auto& domains = by_type_[op_type];
    for (auto& [known, entries] : domains) {
      if (known == domain) {
        entries.push_back(entry);
        return;
      }
    }
    domains.emplace_back(domain, std::vector<Entry>{entry});
  }
  const std::vector<Entry>* find(const Node& node) const {
    // Most nodes are not in the index; their op type's length says so without hashing.
    if (!(lengths_ & lengthBit(node.opType().size()))) return nullptr;
    auto it = by_type_.find(node.opType());
    if (it == by_type_.end()) return nullptr;
    for (const auto& [domain, entries] : it->second) {
      if (domain == node.domain()) return &entries;
    }
    return nullptr;
  }

 private:
  static uint64_t lengthBit(size_t length) { return uint64_t{1} << std::min<size_t>(length, 63); }
  std::unordered_map<std::string, std::vector<std::pair<std::string, std::vector<Entry>>>>
      by_type_;
  uint64_t lengths_ = 0;
};

struct PatternNodeRef {
  uint32_t pattern;
  uint32_t node;
};

class Driver {
 public:
  Driver(const PatternSet& patterns, const RewriteOptions& options, RewriteStats& stats)
      : registry_(options.registry ? *options.registry : OpRegistry::global()),
        stats_(stats) {
    stats_.per_pattern.assign(patterns.size(), 0);
    std::vector<uint32_t> order(patterns.size());
    for (uint32_t i = 0; i < patterns.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return patterns[a].benefitValue() > patterns[b].benefitValue();
    });
    compiled_.reserve(patterns.size());
    for (uint32_t i : order) compiled_.push_back(compile(patterns[i], i, registry_));
    for (uint32_t ci = 0; ci < compiled_.size(); ++ci) {
      const CompiledPattern& c = compiled_[ci];
      const auto& nodes = c.pattern->nodes();
      roots_.add(nodes[c.root].op_type, nodes[c.root].domain, ci);
      for (uint32_t n = 0; n < nodes.size(); ++n) {
        by_op_.add(nodes[n].op_type, nodes[n].domain, PatternNodeRef{ci, n});
      }
    }
  }

  // Limits the rewrites of a run; without a limit each graph visited adds ten per node.
  void setBudget(int64_t max_rewrites) {
    budget_ = max_rewrites;
    fixed_budget_ = true;
  }

  void run(Graph& graph, bool subgraphs) {
    if (!fixed_budget_) budget_ += 10 * static_cast<int64_t>(graph.numNodes());
    graph_ = &graph;
    // Sized once, with room for the nodes rewrites create: growing these tables mid-run
    // costs more than the slack.
    const size_t ids = graph.nodeIdBound() + graph.numNodes() / 4 + 64;
    flags_.assign(ids, 0);
    pos_.assign(ids, 0);
    stack_.clear();
    // One walk numbers the nodes and finds the candidate roots and the subgraphs.
    std::vector<Node*> initial;
    std::vector<Graph*> inner;
    uint64_t p = 0;
    for (Node* node : graph.nodes()) {
      ensure(node->id());
      p += kGap;
      pos_[node->id()] = p;
      if (roots_.find(*node)) initial.push_back(node);
      if (subgraphs && !node->attributes().empty()) {
        for (Graph* subgraph : node->subgraphs()) inner.push_back(subgraph);
      }
    }
    if (!inner.empty()) {
      // Inner graphs first: their rewrites can only remove uses of outer values, which may
      // let outer patterns match. They leave this graph's nodes and order as they are.
      std::vector<uint8_t> flags = std::move(flags_);
      std::vector<uint64_t> positions = std::move(pos_);
      for (Graph* subgraph : inner) run(*subgraph, true);
      graph_ = &graph;
      flags_ = std::move(flags);
      pos_ = std::move(positions);
    }
    for (auto it = initial.rbegin(); it != initial.rend(); ++it) push(*it);
    while (!stack_.empty()) {
      auto [node, id] = stack_.back();
      stack_.pop_back();
      if (flags_[id] & kErased) continue;
      flags_[id] &= ~kQueued;
      const std::vector<uint32_t>* candidates = roots_.find(*node);
      if (!candidates) continue;
      for (uint32_t ci : *candidates) {
        if (match(compiled_[ci], node)) {
          apply(compiled_[ci], node);
          break;
        }
      }
    }
  }

 private:
  enum : uint8_t { kQueued = 1, kErased = 2, kInClosure = 4 };
  static constexpr uint64_t kGap = uint64_t{1} << 32;

  // --- Per-graph state ------------------------------------------------------------------

  void ensure(uint64_t id) {
    if (id >= flags_.size()) {
      size_t size = std::max<size_t>(id + 1, flags_.size() * 2);
      flags_.resize(size, 0);
      pos_.resize(size, 0);
    }
  }
  uint8_t& flags(const Node* node) {
    ensure(node->id());
    return flags_[node->id()];
  }
  uint64_t pos(const Node* node) { return pos_[node->id()]; }

  void renumber() {
    uint64_t p = 0;
    for (Node* node : graph_->nodes()) {
      ensure(node->id());
      p += kGap;
      pos_[node->id()] = p;
    }
  }

  // Gives the `count` consecutive nodes ending just before `end` positions between their
  // neighbours.
  void placeBlock(Node* end, size_t count) {
    if (count == 0) return;
    Node* first = end;
    for (size_t i = 0; i < count; ++i) first = first->prev();
    uint64_t lo = first->prev() ? pos(first->prev()) : 0;
    uint64_t hi = pos(end);
    if (hi - lo <= count) {
      renumber();
      return;
    }
    uint64_t step = (hi - lo) / (count + 1);
    uint64_t p = lo;
    for (Node* node = first; node != end; node = node->next()) {
      ensure(node->id());
      p += step;
      pos_[node->id()] = p;
    }
  }

  void push(Node* node) {
    uint8_t& f = flags(node);
    if (f & (kQueued | kErased)) return;
    f |= kQueued;
    stack_.emplace_back(node, node->id());
  }

  // The node of this graph that is, or contains, `user`; nullptr for the terminator.
  Node* inThisGraph(Node* user) const {
    while (user && user->graph() != graph_) user = user->graph()->parentNode();
    return user && !user->isReturn() ? user : nullptr;
  }

  // --- Matching ---------------------------------------------------------------------------

  bool match(const CompiledPattern& c, Node* root) {
    const Pattern& pattern = *c.pattern;
    current_ = &c;
    nodes_.assign(pattern.nodes().size(), nullptr);
    values_.assign(pattern.values().size(), nullptr);
    bound_.assign(pattern.values().size(), 0);
    trail_.clear();
    root_ = root;
    nodes_[c.root] = root;
    return step(0);
  }

  void bindNode(uint32_t n, Node* node) {
    nodes_[n] = node;
    trail_.push_back(n << 1 | 1);
  }
  void bindValue(uint32_t v, Value* value) {
    values_[v] = value;
    bound_[v] = 1;
    trail_.push_back(v << 1);
  }
  void undo(size_t mark) {
    while (trail_.size() > mark) {
      uint32_t entry = trail_.back();
      trail_.pop_back();
      if (entry & 1) {
        nodes_[entry >> 1] = nullptr;
      } else {
        values_[entry >> 1] = nullptr;
        bound_[entry >> 1] = 0;
      }
    }
  }
  bool isBound(const Node* node) const {
    return std::find(nodes_.begin(), nodes_.end(), node) != nodes_.end();
  }

  bool step(size_t k) {
    const CompiledPattern& c = *current_;
    if (k == c.steps.size()) return finish();
    const Step& s = c.steps[k];
    if (!s.via_users) return verify(s.node, nodes_[s.node], k);
    for (const Use& use : values_[s.from_value]->uses()) {
      Node* user = use.user;
      if (user->graph() != graph_ || user->isReturn() || isBound(user)) continue;
      size_t mark = trail_.size();
      bindNode(s.node, user);
      if (verify(s.node, user, k)) return true;
      undo(mark);
    }
    return false;
  }

  const Attribute* attrOf(uint32_t n, const Node& node, const std::string& name) const {
    if (const Attribute* present = node.attr(name)) return present;
    const OpSchema* schema = current_->schemas[n];
    if (!schema) return nullptr;
    const AttrSpec* spec = schema->findAttr(name);
    return spec && spec->default_value ? &*spec->default_value : nullptr;
  }

  bool passes(const Pattern::ValueInfo& info, const Value& value) const {
    for (const ValuePredicate& predicate : info.predicates) {
      if (!predicate(value)) return false;
    }
    return true;
  }

  bool verify(uint32_t n, Node* node, size_t k) {
    const Pattern& pattern = *current_->pattern;
    const Pattern::NodeInfo& info = pattern.nodes()[n];
    if (!node->is(info.op_type, info.domain) || node->numOutputs() != info.outputs.size()) {
      return false;
    }
    for (uint32_t other = 0; other < nodes_.size(); ++other) {
      if (other != n && nodes_[other] == node) return false;
    }
    for (const auto& [name, expected] : info.attr_equals) {
      const Attribute* actual = attrOf(n, *node, name);
      if (!actual || *actual != expected) return false;
    }
    for (const auto& [name, predicate] : info.attr_predicates) {
      if (!predicate(attrOf(n, *node, name))) return false;
    }
    size_t mark = trail_.size();
    for (size_t i = 0; i < info.outputs.size(); ++i) {
      uint32_t v = info.outputs[i];
      Value* output = node->output(i);
      if (bound_[v]) {
        if (values_[v] != output) return undo(mark), false;
      } else {
        if (!passes(pattern.values()[v], *output)) return undo(mark), false;
        bindValue(v, output);
      }
    }
    size_t num_pattern = info.operands.size();
    size_t num_graph = node->numInputs();
    size_t count = std::max(num_pattern, num_graph);
    bool swap_too = info.commutative && num_graph >= 2 && info.operands[0] != info.operands[1] &&
                    node->input(0) != node->input(1);
    for (int swapped = 0; swapped <= (swap_too ? 1 : 0); ++swapped) {
      size_t operand_mark = trail_.size();
      bool ok = true;
      for (size_t i = 0; i < count && ok; ++i) {
        size_t pi = swapped && i < 2 ? 1 - i : i;
        Value* actual = i < num_graph ? node->input(i) : nullptr;
        ok = bindOperand(pi < num_pattern ? static_cast<int64_t>(info.operands[pi]) : -1, actual);
      }
      if (ok && step(k + 1)) return true;
      undo(operand_mark);
    }
    undo(mark);
    return false;
  }

  // `v` < 0 stands for an operand the pattern leaves out.
  bool bindOperand(int64_t v, Value* actual) {
    const Pattern& pattern = *current_->pattern;
    if (v < 0 || pattern.values()[v].kind == ValueKind::Absent) return actual == nullptr;
    if (!actual) return false;
    if (bound_[v]) return values_[v] == actual;
    const Pattern::ValueInfo& info = pattern.values()[v];
    if (info.kind == ValueKind::NodeOutput) {
      Node* producer = actual->producer();
      if (!producer || producer->graph() != graph_ || actual->index() != info.output) return false;
      if (nodes_[info.node]) {
        if (nodes_[info.node] != producer) return false;
      } else {
        if (isBound(producer)) return false;
        bindNode(info.node, producer);
      }
    }
    if (!passes(info, *actual)) return false;
    bindValue(static_cast<uint32_t>(v), actual);
    return true;
  }

  bool finish() {
    const CompiledPattern& c = *current_;
    const Pattern& pattern = *c.pattern;
    const auto& infos = pattern.values();
    for (uint32_t v = 0; v < infos.size(); ++v) {
      if (!bound_[v]) continue;
      if (infos[v].kind == ValueKind::Capture) {
        Node* producer = values_[v]->producer();
        if (producer && isBound(producer)) return false;
      } else if (infos[v].kind == ValueKind::NodeOutput && !c.is_result[v] &&
                 !infos[v].allow_other_uses && values_[v]->uses().size() != c.slot_count[v]) {
        return false;
      }
    }
    Match m(pattern, *graph_, root_, nodes_, values_, &registry_);
    for (const MatchCheck& check : pattern.checks()) {
      if (!check(m)) return false;
    }
    return planOrder();
  }

  // Chooses where the replacement goes (before the last matched node) and which earlier
  // users of the results must move after it. Refuses matches whose captures depend on
  // their own results: replacing those would make a cycle.
  bool planOrder() {
    const CompiledPattern& c = *current_;
    last_ = nodes_[0];
    for (Node* node : nodes_) {
      if (pos(node) > pos(last_)) last_ = node;
    }
    uint64_t limit = pos(last_);
    closure_.clear();
    auto reach = [&](Value* value) {
      for (const Use& use : value->uses()) {
        Node* user = inThisGraph(use.user);
        if (!user || pos(user) >= limit || (flags(user) & kInClosure)) continue;
        flags(user) |= kInClosure;
        closure_.push_back(user);
      }
    };
    for (uint32_t result : c.pattern->resultIds()) reach(values_[result]);
    for (size_t i = 0; i < closure_.size(); ++i) {
      for (Value* output : closure_[i]->outputs()) reach(output);
    }
    bool cycle = false;
    const auto& infos = c.pattern->values();
    for (uint32_t v = 0; v < infos.size() && !cycle; ++v) {
      if (infos[v].kind != ValueKind::Capture) continue;
      Node* producer = values_[v]->producer();
      cycle = producer && producer->graph() == graph_ && (flags(producer) & kInClosure);
    }
    for (Node* node : closure_) flags(node) &= ~kInClosure;
    if (cycle) return false;
    std::sort(closure_.begin(), closure_.end(),
              [&](Node* a, Node* b) { return pos(a) < pos(b); });
    return true;
  }

  // --- Rewriting --------------------------------------------------------------------------

  void apply(const CompiledPattern& c, Node* root) {
    const Pattern& pattern = *c.pattern;
    Graph& graph = *graph_;
    auto where = [&] { return "pattern '" + pattern.name() + "' at " + root->describe(); };
    if (stats_.rewrites >= budget_) {
      raise("pattern rewriting did not reach a fixed point after ", stats_.rewrites,
            " rewrites; ", where(),
            " matches again: do patterns undo each other, or does a replacement match its "
            "own pattern?");
    }
    // Nodes may be erased below; their ids say which without touching them.
    matched_ids_.clear();
    for (Node* node : nodes_) matched_ids_.push_back(node->id());

    size_t nodes_before = graph.numNodes();
    Rewriter rewriter(graph, last_);
    std::vector<Value*> replacements = pattern.replacement()(
        Match(pattern, graph, root, nodes_, values_, &registry_), rewriter);
    const std::vector<Node*>& created = rewriter.created();
    const auto& results = pattern.resultIds();
    if (graph.numNodes() != nodes_before + created.size()) {
      raise(where(), ": the replacement changed the graph other than through its Rewriter");
    }
    if (replacements.size() != results.size()) {
      raise(where(), ": the replacement returned ", replacements.size(), " value(s) for ",
            results.size(), " result(s)");
    }
    placeBlock(last_, created.size());
    for (size_t i = 0; i < results.size(); ++i) {
      if (!replacements[i]) raise(where(), ": the replacement returned no value for result ", i);
      checkReplacementInput(where, replacements[i]);
    }
    for (Node* node : created) {
      for (Value* input : node->inputs()) checkReplacementInput(where, input);
    }
    // A new value computes what the result it replaces computed, so it has its type;
    // that saves running inference for most fused ops.
    for (size_t i = 0; i < results.size(); ++i) {
      Value* replacement = replacements[i];
      if (replacement->type() == TensorType() && isCreated(created, replacement->producer())) {
        replacement->setType(values_[results[i]]->type());
      }
    }
    inferCreated(where, created);
    for (size_t i = 0; i < results.size(); ++i) {
      values_[results[i]]->replaceAllUsesWith(replacements[i]);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      // A new value takes the name of the value it replaces when that one goes away.
      Value* old_value = values_[results[i]];
      Value* new_value = replacements[i];
      Node* producer = new_value->producer();
      if (!new_value->name().empty() || old_value->name().empty() || !isCreated(created, producer)) {
        continue;
      }
      const auto& outputs = old_value->producer()->outputs();
      if (std::none_of(outputs.begin(), outputs.end(),
                       [](const Value* v) { return v->hasUses(); })) {
        new_value->setName(old_value->name());
      }
    }
    for (Node* node : closure_) node->moveBefore(last_);
    placeBlock(last_, closure_.size());

    seeds_.clear();
    for (Node* node : created) seeds_.emplace_back(node, node->id());
    for (Value* replacement : replacements) {
      for (const Use& use : replacement->uses()) {
        if (Node* user = inThisGraph(use.user)) seeds_.emplace_back(user, user->id());
      }
    }
    // Later nodes first, so that erasing them makes the earlier ones dead.
    order_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(),
              [&](size_t a, size_t b) { return pos(nodes_[a]) > pos(nodes_[b]); });
    for (size_t i : order_) {
      if (!(flags_[matched_ids_[i]] & kErased)) eraseIfDead(nodes_[i]);
    }
    for (size_t i = created.size(); i-- > 0;) {
      if (!(flags_[created[i]->id()] & kErased)) eraseIfDead(created[i]);
    }
    ++stats_.rewrites;
    ++stats_.per_pattern[c.index];
    for (const auto& [seed, id] : seeds_) {
      if (!(flags_[id] & kErased)) pushRoots(seed);
    }
  }

  // A replacement may use the nodes it created and values defined before the match's last
  // node (captures, graph inputs, values of enclosing graphs), but not the results it
  // replaces: they are about to go away.
  template <typename Where>
  void checkReplacementInput(const Where& where, Value* input) {
    if (!input) return;
    const std::vector<uint32_t>& results = current_->pattern->resultIds();
    for (size_t i = 0; i < results.size(); ++i) {
      if (values_[results[i]] == input) {
        raise(where(), ": the replacement uses result ", i, " of the match, which it replaces");
      }
    }
    Node* producer = input->producer();
    if (producer && producer->graph() == graph_ && pos(producer) >= pos(last_)) {
      raise(where(), ": the replacement uses an output of ", producer->describe(),
            ", which does not come before the matched nodes");
    }
  }

  static bool isCreated(const std::vector<Node*>& created, const Node* node) {
    return node && std::find(created.begin(), created.end(), node) != created.end();
  }

  // Types of the new nodes whose types are not all known yet, from their schemas.
  template <typename Where>
  void inferCreated(const Where& where, const std::vector<Node*>& created) {
    known_values_.clear();
    for (Node* node : created) {
      bool known = true;
      for (size_t i = 0; i < node->numOutputs(); ++i) known &= node->output(i)->type().isKnown();
      if (known) continue;
      try {
        inferNode(*node, known_values_, registry_);
      } catch (const Error& error) {
        raise(where(), ": the replacement built ", node->describe(),
              ", whose types do not check: ", error.what());
      }
    }
    known_values_.clear();
  }

  void eraseIfDead(Node* start) {
    std::vector<std::pair<Node*, uint64_t>> work{{start, start->id()}};
    while (!work.empty()) {
      auto [node, id] = work.back();
      work.pop_back();
      if ((flags_[id] & kErased) || node->numOutputs() == 0) continue;
      bool dead = true;
      for (Value* output : node->outputs()) dead &= !output->hasUses();
      if (!dead) continue;
      size_t first_producer = work.size();
      for (Value* input : node->inputs()) {
        Node* producer = input ? input->producer() : nullptr;
        if (producer && producer->graph() == graph_) work.emplace_back(producer, producer->id());
      }
      flags_[id] |= kErased;
      graph_->eraseNode(node);
      // The producers lost uses: they may be dead now, or match where they did not.
      seeds_.insert(seeds_.end(), work.begin() + first_producer, work.end());
    }
  }

  // Queues the roots of every match `node` could be part of: for each pattern node of its
  // op, follow the pattern's edges from there to the root.
  void pushRoots(Node* node) {
    const std::vector<PatternNodeRef>* refs = by_op_.find(*node);
    if (!refs) return;
    for (const PatternNodeRef& ref : *refs) {
      const CompiledPattern& c = compiled_[ref.pattern];
      walk(c, c.to_root[ref.node], 0, node);
    }
  }

  void walk(const CompiledPattern& c, const std::vector<PathStep>& path, size_t i, Node* node) {
    if (i == path.size()) {
      push(node);
      return;
    }
    const PathStep& s = path[i];
    const Pattern::NodeInfo& target = c.pattern->nodes()[s.target];
    if (s.down) {
      if (s.output >= node->numOutputs()) return;
      for (const Use& use : node->output(s.output)->uses()) {
        Node* user = use.user;
        if (user->graph() == graph_ && user->is(target.op_type, target.domain)) {
          walk(c, path, i + 1, user);
        }
      }
    } else {
      for (size_t j = 0; j < node->numInputs(); ++j) {
        Value* input = node->input(j);
        Node* producer = input ? input->producer() : nullptr;
        if (producer && producer->graph() == graph_ && input->index() == s.output &&
            producer->is(target.op_type, target.domain)) {
          walk(c, path, i + 1, producer);
        }
      }
    }
  }

  const OpRegistry& registry_;
  RewriteStats& stats_;
  int64_t budget_ = 1000;
  bool fixed_budget_ = false;
  std::vector<CompiledPattern> compiled_;
  OpIndex<uint32_t> roots_;
  OpIndex<PatternNodeRef> by_op_;

  Graph* graph_ = nullptr;
  std::vector<uint8_t> flags_;
  std::vector<uint64_t> pos_;
  std::vector<std::pair<Node*, uint64_t>> stack_;
  std::vector<std::pair<Node*, uint64_t>> seeds_;
  std::vector<uint64_t> matched_ids_;
  KnownValueMap known_values_;
  std::vector<size_t> order_;

  const CompiledPattern* current_ = nullptr;
  Node* root_ = nullptr;
  std::vector<Node*> nodes_;
  std::vector<Value*> values_;
  std::vector<uint8_t> bound_;
  std::vector<uint32_t> trail_;
  Node* last_ = nullptr;
  std::vector<Node*> closure_;
};

}  // namespace

RewriteStats applyPatterns(Graph& graph, const PatternSet& patterns,
                           const RewriteOptions& options) {
  RewriteStats stats;
  Driver driver(patterns, options, stats);
  if (options.max_rewrites > 0) driver.setBudget(options.max_rewrites);
  driver.run(graph, options.subgraphs);
  return stats;
}

}  // namespace estuary
