#include "control_flow.h"

#include <cstring>
#include <limits>
#include <unordered_set>

#include "estuary/ge/device.h"
#include "estuary/ops/schema.h"
#include "estuary/transforms/shape_inference.h"
#include "plan.h"

namespace estuary::ge {

namespace {

bool isWithin(const Graph* graph, const Graph* ancestor) {
  for (; graph; graph = graph->parentGraph()) {
    if (graph == ancestor) return true;
  }
  return false;
}

bool isStatic(const Value* value) { return value->type().isKnown() && value->shape().isStatic(); }

bool isTrueConstant(const Value* value) {
  const Tensor* constant = constantOf(value);
  return constant && constant->numElements() == 1 && *static_cast<const uint8_t*>(constant->data()) != 0;
}

// Values used inside `sub` (nested subgraphs and its outputs included) that are defined
// outside it, in first-use order.
void collectCaptures(const Graph& graph, const Graph& sub, std::vector<Value*>& captures,
                     std::unordered_set<const Value*>& seen) {
  auto visit = [&](Value* value) {
    if (value && !isWithin(value->graph(), &sub) && seen.insert(value).second) captures.push_back(value);
  };
  for (Node* node : graph.nodes()) {
    for (Value* input : node->inputs()) visit(input);
    for (Graph* nested : node->subgraphs()) collectCaptures(*nested, sub, captures, seen);
  }
  for (Value* output : graph.returnNode()->inputs()) visit(output);
}

// A Loop's output types for its concrete inputs (see control_flow.h).
void setLoopOutputTypes(Node& loop) {
  Graph& body = *loop.attr("body")->asGraph();
  const size_t carried = loop.numInputs() - 2;
  const size_t scanned = loop.numOutputs() - carried;
  std::unique_ptr<Graph> typed = body.clone();
  typed->input(0)->setType(TensorType(DType::I64, Shape()));
  typed->input(1)->setType(TensorType(DType::Bool, Shape()));
  for (size_t k = 0; k < carried; ++k) typed->input(2 + k)->setType(loop.input(2 + k)->type());
  inferWithControlFlow(*typed);
  for (size_t k = 0; k < carried; ++k) {
    const TensorType& initial = loop.input(2 + k)->type();
    const TensorType& next = typed->output(1 + k)->type();
    if (!(initial == next)) {
      raise(loop.describe(), ": carried value ", k, " enters as ", initial.str(), " but one iteration makes it ",
            next.str(), "; the CPU backend runs loops whose carried values keep their type, or unrolls them when "
            "their trip count is a constant of at most ", kMaxUnrolledTrips, " and nothing ends them early");
    }
    loop.output(k)->setType(initial);
  }
  if (scanned == 0) return;
  const Tensor* trip_count = loop.input(0) ? constantOf(loop.input(0)) : nullptr;
  if (!trip_count) {
    raise(loop.describe(), ": its scan outputs are as long as the trip count, and M is ",
          loop.input(0) ? "known only at run time" : "absent",
          "; the CPU backend plans static shapes, so it needs a constant M for a loop with scan outputs");
  }
  // If the condition may end the loop early, M is an upper bound and the scan outputs'
  // length a runtime one (data_dependent.h).
  const int64_t trips = *static_cast<const int64_t*>(trip_count->data());
  for (size_t s = 0; s < scanned; ++s) {
    const TensorType& element = typed->output(1 + carried + s)->type();
    if (!element.shape.isStatic()) {
      raise(loop.describe(), ": scan output ", s, " has element type ", element.str(), "; the backend needs it static");
    }
    std::vector<Dim> dims{Dim(std::max<int64_t>(trips, 0))};
    for (const Dim& dim : element.shape.dims()) dims.push_back(dim);
    loop.output(carried + s)->setType(TensorType(element.dtype, Shape(std::move(dims))));
  }
}

}  // namespace

bool loopMayEndEarly(const Node& loop) {
  const Graph& body = *loop.attr("body")->asGraph();
  const bool runs_to_the_end = (!loop.input(1) || isTrueConstant(loop.input(1))) &&
                               (body.output(0) == body.input(1) || isTrueConstant(body.output(0)));
  return !runs_to_the_end;
}

namespace {

// Sets the output types of loops in `graph` (and in If branches, which share its values)
// that inference left open; returns whether it set any.
bool resolveLoops(Graph& graph, OpenLoops open_loops) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (node->is("If")) {
      for (Graph* branch : node->subgraphs()) changed |= resolveLoops(*branch, open_loops);
    }
    if (!node->is("Loop")) continue;
    bool open = false, ready = true;
    for (Value* output : node->outputs()) open |= !isStatic(output);
    for (Value* input : node->inputs()) ready &= !input || isStatic(input);
    const bool has_scans = node->numOutputs() > node->numInputs() - 2;
    if (open_loops == OpenLoops::LeaveOpen && has_scans && !(node->input(0) && constantOf(node->input(0)))) {
      ready = false;
    }
    if (open && ready) {
      try {
        setLoopOutputTypes(*node);
      } catch (const Error&) {
        // A body whose types change from one iteration to the next may still be unrolled
        // (unrollLoopsOfChangingTypes); the last, strict inference reports it otherwise.
        if (open_loops == OpenLoops::Refuse) throw;
        continue;
      }
      changed = true;
    }
  }
  return changed;
}

// ---------------------------------------------------------------------------- kernels

// A subgraph's plan, built for the concrete types the node hands it.
std::shared_ptr<Plan> subPlan(const KernelBuildContext& context, const Graph& graph,
                              const std::vector<TensorDesc>& inputs) {
  BuildOptions options;
  options.num_threads = context.maxThreads();
  BuildReport report;
  std::shared_ptr<Plan> plan;
  try {
    plan = buildPlan(graph, inputs, context.device(), options, report);
  } catch (const Error& error) {
    context.fail("subgraph '", graph.name(), "': ", error.what());
  }
  if (!plan->runtime_dims.empty()) {
    context.fail("subgraph '", graph.name(), "' returns a value whose length is known only at run time (output ",
                 plan->runtime_dims[0].output, "); the CPU backend supports such lengths only in the main graph's ",
                 "outputs");
  }
  return plan;
}

size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

class SubPlanStates final : public KernelState {
 public:
  std::vector<PlanState> plans;
  std::vector<const void*> inputs;  // Loop: the body's argument tables, reused every iteration
  std::vector<void*> outputs;
};

// If: runs one branch's plan, its arena in the kernel's scratch. Operands after `cond` are
// the values the branches capture (makeCapturesExplicit), which are the branches' inputs.
class IfKernel final : public Kernel {
 public:
  IfKernel(std::shared_ptr<Plan> then_plan, std::shared_ptr<Plan> else_plan)
      : then_(std::move(then_plan)), else_(std::move(else_plan)) {}

  size_t scratchBytes() const override { return std::max(then_->arena_bytes, else_->arena_bytes); }
  std::unique_ptr<KernelState> createState() const override {
    auto state = std::make_unique<SubPlanStates>();
    state->plans.emplace_back(*then_);
    state->plans.emplace_back(*else_);
    return state;
  }
  void run(const KernelArgs& args, KernelState* raw_state) const override {
    auto* state = static_cast<SubPlanStates*>(raw_state);
    const bool condition = *static_cast<const uint8_t*>(args.inputs[0]) != 0;
    PlanState& branch = state->plans[condition ? 0 : 1];
    if (branch.arena() != args.scratch) branch.place(static_cast<std::byte*>(args.scratch));
    branch.execute(args.inputs + 1, args.outputs, args.num_threads, args.device);
  }
  std::string name() const override {
    return "cpu:if (then " + std::to_string(then_->steps.size()) + " steps, else " +
           std::to_string(else_->steps.size()) + " steps)";
  }

 private:
  std::shared_ptr<Plan> then_, else_;
};

std::unique_ptr<Kernel> makeIf(const KernelBuildContext& context) {
  std::vector<TensorDesc> captures;
  for (size_t i = 1; i < context.numInputs(); ++i) captures.push_back(context.input(i));
  auto plan = [&](const char* branch) {
    std::shared_ptr<Plan> result = subPlan(context, *context.attr(branch)->asGraph(), captures);
    for (size_t o = 0; o < context.numOutputs(); ++o) {
      if (result->output_descs.at(o) != context.output(o)) {
        context.fail(branch, " returns ", result->output_descs[o].str(), " as output ", o, ", the node's output is ",
                     context.output(o).str(), "; both branches must give one static type");
      }
    }
    return result;
  };
  // (An If whose condition is constant at this shape is gone by now: buildPlan replaced it
  // with the branch it takes.)
  return std::make_unique<IfKernel>(plan("then_branch"), plan("else_branch"));
}

// Loop: runs the body's plan once per iteration. Carried values alternate between two
// buffer sets in scratch (the body reads one and writes the other) and are copied to the
// outputs at the end; scan outputs are written by the body straight into their slice of
// the output. Operands: M, cond, the initial carried values, then the captured values.
class LoopKernel final : public Kernel {
 public:
  struct Layout {
    size_t carried = 0, captured = 0;
    std::vector<size_t> carried_bytes, scan_bytes;  // per carried value / per scan element
    size_t sets[2] = {0, 0};                        // scratch offsets of the two carried sets
    size_t iteration = 0, condition_in = 0, condition_out = 0;
    size_t scratch = 0;
    bool trips_output = false;  // the scan length is a runtime one: write the trip count
  };

  LoopKernel(std::shared_ptr<Plan> body, Layout layout) : body_(std::move(body)), layout_(std::move(layout)) {}

  size_t scratchBytes() const override { return layout_.scratch; }
  std::unique_ptr<KernelState> createState() const override {
    auto state = std::make_unique<SubPlanStates>();
    state->plans.emplace_back(*body_);
    state->inputs.resize(2 + layout_.carried + layout_.captured);
    state->outputs.resize(1 + layout_.carried + layout_.scan_bytes.size());
    return state;
  }

  void run(const KernelArgs& args, KernelState* raw_state) const override {
    auto* state = static_cast<SubPlanStates*>(raw_state);
    auto* scratch = static_cast<std::byte*>(args.scratch);
    PlanState& body = state->plans[0];
    if (body.arena() != scratch) body.place(scratch);
    const size_t carried = layout_.carried;
    const int64_t trips = args.inputs[0] ? *static_cast<const int64_t*>(args.inputs[0])
                                         : std::numeric_limits<int64_t>::max();
    const bool use_condition = args.inputs[1] != nullptr;
    bool keep_going = !use_condition || *static_cast<const uint8_t*>(args.inputs[1]) != 0;
    auto* iteration = reinterpret_cast<int64_t*>(scratch + layout_.iteration);
    auto* condition_in = reinterpret_cast<uint8_t*>(scratch + layout_.condition_in);
    auto* condition_out = reinterpret_cast<uint8_t*>(scratch + layout_.condition_out);
    std::vector<const void*>& inputs = state->inputs;
    std::vector<void*>& outputs = state->outputs;
    inputs[0] = iteration;
    inputs[1] = condition_in;
    for (size_t k = 0; k < carried; ++k) inputs[2 + k] = args.inputs[2 + k];
    for (size_t c = 0; c < layout_.captured; ++c) inputs[2 + carried + c] = args.inputs[2 + carried + c];
    outputs[0] = condition_out;
    int64_t t = 0;
    for (; t < trips && keep_going; ++t) {
      *iteration = t;
      *condition_in = keep_going;
      std::byte* next = scratch + layout_.sets[t % 2];
      for (size_t k = 0; k < carried; ++k) {
        outputs[1 + k] = next;
        next += aligned(layout_.carried_bytes[k]);
      }
      for (size_t s = 0; s < layout_.scan_bytes.size(); ++s) {
        outputs[1 + carried + s] = static_cast<std::byte*>(args.outputs[carried + s]) + t * layout_.scan_bytes[s];
      }
      body.execute(inputs.data(), outputs.data(), args.num_threads, args.device);
      for (size_t k = 0; k < carried; ++k) inputs[2 + k] = outputs[1 + k];
      if (use_condition) keep_going = *condition_out != 0;
    }
    for (size_t k = 0; k < carried; ++k) {
      if (args.outputs[k] != inputs[2 + k]) std::memcpy(args.outputs[k], inputs[2 + k], layout_.carried_bytes[k]);
    }
    if (layout_.trips_output) *static_cast<int64_t*>(args.outputs[carried + layout_.scan_bytes.size()]) = t;
  }
  std::string name() const override { return "cpu:loop (body " + std::to_string(body_->steps.size()) + " steps)"; }

 private:
  std::shared_ptr<Plan> body_;
  Layout layout_;
};

std::unique_ptr<Kernel> makeLoop(const KernelBuildContext& context) {
  const Graph& body = *context.attr("body")->asGraph();
  LoopKernel::Layout layout;
  // The body takes (iteration, condition, carried..., captured...); the node's operands
  // are (M, cond, carried..., captured...).
  layout.captured = static_cast<size_t>(context.node().intAttr(kCapturedInputsAttr, 0));
  layout.carried = context.numInputs() - 2 - layout.captured;
  if (!context.hasInput(0) && !context.hasInput(1)) {
    context.fail("has neither a trip count M nor a condition, so it would never end");
  }
  std::vector<TensorDesc> inputs{TensorDesc::of(DType::I64, {}), TensorDesc::of(DType::Bool, {})};
  for (size_t i = 2; i < context.numInputs(); ++i) inputs.push_back(context.input(i));
  std::shared_ptr<Plan> plan = subPlan(context, body, inputs);
  const std::vector<TensorDesc>& returned = plan->output_descs;
  if (returned[0].dtype != DType::Bool || returned[0].numElements() != 1) {
    context.fail("the body's condition output is ", returned[0].str(), ", expected one bool");
  }
  size_t set_bytes = 0;
  for (size_t k = 0; k < layout.carried; ++k) {
    if (returned[1 + k] != context.input(2 + k) || context.output(k) != context.input(2 + k)) {
      context.fail("carried value ", k, " enters as ", context.input(2 + k).str(), ", the body returns ",
                   returned[1 + k].str(), "; the CPU backend runs loops whose carried values keep their type");
    }
    layout.carried_bytes.push_back(context.input(2 + k).byteSize());
    set_bytes += aligned(layout.carried_bytes.back());
  }
  const size_t scanned = returned.size() - 1 - layout.carried;
  layout.trips_output = context.numOutputs() == layout.carried + scanned + 1;
  for (size_t s = 0; s < scanned; ++s) {
    const TensorDesc& element = returned[1 + layout.carried + s];
    const TensorDesc& output = context.output(layout.carried + s);
    std::vector<int64_t> expected = element.dimVector();
    expected.insert(expected.begin(), output.rank ? output.dims[0] : 0);
    if (output != TensorDesc::of(element.dtype, expected)) {
      context.fail("scan output ", s, " is ", output.str(), " but the body yields ", element.str(), " per iteration");
    }
    layout.scan_bytes.push_back(element.byteSize());
  }
  size_t offset = aligned(plan->arena_bytes);
  layout.sets[0] = offset;
  layout.sets[1] = offset + set_bytes;
  offset += 2 * set_bytes;
  layout.iteration = offset;
  layout.condition_in = offset + 8;
  layout.condition_out = offset + 9;
  layout.scratch = offset + 64;
  return std::make_unique<LoopKernel>(std::move(plan), std::move(layout));
}

}  // namespace

void inferWithControlFlow(Graph& graph, OpenLoops open_loops) {
  ShapeInferenceOptions strict;
  strict.strict = true;
  inferShapes(graph, OpRegistry::global(), strict);
  while (resolveLoops(graph, open_loops)) inferShapes(graph, OpRegistry::global(), strict);
}

size_t unrollLoopsOfChangingTypes(Graph& graph) {
  size_t unrolled = 0;
  for (Node* loop : graph.nodeList()) {
    if (!loop->is("Loop")) continue;
    bool open = false;
    for (Value* output : loop->outputs()) open |= !isStatic(output);
    const Tensor* trip_count = loop->input(0) ? constantOf(loop->input(0)) : nullptr;
    if (!open || !trip_count || loopMayEndEarly(*loop)) continue;
    const int64_t trips = *static_cast<const int64_t*>(trip_count->data());
    if (trips < 1 || trips > kMaxUnrolledTrips) continue;
    const Graph& body = *loop->attr("body")->asGraph();
    const size_t carried_count = loop->numInputs() - 2;
    const size_t scanned = loop->numOutputs() - carried_count;
    Value* condition = loop->input(1);
    if (!condition) {
      Node* always = graph.createNodeBefore(loop, "Constant", {});
      always->setAttr("value", Tensor::scalar<uint8_t>(DType::Bool, 1));
      condition = always->output();
    }
    std::vector<Value*> carried = loop->inputs();
    carried.erase(carried.begin(), carried.begin() + 2);
    std::vector<std::vector<Value*>> scans(scanned);
    for (int64_t k = 0; k < trips; ++k) {
      Node* iteration = graph.createNodeBefore(loop, "Constant", {});
      iteration->setAttr("value", Tensor::scalar<int64_t>(DType::I64, k));
      std::vector<Value*> inputs{iteration->output(), condition};
      inputs.insert(inputs.end(), carried.begin(), carried.end());
      std::vector<Value*> results = graph.inlineBefore(loop, body, inputs);
      carried.assign(results.begin() + 1, results.begin() + 1 + static_cast<std::ptrdiff_t>(carried_count));
      for (size_t s = 0; s < scanned; ++s) scans[s].push_back(results[1 + carried_count + s]);
    }
    for (size_t k = 0; k < carried_count; ++k) loop->output(k)->replaceAllUsesWith(carried[k]);
    if (scanned > 0) {
      Node* first_axis = graph.createNodeBefore(loop, "Constant", {});
      first_axis->setAttr("value", Tensor::fromVector<int64_t>(DType::I64, {1}, {0}));
      for (size_t s = 0; s < scanned; ++s) {
        std::vector<Value*> slices;
        for (Value* element : scans[s]) {
          slices.push_back(graph.createNodeBefore(loop, "Unsqueeze", {element, first_axis->output()})->output());
        }
        Node* stacked = graph.createNodeBefore(loop, "Concat", slices);
        stacked->setAttr("axis", Attribute(int64_t{0}));
        Value* old = loop->output(carried_count + s);
        stacked->output()->setName(old->name());
        old->replaceAllUsesWith(stacked->output());
      }
    }
    graph.eraseNode(loop);
    ++unrolled;
  }
  return unrolled;
}

void makeCapturesExplicit(Graph& graph) {
  for (Node* node : graph.nodes()) {
    if (!node->is("If") && !node->is("Loop")) continue;
    std::vector<Graph*> subgraphs = node->subgraphs();
    std::vector<Value*> captures;
    std::unordered_set<const Value*> seen;
    for (Graph* sub : subgraphs) collectCaptures(*sub, *sub, captures, seen);
    for (Value* captured : captures) {
      const Tensor* constant = constantOf(captured);
      if (!constant) node->addInput(captured);
      if (!constant) node->setAttr(kCapturedInputsAttr, node->intAttr(kCapturedInputsAttr, 0) + 1);
      for (Graph* sub : subgraphs) {
        Value* inner = nullptr;
        if (constant) {
          Node* copy = sub->createNodeBefore(sub->firstNode(), "Constant", {});
          copy->setAttr("value", *constant);
          inner = copy->output();
        } else {
          inner = sub->addInput(captured->name(), captured->type());
        }
        inner->setType(captured->type());
        captured->replaceUsesWithIf(inner, [sub](const Use& use) { return isWithin(use.user->graph(), sub); });
      }
    }
  }
}

void registerControlFlowKernels(KernelRegistry& registry) {
  registry.add("If", "", makeIf);
  registry.add("Loop", "", makeLoop);
}

}  // namespace estuary::ge
