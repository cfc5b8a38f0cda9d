#include "estuary/rewrite/pattern.h"

#include <algorithm>
#include <set>

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"

namespace estuary {

namespace {

bool commutativeByDefault(std::string_view op_type, std::string_view domain) {
  if (!domain.empty()) return false;
  static const char* const kOps[] = {"Add", "Mul", "Max", "Min", "Sum", "Mean",
                                     "And", "Or",  "Xor", "Equal"};
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* op) { return op_type == op; });
}

}  // namespace

std::pair<std::string_view, std::string_view> splitQualifiedOp(std::string_view op) {
  size_t colons = op.rfind("::");
  if (colons == std::string_view::npos) return {std::string_view(), op};
  return {op.substr(0, colons), op.substr(colons + 2)};
}

const Attribute* attrOrDefault(const Node& node, std::string_view name,
                               const OpRegistry* registry) {
  if (const Attribute* present = node.attr(name)) return present;
  if (!registry) return nullptr;
  const OpSchema* schema = registry->find(node);
  if (!schema) return nullptr;
  const AttrSpec* spec = schema->findAttr(name);
  return spec && spec->default_value ? &*spec->default_value : nullptr;
}

// --- PatternNode ------------------------------------------------------------------------

PatternValue PatternNode::out(size_t i) const {
  if (i >= num_outputs_) {
    raise("pattern node #", id_, " has ", num_outputs_, " output(s), output ", i,
          " does not exist");
  }
  return PatternValue(pattern_, first_output_ + static_cast<uint32_t>(i));
}

PatternNode& PatternNode::name(std::string name) {
  pattern_->nodes_[id_].name = std::move(name);
  return *this;
}

PatternNode& PatternNode::attr(std::string name, Attribute expected) {
  pattern_->nodes_[id_].attr_equals.emplace_back(std::move(name), std::move(expected));
  return *this;
}

PatternNode& PatternNode::attrWhere(std::string name, AttrPredicate predicate) {
  pattern_->nodes_[id_].attr_predicates.emplace_back(std::move(name), std::move(predicate));
  return *this;
}

PatternNode& PatternNode::commutative(bool on) {
  pattern_->nodes_[id_].commutative = on;
  return *this;
}

// --- Pattern ----------------------------------------------------------------------------

Pattern::Pattern(std::string name) : name_(std::move(name)) {}

PatternValue Pattern::capture(std::string name, ValuePredicate predicate) {
  ValueInfo info{ValueInfo::Kind::Capture, std::move(name), 0, 0, {}, false};
  if (predicate) info.predicates.push_back(std::move(predicate));
  values_.push_back(std::move(info));
  return PatternValue(this, static_cast<uint32_t>(values_.size() - 1));
}

PatternValue Pattern::absent() {
  values_.push_back(ValueInfo{ValueInfo::Kind::Absent, {}, 0, 0, {}, false});
  return PatternValue(this, static_cast<uint32_t>(values_.size() - 1));
}

PatternNode Pattern::node(std::string_view op, std::vector<PatternValue> operands,
                          size_t num_outputs) {
  auto [domain, op_type] = splitQualifiedOp(op);
  if (op_type.empty()) raise("pattern '", name_, "': a node needs an op type");
  NodeInfo info;
  info.op_type = std::string(op_type);
  info.domain = std::string(domain);
  info.commutative = operands.size() >= 2 && commutativeByDefault(op_type, domain);
  for (const PatternValue& operand : operands) {
    if (operand.pattern_ != this) {
      raise("pattern '", name_, "': an operand of node ", op,
            " is not a value of this pattern");
    }
    info.operands.push_back(operand.id_);
  }
  auto node_id = static_cast<uint32_t>(nodes_.size());
  auto first_output = static_cast<uint32_t>(values_.size());
  for (size_t i = 0; i < num_outputs; ++i) {
    values_.push_back(
        ValueInfo{ValueInfo::Kind::NodeOutput, {}, node_id, static_cast<uint32_t>(i), {}, false});
    info.outputs.push_back(static_cast<uint32_t>(values_.size() - 1));
  }
  nodes_.push_back(std::move(info));
  return PatternNode(this, node_id, first_output, static_cast<uint32_t>(num_outputs));
}

Pattern& Pattern::where(PatternValue value, ValuePredicate predicate) {
  if (value.pattern_ != this) raise("pattern '", name_, "': where() on a foreign value");
  values_[value.id_].predicates.push_back(std::move(predicate));
  return *this;
}

Pattern& Pattern::allowOtherUses(PatternValue intermediate) {
  if (intermediate.pattern_ != this) {
    raise("pattern '", name_, "': allowOtherUses() on a foreign value");
  }
  if (values_[intermediate.id_].kind != ValueInfo::Kind::NodeOutput) {
    raise("pattern '", name_, "': allowOtherUses() needs a node output, not a capture");
  }
  values_[intermediate.id_].allow_other_uses = true;
  return *this;
}

Pattern& Pattern::results(std::vector<PatternValue> results) {
  results_.clear();
  for (const PatternValue& result : results) {
    if (result.pattern_ != this) raise("pattern '", name_, "': a result is a foreign value");
    results_.push_back(result.id_);
  }
  return *this;
}

Pattern& Pattern::check(MatchCheck check) {
  checks_.push_back(std::move(check));
  return *this;
}

Pattern& Pattern::replace(ReplaceFn replacement) {
  replace_ = std::move(replacement);
  return *this;
}

Pattern& Pattern::benefit(int benefit) {
  benefit_ = benefit;
  return *this;
}

PatternValue Pattern::captureNamed(std::string_view name) const {
  for (size_t i = 0; i < values_.size(); ++i) {
    if (values_[i].kind == ValueInfo::Kind::Capture && values_[i].name == name) {
      return PatternValue(this, static_cast<uint32_t>(i));
    }
  }
  raise("pattern '", name_, "' has no capture named '", name, "'");
}

PatternNode Pattern::nodeNamed(std::string_view name) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) {
      const NodeInfo& node = nodes_[i];
      return PatternNode(const_cast<Pattern*>(this), static_cast<uint32_t>(i),
                         node.outputs.empty() ? 0 : node.outputs[0],
                         static_cast<uint32_t>(node.outputs.size()));
    }
  }
  raise("pattern '", name_, "' has no node named '", name, "'");
}

void Pattern::validate() const {
  const std::string where = "pattern '" + name_ + "'";
  if (nodes_.empty()) raise(where, " has no nodes");
  if (results_.empty()) raise(where, " has no results");
  if (!replace_) raise(where, " has no replacement");
  std::set<uint32_t> seen_results;
  for (uint32_t result : results_) {
    if (values_[result].kind != ValueInfo::Kind::NodeOutput) {
      raise(where, ": result ", seen_results.size(), " is ",
            values_[result].kind == ValueInfo::Kind::Capture
                ? "capture '" + values_[result].name + "'"
                : std::string("an absent operand"),
            ", not an output of a pattern node");
    }
    if (!seen_results.insert(result).second) raise(where, " lists a result twice");
  }
  std::set<std::string_view> names;
  for (const ValueInfo& value : values_) {
    if (value.kind != ValueInfo::Kind::Capture) continue;
    if (value.name.empty()) raise(where, ": a capture has no name");
    if (!names.insert(value.name).second) raise(where, ": two captures are named '", value.name, "'");
  }
  std::set<std::string_view> node_names;
  for (const NodeInfo& node : nodes_) {
    if (!node.name.empty() && !node_names.insert(node.name).second) {
      raise(where, ": two nodes are named '", node.name, "'");
    }
    if (node.commutative && node.operands.size() < 2) {
      raise(where, ": node ", node.op_type, " is commutative but has fewer than 2 operands");
    }
  }
  // Every capture must be an operand, and the nodes must form one connected DAG: the
  // matcher reaches every node from the root through operand and user edges.
  std::vector<bool> used(values_.size(), false);
  std::vector<uint32_t> component(nodes_.size());
  for (uint32_t i = 0; i < nodes_.size(); ++i) component[i] = i;
  auto find = [&](uint32_t x) {
    while (component[x] != x) x = component[x] = component[component[x]];
    return x;
  };
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    for (uint32_t operand : nodes_[i].operands) {
      used[operand] = true;
      if (values_[operand].kind == ValueInfo::Kind::NodeOutput) {
        component[find(i)] = find(values_[operand].node);
      }
    }
  }
  for (const ValueInfo& value : values_) {
    if (value.kind == ValueInfo::Kind::Capture && !used[&value - values_.data()]) {
      raise(where, ": capture '", value.name, "' is not an operand of any node");
    }
  }
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    if (find(i) != find(0)) {
      raise(where, ": node ", nodes_[i].op_type, " is not connected to node ",
            nodes_[0].op_type, "; a pattern must be one connected graph");
    }
  }
  // Operands refer to earlier nodes only (node() takes existing values), so the pattern
  // is acyclic by construction.
}

// --- Match ------------------------------------------------------------------------------

Value* Match::capture(std::string_view name) const {
  return values_[pattern_->captureNamed(name).id()];
}

Node* Match::node(std::string_view name) const {
  return nodes_[pattern_->nodeNamed(name).id()];
}

const Attribute* Match::attr(PatternNode n, std::string_view name) const {
  return attrOrDefault(*nodes_[n.id()], name, registry_);
}

}  // namespace estuary
