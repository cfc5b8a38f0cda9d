#pragma once
// What several transforms share: questions about constant operands and Transpose
// permutations, and making a node with its types inferred.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "estuary/ir/graph.h"

namespace estuary {

// The elements of a constant integer scalar or vector.
std::optional<std::vector<int64_t>> constantInts(const Value* value);

// The one value of a one-element f32 or f64 constant.
std::optional<double> scalarFloatConstant(const Value* value);

// The node producing `value` if it is `op` and nothing else reads `value`.
Node* soleProducer(Value* value, std::string_view op);

bool hasRank(const Value* value, size_t rank);

// A Transpose's permutation (the default, no `perm`, reverses the known rank); nullopt when
// it is not a valid permutation or the rank is unknown.
std::optional<std::vector<int64_t>> permutationOf(const Node& transpose);

bool isIdentityPermutation(const std::vector<int64_t>& perm);

// A node of `op` over `inputs` with `attributes`, inserted before `before`, its output types
// inferred.
Node* createInferred(Graph& graph, Node* before, std::string_view op, const std::vector<Value*>& inputs,
                     std::vector<std::pair<std::string, Attribute>> attributes = {});

}  // namespace estuary
