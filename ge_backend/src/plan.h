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
  const Node* node = nullptr;  // in Plan::graph; nullptr for the copies into outputs
};

// A graph output planned at an upper bound (data_dependent.h): its actual length along
// `axis` is the i64 the producing kernel writes at `count`.
struct RuntimeDim {
  uint32_t output = 0;
  int axis = 0;
  Slot count;
};

class Plan {
 public:
  std::vector<TensorDesc> input_descs;
  // The values of the model's shape inputs this plan was built for, by input index (empty
  // for other inputs); see CompiledModel::planFor.
  std::vector<Tensor> shape_input_values;
  std::vector<TensorDesc> output_descs;  // upper bounds where runtime_dims say so
  std::vector<RuntimeDim> runtime_dims;
  std::vector<Step> steps;
  std::vector<Slot> slots;
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;
  // The concrete graph the steps were made from; it owns folded constants the slots point at.
  std::unique_ptr<Graph> graph;
};

// One run context's state for a plan: each step's kernel state and the argument pointer
// table. Made once per context and plan (the constructor allocates); place() and execute()
// allocate nothing.
class PlanState {
 public:
  explicit PlanState(const Plan& plan);
  // Points the arena slots into `arena` (Plan::arena_bytes, 64-byte aligned).
  void place(std::byte* arena);
  std::byte* arena() const { return arena_; }
  // The actual output descs of the last execute(): output_descs with the runtime dims in.
  void producedDescs(std::vector<TensorDesc>& descs) const;
  // Points the input and output slots at `inputs` / `outputs` (in graph order) and runs
  // the steps.
  void execute(const void* const* inputs, void* const* outputs, int threads, DeviceRunState* device);
  // With profiling on, execute() adds each step's time to its entry in stepSeconds().
  void setProfiling(bool on);
  // With an observer, execute() shows it each step's results (RunContext::setObserver).
  void setObserver(const ValueObserver* observer) { observer_ = observer; }
  const std::vector<double>& stepSeconds() const { return step_seconds_; }
  uint64_t profiledRuns() const { return profiled_runs_; }

 private:
  void observe(const Step& step, void* const* outputs);

  const Plan& plan_;
  std::byte* arena_ = nullptr;
  std::vector<std::unique_ptr<KernelState>> kernel_states_;
  std::vector<void*> pointers_;  // one per plan argument slot
  bool profiling_ = false;
  std::vector<double> step_seconds_;
  uint64_t profiled_runs_ = 0;
  const ValueObserver* observer_ = nullptr;
  std::vector<std::byte> plain_copy_;  // an observed result in a blocked layout, made row-major
};

// The constant a value holds when a Constant node produces it, else nullptr.
const Tensor* constantOf(const Value* value);

// Specializes the shape-generic `graph` to `inputs`, folds what became constant, selects a
// kernel per node and plans memory. Inputs with a non-null entry in `shape_input_values`
// are replaced by those values as constants. Nodes with a choice of kernels ask `tuner`
// (KernelBuildContext::choose); without one, the rules choose. Packed weights are shared
// through `shared` with the model's other plans.
std::shared_ptr<Plan> buildPlan(const Graph& graph, const std::vector<TensorDesc>& inputs, const Device& device,
                                const BuildOptions& options, BuildReport& report, Tuner* tuner = nullptr,
                                const std::vector<Tensor>& shape_input_values = {},
                                SharedAcrossPlans* shared = nullptr);

// Raises ResourceLimitError naming the first value of `graph` (or of its subgraphs) whose
// static size passes limits.tensor_bytes.
void checkTensorLimit(const Graph& graph, const ResourceLimits& limits);

// "f32[1,3]" descs joined, the key of the plan cache.
std::string shapeSignature(const std::vector<TensorDesc>& inputs);

}  // namespace estuary::ge
