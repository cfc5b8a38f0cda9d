#include "estuary/ir/verifier.h"

#include <algorithm>
#include <sstream>

#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "text/flat_map.h"

namespace estuary {
namespace {

constexpr uint32_t kReturnPosition = UINT32_MAX;
constexpr size_t kMaxListed = 100;      // problems spelled out by verifyGraph()
constexpr size_t kMaxCycleNodes = 12;   // nodes spelled out per cycle

std::string describeValue(const Value* value) {
  std::ostringstream out;
  if (!value->name().empty()) {
    out << '%' << value->name();
  } else if (value->producer()) {
    out << "output " << value->index() << " of " << value->producer()->describe();
  } else {
    out << "input " << value->index() << " of graph '" << value->graph()->name() << "'";
  }
  return out.str();
}

class Verifier {
 public:
  Verifier(const Graph& root, const VerifyOptions& options)
      : options_(options),
        registry_(options.registry ? *options.registry : OpRegistry::global()),
        positions_(root.numNodes()),
        value_indices_(root.numNodes() + root.inputs().size()) {
    values_.reserve(root.numNodes() + root.inputs().size());
    indexGraph(root, "graph '" + root.name() + "'");
  }

  std::vector<VerifierDiagnostic> run() {
    for (size_t g = 0; g < graphs_.size(); ++g) checkGraph(g);
    checkUseLists();
    for (size_t g = 0; g < graphs_.size(); ++g) {
      if (!graphs_[g].backward_edges.empty()) checkOrder(g);
    }
    // Report in graph order, and by node position within a graph.
    std::vector<size_t> order(found_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
      return std::make_pair(found_[a].graph_index, found_[a].position) <
             std::make_pair(found_[b].graph_index, found_[b].position);
    });
    std::vector<VerifierDiagnostic> diagnostics;
    diagnostics.reserve(order.size());
    for (size_t i : order) diagnostics.push_back(std::move(found_[i].diagnostic));
    return diagnostics;
  }

 private:
  // A use of a value before its definition in list order: `producer` (in graph G) is at or
  // after `consumer`, the node of G that contains the use by `user`.
  struct BackwardEdge {
    const Node* producer;
    const Node* consumer;
    const Node* user;
    size_t operand;
  };
  struct GraphRecord {
    const Graph* graph;
    std::string location;
    std::vector<const Node*> nodes;  // the list as indexed (a looping list is cut short)
    std::vector<BackwardEdge> backward_edges;
  };
  struct ValueRecord {
    const Value* value;
    size_t graph_index;          // where it is defined
    uint32_t operand_count = 0;  // operand slots in the verified graphs that hold it
  };
  struct Found {
    size_t graph_index;
    uint32_t position;
    VerifierDiagnostic diagnostic;
  };

  // --- Reporting ---------------------------------------------------------------------------

  // Where a diagnostic sorts within its graph: its inputs first (0), then its nodes, then
  // the graph itself (outputs, updates, list bookkeeping).
  uint32_t sortKey(const Node* node) const {
    if (!node) return kReturnPosition;
    const uint32_t* position = positions_.find(node);
    return position && *position != kReturnPosition ? *position + 1 : kReturnPosition;
  }

  // `text` already names the node (messages of OpSchema::validate()).
  void reportText(size_t graph_index, const Node* node, std::string text) {
    reportSorted(graph_index, sortKey(node), node, std::move(text));
  }

  void reportSorted(size_t graph_index, uint32_t key, const Node* node, std::string text) {
    const GraphRecord& record = graphs_[graph_index];
    found_.push_back(Found{graph_index, key, VerifierDiagnostic{record.graph, node, record.location + ": " + text}});
  }

  template <typename... Parts>
  void report(size_t graph_index, const Node* node, const Parts&... parts) {
    std::ostringstream text;
    if (node) text << node->describe() << ": ";
    (text << ... << parts);
    reportText(graph_index, node, text.str());
  }

  // --- Indexing: every graph, node and value of the tree, with structural checks --------------

  void indexGraph(const Graph& graph, std::string location) {
    const size_t g = graphs_.size();
    graphs_.push_back(GraphRecord{&graph, std::move(location), {}, {}});
    graph_indices_.tryEmplace(&graph, static_cast<uint32_t>(g));
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      const Value* input = graph.input(i);
      if (input->graph() != &graph || !input->isGraphInput() || input->index() != i) {
        std::ostringstream text;
        text << "input " << i << " (" << describeValue(input) << ") does not record itself as input " << i
             << " of this graph";
        reportSorted(g, 0, nullptr, text.str());
      }
      defineValue(g, nullptr, input);
    }
    const Node* previous = nullptr;
    uint32_t count = 0;
    for (const Node* node = graph.firstNode(); node; node = node->next()) {
      if (!positions_.tryEmplace(node, count).second) {
        report(g, node, "appears twice in the node list (the list loops)");
        break;
      }
      if (node->prev() != previous) report(g, node, "its prev() is not the node before it in the list");
      graphs_[g].nodes.push_back(node);
      if (node->graph() != &graph) report(g, node, "is listed in this graph but records another as its own");
      if (node->isReturn()) report(g, node, "a return node is in the node list");
      for (size_t i = 0; i < node->numOutputs(); ++i) {
        const Value* output = node->output(i);
        if (output->producer() != node || output->index() != i || output->graph() != &graph) {
          report(g, node, "output ", i, " (", describeValue(output), ") does not record itself as output ", i,
                 " of this node");
        }
        defineValue(g, node, output);
      }
      for (const auto& [name, attr] : node->attributes()) {
        if (attr.kind() != AttrKind::Graph) continue;
        const Graph* subgraph = attr.asGraph().get();
        if (!subgraph) {
          report(g, node, "attribute '", name, "' holds no graph");
          continue;
        }
        if (subgraph->parentNode() != node) {
          report(g, node, "subgraph '", name, "' does not record this node as its parent");
        }
        indexGraph(*subgraph, graphs_[g].location + " > " + node->describe() + " > graph '" + subgraph->name() + "'");
      }
      previous = node;
      ++count;
    }
    if (count != graph.numNodes()) {
      report(g, nullptr, "numNodes() is ", graph.numNodes(), " but the node list holds ", count, " nodes");
    }
    if (graph.lastNode() != previous) report(g, nullptr, "lastNode() is not the last node of the list");
    positions_.tryEmplace(graph.returnNode(), kReturnPosition);
    if (graph.returnNode()->graph() != &graph || !graph.returnNode()->isReturn()) {
      report(g, nullptr, "its return node does not belong to it");
    }
  }

  void defineValue(size_t g, const Node* node, const Value* value) {
    auto [index, inserted] = value_indices_.tryEmplace(value, static_cast<uint32_t>(values_.size()));
    if (!inserted) {
      report(g, node, describeValue(value), " is defined twice");
      return;
    }
    values_.push_back(ValueRecord{value, g, 0});
  }

  // --- Per graph: operands, schemas, outputs and updates ---------------------------------------

  void checkGraph(size_t g) {
    const Graph& graph = *graphs_[g].graph;
    for (const Node* node : graphs_[g].nodes) {
      for (size_t i = 0; i < node->numInputs(); ++i) {
        if (node->input(i)) checkOperand(g, node, i);
      }
      checkSchema(g, *node);
    }
    const Node* ret = graph.returnNode();
    const std::vector<Graph::InputUpdate> updates = graph.inputUpdates();
    if (ret->numInputs() != graph.numOutputs() + updates.size()) {
      report(g, nullptr, "its return node has ", ret->numInputs(), " operands for ", graph.numOutputs(),
             " outputs and ", updates.size(), " updates");
    }
    for (size_t i = 0; i < ret->numInputs(); ++i) {
      if (ret->input(i)) {
        checkOperand(g, ret, i);
      } else if (i < graph.numOutputs()) {
        report(g, nullptr, "output ", i, " is absent");
      }
    }
    for (const Graph::InputUpdate& update : updates) checkUpdate(g, update);
  }

  void checkOperand(size_t g, const Node* user, size_t i) {
    const Graph& graph = *graphs_[g].graph;
    const Value* value = user->input(i);
    const char* what = user->isReturn() ? (i < graph.numOutputs() ? "output " : "update value ") : "operand ";
    const size_t shown = user->isReturn() && i >= graph.numOutputs() ? i - graph.numOutputs() : i;
    const uint32_t* index = value_indices_.find(value);
    if (!index) {
      // Values of graphs enclosing the verified one are fine; anything else is not defined.
      if (!graph_indices_.find(value->graph()) && graph.canSee(value)) return;
      report(g, user, what, shown, " uses ", describeValue(value),
             ", which is not defined in this graph or an enclosing one");
      return;
    }
    ++values_[*index].operand_count;
    const Graph* owner = value->graph();
    if (!graph.canSee(value)) {
      report(g, user, what, shown, " uses ", describeValue(value), " of graph '", owner->name(),
             "', which is not this graph or an enclosing one");
      return;
    }
    const Node* producer = value->producer();
    if (!producer) return;
    // The node of the defining graph that contains this use (the return node when the use
    // is the graph's own output, which comes after every node).
    const Node* consumer = user;
    while (consumer && consumer->graph() != owner) consumer = consumer->graph()->parentNode();
    const uint32_t* consumer_position = consumer ? positions_.find(consumer) : nullptr;
    const uint32_t* producer_position = positions_.find(producer);
    if (!consumer_position || !producer_position) return;  // a broken parent link, reported already
    if (*producer_position >= *consumer_position) {
      graphs_[*graph_indices_.find(owner)].backward_edges.push_back(BackwardEdge{producer, consumer, user, i});
    }
  }

  void checkSchema(size_t g, const Node& node) {
    const OpSchema* schema = registry_.find(node);
    if (!schema) {
      if (options_.require_known_ops) report(g, &node, "no op schema is registered for ", node.qualifiedOpType());
      return;
    }
    try {
      schema->validate(node);
    } catch (const Error& error) {
      reportText(g, &node, error.what());
      return;
    }
    if (!checkOutputDTypes(g, node, *schema)) return;
    if (options_.check_inferred_types && node.subgraphs().empty()) checkInference(g, node, *schema);
  }

  // Output element types against the type constraints (validate() checks the inputs).
  bool checkOutputDTypes(size_t g, const Node& node, const OpSchema& schema) {
    bool ok = true;
    for (size_t i = 0; i < node.numOutputs(); ++i) {
      const OperandSpec* spec = schema.outputSpec(i);
      const DType dtype = node.output(i)->dtype();
      if (!spec || dtype == DType::Undefined) continue;
      const TypeConstraint* constraint = schema.findTypeConstraint(spec->type_var);
      if (!constraint) {
        std::optional<DType> fixed = parseDType(spec->type_var);
        if (fixed && dtype != *fixed) {
          report(g, &node, "output ", i, " '", spec->name, "' has dtype ", dtypeName(dtype), ", expected ",
                 dtypeName(*fixed));
          ok = false;
        }
        continue;
      }
      if (std::find(constraint->allowed.begin(), constraint->allowed.end(), dtype) == constraint->allowed.end()) {
        report(g, &node, "output ", i, " '", spec->name, "' has dtype ", dtypeName(dtype), ", allowed: ",
               joinDTypes(constraint->allowed));
        ok = false;
        continue;
      }
      if (!spec->homogeneous) continue;
      for (size_t k = 0; k < node.numInputs(); ++k) {
        const OperandSpec* input_spec = schema.inputSpec(k);
        const Value* input = node.input(k);
        if (!input || !input_spec || !input_spec->homogeneous || input_spec->type_var != spec->type_var ||
            input->dtype() == DType::Undefined) {
          continue;
        }
        if (input->dtype() != dtype) {
          report(g, &node, "output ", i, " '", spec->name, "' has dtype ", dtypeName(dtype), " but input ", k,
                 " '", input_spec->name, "' has ", dtypeName(input->dtype()), "; both are of type ",
                 spec->type_var, " and must agree");
          ok = false;
        }
        break;
      }
    }
    return ok;
  }

  void checkInference(size_t g, const Node& node, const OpSchema& schema) {
    InferenceContext context(node, schema, nullptr, &registry_);
    try {
      schema.infer(context);
    } catch (const Error& error) {
      reportText(g, &node, error.what());
      return;
    }
    for (size_t i = 0; i < node.numOutputs() && i < context.outputTypes().size(); ++i) {
      const TensorType& declared = node.output(i)->type();
      const TensorType& inferred = context.outputTypes()[i];
      if (!mergeTypes(declared, inferred)) {
        report(g, &node, "output ", i, " is declared ", declared.str(), " but shape inference gives ",
               inferred.str());
      }
    }
  }

  void checkUpdate(size_t g, const Graph::InputUpdate& update) {
    const Graph& graph = *graphs_[g].graph;
    const Value* input = update.input;
    if (input->graph() != &graph || !input->isGraphInput()) {
      report(g, nullptr, "update target ", describeValue(input), " is not an input of this graph");
      return;
    }
    if (!input->isMutableInput()) {
      report(g, nullptr, "update target ", describeValue(input), " is not a mutable input");
    }
    if (!update.new_value) {
      report(g, nullptr, "the update of ", describeValue(input), " has no value");
      return;
    }
    if (!mergeTypes(input->type(), update.new_value->type())) {
      report(g, nullptr, "the update of ", describeValue(input), " (", input->type().str(), ") is ",
             describeValue(update.new_value), " of type ", update.new_value->type().str());
    }
  }

  // --- Use lists -----------------------------------------------------------------------------

  void checkUseLists() {
    std::vector<Use> sorted;
    for (const ValueRecord& record : values_) {
      const Value* value = record.value;
      const size_t g = record.graph_index;
      const Node* owner = value->producer();
      size_t valid = 0;
      for (const Use& use : value->uses()) {
        if (!positions_.find(use.user)) {
          report(g, owner, describeValue(value),
                 " has a use by a node that is not in the graph (a dangling use)");
          continue;
        }
        if (use.operand_index >= use.user->numInputs() || use.user->input(use.operand_index) != value) {
          report(g, owner, "the use list of ", describeValue(value), " names operand ", use.operand_index, " of ",
                 use.user->describe(), ", which does not hold it");
          continue;
        }
        ++valid;
      }
      if (value->uses().size() > 1) {
        sorted.assign(value->uses().begin(), value->uses().end());
        std::sort(sorted.begin(), sorted.end(), [](const Use& a, const Use& b) {
          return std::make_pair(a.user, a.operand_index) < std::make_pair(b.user, b.operand_index);
        });
        for (size_t k = 1; k < sorted.size(); ++k) {
          if (sorted[k].user == sorted[k - 1].user && sorted[k].operand_index == sorted[k - 1].operand_index &&
              positions_.find(sorted[k].user)) {
            report(g, owner, "the use list of ", describeValue(value), " names operand ", sorted[k].operand_index,
                   " of ", sorted[k].user->describe(), " twice");
            --valid;
          }
        }
      }
      if (valid != record.operand_count) {
        report(g, owner, describeValue(value), " is held by ", record.operand_count, " operand",
               record.operand_count == 1 ? "" : "s", " but its use list has ", valid, " matching entr",
               valid == 1 ? "y" : "ies");
      }
    }
  }

  // --- Order and cycles -------------------------------------------------------------------------

  // Graph g has uses before definitions. Those on a cycle are reported as the cycle; the
  // others as out-of-order uses.
  void checkOrder(size_t g) {
    const Graph& graph = *graphs_[g].graph;
    const std::vector<const Node*>& nodes = graphs_[g].nodes;
    const size_t n = nodes.size();
    // Dependency edges producer -> consumer between nodes of this graph, uses inside
    // subgraphs counting for the node owning the subgraph.
    std::vector<std::vector<uint32_t>> successors(n);
    for (uint32_t consumer = 0; consumer < n; ++consumer) {
      std::vector<const Node*> users{nodes[consumer]};
      for (size_t k = 0; k < users.size(); ++k) {
        for (size_t i = 0; i < users[k]->numInputs(); ++i) {
          const Value* value = users[k]->input(i);
          if (!value || !value_indices_.find(value) || value->graph() != &graph || !value->producer()) continue;
          const uint32_t* producer = positions_.find(value->producer());
          if (producer && *producer < n && nodes[*producer] == value->producer()) {
            successors[*producer].push_back(consumer);
          }
        }
        for (const Graph* subgraph : users[k]->subgraphs()) {
          const uint32_t* index = subgraph ? graph_indices_.find(subgraph) : nullptr;
          if (!index) continue;
          const GraphRecord& inner = graphs_[*index];
          users.insert(users.end(), inner.nodes.begin(), inner.nodes.end());
          users.push_back(subgraph->returnNode());
        }
      }
    }
    const std::vector<uint32_t> component = stronglyConnectedComponents(successors);
    std::vector<uint32_t> component_size(n, 0);
    std::vector<bool> self_loop(n, false);
    for (uint32_t v = 0; v < n; ++v) {
      ++component_size[component[v]];
      for (uint32_t w : successors[v]) {
        if (w == v) self_loop[v] = true;
      }
    }
    auto on_cycle = [&](uint32_t v) { return component_size[component[v]] > 1 || self_loop[v]; };
    std::vector<bool> reported(n, false);
    for (uint32_t v = 0; v < n; ++v) {
      if (!on_cycle(v) || reported[component[v]]) continue;
      reported[component[v]] = true;
      reportCycle(g, nodes, successors, component, v);
    }
    for (const BackwardEdge& edge : graphs_[g].backward_edges) {
      const uint32_t producer = *positions_.find(edge.producer);
      const uint32_t consumer = *positions_.find(edge.consumer);
      if (component[producer] == component[consumer] && on_cycle(producer)) continue;
      const Value* value = edge.user->input(edge.operand);
      const size_t user_graph = *graph_indices_.find(edge.user->graph());
      report(user_graph, edge.user, "operand ", edge.operand, " uses ", describeValue(value),
             " before its definition by ", edge.producer->describe(),
             " (the node list is not in topological order)");
    }
  }

  // Tarjan's algorithm without recursion; returns the component of each vertex.
  static std::vector<uint32_t> stronglyConnectedComponents(const std::vector<std::vector<uint32_t>>& successors) {
    const uint32_t n = static_cast<uint32_t>(successors.size());
    constexpr uint32_t kUnvisited = UINT32_MAX;
    std::vector<uint32_t> index(n, kUnvisited), low(n, 0), component(n, kUnvisited);
    std::vector<uint32_t> stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::pair<uint32_t, size_t>> frames;  // vertex, next successor to visit
    uint32_t next_index = 0, next_component = 0;
    for (uint32_t root = 0; root < n; ++root) {
      if (index[root] != kUnvisited) continue;
      frames.emplace_back(root, 0);
      while (!frames.empty()) {
        auto& [v, next] = frames.back();
        if (next == 0 && index[v] == kUnvisited) {
          index[v] = low[v] = next_index++;
          stack.push_back(v);
          on_stack[v] = true;
        }
        if (next < successors[v].size()) {
          uint32_t w = successors[v][next++];
          if (index[w] == kUnvisited) {
            frames.emplace_back(w, 0);
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        if (low[v] == index[v]) {
          uint32_t w;
          do {
            w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            component[w] = next_component;
          } while (w != v);
          ++next_component;
        }
        const uint32_t finished = v;
        frames.pop_back();
        if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[finished]);
      }
    }
    return component;
  }

  // Reports one cycle through `start`, found by a breadth-first search inside its component.
  void reportCycle(size_t g, const std::vector<const Node*>& nodes, const std::vector<std::vector<uint32_t>>& successors,
                   const std::vector<uint32_t>& component, uint32_t start) {
    std::vector<uint32_t> parent(nodes.size(), UINT32_MAX);
    std::vector<uint32_t> queue{start};
    uint32_t last = UINT32_MAX;  // the node whose edge closes the cycle back to start
    for (size_t k = 0; k < queue.size() && last == UINT32_MAX; ++k) {
      for (uint32_t w : successors[queue[k]]) {
        if (component[w] != component[start]) continue;
        if (w == start) {
          last = queue[k];
          break;
        }
        if (parent[w] == UINT32_MAX) {
          parent[w] = queue[k];
          queue.push_back(w);
        }
      }
    }
    std::vector<uint32_t> path;
    for (uint32_t v = last; v != start; v = parent[v]) path.push_back(v);
    path.push_back(start);
    std::reverse(path.begin(), path.end());
    std::ostringstream text;
    if (path.size() == 1) {
      text << "uses its own result (a cycle)";
    } else {
      text << "is on a cycle of " << path.size() << " nodes: ";
      for (size_t k = 0; k < path.size() && k < kMaxCycleNodes; ++k) text << nodes[path[k]]->describe() << " -> ";
      if (path.size() > kMaxCycleNodes) text << "... -> ";
      text << nodes[start]->describe();
    }
    report(g, nodes[start], text.str());
  }

  const VerifyOptions& options_;
  const OpRegistry& registry_;
  std::vector<GraphRecord> graphs_;  // in preorder: a graph before its subgraphs
  text::FlatMap<const Graph*, uint32_t, text::PointerHash> graph_indices_;
  text::FlatMap<const Node*, uint32_t, text::PointerHash> positions_;  // in its graph's list
  std::vector<ValueRecord> values_;
  text::FlatMap<const Value*, uint32_t, text::PointerHash> value_indices_;
  std::vector<Found> found_;
};

}  // namespace

std::vector<VerifierDiagnostic> diagnoseGraph(const Graph& graph, const VerifyOptions& options) {
  return Verifier(graph, options).run();
}

void verifyGraph(const Graph& graph, const VerifyOptions& options) {
  std::vector<VerifierDiagnostic> diagnostics = diagnoseGraph(graph, options);
  if (diagnostics.empty()) return;
  std::ostringstream message;
  message << "graph '" << graph.name() << "' failed verification with " << diagnostics.size() << " problem"
          << (diagnostics.size() == 1 ? "" : "s") << ":";
  for (size_t i = 0; i < diagnostics.size() && i < kMaxListed; ++i) message << "\n  " << diagnostics[i].message;
  if (diagnostics.size() > kMaxListed) {
    message << "\n  ... and " << diagnostics.size() - kMaxListed << " more (diagnoseGraph() lists them all)";
  }
  throw Error(message.str());
}

}  // namespace estuary
