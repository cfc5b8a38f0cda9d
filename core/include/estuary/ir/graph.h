#pragma once
// The core IR: a graph of nodes in SSA form.
//
// - Every Value is defined once: by a node output or as a graph input.
// - Values keep use lists; adding, removing or redirecting a use is O(1).
// - Graph outputs and mutable-input updates are operands of the graph's terminator
//   (returnNode()), so replaceAllUsesWith() and dead-code elimination treat them
//   like any other use.
// - The node list is kept in a topological order (definitions before uses), as in
//   ONNX; the verifier checks it, sortTopologically() restores it.
// - Subgraphs (If branches, Loop bodies) are Graph attributes of a node. A subgraph may
//   use values of enclosing graphs directly (implicit capture).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estuary/ir/attribute.h"
#include "estuary/ir/shape.h"

namespace estuary {

class Graph;
class Node;

// One use of a value: operand `operand_index` of `user`.
struct Use {
  Node* user;
  uint32_t operand_index;
};

class Value {
 public:
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  const TensorType& type() const { return type_; }
  void setType(TensorType type) { type_ = std::move(type); }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }

  // Names are optional; the printer invents names for unnamed values.
  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  // The node defining this value, or nullptr for a graph input.
  Node* producer() const { return producer_; }
  // Which output of the producer (or which graph input) this value is.
  uint32_t index() const { return index_; }
  // The graph in which the value is defined.
  Graph* graph() const { return graph_; }
  bool isGraphInput() const { return producer_ == nullptr; }
  // Whether this is a graph input the graph may update in place (a KV cache, a running mean).
  bool isMutableInput() const { return is_mutable_input_; }

  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  // Whether any use is a graph output or a mutable-input update.
  bool isGraphOutput() const;

  // Redirects every use of this value to `replacement`.
  void replaceAllUsesWith(Value* replacement);
  // Redirects the uses for which `predicate` holds.
  void replaceUsesWithIf(Value* replacement, const std::function<bool(const Use&)>& predicate);

 private:
  friend class Node;
  friend class Graph;
  Value(Graph* graph, Node* producer, uint32_t index, TensorType type, std::string name)
      : type_(std::move(type)), name_(std::move(name)), producer_(producer), graph_(graph),
        index_(index) {}

  TensorType type_;
  std::string name_;
  std::vector<Use> uses_;
  Node* producer_;
  Graph* graph_;
  uint32_t index_;
  bool is_mutable_input_ = false;
};

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Op identity. The default domain "" holds the ONNX ops; Estuary's own ops are in
  // domain "estuary"; plugins bring their own domains.
  const std::string& opType() const { return op_->op_type; }
  const std::string& domain() const { return op_->domain; }
  bool is(std::string_view op_type, std::string_view domain = "") const {
    return op_->op_type == op_type && op_->domain == domain;
  }
  // "Add", "estuary::AddRMSNorm"
  std::string qualifiedOpType() const;

  // Optional name carried over from the model (an ONNX node name, an FX node name).
  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  // Unique, increasing creation number within the graph; stable across rewrites.
  uint64_t id() const { return id_; }
  Graph* graph() const { return graph_; }
  // The graph terminator (see Graph::returnNode()).
  bool isReturn() const { return is_return_; }

  // Operands. An absent optional operand (ONNX's empty input name) is nullptr.
  size_t numInputs() const { return operands_.size(); }
  Value* input(size_t i) const { return operands_[i].value; }
  std::vector<Value*> inputs() const;
  void setInput(size_t i, Value* value);
  void addInput(Value* value);
  void insertInput(size_t position, Value* value);
  void removeInput(size_t i);
  void removeAllInputs();

  size_t numOutputs() const { return outputs_.size(); }
  Value* output(size_t i = 0) const { return outputs_[i].get(); }
  std::vector<Value*> outputs() const;
  Value* addOutput(TensorType type = {}, std::string name = {});
  // Removes the last output; it must have no uses.
  void removeLastOutput();

  const AttributeMap& attributes() const { return attributes_; }
  const Attribute* attr(std::string_view name) const { return attributes_.find(name); }
  bool hasAttr(std::string_view name) const { return attributes_.contains(name); }
  // Sets an attribute. A Graph attribute becomes a subgraph owned by this node.
  void setAttr(std::string name, Attribute value);
  void removeAttr(std::string_view name) { attributes_.erase(name); }
  // Typed getters with a default for absent attributes; a present attribute of the
  // wrong kind raises an Error naming the node.
  int64_t intAttr(std::string_view name, int64_t fallback) const;
  double floatAttr(std::string_view name, double fallback) const;
  std::string stringAttr(std::string_view name, std::string fallback) const;
  std::vector<int64_t> intsAttr(std::string_view name, std::vector<int64_t> fallback = {}) const;
  // Subgraphs held in Graph attributes, in attribute order.
  std::vector<Graph*> subgraphs() const;

  // Position in the graph's node list.
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  void moveBefore(Node* position);
  void moveAfter(Node* position);

  // "node 'conv1' (Conv)" or "node #12 (Add)": how diagnostics refer to a node.
  std::string describe() const;

 private:
  friend class Graph;
  friend class Value;
  struct Operand {
    Value* value;
    uint32_t use_index;  // position of this operand's Use in value->uses_
  };
  // An op identity, interned: nodes of one op share it, so a node holds one pointer
  // instead of two strings and creating a node copies no strings.
  struct OpName {
    std::string op_type;
    std::string domain;
  };
  static const OpName* internOpName(std::string_view op_type, std::string_view domain);
  Node(Graph* graph, const OpName* op, uint64_t id);
  void releaseSubgraphs();
  void attachUse(uint32_t operand_index);
  void detachUse(uint32_t operand_index);
  void renumberOperands(size_t from);

  const OpName* op_;
  std::string name_;
  std::vector<Operand> operands_;
  std::vector<std::unique_ptr<Value>> outputs_;
  AttributeMap attributes_;
  Graph* graph_;
  uint64_t id_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  bool is_return_ = false;
};

class Graph {
 public:
  explicit Graph(std::string name = "main");
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  // --- Inputs -----------------------------------------------------------------------
  Value* addInput(std::string name, TensorType type, bool is_mutable = false);
  const std::vector<Value*>& inputs() const { return input_values_; }
  Value* input(size_t i) const { return input_values_[i]; }
  // Removes an input that has no uses.
  void removeInput(size_t i);
  void setInputMutable(Value* input, bool is_mutable);

  // --- Outputs and in-place updates ----------------------------------------------------
  size_t numOutputs() const { return num_outputs_; }
  Value* output(size_t i) const;
  std::vector<Value*> outputs() const;
  void addOutput(Value* value);
  void setOutput(size_t i, Value* value);
  void removeOutput(size_t i);
  // After a run, mutable input `input` holds `new_value`. Replaces an earlier update.
  void setInputUpdate(Value* input, Value* new_value);
  void removeInputUpdate(Value* input);
  // The value a mutable input is updated to, or nullptr.
  Value* inputUpdate(const Value* input) const;
  struct InputUpdate {
    Value* input;
    Value* new_value;
  };
  std::vector<InputUpdate> inputUpdates() const;
  // The terminator whose operands are the outputs followed by the update values.
  Node* returnNode() const { return return_node_.get(); }

  // --- Nodes --------------------------------------------------------------------------
  // Creates a node with `num_outputs` outputs of unknown type, appended at the end.
  Node* createNode(std::string_view op_type, const std::vector<Value*>& inputs,
                   size_t num_outputs = 1, std::string_view domain = "");
  // The same, inserted before `position` (nullptr: at the end).
  Node* createNodeBefore(Node* position, std::string_view op_type,
                         const std::vector<Value*>& inputs, size_t num_outputs = 1,
                         std::string_view domain = "");
  // Erases a node whose outputs have no uses.
  void eraseNode(Node* node);
  size_t numNodes() const { return num_nodes_; }
  // Every node id of this graph is below this bound (nodes created later get higher ids),
  // so tables indexed by node id can be sized once.
  uint64_t nodeIdBound() const { return next_node_id_; }
  Node* firstNode() const { return head_; }
  Node* lastNode() const { return tail_; }

  class NodeIterator {
   public:
    explicit NodeIterator(Node* node) : node_(node) {}
    Node* operator*() const { return node_; }
    NodeIterator& operator++() { node_ = node_->next(); return *this; }
    bool operator!=(const NodeIterator& other) const { return node_ != other.node_; }
    bool operator==(const NodeIterator& other) const { return node_ == other.node_; }

   private:
    Node* node_;
  };
  struct NodeRange {
    Node* first;
    NodeIterator begin() const { return NodeIterator(first); }
    NodeIterator end() const { return NodeIterator(nullptr); }
  };
  // Iterates in list order. Erasing the current node while iterating is not allowed:
  // take next() first.
  NodeRange nodes() const { return NodeRange{head_}; }
  // The nodes, in list order, as a vector (safe to erase while walking it).
  std::vector<Node*> nodeList() const;

  // A topological order of the nodes (Kahn's algorithm, stable with respect to list
  // order). Raises an Error naming nodes on a cycle. Uses from inside subgraphs count
  // as uses by the node that owns the subgraph.
  std::vector<Node*> topologicalOrder() const;
  // Reorders the node list topologically.
  void sortTopologically();

  // --- Nesting ------------------------------------------------------------------------
  // The node whose attribute holds this graph, or nullptr for a top-level graph.
  Node* parentNode() const { return parent_node_; }
  Graph* parentGraph() const;
  // Whether `value` is visible here: defined in this graph or an enclosing one.
  bool canSee(const Value* value) const;

  // Deep copy, subgraphs included. Values a subgraph captures from outside the cloned
  // graph keep referring to the same outer values.
  std::unique_ptr<Graph> clone() const;
  // Copies the nodes of `subgraph`, a graph that can see this one (an If branch or Loop
  // body of one of its nodes), into this graph before `position`, with `inputs` (values
  // visible here) standing for its inputs, and returns the copies of its outputs. What the
  // subgraph captures from enclosing graphs is used directly.
  std::vector<Value*> inlineBefore(Node* position, const Graph& subgraph, const std::vector<Value*>& inputs = {});

  // Total number of nodes including those in subgraphs.
  size_t numNodesRecursive() const;

 private:
  friend class Node;
  friend class Value;
  struct CloneScope;
  std::unique_ptr<Graph> cloneInto(const CloneScope* outer) const;
  // Copies scope.source's nodes into scope.copy before `position` (nullptr: at the end).
  static void copyNodes(CloneScope& scope, Node* position);
  Node* allocateNode(std::string_view op_type, std::string_view domain);
  void dropUsesOutside(const Graph& root);
  void link(Node* node, Node* position);
  void unlink(Node* node);

  std::string name_;
  std::vector<std::unique_ptr<Value>> inputs_;
  std::vector<Value*> input_values_;
  std::unique_ptr<Node> return_node_;
  size_t num_outputs_ = 0;
  std::vector<Value*> update_targets_;  // mutable input per update operand of return_node_
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  size_t num_nodes_ = 0;
  uint64_t next_node_id_ = 0;
  Node* parent_node_ = nullptr;
};

// The tensor of a value a Constant node makes (its `value`), or nullptr.
const Tensor* constantTensor(const Value* value);

}  // namespace estuary
