#include "transforms/transform_helpers.h"

#include "estuary/ops/schema.h"

namespace estuary {

std::optional<std::vector<int64_t>> constantInts(const Value* value) {
  if (value && value->producer() && value->producer()->is("Constant")) {
    if (const Attribute* ints = value->producer()->attr("value_ints");
        ints && ints->kind() == AttrKind::Ints) {
      return ints->asInts();
    }
  }
  const Tensor* tensor = constantTensor(value);
  if (!tensor || tensor->shape().size() > 1) return std::nullopt;
  auto count = static_cast<size_t>(tensor->numElements());
  if (tensor->dtype() == DType::I64) {
    return std::vector<int64_t>(tensor->data<int64_t>(), tensor->data<int64_t>() + count);
  }
  if (tensor->dtype() == DType::I32) {
    return std::vector<int64_t>(tensor->data<int32_t>(), tensor->data<int32_t>() + count);
  }
  return std::nullopt;
}

std::optional<double> scalarFloatConstant(const Value* value) {
  const Tensor* tensor = constantTensor(value);
  if (!tensor || tensor->numElements() != 1) return std::nullopt;
  if (tensor->dtype() == DType::F32) return *tensor->data<float>();
  if (tensor->dtype() == DType::F64) return *tensor->data<double>();
  return std::nullopt;
}

Node* soleProducer(Value* value, std::string_view op) {
  Node* producer = value ? value->producer() : nullptr;
  if (!producer || !producer->is(op) || value->uses().size() != 1) return nullptr;
  return producer;
}

bool hasRank(const Value* value, size_t rank) {
  return value && value->shape().isRanked() && value->shape().rank() == rank;
}

std::optional<std::vector<int64_t>> permutationOf(const Node& transpose) {
  std::vector<int64_t> perm;
  if (const Attribute* attribute = transpose.attr("perm"); attribute && attribute->kind() == AttrKind::Ints) {
    perm = attribute->asInts();
  } else {
    const Value* input = transpose.numInputs() > 0 ? transpose.input(0) : nullptr;
    if (!input || !input->shape().isRanked()) return std::nullopt;
    for (size_t i = input->shape().rank(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> seen(perm.size(), false);
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(perm.size()) || seen[axis]) return std::nullopt;
    seen[axis] = true;
  }
  return perm;
}

bool isIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Node* createInferred(Graph& graph, Node* before, std::string_view op, const std::vector<Value*>& inputs,
                     std::vector<std::pair<std::string, Attribute>> attributes) {
  Node* node = graph.createNodeBefore(before, op, inputs);
  for (auto& [name, value] : attributes) node->setAttr(name, std::move(value));
  KnownValueMap known;
  inferNode(*node, known);
  return node;
}

}  // namespace estuary
