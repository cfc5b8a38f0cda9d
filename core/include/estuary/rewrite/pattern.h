#pragma once
// Declarative rewrite patterns.
//
// A pattern is a small DAG of ops. Its leaves are *captures* (any value, optionally
// restricted by predicates); its nodes have an op type, operands wired to captures or to
// outputs of other pattern nodes, and attribute predicates. Some node outputs are the
// pattern's *results*: the replacement computes one new value per result and every use of
// a result is redirected to it. Other node outputs are *intermediates*: by default they
// must have no users outside the match (the match is then erased as a whole); an
// intermediate marked allowOtherUses() may have other users, which keep the original node.
//
//   Pattern p("add_rms_norm");
//   PatternValue x1 = p.capture("x1"), x2 = p.capture("x2"), gamma = p.capture("gamma");
//   PatternNode add = p.node("Add", {x1, x2}).name("add");      // Add is commutative
//   PatternNode norm = p.node("RMSNormalization", {add, gamma}).name("norm");
//   p.results({norm, add});          // both the norm and the sum are replaced
//   p.check([](const Match& m) { return m.capture("x1")->dtype() == DType::F16; });
//   p.replace([](const Match& m, Rewriter& r) -> std::vector<Value*> {
//     Node* fused = r.create("estuary::AddRMSNorm", {m.capture("x1"), m.capture("x2"),
//                                                    m.capture("gamma")}, 2);
//     return {fused->output(0), fused->output(1)};
//   });
//
// PatternValue and PatternNode are handles into the Pattern that made them. Building
// through a handle needs that Pattern object; reading a Match needs only the handle's id, so
// checks and replacements may capture handles and the Pattern may be moved into a set.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/attribute.h"
#include "estuary/ir/graph.h"

namespace estuary {

class Match;
class OpRegistry;
class Pattern;
class Rewriter;

// A predicate on a value bound by a match (its type, shape, producer, uses).
using ValuePredicate = std::function<bool(const Value&)>;
// A predicate on an attribute of a matched node: the node's value, else the op schema's
// default, else nullptr (absent, no default).
using AttrPredicate = std::function<bool(const Attribute*)>;
// A check that sees the whole match; returning false vetoes the rewrite.
using MatchCheck = std::function<bool(const Match&)>;
// Builds the replacement with `rewriter` and returns one value per pattern result, in the
// order of Pattern::results(). A returned value may be a captured value.
using ReplaceFn = std::function<std::vector<Value*>(const Match&, Rewriter&)>;

class PatternValue {
 public:
  PatternValue() = default;
  uint32_t id() const { return id_; }
  bool valid() const { return pattern_ != nullptr; }
  friend bool operator==(PatternValue a, PatternValue b) {
    return a.pattern_ == b.pattern_ && a.id_ == b.id_;
  }

 private:
  friend class Pattern;
  friend class PatternNode;
  PatternValue(const Pattern* pattern, uint32_t id) : pattern_(pattern), id_(id) {}
  const Pattern* pattern_ = nullptr;
  uint32_t id_ = 0;
};

class PatternNode {
 public:
  PatternNode() = default;
  uint32_t id() const { return id_; }
  bool valid() const { return pattern_ != nullptr; }
  // Output `i` of the node, to wire into other nodes or to name as a result.
  PatternValue out(size_t i = 0) const;
  // A single-output node converts to its output.
  operator PatternValue() const { return out(0); }  // NOLINT(google-explicit-constructor)

  // The name under which Match::node() finds the matched node.
  PatternNode& name(std::string name);
  // The attribute (or the schema default when absent) must equal `expected`.
  PatternNode& attr(std::string name, Attribute expected);
  PatternNode& attrWhere(std::string name, AttrPredicate predicate);
  // Whether the first two operands match in either order. On by default for the ONNX ops
  // that are commutative in them: Add, Mul, Max, Min, Sum, Mean, And, Or, Xor, Equal.
  PatternNode& commutative(bool on = true);

 private:
  friend class Pattern;
  PatternNode(Pattern* pattern, uint32_t id, uint32_t first_output, uint32_t num_outputs)
      : pattern_(pattern), id_(id), first_output_(first_output), num_outputs_(num_outputs) {}
  Pattern* pattern_ = nullptr;
  uint32_t id_ = 0;
  // A node's outputs are consecutive values; knowing them here lets out() work without the
  // Pattern object (in checks and replacements, after the Pattern has moved).
  uint32_t first_output_ = 0;
  uint32_t num_outputs_ = 0;
};

class Pattern {
 public:
  // Introspection of the declared pattern (for the driver, printing and tests).
  struct ValueInfo {
    enum class Kind : uint8_t { Capture, NodeOutput, Absent };
    Kind kind;
    std::string name;        // capture name; empty otherwise
    uint32_t node = 0;       // NodeOutput: producing pattern node
    uint32_t output = 0;     // NodeOutput: output index
    std::vector<ValuePredicate> predicates;
    bool allow_other_uses = false;
  };
  struct NodeInfo {
    std::string op_type;
    std::string domain;
    std::string name;
    std::vector<uint32_t> operands;  // value ids
    std::vector<uint32_t> outputs;   // value ids
    std::vector<std::pair<std::string, Attribute>> attr_equals;
    std::vector<std::pair<std::string, AttrPredicate>> attr_predicates;
    bool commutative = false;
  };

  explicit Pattern(std::string name);

  // --- Building -----------------------------------------------------------------------
  // Any value (not produced by a node of the match). Names must be unique in the pattern.
  PatternValue capture(std::string name, ValuePredicate predicate = {});
  // An absent optional operand (`_` in the text form); also matches a missing trailing one.
  PatternValue absent();
  // A node of op `op` ("Add", "estuary::AddRMSNorm") with `num_outputs` outputs. A matched
  // graph node must have exactly these operands (trailing absent ones aside) and outputs.
  PatternNode node(std::string_view op, std::vector<PatternValue> operands,
                   size_t num_outputs = 1);
  // An extra predicate on any pattern value.
  Pattern& where(PatternValue value, ValuePredicate predicate);
  // Lets an intermediate have users outside the match; its node is then kept for them.
  Pattern& allowOtherUses(PatternValue intermediate);
  // The values the replacement replaces; any users are allowed and redirected.
  Pattern& results(std::vector<PatternValue> results);
  // Checks run after a structural match, in order; any false vetoes the rewrite.
  Pattern& check(MatchCheck check);
  Pattern& replace(ReplaceFn replacement);
  // Patterns with a higher benefit are tried first on the same root op.
  Pattern& benefit(int benefit);

  // --- Reading ------------------------------------------------------------------------
  const std::string& name() const { return name_; }
  const std::vector<ValueInfo>& values() const { return values_; }
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& resultIds() const { return results_; }
  const std::vector<MatchCheck>& checks() const { return checks_; }
  const ReplaceFn& replacement() const { return replace_; }
  int benefitValue() const { return benefit_; }
  // The capture or pattern node with this name; raises an Error naming the pattern if
  // there is none.
  PatternValue captureNamed(std::string_view name) const;
  PatternNode nodeNamed(std::string_view name) const;
  // Handle for a value id (as in NodeInfo::operands).
  PatternValue valueHandle(uint32_t id) const { return PatternValue(this, id); }

  // Raises an Error naming the pattern when it is malformed: no results or replacement,
  // a result that is not a node output, a capture no node uses, nodes not connected to
  // each other, duplicate names.
  void validate() const;

 private:
  friend class PatternNode;
  std::string name_;
  std::vector<ValueInfo> values_;
  std::vector<NodeInfo> nodes_;
  std::vector<uint32_t> results_;
  std::vector<MatchCheck> checks_;
  ReplaceFn replace_;
  int benefit_ = 0;
};

// A match of a pattern, as seen by checks and replacements. Only valid during the call.
class Match {
 public:
  const Pattern& pattern() const { return *pattern_; }
  Graph& graph() const { return *graph_; }
  // The matched node for the pattern's root (where the driver started matching).
  Node* root() const { return root_; }

  Value* value(PatternValue v) const { return values_[v.id()]; }
  Value* operator[](PatternValue v) const { return value(v); }
  Node* node(PatternNode n) const { return nodes_[n.id()]; }
  // By name; an unknown name raises an Error naming the pattern.
  Value* capture(std::string_view name) const;
  Node* node(std::string_view name) const;
  // Result `i` (in the order of Pattern::results()) as found in the graph.
  Value* result(size_t i) const { return values_[pattern_->resultIds()[i]]; }
  // Attribute of a matched node, else its schema default, else nullptr.
  const Attribute* attr(PatternNode n, std::string_view name) const;
  // Every matched graph node, indexed like Pattern::nodes().
  const std::vector<Node*>& nodes() const { return nodes_; }
  const OpRegistry* registry() const { return registry_; }

  Match(const Pattern& pattern, Graph& graph, Node* root, const std::vector<Node*>& nodes,
        const std::vector<Value*>& values, const OpRegistry* registry)
      : pattern_(&pattern), graph_(&graph), root_(root), nodes_(nodes), values_(values),
        registry_(registry) {}

 private:
  const Pattern* pattern_;
  Graph* graph_;
  Node* root_;
  const std::vector<Node*>& nodes_;
  const std::vector<Value*>& values_;
  const OpRegistry* registry_;
};

// The attribute `name` of `node`, else the default declared by its schema in `registry`,
// else nullptr.
const Attribute* attrOrDefault(const Node& node, std::string_view name,
                               const OpRegistry* registry);

// Splits "domain::Op" into {domain, op}; "Op" has the default domain "".
std::pair<std::string_view, std::string_view> splitQualifiedOp(std::string_view op);

}  // namespace estuary
