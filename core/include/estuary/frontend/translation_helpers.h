#pragma once
// What frameworks keep re-deriving, once for every frontend: broadcasting with an axis
// (Paddle's legacy elementwise ops, Caffe-style scale), padding rules (explicit pads,
// SAME_UPPER / SAME_LOWER, VALID) in the form the core's ONNX-semantics ops take, data
// layouts (NCHW/NHWC, OIHW/HWIO and their 1-D/3-D kin), and constants read or folded while
// translating (a weight stored HWIO becomes OIHW once, at translation, not at every run).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/node_context.h"

namespace estuary {

// --- Broadcasting --------------------------------------------------------------------------

// `y` made to broadcast against a tensor of rank `x_rank` the way an axis-aligned
// elementwise op means it: y's dims line up with x's starting at `axis` (-1: aligned to the
// end, plain NumPy broadcasting). Trailing 1s are appended as needed; y is returned as it is
// when nothing needs to change.
Value* alignForBroadcast(NodeContext& node, Value* y, size_t x_rank, int64_t axis);

// --- Padding -------------------------------------------------------------------------------

enum class PaddingRule {
  Explicit,   // pads given per spatial dim
  SameUpper,  // output = ceil(input / stride), the odd pad at the end (TensorFlow's SAME)
  SameLower,  // the same, the odd pad at the start
  Valid,      // no padding
};

// "SAME", "SAME_UPPER", "SAME_LOWER", "VALID", "EXPLICIT", "NOTSET" (any case); nullopt
// for anything else.
std::optional<PaddingRule> parsePaddingRule(std::string_view text);

// The core Conv/Pool attributes of a padding: `auto_pad` for the SAME rules and VALID,
// ONNX's `pads` [x1_begin, x2_begin, ..., x1_end, x2_end, ...] for explicit ones, given as
// (begin, end) per spatial dim.
NodeContext::Attributes paddingAttributes(PaddingRule rule,
                                          const std::vector<std::pair<int64_t, int64_t>>& explicit_pads = {});

// The (begin, end) pads SAME gives one spatial dim of static size `input`.
std::pair<int64_t, int64_t> samePads(int64_t input, int64_t kernel, int64_t stride, int64_t dilation, bool upper);

// --- Layouts -------------------------------------------------------------------------------

enum class Layout {
  ChannelsFirst,  // NCHW, NCW, NCDHW; weights OIHW
  ChannelsLast,   // NHWC, NWC, NDHWC; weights HWIO
};

// "NCHW", "NCW", "NCDHW", "NHWC", "NWC", "NDHWC"; nullopt for anything else.
std::optional<Layout> parseLayout(std::string_view text);

// The permutation taking a rank-`rank` tensor from channels-last to channels-first
// ([0, rank-1, 1, ..., rank-2]) and back.
std::vector<int64_t> channelsFirstPermutation(size_t rank);
std::vector<int64_t> channelsLastPermutation(size_t rank);
// Spatial weights stored [spatial..., in, out] (HWIO) to [out, in, spatial...] (OIHW).
std::vector<int64_t> spatialLastToFirstWeights(size_t rank);

// `value` transposed by `perm`: a constant is transposed now (the graph keeps the result,
// not the original); anything else gets a Transpose node, which the backend folds where it
// chooses memory layouts.
Value* permute(NodeContext& node, Value* value, const std::vector<int64_t>& perm);

// A tensor's elements moved by `perm` into a new tensor.
Tensor transposeTensor(const Tensor& tensor, const std::vector<int64_t>& perm);

// --- Ranks and axes ------------------------------------------------------------------------

// The rank of `value`, which must be known where the node is translated.
size_t rankOf(const NodeContext& node, const Value* value);
// `axis` of a rank-`rank` tensor, negative counting from the end, made non-negative; an error
// naming the node when it lies outside.
int64_t normalizedAxis(const NodeContext& node, int64_t axis, size_t rank);

// --- Strided slices ------------------------------------------------------------------------

// The masks of a strided slice as TensorFlow defines it (MindSpore's StridedSlice is the
// same): bit i of each says slice spec i takes the whole dim from the start (begin) or to the
// end (end), is an ellipsis covering the dims no spec names, inserts a new axis, or picks one
// index and drops the dim (shrink_axis).
struct StridedSliceMasks {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t ellipsis = 0;
  int64_t new_axis = 0;
  int64_t shrink_axis = 0;
};

// `x` sliced by one spec per entry of `strides` (known while translating); `begin` and `end`
// are 1-D i64 values, known or computed at run time. It becomes a Slice over x's dims, a
// Squeeze of the dropped dims and an Unsqueeze of the new ones.
Value* stridedSlice(NodeContext& node, Value* x, Value* begin, Value* end, const std::vector<int64_t>& strides,
                    const StridedSliceMasks& masks);

// --- Constants -----------------------------------------------------------------------------

// The elements of a constant or propagated integer value as int64 (i32 and i64 tensors,
// shapes and their arithmetic); nullopt when not known while translating.
std::optional<std::vector<int64_t>> foldedInts(const NodeContext& node, const Value* value);

}  // namespace estuary
