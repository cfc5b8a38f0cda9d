#pragma once
// A plan: everything a run needs for one concrete shape signature, resolved at build time
// so that a run only walks an array of steps.
#include <memory>
#include <string>
#include <vector>

#include "estuary/ge/kernel.h"
#include "estuary/ge/model.h"
#include "estuary/ir/graph.h"

namespace estuary::ge {

// Where a kernel argument lives.
struct Slot {
  enum class Kind : uint8_t { Absent, Arena, Constant, Input, Output };
  Kind kind = Kind::Absent;
  uint32_t index = 0;           // Input/Output: which graph input or output
  size_t offset = 0;            // Arena: byte offset
  const void* constant = nullptr;
  TensorDesc desc;  // what the kernel reads or writes here, layout included (byteSize() bytes)
};

struct Step {
  std::shared_ptr<const Kernel> kernel;
  uint32_t first_slot = 0;  // inputs then outputs, contiguous in Plan::slots
  uint32_t num_inputs = 0;
  uint32_t num_outputs = 0;
  size_t scratch_offset = 0;
  std::string label;  // "node 'conv1' (Conv) -> onednn:conv"
};

class Plan {
 public:
  std::vector<TensorDesc> input_descs;
  std::vector<TensorDesc> output_descs;
  std::vector<Step> steps;
  std::vector<Slot> slots;
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;
  // The concrete graph the steps were made from; it owns folded constants the slots point at.
  std::unique_ptr<Graph> graph;
};

// Specializes the shape-generic `graph` to `inputs`, folds what became constant, selects a
// kernel per node and plans memory.
std::shared_ptr<Plan> buildPlan(const Graph& graph, const std::vector<TensorDesc>& inputs, const Device& device,
                                const BuildOptions& options, BuildReport& report);

// "f32[1,3]" descs joined, the key of the plan cache.
std::string shapeSignature(const std::vector<TensorDesc>& inputs);

}  // namespace estuary::ge
