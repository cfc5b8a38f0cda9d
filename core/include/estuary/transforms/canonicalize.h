#pragma once
// Canonicalization: local rewrites that remove no-op ops, fold chains of layout ops and keep
// only the branch a constant If condition takes, so that later passes (CSE, fusion
// patterns) see one spelling of each computation.
#include <cstdint>
#include <string>
#include <vector>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// The rules, by the names the `disable` option uses:
//   identity           Identity(x) -> x
//   dropout            Dropout(x) in inference mode (no training_mode, or a constant false)
//                      -> x, when the mask output is unused
//   reshape_chain      Reshape(Reshape(x, a), b) -> Reshape(x, b) when b is a constant
//                      without 0 entries (or allowzero=1), which is then independent of a
//   transpose          Transpose with the identity permutation -> x;
//                      Transpose(Transpose(x, p), q) -> Transpose(x, p∘q), or x when that is
//                      the identity; a Transpose moving only dims of size 1 -> Reshape
//   cast               Cast(x, to=T) -> x when x already has element type T
//   squeeze_unsqueeze  Unsqueeze(Squeeze(x, a), a) -> x and Squeeze(Unsqueeze(x, a), a) -> x
//   same_shape         Reshape/Expand whose result provably has the shape of its input -> x
//   constant_if        If with a constant condition -> the nodes of the branch it takes
//   pad_into_conv      Conv(Pad(x) by zeros around the spatial dims) -> Conv(x) with the pads
//                      added to its own (auto_pad NOTSET or VALID)
//   flat_matmul        Reshape(MatMul(Reshape(x, [N, K]), W), [..., M]) -> MatMul(x, W) when
//                      the result has x's leading dims (PyTorch's decomposed Linear); with a
//                      Gemm (alpha = beta = 1, untransposed, 1-D bias) -> MatMul(x, W) + bias
const std::vector<std::string>& canonicalizationRules();

struct CanonicalizeOptions {
  std::vector<std::string> disabled;  // rule names
};

// Applies the rules in one walk in list order (each rule looks only at a node and its
// producers, which are already canonical when the node is reached), into subgraphs, and
// erases the nodes the rewrites leave unused. Returns the number of rewrites.
int64_t canonicalize(Graph& graph, const CanonicalizeOptions& options = {});

// The "canonicalize" pass; option `disable` (list of rule names).
PassInfo canonicalizePass();

}  // namespace estuary
