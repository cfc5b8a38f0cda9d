#include "estuary/ir/graph.h"

#include <algorithm>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "estuary/support/error.h"

namespace estuary {

// --- Value -------------------------------------------------------------------------------

bool Value::isGraphOutput() const {
  return std::any_of(uses_.begin(), uses_.end(), [](const Use& use) { return use.user->isReturn(); });
}

void Value::replaceAllUsesWith(Value* replacement) {
  if (replacement == this) return;
  // setInput removes the use from this list (swap-with-last), so take from the back.
  while (!uses_.empty()) {
    Use use = uses_.back();
    use.user->setInput(use.operand_index, replacement);
  }
}

void Value::replaceUsesWithIf(Value* replacement, const std::function<bool(const Use&)>& predicate) {
  if (replacement == this) return;
  std::vector<Use> matching;
  for (const Use& use : uses_) {
    if (predicate(use)) matching.push_back(use);
  }
  for (const Use& use : matching) use.user->setInput(use.operand_index, replacement);
}

// --- Node --------------------------------------------------------------------------------

const Node::OpName* Node::internOpName(std::string_view op_type, std::string_view domain) {
  // Op names are few and live for the whole process (plugins may unload, their op names
  // stay), so the table and its lock are never freed: nodes may still be created during
  // static destruction. Keys view the names' own storage.
  static auto* mutex = new std::mutex;
  static auto* names =
      new std::unordered_map<std::string_view, std::vector<std::unique_ptr<const OpName>>>();
  std::lock_guard<std::mutex> lock(*mutex);
  auto found = names->find(op_type);
  if (found != names->end()) {
    for (const auto& name : found->second) {
      if (name->domain == domain) return name.get();
    }
  }
  auto name = std::make_unique<const OpName>(OpName{std::string(op_type), std::string(domain)});
  const OpName* interned = name.get();
  if (found == names->end()) found = names->emplace(interned->op_type, decltype(found->second)()).first;
  found->second.push_back(std::move(name));
  return interned;
}

Node::Node(Graph* graph, const OpName* op, uint64_t id) : op_(op), graph_(graph), id_(id) {}

std::string Node::qualifiedOpType() const {
  return op_->domain.empty() ? op_->op_type : op_->domain + "::" + op_->op_type;
}

std::string Node::describe() const {
  if (is_return_) return "the return of graph '" + graph_->name() + "'";
  if (!name_.empty()) return "node '" + name_ + "' (" + qualifiedOpType() + ")";
  return "node #" + std::to_string(id_) + " (" + qualifiedOpType() + ")";
}

void Node::attachUse(uint32_t operand_index) {
  Operand& operand = operands_[operand_index];
  if (!operand.value) return;
  operand.use_index = static_cast<uint32_t>(operand.value->uses_.size());
  operand.value->uses_.push_back(Use{this, operand_index});
}

void Node::detachUse(uint32_t operand_index) {
  Operand& operand = operands_[operand_index];
  if (!operand.value) return;
  std::vector<Use>& uses = operand.value->uses_;
  uint32_t slot = operand.use_index;
  Use moved = uses.back();
  uses[slot] = moved;
  moved.user->operands_[moved.operand_index].use_index = slot;
  uses.pop_back();
}

void Node::renumberOperands(size_t from) {
  for (size_t i = from; i < operands_.size(); ++i) {
    const Operand& operand = operands_[i];
    if (operand.value) operand.value->uses_[operand.use_index].operand_index = static_cast<uint32_t>(i);
  }
}

std::vector<Value*> Node::inputs() const {
  std::vector<Value*> values;
  values.reserve(operands_.size());
  for (const Operand& operand : operands_) values.push_back(operand.value);
  return values;
}

void Node::setInput(size_t i, Value* value) {
  if (operands_[i].value == value) return;
  detachUse(static_cast<uint32_t>(i));
  operands_[i].value = value;
  attachUse(static_cast<uint32_t>(i));
}

void Node::addInput(Value* value) { insertInput(operands_.size(), value); }

void Node::insertInput(size_t position, Value* value) {
  operands_.insert(operands_.begin() + static_cast<ptrdiff_t>(position), Operand{value, 0});
  renumberOperands(position + 1);
  attachUse(static_cast<uint32_t>(position));
}

void Node::removeInput(size_t i) {
  detachUse(static_cast<uint32_t>(i));
  operands_.erase(operands_.begin() + static_cast<ptrdiff_t>(i));
  renumberOperands(i);
}

void Node::removeAllInputs() {
  for (size_t i = operands_.size(); i-- > 0;) detachUse(static_cast<uint32_t>(i));
  operands_.clear();
}

std::vector<Value*> Node::outputs() const {
  std::vector<Value*> values;
  values.reserve(outputs_.size());
  for (const auto& output : outputs_) values.push_back(output.get());
  return values;
}

Value* Node::addOutput(TensorType type, std::string name) {
  outputs_.emplace_back(new Value(graph_, this, static_cast<uint32_t>(outputs_.size()), std::move(type),
                                  std::move(name)));
  return outputs_.back().get();
}

void Node::removeLastOutput() {
  if (outputs_.empty()) raise(describe(), ": has no output to remove");
  if (outputs_.back()->hasUses()) {
    raise(describe(), ": cannot remove output ", outputs_.size() - 1, ", it still has ",
          outputs_.back()->uses().size(), " uses");
  }
  outputs_.pop_back();
}

void Node::setAttr(std::string name, Attribute value) {
  if (value.kind() == AttrKind::Graph) {
    std::shared_ptr<Graph> subgraph = value.asGraph();
    if (!subgraph) raise(describe(), ": attribute '", name, "' is a null subgraph");
    // A subgraph belongs to exactly one node; a graph already owned elsewhere is copied.
    if (subgraph->parent_node_ && subgraph->parent_node_ != this) {
      subgraph = std::shared_ptr<Graph>(subgraph->clone());
    }
    // A graph that contains this node cannot also be nested in it.
    for (const Graph* enclosing = graph_; enclosing; enclosing = enclosing->parentGraph()) {
      if (enclosing == subgraph.get()) {
        raise(describe(), ": attribute '", name, "' would nest graph '", subgraph->name(),
              "' in a node of its own");
      }
    }
    subgraph->parent_node_ = this;
    value = Attribute(std::move(subgraph));
  }
  attributes_.set(std::move(name), std::move(value));
}

namespace {

[[noreturn]] void wrongAttrKind(const Node& node, std::string_view name, const Attribute& attr,
                                AttrKind wanted) {
  raise(node.describe(), ": attribute '", name, "' is ", attrKindName(attr.kind()), ", expected ",
        attrKindName(wanted));
}

}  // namespace

int64_t Node::intAttr(std::string_view name, int64_t fallback) const {
  const Attribute* attr = attributes_.find(name);
  if (!attr) return fallback;
  if (attr->kind() != AttrKind::Int) wrongAttrKind(*this, name, *attr, AttrKind::Int);
  return attr->asInt();
}

double Node::floatAttr(std::string_view name, double fallback) const {
  const Attribute* attr = attributes_.find(name);
  if (!attr) return fallback;
  if (attr->kind() != AttrKind::Float && attr->kind() != AttrKind::Int) {
    wrongAttrKind(*this, name, *attr, AttrKind::Float);
  }
  return attr->asFloat();
}

std::string Node::stringAttr(std::string_view name, std::string fallback) const {
  const Attribute* attr = attributes_.find(name);
  if (!attr) return fallback;
  if (attr->kind() != AttrKind::String) wrongAttrKind(*this, name, *attr, AttrKind::String);
  return attr->asString();
}

std::vector<int64_t> Node::intsAttr(std::string_view name, std::vector<int64_t> fallback) const {
  const Attribute* attr = attributes_.find(name);
  if (!attr) return fallback;
  if (attr->kind() != AttrKind::Ints) wrongAttrKind(*this, name, *attr, AttrKind::Ints);
  return attr->asInts();
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> graphs;
  for (const auto& [name, attr] : attributes_) {
    if (attr.kind() == AttrKind::Graph) graphs.push_back(attr.asGraph().get());
  }
  return graphs;
}

// A subgraph may outlive its node when an Attribute copy holds it. Detached, it must not
// keep uses of values outside it, which can be freed before it: those operands (and
// outputs) become absent.
void Node::releaseSubgraphs() {
  for (const auto& [name, attr] : attributes_) {
    if (attr.kind() != AttrKind::Graph) continue;
    const std::shared_ptr<Graph>& subgraph = attr.asGraph();
    subgraph->parent_node_ = nullptr;
    if (subgraph.use_count() > 1) subgraph->dropUsesOutside(*subgraph);
  }
  attributes_ = AttributeMap();
}

void Graph::dropUsesOutside(const Graph& root) {
  auto inside = [&root](const Value* value) {
    for (const Graph* graph = value->graph(); graph; graph = graph->parentGraph()) {
      if (graph == &root) return true;
    }
    return false;
  };
  auto drop = [&](Node* node) {
    for (size_t i = 0; i < node->operands_.size(); ++i) {
      Value* value = node->operands_[i].value;
      if (value && !inside(value)) node->setInput(i, nullptr);
    }
  };
  for (Node* node = head_; node; node = node->next_) {
    drop(node);
    for (Graph* subgraph : node->subgraphs()) subgraph->dropUsesOutside(root);
  }
  drop(return_node_.get());
}

void Node::moveBefore(Node* position) {
  if (is_return_) raise(describe(), " is not in the node list and cannot move");
  if (position == this) return;
  if (position && position->graph_ != graph_) raise(describe(), ": cannot move it into another graph");
  // Every node comes before the terminator: before it is at the end.
  if (position && position->is_return_) position = nullptr;
  graph_->unlink(this);
  graph_->link(this, position);
}

void Node::moveAfter(Node* position) {
  if (is_return_) raise(describe(), " is not in the node list and cannot move");
  if (!position) raise(describe(), ": moveAfter() needs a node (moveBefore(nullptr) moves to the end)");
  if (position == this) return;
  if (position->graph_ != graph_) raise(describe(), ": cannot move it into another graph");
  if (position->is_return_) raise(describe(), ": no node can come after ", position->describe());
  graph_->unlink(this);
  graph_->link(this, position->next_);
}

// --- Graph -------------------------------------------------------------------------------

Graph::Graph(std::string name) : name_(std::move(name)) {
  static const Node::OpName* const kReturn = Node::internOpName("return", "");
  return_node_.reset(new Node(this, kReturn, UINT64_MAX));
  return_node_->is_return_ = true;
}

Graph::~Graph() {
  // Subgraphs go first, while every value they may capture from this graph still exists;
  // then all uses are dropped so that values can be freed in any order.
  for (Node* node = head_; node; node = node->next_) {
    node->releaseSubgraphs();
  }
  for (Node* node = head_; node; node = node->next_) node->removeAllInputs();
  return_node_->removeAllInputs();
  for (Node* node = head_; node;) {
    Node* next = node->next_;
    delete node;
    node = next;
  }
}

Value* Graph::addInput(std::string name, TensorType type, bool is_mutable) {
  inputs_.emplace_back(new Value(this, nullptr, static_cast<uint32_t>(inputs_.size()), std::move(type),
                                 std::move(name)));
  Value* value = inputs_.back().get();
  value->is_mutable_input_ = is_mutable;
  input_values_.push_back(value);
  return value;
}

void Graph::removeInput(size_t i) {
  Value* value = input_values_.at(i);
  if (value->hasUses()) {
    raise("graph '", name_, "': cannot remove input '", value->name(), "', it still has ",
          value->uses().size(), " uses");
  }
  if (inputUpdate(value)) {
    raise("graph '", name_, "': cannot remove input '", value->name(),
          "', the graph updates it in place; remove the update first");
  }
  inputs_.erase(inputs_.begin() + static_cast<ptrdiff_t>(i));
  input_values_.erase(input_values_.begin() + static_cast<ptrdiff_t>(i));
  for (size_t k = i; k < inputs_.size(); ++k) inputs_[k]->index_ = static_cast<uint32_t>(k);
}

void Graph::setInputMutable(Value* input, bool is_mutable) {
  if (!input->isGraphInput() || input->graph() != this) {
    raise("graph '", name_, "': value '", input->name(), "' is not an input of this graph");
  }
  if (!is_mutable) removeInputUpdate(input);
  input->is_mutable_input_ = is_mutable;
}

Value* Graph::output(size_t i) const {
  if (i >= num_outputs_) raise("graph '", name_, "' has ", num_outputs_, " outputs, asked for #", i);
  return return_node_->input(i);
}

std::vector<Value*> Graph::outputs() const {
  std::vector<Value*> values;
  values.reserve(num_outputs_);
  for (size_t i = 0; i < num_outputs_; ++i) values.push_back(return_node_->input(i));
  return values;
}

void Graph::addOutput(Value* value) {
  if (!value) raise("graph '", name_, "': an output must be a value, not absent");
  return_node_->insertInput(num_outputs_, value);
  ++num_outputs_;
}

void Graph::setOutput(size_t i, Value* value) {
  if (!value) raise("graph '", name_, "': an output must be a value, not absent");
  if (i >= num_outputs_) raise("graph '", name_, "' has ", num_outputs_, " outputs, cannot set #", i);
  return_node_->setInput(i, value);
}

void Graph::removeOutput(size_t i) {
  if (i >= num_outputs_) raise("graph '", name_, "' has ", num_outputs_, " outputs, cannot remove #", i);
  return_node_->removeInput(i);
  --num_outputs_;
}

void Graph::setInputUpdate(Value* input, Value* new_value) {
  if (!input->isGraphInput() || input->graph() != this) {
    raise("graph '", name_, "': value '", input->name(), "' is not an input of this graph");
  }
  if (!input->isMutableInput()) {
    raise("graph '", name_, "': input '", input->name(), "' is not mutable, it cannot be updated");
  }
  if (!new_value) raise("graph '", name_, "': the update of input '", input->name(), "' must be a value");
  auto it = std::find(update_targets_.begin(), update_targets_.end(), input);
  if (it != update_targets_.end()) {
    return_node_->setInput(num_outputs_ + static_cast<size_t>(it - update_targets_.begin()), new_value);
    return;
  }
  update_targets_.push_back(input);
  return_node_->addInput(new_value);
}

void Graph::removeInputUpdate(Value* input) {
  auto it = std::find(update_targets_.begin(), update_targets_.end(), input);
  if (it == update_targets_.end()) return;
  return_node_->removeInput(num_outputs_ + static_cast<size_t>(it - update_targets_.begin()));
  update_targets_.erase(it);
}

Value* Graph::inputUpdate(const Value* input) const {
  auto it = std::find(update_targets_.begin(), update_targets_.end(), input);
  if (it == update_targets_.end()) return nullptr;
  return return_node_->input(num_outputs_ + static_cast<size_t>(it - update_targets_.begin()));
}

std::vector<Graph::InputUpdate> Graph::inputUpdates() const {
  std::vector<InputUpdate> updates;
  updates.reserve(update_targets_.size());
  for (size_t k = 0; k < update_targets_.size(); ++k) {
    updates.push_back(InputUpdate{update_targets_[k], return_node_->input(num_outputs_ + k)});
  }
  return updates;
}

Node* Graph::allocateNode(std::string_view op_type, std::string_view domain) {
  return new Node(this, Node::internOpName(op_type, domain), next_node_id_++);
}

void Graph::link(Node* node, Node* position) {
  if (!position) {
    node->prev_ = tail_;
    node->next_ = nullptr;
    if (tail_) tail_->next_ = node; else head_ = node;
    tail_ = node;
  } else {
    node->next_ = position;
    node->prev_ = position->prev_;
    if (position->prev_) position->prev_->next_ = node; else head_ = node;
    position->prev_ = node;
  }
  ++num_nodes_;
}

void Graph::unlink(Node* node) {
  if (node->prev_) node->prev_->next_ = node->next_; else head_ = node->next_;
  if (node->next_) node->next_->prev_ = node->prev_; else tail_ = node->prev_;
  node->prev_ = node->next_ = nullptr;
  --num_nodes_;
}

Node* Graph::createNode(std::string_view op_type, const std::vector<Value*>& inputs, size_t num_outputs,
                        std::string_view domain) {
  return createNodeBefore(nullptr, op_type, inputs, num_outputs, domain);
}

Node* Graph::createNodeBefore(Node* position, std::string_view op_type, const std::vector<Value*>& inputs,
                              size_t num_outputs, std::string_view domain) {
  if (position && position->graph_ != this) raise("createNodeBefore: position is in another graph");
  if (position && position->is_return_) position = nullptr;  // before the terminator: at the end
  Node* node = allocateNode(op_type, domain);
  node->operands_.reserve(inputs.size());
  for (Value* input : inputs) {
    node->operands_.push_back(Node::Operand{input, 0});
    node->attachUse(static_cast<uint32_t>(node->operands_.size() - 1));
  }
  node->outputs_.reserve(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) node->addOutput();
  link(node, position);
  return node;
}

void Graph::eraseNode(Node* node) {
  if (node->graph_ != this) raise("eraseNode: ", node->describe(), " is not in graph '", name_, "'");
  if (node->is_return_) raise("eraseNode: ", node->describe(), " is part of the graph and cannot be erased");
  for (const auto& output : node->outputs_) {
    if (output->hasUses()) {
      raise("cannot erase ", node->describe(), ": its output #", output->index(), " still has ",
            output->uses().size(), " uses");
    }
  }
  node->releaseSubgraphs();
  node->removeAllInputs();
  unlink(node);
  delete node;
}

std::vector<Node*> Graph::nodeList() const {
  std::vector<Node*> list;
  list.reserve(num_nodes_);
  for (Node* node = head_; node; node = node->next_) list.push_back(node);
  return list;
}

Graph* Graph::parentGraph() const { return parent_node_ ? parent_node_->graph() : nullptr; }

bool Graph::canSee(const Value* value) const {
  for (const Graph* graph = this; graph; graph = graph->parentGraph()) {
    if (value->graph() == graph) return true;
  }
  return false;
}

namespace {

// The node of `graph` that contains `user` (itself, or the node owning the subgraph it is
// nested in), or nullptr when `user` is not inside `graph`.
Node* ancestorIn(const Graph* graph, Node* user) {
  while (user && user->graph() != graph) user = user->graph()->parentNode();
  return user;
}

}  // namespace

std::vector<Node*> Graph::topologicalOrder() const {
  // The node of this graph a use counts for, or nullptr (the terminator, or not inside).
  auto consumer_of = [this](Node* user) -> Node* {
    if (user->graph_ != this) user = ancestorIn(this, user);
    return user && !user->is_return_ ? user : nullptr;
  };

  // One walk over the list visits each node and its use lists once; everything after it
  // works on flat arrays. Tables indexed by node id (ids are below next_node_id_) stand
  // in for hashing: position[id] is the node's list position, pending[id] the number of
  // its incoming edges (one per use) from nodes not placed yet. The consumers of list[i]
  // are consumer_ids[first_edge[i] .. first_edge[i + 1]).
  const size_t n = num_nodes_;
  std::vector<Node*> list;
  std::vector<uint32_t> ids;
  std::vector<size_t> first_edge;
  std::vector<uint32_t> consumer_ids;
  list.reserve(n);
  ids.reserve(n);
  first_edge.reserve(n + 1);
  consumer_ids.reserve(2 * n);
  std::vector<uint32_t> position(next_node_id_);
  std::vector<uint32_t> pending(next_node_id_, 0);
  for (Node* node = head_; node; node = node->next_) {
    position[node->id_] = static_cast<uint32_t>(list.size());
    list.push_back(node);
    ids.push_back(static_cast<uint32_t>(node->id_));
    first_edge.push_back(consumer_ids.size());
    for (const auto& output : node->outputs_) {
      for (const Use& use : output->uses_) {
        if (Node* consumer = consumer_of(use.user)) {
          consumer_ids.push_back(static_cast<uint32_t>(consumer->id_));
          ++pending[consumer->id_];
        }
      }
    }
  }
  first_edge.push_back(consumer_ids.size());

  // Kahn's algorithm taking the ready node earliest in the list each time, so that an
  // already sorted list comes back unchanged. A cursor scans the list for ready nodes;
  // only nodes that become ready behind the cursor (the list was out of order there) go
  // through a heap. Heap entries precede the cursor, so they go first.
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> behind;
  std::vector<Node*> order;
  order.reserve(n);
  size_t cursor = 0;
  while (true) {
    size_t i;
    if (!behind.empty()) {
      i = behind.top();
      behind.pop();
    } else {
      while (cursor < n && pending[ids[cursor]] != 0) ++cursor;
      if (cursor == n) break;
      i = cursor++;
    }
    order.push_back(list[i]);
    for (size_t e = first_edge[i]; e < first_edge[i + 1]; ++e) {
      uint32_t id = consumer_ids[e];
      if (--pending[id] == 0 && position[id] < cursor) behind.push(position[id]);
    }
  }
  if (order.size() == n) return order;

  // Every node left has pending edges from nodes left. Walk backwards along them until a
  // node repeats: that is a cycle.
  auto unfinished_producer = [&](Node* node) -> Node* {
    std::vector<Node*> users{node};  // the node and every node nested in its subgraphs
    for (size_t k = 0; k < users.size(); ++k) {
      for (const Node::Operand& operand : users[k]->operands_) {
        Node* producer = operand.value ? operand.value->producer() : nullptr;
        if (producer && producer->graph_ == this && pending[producer->id_] > 0) return producer;
      }
      for (Graph* subgraph : users[k]->subgraphs()) {
        for (Node* inner = subgraph->head_; inner; inner = inner->next_) users.push_back(inner);
      }
    }
    return node;
  };
  size_t start = 0;
  while (pending[ids[start]] == 0) ++start;
  std::vector<Node*> path;
  std::vector<int64_t> seen_at(n, -1);
  Node* current = list[start];
  while (seen_at[position[current->id_]] < 0) {
    seen_at[position[current->id_]] = static_cast<int64_t>(path.size());
    path.push_back(current);
    current = unfinished_producer(current);
  }
  std::string cycle;
  for (size_t k = path.size(); k-- > static_cast<size_t>(seen_at[position[current->id_]]);) {
    cycle += path[k]->describe() + " -> ";
  }
  cycle += current->describe();
  raise("graph '", name_, "' has a cycle: ", cycle);
}

void Graph::sortTopologically() {
  std::vector<Node*> order = topologicalOrder();
  head_ = tail_ = nullptr;
  num_nodes_ = 0;
  for (Node* node : order) link(node, nullptr);
}

// The graphs being cloned, innermost first: how a value of one of them maps to its copy.
struct Graph::CloneScope {
  const Graph* source;
  Graph* copy;
  std::vector<Node*> twins;  // by source node id
  const CloneScope* outer;
  std::vector<Value*> inputs;  // what stands for each input of `source` in `copy`

  // The copy of `value`; a value defined outside every graph being cloned is kept.
  Value* map(Value* value) const {
    if (!value) return nullptr;
    for (const CloneScope* scope = this; scope; scope = scope->outer) {
      if (value->graph() != scope->source) continue;
      if (value->isGraphInput()) return scope->inputs[value->index()];
      return scope->twins[value->producer()->id()]->output(value->index());
    }
    return value;
  }
};

std::unique_ptr<Graph> Graph::clone() const { return cloneInto(nullptr); }

std::vector<Value*> Graph::inlineBefore(Node* position, const Graph& subgraph, const std::vector<Value*>& inputs) {
  if (position && position->graph_ != this) raise("inlineBefore: position is in another graph");
  if (inputs.size() != subgraph.inputs_.size()) {
    raise("inlineBefore: subgraph '", subgraph.name_, "' takes ", subgraph.inputs_.size(), " inputs, ",
          inputs.size(), " were given");
  }
  for (Value* input : inputs) {
    if (!input || !canSee(input)) raise("inlineBefore: an input for subgraph '", subgraph.name_, "' is not visible here");
  }
  if (position && position->is_return_) position = nullptr;
  CloneScope scope{&subgraph, this, std::vector<Node*>(subgraph.next_node_id_), nullptr, inputs};
  copyNodes(scope, position);
  std::vector<Value*> outputs;
  for (size_t i = 0; i < subgraph.num_outputs_; ++i) outputs.push_back(scope.map(subgraph.return_node_->input(i)));
  return outputs;
}

std::unique_ptr<Graph> Graph::cloneInto(const CloneScope* outer) const {
  auto copy = std::make_unique<Graph>(name_);
  CloneScope scope{this, copy.get(), std::vector<Node*>(next_node_id_), outer, {}};
  for (const auto& input : inputs_) {
    scope.inputs.push_back(copy->addInput(input->name(), input->type(), input->isMutableInput()));
  }
  copyNodes(scope, nullptr);
  for (size_t i = 0; i < num_outputs_; ++i) copy->addOutput(scope.map(return_node_->input(i)));
  for (const InputUpdate& update : inputUpdates()) {
    copy->setInputUpdate(scope.map(update.input), scope.map(update.new_value));
  }
  return copy;
}

void Graph::copyNodes(CloneScope& scope, Node* position) {
  const Graph& source = *scope.source;
  Graph& target = *scope.copy;
  // First every node and its outputs, so operands can refer forward; then operands and
  // subgraphs, which may capture any value of the source graph.
  for (Node* node = source.head_; node; node = node->next_) {
    Node* twin = new Node(&target, node->op_, target.next_node_id_++);
    twin->name_ = node->name_;
    twin->outputs_.reserve(node->outputs_.size());
    for (const auto& output : node->outputs_) twin->addOutput(output->type(), output->name());
    target.link(twin, position);
    scope.twins[node->id_] = twin;
  }
  for (Node* node = source.head_; node; node = node->next_) {
    Node* twin = scope.twins[node->id_];
    twin->operands_.reserve(node->operands_.size());
    for (const Node::Operand& operand : node->operands_) twin->addInput(scope.map(operand.value));
    for (const auto& [name, attr] : node->attributes_) {
      if (attr.kind() == AttrKind::Graph) {
        twin->setAttr(name, std::shared_ptr<Graph>(attr.asGraph()->cloneInto(&scope)));
      } else {
        twin->attributes_.set(name, attr);
      }
    }
  }
}

size_t Graph::numNodesRecursive() const {
  size_t count = num_nodes_;
  for (Node* node = head_; node; node = node->next_) {
    for (Graph* subgraph : node->subgraphs()) count += subgraph->numNodesRecursive();
  }
  return count;
}

const Tensor* constantTensor(const Value* value) {
  const Node* producer = value ? value->producer() : nullptr;
  if (!producer || !producer->is("Constant")) return nullptr;
  const Attribute* attribute = producer->attr("value");
  return attribute && attribute->kind() == AttrKind::Tensor ? &attribute->asTensor() : nullptr;
}

}  // namespace estuary
