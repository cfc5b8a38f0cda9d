#pragma once
// The GE backend's public API: build a core-IR graph into a compiled model, save it as an
// offline model or load one, and run it from any number of threads at once.
//
//   auto model = ge::CompiledModel::build(graph);           // or ge::CompiledModel::load(path)
//   auto context = model->createContext();                  // one per thread
//   context->run(inputs, outputs);                          // many times; allocates nothing
//
//   ge::RunContextPool contexts(model);                      // or: one pool for all threads,
//   contexts.run(inputs, outputs);                           // each run on a context of its own
//
// Inputs with symbolic dims run at any concrete size: the first run with a new shape
// signature builds a plan for it (kernels, memory plan), later runs reuse it. A plan or a
// value larger than BuildOptions::limits is refused (ResourceLimitError) before anything is
// allocated for it, at build for static shapes, at the first run of a shape otherwise.
#include <cstdint>
#include <array>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "estuary/ge/device.h"
#include "estuary/ge/kernel.h"
#include "estuary/support/limits.h"
#include "estuary/support/mapped_file.h"
#include "estuary/transforms/input_shapes.h"
#include "estuary/ir/graph.h"

namespace estuary::ge {

// A tensor in host memory handed to or returned from a run. Not owning.
struct HostTensor {
  DType dtype = DType::Undefined;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  void* data = nullptr;

  static HostTensor of(const TensorDesc& desc, void* data);
  TensorDesc desc() const;
};

struct BuildOptions {
  // Intra-op threads of a run; 0 means one per core.
  int num_threads = 0;
  // Move bias/residual adds, scales and activations into the Conv/MatMul/Gemm before them.
  bool fuse_epilogues = true;
  // The memory layout of activations in convolution chains (see Layout). nullopt: the one
  // oneDNN's convolutions prefer on this CPU; Layout::Plain: every tensor stays row-major.
  std::optional<Layout> activation_layout;
  // Concrete shapes to build plans for right away (others are built on first use), each a
  // list of input dims in graph input order.
  std::vector<std::vector<std::vector<int64_t>>> prebuild_shapes;
  // Sizes the named symbolic dims may take (ATC's input shape ranges); a run with a size
  // outside is refused naming the input. Saved in the offline model.
  std::map<std::string, DimRange> dim_ranges;
  // How the model was made, saved in the offline model and shown by `estuary convert --mode
  // info` ("precision": "mixed-bf16: 72 nodes in bf16, ...").
  std::map<std::string, std::string> properties;
  // Kernel choice measured on this machine, as TensorRT's tactics are: where a node has
  // several kernels (Estuary's GEMV or oneDNN, oneDNN's implementations, Winograd or direct
  // convolution), each is timed on the plan's shapes with this build's threads and the
  // fastest kept, and so is the activation layout of convolution chains (Device::
  // activationLayouts), timed as whole plans. The choices are saved in the offline model.
  // Off: the built-in rules choose, and two builds of one model always run the same kernels.
  bool tune_kernels = false;
  // A timing cache file (TensorRT's): read before tuning, so that a problem measured once on
  // this CPU is not timed again, and rewritten with what the build measured. Empty: none.
  std::string timing_cache;
  // The most seconds one model's tuning may spend measuring; later nodes get the rules' choice.
  double tuning_budget_seconds = 60;
  // How much memory a tensor, a plan and a run may take, and how many plans are kept. Not
  // saved in the offline model: they belong to the machine that runs it.
  ResourceLimits limits = ResourceLimits::forThisMachine();
};

// What a build did, for `estuary build` and logs.
struct BuildReport {
  struct Stage {
    std::string name;
    double seconds;
  };
  std::vector<Stage> stages;
  std::map<std::string, size_t> ops_before;  // op histogram of the input graph
  // Of the graph the kernels run: the lowered graph, then that of the most recent plan (after
  // epilogue fusion, batch-norm folding and layout reorders, which depend on shapes).
  std::map<std::string, size_t> ops_after;
  size_t folded_constants = 0;
  // BatchNormalization nodes, and per-channel Mul/Div/Add/Sub by constants (a decomposed
  // batch norm, a bias add), folded into the Conv before them
  size_t folded_batch_norms = 0;
  size_t fused_epilogues = 0;
  size_t folded_transposes = 0;  // Transposes read by a MatMul through strides instead of copied
  size_t weight_bytes = 0;
  size_t plans_built = 0;  // one per input shape signature (and values of shape inputs)
  // For the most recently built plan:
  size_t planned_activation_bytes = 0;  // arena size
  size_t lower_bound_bytes = 0;         // the most bytes alive at once
  std::vector<std::string> kernels;      // one line per step: node and kernel
  std::vector<Stage> lowering;           // the device lowering's passes and their times
  size_t layout_reorders = 0;            // estuary::Reorder steps the layout assignment added
  // Tuning (BuildOptions::tune_kernels): one line per node with a choice of kernels, with the
  // time of each tactic and where the choice came from (measured, timing cache, offline model).
  std::vector<std::string> tuning;
  double tuning_seconds = 0;  // spent measuring, over every plan built so far
  // What the build worked around rather than failed on, one line each, naming the file and
  // line: a timing cache that did not read back whole was ignored.
  std::vector<std::string> warnings;
};

// Time spent in one step of a plan over the runs since profiling was switched on.
struct StepProfile {
  std::string label;  // "node 'conv1' (Conv) -> onednn:conv"
  double seconds = 0;
  uint64_t runs = 0;
};

// What an observed run (RunContext::setObserver) shows after each step: a node of the plan's
// graph and one of its results, always row-major, readable only during the call. A result
// of data-dependent length (NonZero) inside the graph is shown at its upper bound.
struct ObservedValue {
  const Node& node;
  size_t output;  // which result of the node
  HostTensor tensor;
};
using ValueObserver = std::function<void(const ObservedValue&)>;

struct IoInfo {
  std::string name;
  TensorType type;  // may have symbolic dims
  bool is_mutable = false;
};

class Plan;
class PlanState;
class Tuner;
class SharedAcrossPlans;
struct ByteSink;
class RunContext;

class CompiledModel : public std::enable_shared_from_this<CompiledModel> {
 public:
  // Lowers, folds, fuses and plans `graph` for `device`. Raises an Error naming the node for
  // anything the device cannot run.
  static std::shared_ptr<CompiledModel> build(const Graph& graph, const BuildOptions& options = {},
                                              const Device& device = cpuDevice());
  // Loads an offline model written by save(): weights are mapped, not copied.
  static std::shared_ptr<CompiledModel> load(const std::string& path, const BuildOptions& options = {},
                                             const Device& device = cpuDevice());
  // The same from the bytes of an offline model in memory (copied once, aligned) and into
  // them: for integrations that keep models in their own storage.
  static std::shared_ptr<CompiledModel> loadFromMemory(const void* data, size_t size, const BuildOptions& options = {},
                                                       const Device& device = cpuDevice());
  void save(const std::string& path) const;
  std::string saveToBytes() const;

  ~CompiledModel();
  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  size_t inputIndex(std::string_view name) const;   // raises naming the unknown input
  size_t outputIndex(std::string_view name) const;  // raises naming the unknown output
  const BuildReport& report() const { return report_; }
  const Graph& graph() const { return *graph_; }
  const Device& device() const { return device_; }
  int numThreads() const { return num_threads_; }
  const std::map<std::string, DimRange>& dimRanges() const { return options_.dim_ranges; }
  const std::map<std::string, std::string>& properties() const { return options_.properties; }

  std::unique_ptr<RunContext> createContext() const;

  // The plan for these concrete input descs, built on first use (thread-safe). `values`, when
  // given, are the inputs themselves: a graph whose shapes depend on the values of small
  // integer inputs (a Reshape's target shape, a reduction's axes, fed as inputs rather than
  // constants, as TensorRT's shape tensors are) gets plans keyed by those values too.
  std::shared_ptr<const Plan> planFor(const std::vector<TensorDesc>& inputs,
                                      const std::vector<HostTensor>* values = nullptr) const;
  // Whether input i is such a shape input (found when the first plan needs its values).
  bool isShapeInput(size_t i) const;

 private:
  CompiledModel(std::unique_ptr<Graph> graph, const BuildOptions& options, const Device& device);
  static std::shared_ptr<CompiledModel> loadMapped(const MappedFile& file, const std::string& path,
                                                   const BuildOptions& options, const Device& device);
  void writeTo(ByteSink& sink) const;
  void checkInputs(const std::vector<TensorDesc>& inputs) const;
  // buildPlan, through the tuner's choice of an activation layout when the build tunes.
  std::shared_ptr<Plan> buildTunedPlan(const std::vector<TensorDesc>& inputs, const std::vector<Tensor>& shape_values) const;

  std::unique_ptr<Graph> graph_;  // lowered, shape-generic
  const Device& device_;
  BuildOptions options_;
  std::unique_ptr<Tuner> tuner_;  // the kernel choices of every plan, measured or recorded
  std::unique_ptr<SharedAcrossPlans> shared_;  // packed weights, one copy for all plans
  int num_threads_;
  std::vector<IoInfo> inputs_;
  std::vector<IoInfo> outputs_;
  mutable BuildReport report_;
  mutable std::mutex plans_mutex_;
  struct CachedPlan {
    std::shared_ptr<const Plan> plan;
    std::list<std::string>::iterator use;  // its place in plan_use_order_
  };
  mutable std::unordered_map<std::string, CachedPlan> plans_;  // by shape signature
  mutable std::list<std::string> plan_use_order_;               // keys, most recently used first
  // Inputs whose values key the plans; decided once, under plans_mutex_, by the first plan.
  mutable std::vector<bool> shape_inputs_;
  mutable bool shape_inputs_decided_ = false;
};

// One thread's handle on a compiled model: its arena, kernel states and device state.
// Not thread-safe itself: create one per thread, or lend them out with a RunContextPool.
class RunContext {
 public:
  ~RunContext();
  // Runs with `inputs` in graph input order. Outputs go into the context's own buffers,
  // valid until the next run; returns their descriptions and pointers. An output whose
  // length depends on the data (NonZero) comes back with its actual dims.
  const std::vector<HostTensor>& run(const std::vector<HostTensor>& inputs);
  // Runs writing outputs into caller buffers, whose descs must match outputDescs(inputs).
  void run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs);
  // The output descs a run with these inputs produces (builds the plan if needed). An
  // output whose length depends on the data (NonZero) has its upper bound here: buffers of
  // these descs fit any run.
  std::vector<TensorDesc> outputDescs(const std::vector<HostTensor>& inputs);
  // The actual output descs of the last run: outputDescs() with data-dependent lengths as
  // the run produced them (the data sits compactly at the start of each buffer).
  const std::vector<TensorDesc>& producedOutputDescs() const { return produced_descs_; }
  // By name, for convenience (allocates).
  std::map<std::string, HostTensor> runNamed(const std::map<std::string, HostTensor>& inputs);

  // Per-step timing (ORT's profiling): off by default, since reading the clock around every
  // step costs about as much as a small kernel. Switching it on clears the figures.
  void setProfiling(bool on);
  // The steps of the plan in use, in run order, with the time spent in each since profiling
  // was switched on or the plan changed.
  std::vector<StepProfile> profile() const;

  // Shows `observer` every result of every step of later runs, as the step computes it (what
  // `estuary compare` measures node by node); nullptr switches it off. A result kept in a
  // blocked layout is copied to row-major first, so an observed run is slower. An exception
  // the observer throws ends the run and reaches the caller.
  void setObserver(ValueObserver observer);

 private:
  friend class CompiledModel;
  explicit RunContext(std::shared_ptr<const CompiledModel> model);
  void bind(const std::vector<HostTensor>& inputs);
  void execute(const std::vector<HostTensor>& inputs, void* const* outputs);

  std::shared_ptr<const CompiledModel> model_;
  std::unique_ptr<DeviceRunState> device_state_;
  std::shared_ptr<const Plan> plan_;
  std::unique_ptr<PlanState> plan_state_;
  void* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  std::vector<const void*> input_pointers_;
  std::vector<TensorDesc> input_descs_;
  std::vector<std::vector<std::byte>> shape_input_values_;  // of the bound plan, per shape input
  std::vector<std::vector<std::byte>> owned_outputs_;
  std::vector<HostTensor> output_views_;
  std::vector<TensorDesc> produced_descs_;
  bool profiling_ = false;
  ValueObserver observer_;
  std::vector<void*> output_pointers_;
};

// Run contexts lent out one run at a time, so that one compiled model serves any number of
// threads at once, as an ONNX Runtime session's Run does: each run has a context (arena,
// kernel states) of its own, and no lock is held while it computes, only while a context is
// taken or given back. The pool keeps as many contexts as runs were ever in flight at once.
class RunContextPool {
 public:
  explicit RunContextPool(std::shared_ptr<const CompiledModel> model);
  RunContextPool(const RunContextPool&) = delete;
  RunContextPool& operator=(const RunContextPool&) = delete;

  // A context lent to one caller, given back to the pool when the lease ends. Several calls
  // on one lease (outputDescs, then run, then producedOutputDescs) see the same context.
  class Lease {
   public:
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    RunContext* operator->() const { return context_.get(); }
    RunContext& operator*() const { return *context_; }

   private:
    friend class RunContextPool;
    Lease(RunContextPool* pool, std::unique_ptr<RunContext> context) : pool_(pool), context_(std::move(context)) {}
    RunContextPool* pool_;
    std::unique_ptr<RunContext> context_;
  };

  Lease acquire();
  // RunContext::run on a context of the pool.
  void run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs);
  size_t contexts() const;  // made so far: the most runs that were in flight at once

 private:
  std::shared_ptr<const CompiledModel> model_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<RunContext>> idle_;
  size_t created_ = 0;
};

}  // namespace estuary::ge
