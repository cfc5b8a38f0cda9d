#include "tf_op_outputs.h"

#include <map>
#include <vector>

namespace estuary::tensorflow_frontend {
namespace {

// An output argument: its name, and the int attribute giving its length or the type-list
// attribute whose length it is (neither: one output).
struct OutputArg {
  // Written {"name"} in the table below: one output, no length attribute.
  OutputArg(std::string_view name, std::string_view length_attr = {}, bool type_list = false)
      : name(name), length_attr(length_attr), type_list(type_list) {}
  std::string_view name;
  std::string_view length_attr;
  bool type_list;
};

// From tensorflow/core/ops/*.cc, the ops with more than one output argument that models
// for inference contain.
const std::map<std::string_view, std::vector<OutputArg>>& multiOutputOps() {
  static const auto* ops = new std::map<std::string_view, std::vector<OutputArg>>{
      {"FusedBatchNorm", {{"y"}, {"batch_mean"}, {"batch_variance"}, {"reserve_space_1"}, {"reserve_space_2"}}},
      {"FusedBatchNormV2", {{"y"}, {"batch_mean"}, {"batch_variance"}, {"reserve_space_1"}, {"reserve_space_2"}}},
      {"FusedBatchNormV3",
       {{"y"}, {"batch_mean"}, {"batch_variance"}, {"reserve_space_1"}, {"reserve_space_2"}, {"reserve_space_3"}}},
      {"Switch", {{"output_false"}, {"output_true"}}},
      {"RefSwitch", {{"output_false"}, {"output_true"}}},
      {"Merge", {{"output"}, {"value_index"}}},
      {"RefMerge", {{"output"}, {"value_index"}}},
      {"TopK", {{"values"}, {"indices"}}},
      {"TopKV2", {{"values"}, {"indices"}}},
      {"Unique", {{"y"}, {"idx"}}},
      {"UniqueV2", {{"y"}, {"idx"}}},
      {"UniqueWithCounts", {{"y"}, {"idx"}, {"count"}}},
      {"BroadcastGradientArgs", {{"r0"}, {"r1"}}},
      {"NonMaxSuppressionV4", {{"selected_indices"}, {"valid_outputs"}}},
      {"NonMaxSuppressionV5", {{"selected_indices"}, {"selected_scores"}, {"valid_outputs"}}},
      {"TensorListPopBack", {{"output_handle"}, {"tensor"}}},
      {"TensorListConcatV2", {{"tensor"}, {"lengths"}}},
      {"LSTMBlockCell", {{"i"}, {"cs"}, {"f"}, {"o"}, {"ci"}, {"co"}, {"h"}}},
      {"GRUBlockCell", {{"r"}, {"u"}, {"c"}, {"h"}}},
  };
  return *ops;
}

// How many outputs `arg` gives `node`.
size_t lengthOf(const NodeDef& node, const OutputArg& arg) {
  if (arg.length_attr.empty()) return 1;
  for (const AttrEntry& entry : node.attr) {
    if (entry.key != arg.length_attr) continue;
    if (arg.type_list) return entry.value.list ? entry.value.list->type.size() : 0;
    return entry.value.i ? static_cast<size_t>(*entry.value.i) : 0;
  }
  return 0;
}

}  // namespace

std::optional<size_t> flatOutputIndex(const NodeDef& node, std::string_view arg, size_t index) {
  auto found = multiOutputOps().find(node.op);
  if (found == multiOutputOps().end()) return index;
  size_t offset = 0;
  for (const OutputArg& output : found->second) {
    if (output.name == arg) return offset + index;
    offset += lengthOf(node, output);
  }
  return std::nullopt;
}

}  // namespace estuary::tensorflow_frontend
