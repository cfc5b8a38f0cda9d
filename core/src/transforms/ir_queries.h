#pragma once
// Questions the transforms ask of the IR: constant operands and Transpose permutations.
#include <cstdint>
#include <optional>
#include <vector>

#include "estuary/ir/graph.h"

namespace estuary {

// The elements of a constant integer scalar or vector.
std::optional<std::vector<int64_t>> constantInts(const Value* value);

// A Transpose's permutation (the default, no `perm`, reverses the known rank); nullopt when
// it is not a valid permutation or the rank is unknown.
std::optional<std::vector<int64_t>> permutationOf(const Node& transpose);

bool isIdentityPermutation(const std::vector<int64_t>& perm);

}  // namespace estuary
