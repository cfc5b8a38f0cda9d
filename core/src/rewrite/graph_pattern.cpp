#include "estuary/rewrite/graph_pattern.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "estuary/rewrite/rewriter.h"
#include "estuary/support/error.h"

namespace estuary {

namespace {

bool isSymbol(const Dim& dim) {
  if (!dim.isSymbolic()) return false;
  std::string text = dim.str();
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string valueLabel(const Value* value) {
  return value->name().empty() ? std::string("an unnamed value") : "%" + value->name();
}

// What the replacement instantiates per match: the replace graph flattened into slots
// (inputs first, then each node's outputs in order).
struct Template {
  struct NodeTemplate {
    std::string op;
    std::vector<int32_t> inputs;  // slots; -1 for an absent operand
    size_t num_outputs = 0;
    int32_t first_output = 0;
    AttributeMap attrs;
    std::string name;
    std::vector<std::pair<uint32_t, std::string>> copies;  // (pattern node, attribute)
  };
  std::vector<PatternValue> captures;  // per replace input
  std::vector<NodeTemplate> nodes;
  std::vector<int32_t> outputs;
  size_t num_slots = 0;
};

// The declared type of a match value, as the matcher compares it.
struct TypeRule {
  PatternValue value;
  TensorType type;
};

bool matchesStatically(const TensorType& declared, const Value& value) {
  const TensorType& actual = value.type();
  if (declared.dtype != DType::Undefined && actual.dtype != declared.dtype) return false;
  if (!declared.shape.isRanked()) return true;
  if (!actual.shape.isRanked() || actual.shape.rank() != declared.shape.rank()) return false;
  for (size_t i = 0; i < declared.shape.rank(); ++i) {
    const Dim& want = declared.shape[i];
    if (want.isStatic() && !(actual.shape[i].isStatic() && actual.shape[i].value() == want.value())) {
      return false;
    }
  }
  return true;
}

bool satisfies(const ValueConstraint& constraint, const Value& value) {
  const TensorType& type = value.type();
  if (!constraint.dtypes.empty() &&
      std::find(constraint.dtypes.begin(), constraint.dtypes.end(), type.dtype) ==
          constraint.dtypes.end()) {
    return false;
  }
  bool needs_rank = !constraint.ranks.empty() || constraint.static_shape || !constraint.dims.empty();
  if (needs_rank && !type.shape.isRanked()) return false;
  auto rank = static_cast<int64_t>(type.shape.rank());
  if (!constraint.ranks.empty() &&
      std::find(constraint.ranks.begin(), constraint.ranks.end(), rank) == constraint.ranks.end()) {
    return false;
  }
  if (constraint.static_shape && !type.shape.isStatic()) return false;
  for (const ValueConstraint::DimRule& rule : constraint.dims) {
    int64_t axis = rule.axis < 0 ? rule.axis + rank : rule.axis;
    if (axis < 0 || axis >= rank) return false;
    const Dim& dim = type.shape[static_cast<size_t>(axis)];
    if (!dim.isStatic()) return false;
    if (!rule.in.empty() && std::find(rule.in.begin(), rule.in.end(), dim.value()) == rule.in.end()) {
      return false;
    }
    if (rule.multiple_of > 0 && dim.value() % rule.multiple_of != 0) return false;
  }
  return true;
}

}  // namespace

Pattern patternFromGraphs(const GraphPatternSpec& spec) {
  std::string where = (spec.origin.empty() ? "" : spec.origin + ": ") + "pattern '" + spec.name + "'";
  if (!spec.match) raise(where, " has no match graph");
  if (!spec.replace) raise(where, " has no replace graph");
  const Graph& match = *spec.match;
  const Graph& replace = *spec.replace;
  if (!match.inputUpdates().empty()) raise(where, ": the match graph updates inputs in place");
  if (!replace.inputUpdates().empty()) raise(where, ": the replace graph updates inputs in place");
  if (match.inputs().size() != replace.inputs().size()) {
    raise(where, ": the match graph has ", match.inputs().size(), " inputs, the replace graph ",
          replace.inputs().size(), "; both take the same captures");
  }
  for (size_t i = 0; i < match.inputs().size(); ++i) {
    if (match.input(i)->name() != replace.input(i)->name()) {
      raise(where, ": input ", i, " is %", match.input(i)->name(), " in the match graph but %",
            replace.input(i)->name(), " in the replace graph");
    }
  }
  if (match.numOutputs() != replace.numOutputs()) {
    raise(where, ": the match graph returns ", match.numOutputs(), " values, the replace graph ",
          replace.numOutputs());
  }

  Pattern pattern(spec.name);
  pattern.benefit(spec.benefit);
  std::unordered_map<const Value*, PatternValue> mapped;
  std::unordered_map<std::string, const Value*> by_name;
  std::vector<TypeRule> type_rules;
  auto declare = [&](const Value* value, PatternValue handle) {
    mapped.emplace(value, handle);
    if (!value->name().empty()) by_name.emplace(value->name(), value);
    const TensorType& type = value->type();
    if (type.dtype == DType::Undefined && !type.shape.isRanked()) return;
    if (type.shape.isRanked()) {
      for (const Dim& dim : type.shape.dims()) {
        if (dim.isSymbolic() && !isSymbol(dim)) {
          raise(where, ": ", valueLabel(value), " has type ", type.str(),
                "; match types may use static sizes, ? and plain symbols, not ", dim.str());
        }
      }
    }
    type_rules.push_back(TypeRule{handle, type});
  };
  for (const Value* input : match.inputs()) {
    if (input->name().empty()) raise(where, ": a match graph input has no name");
    declare(input, pattern.capture(input->name()));
  }
  std::unordered_map<const Node*, uint32_t> node_ids;
  for (Node* node : match.topologicalOrder()) {
    // Subgraph attributes compare by identity, so they would never match; and the pattern
    // would keep a subgraph alive that captures values of the match graph it outlives.
    if (!node->subgraphs().empty()) {
      raise(where, ": ", node->describe(), " of the match graph has a subgraph; match graphs "
            "cannot contain subgraphs");
    }
    std::vector<PatternValue> operands;
    for (Value* input : node->inputs()) {
      if (!input) {
        operands.push_back(pattern.absent());
        continue;
      }
      auto it = mapped.find(input);
      if (it == mapped.end()) {
        raise(where, ": ", node->describe(), " of the match graph uses ", valueLabel(input),
              ", which the match graph does not define");
      }
      operands.push_back(it->second);
    }
    PatternNode pattern_node = pattern.node(node->qualifiedOpType(), operands, node->numOutputs());
    if (node->numOutputs() > 0 && !node->output(0)->name().empty()) {
      pattern_node.name(node->output(0)->name());
    }
    for (const auto& [name, value] : node->attributes()) pattern_node.attr(name, value);
    node_ids.emplace(node, pattern_node.id());
    for (size_t i = 0; i < node->numOutputs(); ++i) declare(node->output(i), pattern_node.out(i));
  }
  std::vector<PatternValue> results;
  for (const Value* output : match.outputs()) results.push_back(mapped.at(output));
  pattern.results(results);

  auto lookup = [&](const std::string& written, const char* what) -> const Value* {
    std::string name = !written.empty() && written[0] == '%' ? written.substr(1) : written;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      raise(where, ": ", what, " names %", name, ", which is not a value of the match graph");
    }
    return it->second;
  };
  for (const std::string& name : spec.shared) {
    const Value* value = lookup(name, "'shared'");
    if (value->isGraphInput()) {
      raise(where, ": 'shared' names %", value->name(), ", a capture; only intermediates can be shared");
    }
    pattern.allowOtherUses(mapped.at(value));
  }
  for (const TypeRule& rule : type_rules) {
    TensorType declared = rule.type;
    pattern.where(rule.value, [declared](const Value& value) {
      return matchesStatically(declared, value);
    });
  }
  bool has_symbols = std::any_of(type_rules.begin(), type_rules.end(), [](const TypeRule& rule) {
    return rule.type.shape.isRanked() &&
           std::any_of(rule.type.shape.dims().begin(), rule.type.shape.dims().end(),
                       [](const Dim& dim) { return dim.isSymbolic(); });
  });
  if (has_symbols) {
    pattern.check([type_rules](const Match& m) {
      std::vector<std::pair<std::string, Dim>> bound;
      for (const TypeRule& rule : type_rules) {
        if (!rule.type.shape.isRanked()) continue;
        const Shape& actual = m[rule.value]->shape();
        for (size_t i = 0; i < rule.type.shape.rank(); ++i) {
          const Dim& want = rule.type.shape[i];
          if (!want.isSymbolic()) continue;
          std::string symbol = want.str();
          auto it = std::find_if(bound.begin(), bound.end(),
                                 [&](const auto& entry) { return entry.first == symbol; });
          if (it == bound.end()) {
            if (actual[i].isUnknown()) return false;
            bound.emplace_back(symbol, actual[i]);
          } else if (!it->second.provablyEqual(actual[i])) {
            return false;
          }
        }
      }
      return true;
    });
  }
  for (const ValueConstraint& constraint : spec.constraints) {
    const Value* value = lookup(constraint.value, "a constraint");
    pattern.where(mapped.at(value), [constraint](const Value& actual) {
      return satisfies(constraint, actual);
    });
  }
  for (const MatchCheck& check : spec.checks) pattern.check(check);

  // The replacement.
  auto flat = std::make_shared<Template>();
  std::unordered_map<const Value*, int32_t> slots;
  std::unordered_map<std::string, size_t> replace_node_by_value;
  for (size_t i = 0; i < replace.inputs().size(); ++i) {
    slots.emplace(replace.input(i), static_cast<int32_t>(i));
    flat->captures.push_back(mapped.at(match.input(i)));
  }
  auto next_slot = static_cast<int32_t>(replace.inputs().size());
  for (Node* node : replace.topologicalOrder()) {
    Template::NodeTemplate entry;
    entry.op = node->qualifiedOpType();
    for (Value* input : node->inputs()) {
      if (!input) {
        entry.inputs.push_back(-1);
        continue;
      }
      auto it = slots.find(input);
      if (it == slots.end()) {
        raise(where, ": ", node->describe(), " of the replace graph uses ", valueLabel(input),
              ", which the replace graph does not define");
      }
      entry.inputs.push_back(it->second);
    }
    if (!node->subgraphs().empty()) {
      raise(where, ": ", node->describe(), " of the replace graph has a subgraph; replace graphs "
            "cannot contain subgraphs");
    }
    entry.attrs = node->attributes();
    entry.name = node->name();
    entry.num_outputs = node->numOutputs();
    entry.first_output = next_slot;
    for (size_t i = 0; i < node->numOutputs(); ++i) {
      slots.emplace(node->output(i), next_slot++);
      if (!node->output(i)->name().empty()) {
        replace_node_by_value.emplace(node->output(i)->name(), flat->nodes.size());
      }
    }
    flat->nodes.push_back(std::move(entry));
  }
  flat->num_slots = static_cast<size_t>(next_slot);
  for (const Value* output : replace.outputs()) flat->outputs.push_back(slots.at(output));

  for (const AttributeCopy& copy : spec.copy_attributes) {
    const Value* from = lookup(copy.from, "'copy_attributes' (from)");
    if (from->isGraphInput()) {
      raise(where, ": 'copy_attributes' copies from %", from->name(),
            ", a capture; name a value a match node defines");
    }
    std::string to = !copy.to.empty() && copy.to[0] == '%' ? copy.to.substr(1) : copy.to;
    auto target = replace_node_by_value.find(to);
    if (target == replace_node_by_value.end()) {
      raise(where, ": 'copy_attributes' copies to %", to,
            ", which no node of the replace graph defines");
    }
    uint32_t from_node = node_ids.at(from->producer());
    for (const std::string& attr : copy.names) {
      flat->nodes[target->second].copies.emplace_back(from_node, attr);
    }
  }

  pattern.replace([flat](const Match& m, Rewriter& rewriter) {
    std::vector<Value*> slots(flat->num_slots, nullptr);
    for (size_t i = 0; i < flat->captures.size(); ++i) slots[i] = m[flat->captures[i]];
    std::vector<Value*> inputs;
    for (const Template::NodeTemplate& entry : flat->nodes) {
      inputs.clear();
      for (int32_t slot : entry.inputs) inputs.push_back(slot < 0 ? nullptr : slots[slot]);
      Node* node = rewriter.create(entry.op, inputs, entry.num_outputs);
      for (const auto& [name, value] : entry.attrs) node->setAttr(name, value);
      for (const auto& [from, name] : entry.copies) {
        if (const Attribute* value = attrOrDefault(*m.nodes()[from], name, m.registry())) {
          node->setAttr(name, *value);
        }
      }
      if (!entry.name.empty()) node->setName(entry.name);
      for (size_t i = 0; i < entry.num_outputs; ++i) {
        slots[entry.first_output + i] = node->output(i);
      }
    }
    std::vector<Value*> results;
    for (int32_t slot : flat->outputs) results.push_back(slots[slot]);
    return results;
  });
  try {
    pattern.validate();
  } catch (const Error& error) {
    raise(spec.origin.empty() ? "" : spec.origin + ": ", error.what());
  }
  return pattern;
}

}  // namespace estuary
