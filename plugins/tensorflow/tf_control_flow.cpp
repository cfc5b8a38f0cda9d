#include "tf_control_flow.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "estuary/support/error.h"

namespace estuary::tensorflow_frontend {

bool isControlFlowPrimitive(std::string_view op) {
  static const std::set<std::string_view> kPrimitives = {
      "Switch",    "Merge",    "Enter",         "Exit",     "NextIteration",    "LoopCond",
      "RefSwitch", "RefMerge", "RefEnter",      "RefExit",  "RefNextIteration", "RefSelect"};
  return kPrimitives.count(op) > 0;
}

namespace {

std::string_view nodeOf(std::string_view value) { return value.substr(0, value.find(':')); }

// A node whose inputs read other names than the node it wraps: a node moved into a body,
// reading through the Identities the body drops.
class RenamedNode final : public TfNode {
 public:
  RenamedNode(const TfNode& node, std::vector<std::string> inputs) : node_(node), inputs_(std::move(inputs)) {}

  const TfModelContext& model() const override { return node_.model(); }
  const NodeDef* def() const override { return node_.def(); }
  std::string_view opType() const override { return node_.opType(); }
  std::string_view name() const override { return node_.name(); }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  size_t numOutputs() const override { return node_.numOutputs(); }
  std::string_view outputName(size_t i) const override { return node_.outputName(i); }
  std::vector<std::string_view> attributeNames() const override { return node_.attributeNames(); }
  bool hasAttribute(std::string_view name) const override { return node_.hasAttribute(name); }
  std::optional<AttrValue> attribute(std::string_view name) const override { return node_.attribute(name); }
  std::vector<AttrValue::GraphRef> subgraphs() const override { return node_.subgraphs(); }

 private:
  const TfNode& node_;
  std::vector<std::string> inputs_;
};

// A node Estuary makes: an If or a While over bodies it made.
class MadeNode final : public TfNode {
 public:
  MadeNode(const TfModelContext& model, std::string op, std::string name, std::vector<std::string> inputs,
           std::vector<std::string> outputs, std::vector<std::pair<std::string, AttrValue::GraphRef>> bodies)
      : model_(model),
        op_(std::move(op)),
        name_(std::move(name)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        bodies_(std::move(bodies)) {}

  const TfModelContext& model() const override { return model_; }
  const NodeDef* def() const override { return nullptr; }
  std::string_view opType() const override { return op_; }
  std::string_view name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }
  std::vector<std::string_view> attributeNames() const override {
    std::vector<std::string_view> names;
    for (const auto& [name, body] : bodies_) names.push_back(name);
    return names;
  }
  std::optional<AttrValue> attribute(std::string_view name) const override {
    for (const auto& [key, body] : bodies_) {
      if (key == name) return AttrValue{body, "func"};
    }
    return std::nullopt;
  }
  std::vector<AttrValue::GraphRef> subgraphs() const override {
    std::vector<AttrValue::GraphRef> graphs;
    for (const auto& [name, body] : bodies_) graphs.push_back(body);
    return graphs;
  }

 private:
  const TfModelContext& model_;
  std::string op_;
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<std::string> outputs_;
  std::vector<std::pair<std::string, AttrValue::GraphRef>> bodies_;
};

// A body Estuary made: some of the graph's nodes, closed over its inputs.
class MadeGraph final : public GraphDecoder {
 public:
  MadeGraph(std::string name, std::vector<std::string> inputs, std::vector<std::unique_ptr<TfNode>> nodes,
            std::vector<std::string> outputs)
      : name_(std::move(name)), inputs_(std::move(inputs)), nodes_(std::move(nodes)), outputs_(std::move(outputs)) {}

  std::string name() const override { return name_; }
  size_t numInputs() const override { return inputs_.size(); }
  std::string_view inputName(size_t i) const override { return inputs_[i]; }
  TensorType inputType(size_t, SymbolTable&) const override { return {}; }
  size_t numNodes() const override { return nodes_.size(); }
  const NodeDecoder& node(size_t i) const override { return *nodes_[i]; }
  size_t numOutputs() const override { return outputs_.size(); }
  std::string_view outputName(size_t i) const override { return outputs_[i]; }

 private:
  std::string name_;
  std::vector<std::string> inputs_;
  std::vector<std::unique_ptr<TfNode>> nodes_;
  std::vector<std::string> outputs_;
};

// The nodes between some values (`sources`: a loop's or a cond's inputs) and others (`roots`:
// what the construct returns), and what they read from elsewhere.
struct Region {
  std::vector<const TfNode*> nodes;  // the nodes that depend on a source, in the graph's order
  std::vector<std::string> captures;  // values read from outside the region and its sources
  std::set<std::string> reached;      // the sources read
  bool leaf = true;                   // no control-flow primitive among the nodes
};

class Rebuilder {
 public:
  Rebuilder(const TfModelContext& model, const std::string& graph, std::vector<const TfNode*> nodes,
            const std::function<const NodeDef*(std::string_view)>& find, std::vector<std::unique_ptr<TfNode>>& made)
      : model_(model), graph_(graph), pool_(std::move(nodes)), find_(find), made_(made) {}

  std::vector<const TfNode*> run() {
    for (const TfNode* node : pool_) {
      if (isControlFlowPrimitive(node->opType()) && node->opType().substr(0, 3) == "Ref") {
        fail(*node, "reference-typed control flow (", node->opType(), ") is not rebuilt; freeze the graph with "
             "resource variables");
      }
    }
    for (bool changed = true; changed;) {
      index();
      changed = rebuildLoop() || rebuildConds();
    }
    for (const TfNode* node : pool_) {
      if (isControlFlowPrimitive(node->opType())) {
        fail(*node, "is part of TF 1 control flow that is not a cond (Switches on one predicate whose branches "
             "Merges join) or a while loop (Enter, Merge, Switch on a LoopCond, NextIteration and Exit per "
             "variable) around closed bodies, so it cannot become an If or a While");
      }
    }
    return pool_;
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail(const NodeDecoder& node, const Parts&... parts) const {
    raise(model_.model(), ": graph '", graph_, "': node '", node.name(), "' (", node.opType(), ") ", parts...);
  }

  void index() {
    producers_.clear();
    readers_.clear();
    for (const TfNode* node : pool_) {
      for (size_t k = 0; k < node->numOutputs(); ++k) {
        if (!node->outputName(k).empty()) producers_[std::string(node->outputName(k))] = node;
      }
      for (size_t k = 0; k < node->numInputs(); ++k) readers_[std::string(node->inputName(k))].push_back(node);
    }
  }

  const TfNode* producer(const std::string& value) const {
    auto found = producers_.find(value);
    return found == producers_.end() ? nullptr : found->second;
  }

  // The value an Identity chain starts from.
  std::string resolved(std::string value) const {
    for (const TfNode* node = producer(value); node && node->opType() == "Identity" && node->numInputs() == 1;
         node = producer(value)) {
      value = std::string(node->inputName(0));
    }
    return value;
  }

  // The reader of `value` with op `op`, or nullptr.
  const TfNode* readerOf(const std::string& value, std::string_view op) const {
    auto found = readers_.find(value);
    if (found == readers_.end()) return nullptr;
    for (const TfNode* reader : found->second) {
      if (reader->opType() == op) return reader;
    }
    return nullptr;
  }

  Region region(const std::vector<std::string>& roots, const std::set<std::string>& sources) const {
    Region region;
    std::unordered_set<const TfNode*> visited;
    std::deque<std::string> pending(roots.begin(), roots.end());
    while (!pending.empty()) {
      std::string value = std::move(pending.front());
      pending.pop_front();
      if (sources.count(value)) {
        region.reached.insert(value);
        continue;
      }
      const TfNode* node = producer(value);
      // A loop's back edge leads round to where the walk came from.
      if (!node || node->opType() == "NextIteration" || !visited.insert(node).second) continue;
      for (size_t k = 0; k < node->numInputs(); ++k) pending.emplace_back(node->inputName(k));
    }
    // The visited nodes that read a source, directly or through one another.
    std::unordered_set<const TfNode*> depends;
    for (bool grew = true; grew;) {
      grew = false;
      for (const TfNode* node : visited) {
        if (depends.count(node)) continue;
        for (size_t k = 0; k < node->numInputs(); ++k) {
          std::string input(node->inputName(k));
          const TfNode* from = producer(input);
          if (sources.count(input) || (from && depends.count(from))) {
            depends.insert(node);
            grew = true;
            break;
          }
        }
      }
    }
    std::set<std::string> defined(sources.begin(), sources.end());
    for (const TfNode* node : pool_) {
      if (!depends.count(node)) continue;
      region.nodes.push_back(node);
      region.leaf = region.leaf && !isControlFlowPrimitive(node->opType());
      for (size_t k = 0; k < node->numOutputs(); ++k) defined.insert(std::string(node->outputName(k)));
    }
    auto capture = [&](std::string_view value) {
      std::string name(value);
      if (name.empty() || defined.count(name)) return;
      if (std::find(region.captures.begin(), region.captures.end(), name) == region.captures.end()) {
        region.captures.push_back(std::move(name));
      }
    };
    for (const TfNode* node : region.nodes) {
      for (size_t k = 0; k < node->numInputs(); ++k) capture(node->inputName(k));
    }
    for (const std::string& root : roots) capture(root);
    return region;
  }

  // Whether `value` is a Const's output: such captures are copied into bodies.
  const TfNode* constantOf(const std::string& value) const {
    const TfNode* node = producer(value);
    return node && node->opType() == "Const" && node->numInputs() == 0 ? node : nullptr;
  }

  // A body over `inputs` made of `nodes`, returning `outputs`; the Consts it reads are
  // copied in, and Identities are dropped (their readers read what they pass on).
  std::shared_ptr<MadeGraph> body(std::string name, std::vector<std::string> inputs,
                                  const std::vector<const TfNode*>& nodes, std::vector<std::string> outputs) const {
    std::map<std::string, std::string> passes;  // an Identity's output -> its input
    for (const TfNode* node : nodes) {
      if (node->opType() == "Identity" && node->numInputs() == 1 && node->numOutputs() >= 1) {
        passes.emplace(std::string(node->outputName(0)), std::string(node->inputName(0)));
      }
    }
    auto through = [&](std::string value) {
      for (auto found = passes.find(value); found != passes.end(); found = passes.find(value)) value = found->second;
      return value;
    };
    std::vector<std::unique_ptr<TfNode>> made;
    std::set<const TfNode*> copied;
    auto copy_constant = [&](const std::string& value) {
      const TfNode* constant = constantOf(value);
      if (!constant || !copied.insert(constant).second) return;
      made.push_back(std::make_unique<RenamedNode>(*constant, std::vector<std::string>{}));
    };
    std::set<std::string> taken(inputs.begin(), inputs.end());
    std::vector<std::unique_ptr<TfNode>> kept;
    for (const TfNode* node : nodes) {
      if (node->opType() == "Identity" && passes.count(std::string(node->outputName(0)))) continue;
      std::vector<std::string> reads;
      for (size_t k = 0; k < node->numInputs(); ++k) {
        reads.push_back(through(std::string(node->inputName(k))));
        if (!taken.count(reads.back())) copy_constant(reads.back());
      }
      kept.push_back(std::make_unique<RenamedNode>(*node, std::move(reads)));
    }
    for (std::string& output : outputs) {
      output = through(output);
      if (!taken.count(output)) copy_constant(output);
    }
    for (auto& node : kept) made.push_back(std::move(node));
    return std::make_shared<MadeGraph>(std::move(name), std::move(inputs), std::move(made), std::move(outputs));
  }

  // Replaces the nodes `removed` with `added`, checking that nothing left reads them.
  void replace(const std::set<const TfNode*>& removed, std::unique_ptr<TfNode> added, const std::string& what) {
    std::set<std::string_view> provided;
    for (size_t k = 0; k < added->numOutputs(); ++k) provided.insert(added->outputName(k));
    std::vector<const TfNode*> kept;
    bool placed = false;
    for (const TfNode* node : pool_) {
      if (!removed.count(node)) {
        kept.push_back(node);
        continue;
      }
      if (!placed) kept.push_back(added.get());
      placed = true;
    }
    for (const TfNode* node : kept) {
      if (node == added.get()) continue;
      for (size_t k = 0; k < node->numInputs(); ++k) {
        const TfNode* from = producer(std::string(node->inputName(k)));
        if (from && removed.count(from) && !provided.count(node->inputName(k))) {
          fail(*node, "reads '", node->inputName(k), "', which is computed inside ", what,
               " and does not leave it through an Exit or a Merge");
        }
      }
    }
    pool_ = std::move(kept);
    made_.push_back(std::move(added));
  }

  // A TF 1 while loop: its frame's Enters. Rebuilds the first loop whose bodies hold no
  // other control flow.
  bool rebuildLoop() {
    std::map<std::string, std::vector<const TfNode*>> frames;
    std::vector<std::string> order;
    for (const TfNode* node : pool_) {
      if (node->opType() != "Enter") continue;
      std::string frame = attribute<std::string>(*node, "frame_name");
      if (!frames.count(frame)) order.push_back(frame);
      frames[frame].push_back(node);
    }
    for (const std::string& frame : order) {
      if (rebuildLoop(frame, frames[frame])) return true;
    }
    return false;
  }

  // An attribute; `fallback` for one TensorFlow left out (a SavedModel strips defaults).
  template <typename T>
  T attribute(const TfNode& node, std::string_view name, std::optional<T> fallback = std::nullopt) const {
    std::optional<AttrValue> value = node.attribute(name);
    if (!value && fallback) return *fallback;
    const T* typed = value ? std::get_if<T>(&value->data) : nullptr;
    if (!typed) fail(node, "has no attribute '", name, "' of the type TensorFlow writes");
    return *typed;
  }

  bool rebuildLoop(const std::string& frame, const std::vector<const TfNode*>& enters) {
    const std::string what = "the while loop '" + frame + "'";
    std::vector<std::string> initial, in_condition, in_body, from_body, exits;
    std::vector<std::string> invariant_initial, invariants;
    std::set<const TfNode*> removed;
    const TfNode* loop_condition = nullptr;
    for (const TfNode* enter : enters) {
      removed.insert(enter);
      std::string entered = std::string(enter->name()) + ":0";
      if (enter->numInputs() != 1) fail(*enter, "has ", enter->numInputs(), " data inputs, not 1");
      if (attribute<bool>(*enter, "is_constant", false)) {
        invariant_initial.emplace_back(enter->inputName(0));
        invariants.push_back(entered);
        continue;
      }
      const TfNode* merge = readerOf(entered, "Merge");
      if (!merge || merge->numInputs() != 2) fail(*enter, "enters ", what, " but no two-input Merge reads it");
      std::string looped(merge->inputName(merge->inputName(0) == entered ? 1 : 0));
      const TfNode* next = producer(looped);
      if (!next || next->opType() != "NextIteration" || next->numInputs() != 1) {
        fail(*merge, "merges a value entering ", what, " with '", looped, "', which no NextIteration makes");
      }
      std::string merged = std::string(merge->name()) + ":0";
      const TfNode* select = readerOf(merged, "Switch");
      const TfNode* condition = select && select->numInputs() == 2 ? producer(std::string(select->inputName(1))) : nullptr;
      if (!condition || condition->opType() != "LoopCond" || (loop_condition && condition != loop_condition)) {
        fail(*merge, "of ", what, " is not switched on the loop's LoopCond");
      }
      loop_condition = condition;
      const TfNode* exit = readerOf(std::string(select->name()) + ":0", "Exit");
      removed.insert({merge, next, select});
      if (exit) removed.insert(exit);
      initial.emplace_back(enter->inputName(0));
      in_condition.push_back(merged);
      in_body.push_back(std::string(select->name()) + ":1");
      from_body.emplace_back(next->inputName(0));
      exits.push_back(exit ? std::string(exit->name()) + ":0" : std::string());
    }
    if (!loop_condition) fail(*enters.front(), "enters ", what, ", which has no loop variable");
    removed.insert(loop_condition);
    std::set<std::string> condition_sources(in_condition.begin(), in_condition.end());
    std::set<std::string> body_sources(in_body.begin(), in_body.end());
    condition_sources.insert(invariants.begin(), invariants.end());
    body_sources.insert(invariants.begin(), invariants.end());
    Region condition = region({std::string(loop_condition->inputName(0))}, condition_sources);
    Region body_region = region(from_body, body_sources);
    if (!condition.leaf || !body_region.leaf) return false;
    // Values read from outside become loop variables the body passes on; Consts are copied.
    std::vector<std::string> captures;
    for (const Region* part : {&condition, &body_region}) {
      for (const std::string& value : part->captures) {
        if (!constantOf(value) && std::find(captures.begin(), captures.end(), value) == captures.end()) {
          captures.push_back(value);
        }
      }
      removed.insert(part->nodes.begin(), part->nodes.end());
    }
    auto joined = [](std::vector<std::string> first, const std::vector<std::string>& second,
                     const std::vector<std::string>& third) {
      first.insert(first.end(), second.begin(), second.end());
      first.insert(first.end(), third.begin(), third.end());
      return first;
    };
    std::vector<std::string> passed = joined(invariants, captures, {});
    auto condition_graph = body(frame + "/cond", joined(in_condition, invariants, captures), condition.nodes,
                                {std::string(loop_condition->inputName(0))});
    auto body_graph = body(frame + "/body", joined(in_body, invariants, captures), body_region.nodes,
                           joined(from_body, passed, {}));
    exits.resize(exits.size() + passed.size());
    auto loop = std::make_unique<MadeNode>(model_, "While", frame, joined(initial, invariant_initial, captures),
                                           exits, std::vector<std::pair<std::string, AttrValue::GraphRef>>{
                                                      {"cond", condition_graph}, {"body", body_graph}});
    replace(removed, std::move(loop), what);
    return true;
  }

  // Which side of a cond a value is on: the Switch outputs it reads, through data or else
  // through control inputs (a branch's Const depends on the branch's pivot only by control).
  struct Side {
    std::set<int> ports;
    std::set<std::string> predicates;
    std::set<std::string_view> switches;
  };

  Side sideOf(const Region& branch) const {
    Side side;
    for (const std::string& value : branch.reached) {
      const TfNode* select = producer(value);
      side.ports.insert(value.back() == '1' ? 1 : 0);
      side.predicates.insert(resolved(std::string(select->inputName(1))));
      side.switches.insert(select->name());
    }
    return side;
  }

  Side sideByControl(const std::string& value) const {
    Side side;
    std::set<std::string_view> seen;
    std::deque<std::string_view> pending = {value};
    while (!pending.empty() && side.ports.empty()) {
      std::string_view read = pending.front();
      pending.pop_front();
      std::string_view name = nodeOf(read.front() == '^' ? read.substr(1) : read);
      const NodeDef* node = find_(name);
      if (!node || !seen.insert(name).second) continue;
      if (node->op == "Switch" && read.front() != '^' && node->input.size() == 2) {
        side.ports.insert(read.size() > 2 && read.substr(read.size() - 2) == ":1" ? 1 : 0);
        side.predicates.insert(resolved(valueName(node->input[1])));
        return side;
      }
      for (std::string_view input : node->input) pending.push_back(input);
    }
    return side;
  }

  // A Merge of a cond: the regions of the values it joins (index 1: the true side).
  struct Join {
    const TfNode* merge;
    Region branches[2];
    std::string returns[2];
    std::string predicate;
    std::set<std::string_view> switches;
  };

  // Rebuilds every cond whose branches hold no other control flow; the Merges of one cond
  // (those sharing a Switch) make one If.
  bool rebuildConds() {
    std::set<std::string> sources;
    for (const TfNode* node : pool_) {
      if (node->opType() != "Switch" || node->numInputs() != 2) continue;
      const TfNode* condition = producer(std::string(node->inputName(1)));
      if (condition && condition->opType() == "LoopCond") continue;
      sources.insert(std::string(node->name()) + ":0");
      sources.insert(std::string(node->name()) + ":1");
    }
    std::vector<Join> joins;
    for (const TfNode* merge : pool_) {
      if (merge->opType() != "Merge") continue;
      bool loop = false;
      for (size_t k = 0; k < merge->numInputs(); ++k) {
        const TfNode* from = producer(std::string(merge->inputName(k)));
        loop = loop || (from && (from->opType() == "Enter" || from->opType() == "NextIteration"));
      }
      if (loop) continue;
      if (merge->numInputs() != 2) fail(*merge, "joins ", merge->numInputs(), " values; a cond's Merge joins 2");
      Region inputs[2] = {region({std::string(merge->inputName(0))}, sources),
                          region({std::string(merge->inputName(1))}, sources)};
      if (!inputs[0].leaf || !inputs[1].leaf) continue;
      Side sides[2] = {sideOf(inputs[0]), sideOf(inputs[1])};
      for (int k = 0; k < 2; ++k) {
        if (sides[k].ports.empty()) sides[k] = sideByControl(std::string(merge->inputName(k)));
      }
      if (sides[0].ports.size() > 1 || sides[1].ports.size() > 1) {
        fail(*merge, "joins a value that reads both sides of a Switch");
      }
      if (sides[0].ports.empty() && sides[1].ports.empty()) {
        fail(*merge, "joins values that no Switch decides between");
      }
      for (int k = 0; k < 2; ++k) {
        if (sides[k].ports.empty()) sides[k].ports.insert(1 - *sides[1 - k].ports.begin());
      }
      if (sides[0].ports == sides[1].ports) fail(*merge, "joins two values from the same side of its Switches");
      std::set<std::string> predicates = sides[0].predicates;
      predicates.insert(sides[1].predicates.begin(), sides[1].predicates.end());
      if (predicates.size() != 1) fail(*merge, "joins values switched on ", predicates.size(), " predicates, not 1");
      Join join{merge, {}, {}, *predicates.begin(), sides[0].switches};
      join.switches.insert(sides[1].switches.begin(), sides[1].switches.end());
      for (int k = 0; k < 2; ++k) {
        int side = *sides[k].ports.begin();
        join.branches[side] = std::move(inputs[k]);
        join.returns[side] = std::string(merge->inputName(k));
      }
      joins.push_back(std::move(join));
    }
    if (joins.empty()) return false;
    // Merges sharing a Switch belong to one cond.
    std::vector<size_t> group(joins.size());
    for (size_t i = 0; i < joins.size(); ++i) {
      group[i] = i;
      for (size_t j = 0; j < i; ++j) {
        bool shared = joins[i].predicate == joins[j].predicate &&
                      std::any_of(joins[i].switches.begin(), joins[i].switches.end(),
                                  [&](std::string_view s) { return joins[j].switches.count(s) > 0; });
        if (shared) {
          size_t from = group[i];
          for (size_t& g : group) {
            if (g == from) g = group[j];
          }
        }
      }
    }
    std::set<size_t> groups(group.begin(), group.end());
    for (size_t leader : groups) {
      std::vector<const Join*> members;
      for (size_t i = 0; i < joins.size(); ++i) {
        if (group[i] == leader) members.push_back(&joins[i]);
      }
      rebuildCond(members);
      index();
    }
    return true;
  }

  void rebuildCond(const std::vector<const Join*>& members) {
    const TfNode& first = *members.front()->merge;
    const std::string what = "the cond that Merge '" + std::string(first.name()) + "' ends";
    std::set<std::string_view> switch_names;
    for (const Join* join : members) switch_names.insert(join->switches.begin(), join->switches.end());
    std::vector<const TfNode*> switches;
    std::set<const TfNode*> removed;
    for (const TfNode* node : pool_) {
      if (node->opType() == "Switch" && switch_names.count(node->name())) switches.push_back(node);
    }
    std::set<const TfNode*> sides[2];
    std::vector<std::string> captures;
    std::vector<std::string> outputs[2], results;
    for (const Join* join : members) {
      removed.insert(join->merge);
      results.push_back(std::string(join->merge->name()) + ":0");
      for (int side = 0; side < 2; ++side) {
        const Region& branch = join->branches[side];
        sides[side].insert(branch.nodes.begin(), branch.nodes.end());
        outputs[side].push_back(join->returns[side]);
        for (const std::string& value : branch.captures) {
          if (!constantOf(value) && std::find(captures.begin(), captures.end(), value) == captures.end()) {
            captures.push_back(value);
          }
        }
      }
    }
    for (const TfNode* node : sides[1]) {
      if (sides[0].count(node)) fail(*node, "is in both branches of ", what);
    }
    // The predicate as the Switches read it (TF 1 reads it through an Identity in the cond's
    // scope, which then moves with the cond).
    std::vector<std::string> inputs = {switches.empty() ? members.front()->predicate
                                                        : std::string(switches.front()->inputName(1))};
    std::vector<std::string> branch_inputs[2];
    for (const TfNode* select : switches) {
      removed.insert(select);
      inputs.emplace_back(select->inputName(0));
      for (int side = 0; side < 2; ++side) branch_inputs[side].push_back(std::string(select->name()) + ":" + std::to_string(side));
    }
    inputs.insert(inputs.end(), captures.begin(), captures.end());
    AttrValue::GraphRef branches[2];
    for (int side = 0; side < 2; ++side) {
      branch_inputs[side].insert(branch_inputs[side].end(), captures.begin(), captures.end());
      std::vector<const TfNode*> nodes;
      for (const TfNode* node : pool_) {
        if (sides[side].count(node)) nodes.push_back(node);
      }
      removed.insert(nodes.begin(), nodes.end());
      branches[side] = body(std::string(first.name()) + (side ? "/then" : "/else"), branch_inputs[side], nodes,
                            outputs[side]);
    }
    auto cond = std::make_unique<MadeNode>(model_, "If", std::string(first.name()), inputs, results,
                                           std::vector<std::pair<std::string, AttrValue::GraphRef>>{
                                               {"then_branch", branches[1]}, {"else_branch", branches[0]}});
    replace(removed, std::move(cond), what);
  }

  const TfModelContext& model_;
  const std::string& graph_;
  std::vector<const TfNode*> pool_;
  const std::function<const NodeDef*(std::string_view)>& find_;
  std::vector<std::unique_ptr<TfNode>>& made_;
  std::unordered_map<std::string, const TfNode*> producers_;
  std::unordered_map<std::string, std::vector<const TfNode*>> readers_;
};

}  // namespace

std::vector<const TfNode*> rebuildControlFlow(const TfModelContext& model, const std::string& graph,
                                              std::vector<const TfNode*> nodes,
                                              const std::function<const NodeDef*(std::string_view)>& find,
                                              std::vector<std::unique_ptr<TfNode>>& made) {
  return Rebuilder(model, graph, std::move(nodes), find, made).run();
}

}  // namespace estuary::tensorflow_frontend
