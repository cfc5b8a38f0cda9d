#include <chrono>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "estuary/ge/device.h"
#include "estuary/ge/memory_planner.h"
#include "estuary/ops/schema.h"
#include "estuary/pass/manager.h"
#include "estuary/transforms/canonicalize.h"
#include "estuary/transforms/cse.h"
#include "control_flow.h"
#include "data_dependent.h"
#include "estuary/transforms/shape_inference.h"
#include "plan.h"
#include "tuning.h"

namespace estuary::ge {

const Tensor* constantOf(const Value* value) {
  if (!value || !value->producer() || !value->producer()->is("Constant")) return nullptr;
  const Attribute* attr = value->producer()->attr("value");
  return attr && attr->kind() == AttrKind::Tensor ? &attr->asTensor() : nullptr;
}

void checkTensorLimit(const Graph& graph, const ResourceLimits& limits) {
  auto check = [&](const Value* value, const std::string& what) {
    if (!value || !value->type().isKnown() || !value->shape().isStatic()) return;
    const std::vector<int64_t> dims = value->shape().staticDims();
    checkLimit(what + " " + value->type().str(),
               checkedByteSize(dims.data(), static_cast<int>(dims.size()), dtypeSize(value->dtype())),
               limits.tensor_bytes, "tensor");
  };
  for (const Value* input : graph.inputs()) check(input, "input '" + input->name() + "'");
  for (const Node* node : graph.nodes()) {
    for (const Value* output : node->outputs()) check(output, node->describe() + ": value '" + output->name() + "'");
    for (const Graph* subgraph : node->subgraphs()) checkTensorLimit(*subgraph, limits);
  }
}

std::string shapeSignature(const std::vector<TensorDesc>& inputs) {
  std::string key;
  for (const TensorDesc& desc : inputs) key += desc.str() + ";";
  return key;
}

namespace {

constexpr size_t kFoldLimitBytes = 64 << 20;

// Copies a tensor; used where a graph output or an in-place update cannot be written in
// place by the node that produces it.
class CopyKernel final : public Kernel {
 public:
  explicit CopyKernel(size_t bytes) : bytes_(bytes) {}
  std::optional<size_t> inPlaceInput(size_t) const override { return 0; }
  void run(const KernelArgs& args, KernelState*) const override {
    if (args.outputs[0] != args.inputs[0]) std::memcpy(args.outputs[0], args.inputs[0], bytes_);
  }
  std::string name() const override { return "copy"; }

 private:
  size_t bytes_;
};

// `layouts`: one per value, or empty for all Plain.
std::vector<TensorDesc> descsOf(const std::vector<Value*>& values, const Node& node,
                                const std::vector<Layout>& layouts = {}) {
  std::vector<TensorDesc> descs;
  descs.reserve(values.size());
  for (const Value* value : values) {
    if (!value) {
      descs.emplace_back();
      continue;
    }
    if (!value->type().isKnown() || !value->shape().isStatic()) {
      raise(node.describe(), ": value '", value->name(), "' has type ", value->type().str(),
            " after shape inference; the backend needs static shapes here");
    }
    descs.push_back(TensorDesc::of(value->type()));
    if (!layouts.empty()) descs.back().layout = layouts[descs.size() - 1];
  }
  return descs;
}

KernelBuildContext contextFor(const Node& node, const Device& device, int threads,
                              const std::vector<Layout>& input_layouts = {},
                              const std::vector<Layout>& output_layouts = {}) {
  std::vector<Value*> inputs = node.inputs();
  std::vector<const Tensor*> constants;
  for (Value* input : inputs) constants.push_back(constantOf(input));
  return KernelBuildContext(node, descsOf(inputs, node, input_layouts), descsOf(node.outputs(), node, output_layouts),
                            std::move(constants), device, threads);
}

std::vector<Layout> layoutsOf(const std::vector<Value*>& values, const LayoutMap& layouts) {
  std::vector<Layout> result;
  for (const Value* value : values) {
    auto found = layouts.find(value);
    result.push_back(found == layouts.end() ? Layout::Plain : found->second);
  }
  return result;
}

void replaceWithConstants(Graph& graph, Node* node, std::vector<Tensor> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    Node* constant = graph.createNodeBefore(node, "Constant", {});
    constant->setAttr("value", std::move(values[i]));
    constant->output()->setType(node->output(i)->type());
    constant->output()->setName(node->output(i)->name());
    node->output(i)->replaceAllUsesWith(constant->output());
  }
  graph.eraseNode(node);
}

// Evaluates nodes whose inputs are all constants with their own kernels, and Shape/Size
// of statically shaped values, so that shape computations vanish from the plan.
size_t foldConstants(Graph& graph, const Device& device) {
  size_t folded = 0;
  std::unique_ptr<DeviceRunState> device_state;
  for (Node* node : graph.nodeList()) {
    if (node->is("Constant") || !node->subgraphs().empty()) continue;
    if (node->is("Shape") || node->is("Size")) {
      const Value* input = node->input(0);
      if (!input->shape().isStatic()) continue;
      std::vector<int64_t> dims = input->shape().staticDims();
      if (node->is("Size")) {
        int64_t count = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
        replaceWithConstants(graph, node, {Tensor::scalar<int64_t>(DType::I64, count)});
      } else {
        int64_t rank = static_cast<int64_t>(dims.size());
        int64_t start = node->intAttr("start", 0), end = node->intAttr("end", rank);
        start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
        end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
        std::vector<int64_t> slice(dims.begin() + start, dims.begin() + std::max(start, end));
        int64_t length = static_cast<int64_t>(slice.size());
        replaceWithConstants(graph, node, {Tensor::fromVector<int64_t>(DType::I64, {length}, slice)});
      }
      ++folded;
      continue;
    }
    bool all_constant = node->numInputs() > 0;
    for (Value* input : node->inputs()) all_constant &= !input || constantOf(input);
    bool static_outputs = true;  // inference may give the rest a shape once these folded
    for (Value* output : node->outputs()) static_outputs &= output->type().isKnown() && output->shape().isStatic();
    if (!all_constant || !static_outputs || !isPure(*node, OpRegistry::global())) continue;
    KernelBuildContext context = contextFor(*node, device, 1);
    size_t bytes = 0;
    for (size_t i = 0; i < context.numOutputs(); ++i) bytes += context.output(i).byteSize();
    if (bytes > kFoldLimitBytes) continue;
    std::shared_ptr<const Kernel> kernel = device.kernels().create(context);
    std::vector<Tensor> results;
    std::vector<void*> pointers;
    for (Value* input : node->inputs()) pointers.push_back(input ? const_cast<void*>(constantOf(input)->data()) : nullptr);
    for (size_t i = 0; i < context.numOutputs(); ++i) {
      results.push_back(Tensor::allocate(context.output(i).dtype, context.output(i).dimVector()));
      pointers.push_back(results.back().mutableData());
    }
    std::vector<std::byte> scratch(kernel->scratchBytes() + 64);
    void* aligned_scratch = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
    if (!device_state) device_state = device.createRunState();
    std::unique_ptr<KernelState> state = kernel->createState();
    KernelArgs args{pointers.data(), pointers.data() + node->numInputs(), aligned_scratch, 1, device_state.get()};
    kernel->run(args, state.get());
    replaceWithConstants(graph, node, std::move(results));
    ++folded;
  }
  return folded;
}

// Buffers are merged when a kernel writes an output over an input; `root` finds the buffer
// that owns the memory.
struct Buffer {
  size_t bytes = 0;
  size_t first = 0;
  size_t last = 0;
  Slot slot;
  int64_t parent = -1;
};

size_t root(std::vector<Buffer>& buffers, size_t index) {
  while (buffers[index].parent >= 0) index = static_cast<size_t>(buffers[index].parent);
  return index;
}

// A pass made of a function, for the steps of the device lowering.
class LoweringPass final : public Pass {
 public:
  explicit LoweringPass(std::function<int64_t(Graph&)> step) : step_(std::move(step)) {}
  PassResult run(Graph& graph, PassContext&) override { return {step_(graph)}; }

 private:
  std::function<int64_t(Graph&)> step_;
};

// The device lowering: the device's steps that turn the graph specialized to one shape
// signature into the graph its kernels run, then the backend's own (subgraph captures made
// explicit for the control-flow kernels). They run as passes through a PassManager, so that
// they get its instrumentation like any pipeline: ESTUARY_DEBUG=1 dumps the IR before and
// after each one (into ESTUARY_DUMP_DIR, as NNN_before_<device>_<step>.est; each plan's dumps
// replace the last plan's) and verifies it; their times go into the report. Returns the
// layout of every value the kernels see.
LayoutMap lowerForDevice(Graph& graph, const Device& device, const BuildOptions& options, BuildReport& report) {
  LoweringContext context(device, options, report);
  std::vector<LoweringStep> steps = device.lowering(context);
  steps.push_back({"make_captures_explicit", "outer values a subgraph reads become inputs of its If/Loop",
                   [](Graph& g) {
                     makeCapturesExplicit(g);
                     return int64_t{0};
                   }});
  PassRegistry passes;
  Pipeline pipeline;
  pipeline.name = device.name() + " lowering";
  pipeline.settings.environment_switches = false;
  for (LoweringStep& step : steps) {
    PassInfo info;
    info.name = device.name() + "_" + step.name;
    info.description = step.description;
    info.factory = [run = std::move(step.run)](const PassOptions&) { return std::make_unique<LoweringPass>(run); };
    pipeline.steps.push_back(PipelineStep::pass(info.name));
    passes.add(std::move(info));
  }
  PassManager manager(std::move(pipeline), passes);
  manager.setLog(nullptr);
  manager.run(graph);
  report.lowering.clear();
  for (const PassRecord& record : manager.records()) report.lowering.push_back({record.name, record.seconds});
  return std::move(context.layouts);
}

}  // namespace

KernelBuildContext LoweringContext::kernelContext(const Node& node, const std::vector<Layout>& input_layouts,
                                                  const std::vector<Layout>& output_layouts) const {
  return contextFor(node, device_, options_.num_threads, input_layouts, output_layouts);
}

bool LoweringContext::kernelExists(const Node& node, const std::vector<Layout>& input_layouts,
                                   const std::vector<Layout>& output_layouts) const {
  try {
    KernelBuildContext context = kernelContext(node, input_layouts, output_layouts);
    context.setProbing(true);
    return device_.kernels().create(context) != nullptr;
  } catch (const Error&) {
    return false;
  }
}

std::shared_ptr<Plan> buildPlan(const Graph& generic, const std::vector<TensorDesc>& inputs, const Device& device,
                                const BuildOptions& options, BuildReport& report, Tuner* tuner,
                                const std::vector<Tensor>& shape_input_values, SharedAcrossPlans* shared) {
  const int num_threads = options.num_threads;
  auto started = std::chrono::steady_clock::now();
  auto plan = std::make_shared<Plan>();
  plan->input_descs = inputs;
  plan->graph = generic.clone();
  Graph& graph = *plan->graph;
  if (inputs.size() != graph.inputs().size()) {
    raise("the model has ", graph.inputs().size(), " inputs, ", inputs.size(), " were given");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    graph.input(i)->setType(TensorType(inputs[i].dtype, Shape::ofStatic(inputs[i].dimVector())));
  }
  for (Node* node : graph.nodes()) {
    if (!node->is("Constant")) {
      for (Value* output : node->outputs()) output->setType(TensorType());
    }
  }
  plan->shape_input_values = shape_input_values;
  for (size_t i = 0; i < shape_input_values.size(); ++i) {
    if (shape_input_values[i].isNull()) continue;
    Node* constant = graph.createNodeBefore(graph.firstNode(), "Constant", {});
    constant->setAttr("value", shape_input_values[i]);
    constant->output()->setType(graph.input(i)->type());
    graph.input(i)->replaceAllUsesWith(constant->output());
  }
  // Inference, constant folding and canonicalization feed each other: a value folded to a
  // constant (a trip count or Range bound computed in float from a shape input) gives
  // inference a size it could not derive, and an If whose condition folded gives way to its
  // branch (canonicalize's constant_if), whose nodes may fold in turn. Loops still without
  // types when nothing else changes are unrolled if they can be, and the round repeats.
  report.folded_constants = 0;
  for (;;) {
    inferWithControlFlow(graph, OpenLoops::LeaveOpen);
    checkTensorLimit(graph, options.limits);
    size_t folded = foldConstants(graph, device);
    report.folded_constants += folded;
    if (canonicalize(graph) > 0 || folded > 0) continue;
    if (unrollLoopsOfChangingTypes(graph) == 0) break;
  }
  inferWithControlFlow(graph);
  boundDataDependentOutputs(graph);
  checkTensorLimit(graph, options.limits);
  report.folded_constants += foldConstants(graph, device);
  const LayoutMap layouts = lowerForDevice(graph, device, options, report);

  // Steps are the nodes in list order (topological); a value's last use is the last step
  // reading it, and graph outputs and updates live to the end.
  std::vector<Node*> nodes;
  for (Node* node : graph.nodes()) {
    if (!node->is("Constant")) nodes.push_back(node);
  }
  const size_t end_step = nodes.size() + graph.numOutputs() + graph.inputUpdates().size();
  std::unordered_map<const Node*, size_t> step_of;
  for (size_t i = 0; i < nodes.size(); ++i) step_of[nodes[i]] = i;
  auto lastUse = [&](const Value* value) {
    size_t last = 0;
    for (const Use& use : value->uses()) {
      last = std::max(last, use.user->isReturn() ? end_step : step_of.at(use.user));
    }
    return last;
  };

  std::vector<Buffer> buffers;
  std::unordered_map<const Value*, size_t> buffer_of;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    Buffer buffer;
    buffer.slot.kind = Slot::Kind::Input;
    buffer.slot.index = static_cast<uint32_t>(i);
    buffer_of[graph.input(i)] = buffers.size();
    buffers.push_back(buffer);
  }
  for (Node* node : graph.nodes()) {
    if (!node->is("Constant")) continue;
    Buffer buffer;
    buffer.slot.kind = Slot::Kind::Constant;
    buffer.slot.constant = constantOf(node->output())->data();
    buffer_of[node->output()] = buffers.size();
    buffers.push_back(buffer);
  }

  struct PendingStep {
    std::shared_ptr<const Kernel> kernel;
    std::vector<int64_t> inputs;   // buffer per input, -1 when absent
    std::vector<size_t> outputs;   // buffer per output
    std::vector<TensorDesc> descs; // per input, then per output
    int64_t scratch = -1;
    std::string label;
    const Node* node = nullptr;
  };
  std::vector<PendingStep> steps;
  steps.reserve(end_step);
  auto newBuffer = [&](size_t bytes, size_t step, Slot::Kind kind, uint32_t index = 0) {
    Buffer buffer;
    buffer.bytes = bytes;
    buffer.first = buffer.last = step;
    buffer.slot.kind = kind;
    buffer.slot.index = index;
    buffers.push_back(buffer);
    return buffers.size() - 1;
  };
  auto readAt = [&](size_t buffer, size_t step) {
    Buffer& owner = buffers[root(buffers, buffer)];
    owner.last = std::max(owner.last, step);
  };

  report.kernels.clear();
  report.ops_after.clear();
  for (size_t step = 0; step < nodes.size(); ++step) {
    Node* node = nodes[step];
    ++report.ops_after[node->qualifiedOpType()];
    KernelBuildContext context = contextFor(*node, device, num_threads, layoutsOf(node->inputs(), layouts),
                                            layoutsOf(node->outputs(), layouts));
    context.setTuner(tuner);
    context.setSharedAcrossPlans(shared);
    PendingStep entry;
    entry.node = node;
    entry.kernel = device.kernels().create(context);
    entry.label = node->describe() + " -> " + entry.kernel->name();
    for (size_t i = 0; i < context.numInputs(); ++i) entry.descs.push_back(context.input(i));
    for (size_t o = 0; o < context.numOutputs(); ++o) entry.descs.push_back(context.output(o));
    for (Value* input : node->inputs()) {
      entry.inputs.push_back(input ? static_cast<int64_t>(buffer_of.at(input)) : -1);
      if (input) readAt(buffer_of.at(input), step);
    }
    for (size_t o = 0; o < node->numOutputs(); ++o) {
      size_t buffer = newBuffer(context.output(o).byteSize(), step, Slot::Kind::Arena);
      buffer_of[node->output(o)] = buffer;
      entry.outputs.push_back(buffer);
      // Write over an input nothing reads afterwards (nor this node at another operand),
      // when the kernel allows it.
      if (auto in_place = entry.kernel->inPlaceInput(o)) {
        Value* input = node->input(*in_place);
        const std::vector<Value*> operands = node->inputs();
        const auto reads = std::count(operands.begin(), operands.end(), input);
        if (input && reads == 1 && lastUse(input) == step) {
          size_t input_root = root(buffers, buffer_of.at(input));
          if (buffers[input_root].slot.kind == Slot::Kind::Arena && buffers[input_root].bytes == buffers[buffer].bytes) {
            buffers[buffer].parent = static_cast<int64_t>(input_root);
          }
        }
      }
    }
    if (size_t scratch = entry.kernel->scratchBytes()) {
      entry.scratch = static_cast<int64_t>(newBuffer(scratch, step, Slot::Kind::Arena));
    }
    report.kernels.push_back(entry.label);
    steps.push_back(std::move(entry));
  }
  if (tuner) {
    report.tuning = tuner->takeReportLines();
    report.tuning_seconds = tuner->secondsSpent();
  }

  auto addCopy = [&](size_t source, const TensorDesc& desc, Slot::Kind kind, uint32_t index, const std::string& what) {
    size_t step = steps.size();
    const size_t bytes = desc.byteSize();
    PendingStep copy;
    copy.descs = {desc, desc};
    copy.kernel = std::make_shared<CopyKernel>(bytes);
    copy.label = what + " -> copy";
    copy.inputs.push_back(static_cast<int64_t>(source));
    copy.outputs.push_back(newBuffer(bytes, step, kind, index));
    readAt(source, step);
    report.kernels.push_back(copy.label);
    steps.push_back(std::move(copy));
  };

  // Graph outputs: the producing kernel writes straight into the caller's buffer unless the
  // value is an input, a constant or already another output; then a copy step does it.
  for (size_t k = 0; k < graph.numOutputs(); ++k) {
    const Value* value = graph.output(k);
    plan->output_descs.push_back(TensorDesc::of(value->type()));
    Buffer& owner = buffers[root(buffers, buffer_of.at(value))];
    if (owner.slot.kind == Slot::Kind::Arena) {
      owner.slot.kind = Slot::Kind::Output;
      owner.slot.index = static_cast<uint32_t>(k);
    } else {
      addCopy(buffer_of.at(value), plan->output_descs.back(), Slot::Kind::Output,
              static_cast<uint32_t>(k), "output " + std::to_string(k));
    }
  }
  // Updates of mutable inputs: written in place into the caller's input when every read of
  // the old value comes before the first write of the new one; otherwise copied at the end.
  for (const Graph::InputUpdate& update : graph.inputUpdates()) {
    size_t new_root = root(buffers, buffer_of.at(update.new_value));
    Buffer& owner = buffers[new_root];
    size_t last_read_of_old = 0;
    for (const Use& use : update.input->uses()) {
      size_t read_step = use.user->isReturn() ? end_step : step_of.at(use.user);
      last_read_of_old = std::max(last_read_of_old, read_step + 1);
    }
    uint32_t input_index = update.input->index();
    if (owner.slot.kind == Slot::Kind::Arena && last_read_of_old <= owner.first) {
      owner.slot.kind = Slot::Kind::Input;
      owner.slot.index = input_index;
    } else {
      addCopy(buffer_of.at(update.new_value), TensorDesc::of(update.new_value->type()), Slot::Kind::Input,
              input_index, "update of input '" + update.input->name() + "'");
    }
  }

  // A runtime length (data_dependent.h) is read after the run: its buffer lives to the end.
  for (size_t k = 0; k < graph.numOutputs(); ++k) {
    if (Value* length = runtimeLengthOf(graph.output(k)).length) {
      buffers[root(buffers, buffer_of.at(length))].last = end_step;
    }
  }

  // Memory: the arena buffers that own their memory.
  std::vector<BufferLifetime> lifetimes;
  std::vector<size_t> arena_buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].parent < 0 && buffers[i].slot.kind == Slot::Kind::Arena) {
      arena_buffers.push_back(i);
      lifetimes.push_back(BufferLifetime{buffers[i].bytes, buffers[i].first, buffers[i].last});
    }
  }
  MemoryPlan memory = planMemory(lifetimes);
  for (size_t k = 0; k < arena_buffers.size(); ++k) buffers[arena_buffers[k]].slot.offset = memory.offsets[k];
  plan->arena_bytes = memory.arena_bytes;
  plan->lower_bound_bytes = memory.lower_bound_bytes;
  const std::string planned = "the plan for inputs " + shapeSignature(inputs);
  checkLimit(planned + " (its activation memory)", plan->arena_bytes, options.limits.plan_bytes, "plan");
  size_t run_bytes = plan->arena_bytes;
  for (const TensorDesc& output : plan->output_descs) run_bytes += output.byteSize();
  checkLimit(planned + " (activations and outputs of a run)", run_bytes, options.limits.run_bytes, "run");

  auto slotOf = [&](int64_t buffer) {
    return buffer < 0 ? Slot{} : buffers[root(buffers, static_cast<size_t>(buffer))].slot;
  };
  for (size_t k = 0; k < graph.numOutputs(); ++k) {
    RuntimeLength runtime = runtimeLengthOf(graph.output(k));
    if (runtime.length) {
      plan->runtime_dims.push_back(
          {static_cast<uint32_t>(k), runtime.axis, slotOf(static_cast<int64_t>(buffer_of.at(runtime.length)))});
    }
  }
  for (PendingStep& entry : steps) {
    Step step;
    step.kernel = std::move(entry.kernel);
    step.first_slot = static_cast<uint32_t>(plan->slots.size());
    step.num_inputs = static_cast<uint32_t>(entry.inputs.size());
    step.num_outputs = static_cast<uint32_t>(entry.outputs.size());
    for (int64_t buffer : entry.inputs) plan->slots.push_back(slotOf(buffer));
    for (size_t buffer : entry.outputs) plan->slots.push_back(slotOf(static_cast<int64_t>(buffer)));
    for (size_t k = 0; k < entry.descs.size(); ++k) plan->slots[step.first_slot + k].desc = entry.descs[k];
    step.scratch_offset = entry.scratch < 0 ? 0 : slotOf(entry.scratch).offset;
    step.label = std::move(entry.label);
    step.node = entry.node;
    plan->steps.push_back(std::move(step));
  }
  ++report.plans_built;
  report.planned_activation_bytes = plan->arena_bytes;
  report.lower_bound_bytes = plan->lower_bound_bytes;
  report.stages.push_back({"plan " + shapeSignature(inputs),
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
  return plan;
}

}  // namespace estuary::ge
