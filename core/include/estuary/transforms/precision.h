#pragma once
// Precision modes (ATC's --precision_mode): which float computations of a graph run in 16 bits.
//
//   PrecisionLists lists = PrecisionLists::load(shippedPrecisionLists());
//   PrecisionStats stats = applyPrecision(graph, PrecisionMode::MixedBf16, lists);
//
// The pass chooses a dtype for every node that computes on floats, converts constant operands
// once (weights are stored in the dtype they run in), inserts a Cast where a value meets a
// node that computes in another dtype, casts graph outputs and in-place updates back to the
// dtype they had, and cancels casts that meet (a 16-bit value widened and narrowed again).
// Nodes with subgraphs (If, Loop) keep their dtypes: their operands are cast back to them.
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

enum class PrecisionMode {
  Origin,     // every dtype as the model has it (ATC's must_keep_origin_dtype); the default
  Fp32,       // 16-bit float computations raised to f32 (force_fp32)
  Bf16,       // every f32 computation whose op takes bf16 in bf16 (allow_fp32_to_bf16)
  Fp16,       // the same in f16 (allow_fp32_to_fp16)
  MixedBf16,  // the lists decide (allow_mix_precision_bf16)
  MixedFp16,  // the lists decide, f16 (allow_mix_precision, allow_mix_precision_fp16)
  Fp64,       // every float computation whose op takes f64 in f64: the reference run of
              // `estuary compare`, and a way to see how much of an error is f32's own
};

// "origin", "fp32", "bf16", "fp16", "mixed-bf16", "mixed-fp16", "fp64", or ATC's spelling of one;
// nullopt for anything else.
std::optional<PrecisionMode> parsePrecisionMode(std::string_view text);
const char* precisionModeName(PrecisionMode mode);
// Every spelling parsePrecisionMode takes, for messages and --help.
const char* precisionModeSpellings();
// The same as a list, Estuary's names first.
std::vector<std::string_view> precisionModeSpellingList();
// The 16-bit type a mode computes in, or Undefined for Origin and Fp32.
DType lowDType(PrecisionMode mode);

// Which ops go to 16 bits in the mixed modes (ATC's white list), which stay f32 (its black
// list) and, for every op in neither, that it follows its inputs (the gray list: 16 bits when
// every float input is 16-bit, else f32, as PyTorch's autocast promotes). Nodes can be placed
// by name, ahead of their op's list; `keep_nodes` keep their model's dtypes in every mode
// (ATC's --keep_dtype).
struct PrecisionLists {
  std::set<std::string> low_ops, f32_ops;
  std::set<std::string> low_nodes, f32_nodes, keep_nodes;

  // A lists file (configs/precision/mixed.yaml shows the format):
  //   low: [MatMul, Conv, ...]        f32: [Softmax, ...]
  //   nodes: {low: [name, ...], f32: [...], keep: [...]}
  // Raises an Error naming the file and the line of anything malformed.
  static PrecisionLists load(const std::string& path);
  // ATC's --modify_mixlist file, applied to these lists: JSON (or YAML) of the form
  //   {"white-list": {"to-add": [ops], "to-remove": [ops]}, "black-list": {...}, "gray-list": {...}}
  // An op added to one list leaves the others.
  void modify(const std::string& path);
  // ATC's --keep_dtype file: one node name per line ("OpType::Conv" keeps every Conv); '#'
  // starts a comment.
  void keepFromFile(const std::string& path);
};

// The lists a build in `mode` uses: `lists` (a file; the shipped one when empty, loaded for the
// mixed modes or when given), then ATC's edits and keep file when given (empty: none).
PrecisionLists precisionListsFor(PrecisionMode mode, const std::string& lists, const std::string& modify_mixlist = "",
                                 const std::string& keep_dtype = "");

// configs/precision/mixed.yaml where the shipped configs are (shippedPipelineDir()); empty
// when there is none.
std::string shippedPrecisionLists();

struct PrecisionStats {
  size_t low_nodes = 0;         // nodes that compute in the 16-bit type
  size_t f32_nodes = 0;         // float nodes that compute in f32
  size_t f64_nodes = 0;         // nodes that compute in f64 (mode fp64)
  size_t casts_inserted = 0;    // Cast nodes left in the graph by the pass
  size_t casts_cancelled = 0;   // pairs of casts that met and went, and casts to the same dtype
  size_t weights_converted = 0; // constants stored in another dtype
  size_t values_retyped = 0;    // node results now of another dtype
};

// Applies `mode` to `graph` (types must be inferred). `lists` matter for the mixed modes and
// for their keep_nodes in every mode.
PrecisionStats applyPrecision(Graph& graph, PrecisionMode mode, const PrecisionLists& lists);

// The pass "set_precision" with options mode (a spelling parsePrecisionMode takes), lists (a
// lists file; default: the shipped one), modify_mixlist and keep_dtype (ATC's files).
PassInfo precisionPass();

}  // namespace estuary
