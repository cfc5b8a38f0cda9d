#include <chrono>
#include <set>
#include <cstdlib>
#include <thread>

#include "estuary/ge/model.h"
#include "estuary/ops/schema.h"
#include "estuary/transforms/canonicalize.h"
#include "estuary/transforms/cse.h"
#include "estuary/transforms/dce.h"
#include "estuary/transforms/shape_inference.h"
#include "plan.h"
#include "shared_across_plans.h"
#include "tuning.h"

namespace estuary::ge {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::map<std::string, size_t> opHistogram(const Graph& graph) {
  std::map<std::string, size_t> counts;
  for (Node* node : graph.nodes()) ++counts[node->qualifiedOpType()];
  return counts;
}

size_t weightBytes(const Graph& graph) {
  size_t bytes = 0;
  for (Node* node : graph.nodes()) {
    if (const Attribute* value = node->attr("value"); node->is("Constant") && value) bytes += value->asTensor().byteSize();
  }
  return bytes;
}

}  // namespace

HostTensor HostTensor::of(const TensorDesc& desc, void* data) {
  HostTensor tensor;
  tensor.dtype = desc.dtype;
  tensor.rank = desc.rank;
  tensor.dims = desc.dims;
  tensor.data = data;
  return tensor;
}

TensorDesc HostTensor::desc() const {
  TensorDesc desc;
  desc.dtype = dtype;
  desc.rank = rank;
  desc.dims = dims;
  return desc;
}

CompiledModel::CompiledModel(std::unique_ptr<Graph> graph, const BuildOptions& options, const Device& device)
    : graph_(std::move(graph)), device_(device), options_(options), tuner_(std::make_unique<Tuner>(options)),
      shared_(std::make_unique<SharedAcrossPlans>()) {
  options_.num_threads = num_threads_ = options.num_threads > 0 ? options.num_threads
                                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::set<std::string> symbols;
  for (Value* input : graph_->inputs()) {
    inputs_.push_back({input->name(), input->type(), input->isMutableInput()});
    if (!input->shape().isRanked()) continue;
    for (const Dim& dim : input->shape().dims()) {
      for (const std::string& symbol : dim.symbols()) symbols.insert(symbol);
    }
  }
  for (const auto& [symbol, range] : options_.dim_ranges) {
    if (!symbols.count(symbol)) raise("a range is given for dim '", symbol, "', which no input has");
    if (range.min < 0 || range.min > range.max) {
      raise("the range ", range.min, "~", range.max, " of dim '", symbol, "' is empty or negative");
    }
  }
  for (size_t i = 0; i < graph_->numOutputs(); ++i) {
    outputs_.push_back({graph_->output(i)->name(), graph_->output(i)->type(), false});
  }
}

CompiledModel::~CompiledModel() = default;

namespace {

// Small vectors may carry shapes, axes or scales (see planFor).
bool mayBeShapeInput(const TensorDesc& desc) {
  return desc.rank <= 1 && desc.numElements() <= static_cast<int64_t>(kMaxKnownValues);
}

std::string valueSignature(const std::vector<Tensor>& values) {
  std::string key;
  for (const Tensor& value : values) {
    if (value.isNull()) continue;
    key += "=";
    key.append(static_cast<const char*>(value.data()), value.byteSize());
  }
  return key;
}

}  // namespace

std::shared_ptr<CompiledModel> CompiledModel::build(const Graph& graph, const BuildOptions& options,
                                                    const Device& device) {
  BuildReport report;
  report.ops_before = opHistogram(graph);
  auto start = Clock::now();
  std::unique_ptr<Graph> lowered = graph.clone();
  for (Value* input : lowered->inputs()) {
    if (input->dtype() == DType::Undefined || !input->shape().isRanked()) {
      raise("graph input '", input->name(), "' has type ", input->type().str(),
            "; the backend needs every input's dtype and rank");
    }
  }
  inferShapes(*lowered, OpRegistry::global());
  checkTensorLimit(*lowered, options.limits);
  report.stages.push_back({"infer shapes", secondsSince(start)});
  start = Clock::now();
  canonicalize(*lowered);
  eliminateCommonSubexpressions(*lowered, OpRegistry::global());
  eliminateDeadCode(*lowered);
  report.stages.push_back({"simplify", secondsSince(start)});
  report.ops_after = opHistogram(*lowered);
  report.weight_bytes = weightBytes(*lowered);

  std::shared_ptr<CompiledModel> model(new CompiledModel(std::move(lowered), options, device));
  model->report_ = std::move(report);
  // Build the plans that can be known now: fully static inputs, and the shapes asked for.
  std::vector<std::vector<std::vector<int64_t>>> shapes = options.prebuild_shapes;
  bool all_static = true;
  std::vector<std::vector<int64_t>> static_dims;
  for (const IoInfo& input : model->inputs_) {
    all_static &= input.type.shape.isStatic();
    if (input.type.shape.isStatic()) static_dims.push_back(input.type.shape.staticDims());
  }
  if (all_static) shapes.push_back(static_dims);
  for (const auto& dims : shapes) {
    if (dims.size() != model->inputs_.size()) {
      raise("a prebuild shape lists ", dims.size(), " inputs, the model has ", model->inputs_.size());
    }
    std::vector<TensorDesc> descs;
    bool may_need_values = false;
    for (size_t i = 0; i < dims.size(); ++i) {
      descs.push_back(TensorDesc::of(model->inputs_[i].type.dtype, dims[i]));
      may_need_values |= mayBeShapeInput(descs.back());
    }
    try {
      model->planFor(descs);
    } catch (const NoKernelError&) {
      throw;  // no input value can give the node a kernel: a build never succeeds without one
    } catch (const ResourceLimitError&) {
      throw;
    } catch (const Error&) {
      // Shapes alone may not be enough to plan (a Reshape's target, a reduction's axes fed as
      // inputs): the first run, which brings the values of small inputs, plans then (see
      // planFor) or reports the error.
      if (!may_need_values) throw;
    }
  }
  if (!model->tuner_->cacheWarning().empty()) model->report_.warnings.push_back(model->tuner_->cacheWarning());
  model->tuner_->saveCache();
  return model;
}

namespace {

size_t indexByName(const std::vector<IoInfo>& operands, std::string_view name, const char* role) {
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].name == name) return i;
  }
  std::string names;
  for (const IoInfo& operand : operands) names += (names.empty() ? "" : ", ") + operand.name;
  raiseAs<InputValueError>("the model has no ", role, " named '", name, "' (", role, "s: ", names, ")");
}

}  // namespace

size_t CompiledModel::inputIndex(std::string_view name) const { return indexByName(inputs_, name, "input"); }

size_t CompiledModel::outputIndex(std::string_view name) const { return indexByName(outputs_, name, "output"); }

void CompiledModel::checkInputs(const std::vector<TensorDesc>& inputs) const {
  if (inputs.size() != inputs_.size()) {
    raiseAs<InputValueError>("the model takes ", inputs_.size(), " inputs, ", inputs.size(), " were given");
  }
  // A symbol names one size across all inputs: the first input that has it fixes it.
  std::map<std::string, std::pair<int64_t, size_t>> symbols;  // symbol -> (size, input)
  for (size_t i = 0; i < inputs.size(); ++i) {
    const IoInfo& expected = inputs_[i];
    const TensorDesc& actual = inputs[i];
    bool matches = actual.dtype == expected.type.dtype &&
                   actual.rank == static_cast<int>(expected.type.shape.rank());
    for (int d = 0; matches && d < actual.rank; ++d) {
      const Dim& dim = expected.type.shape[static_cast<size_t>(d)];
      matches = !dim.isStatic() || dim.value() == actual.dims[static_cast<size_t>(d)];
    }
    if (actual.dtype != expected.type.dtype) {
      raiseAs<InputTypeError>("input '", expected.name, "' (#", i, "): expected ", expected.type.str(), ", got ",
                              actual.str());
    }
    if (!matches) {
      raiseAs<InputValueError>("input '", expected.name, "' (#", i, "): expected ", expected.type.str(), ", got ",
                               actual.str());
    }
    for (int d = 0; d < actual.rank; ++d) {
      const Dim& dim = expected.type.shape[static_cast<size_t>(d)];
      if (!dim.isSymbolic() || dim.symbols() != std::vector<std::string>{dim.str()}) continue;  // plain symbols only
      const int64_t size = actual.dims[static_cast<size_t>(d)];
      auto range = options_.dim_ranges.find(dim.str());
      if (range != options_.dim_ranges.end() && (size < range->second.min || size > range->second.max)) {
        raiseAs<InputValueError>("input '", expected.name, "' (#", i, "): dim ", d, " '", dim.str(), "' is ", size,
                                 ", the model accepts ", range->second.min, "~", range->second.max, " (",
                                 expected.type.str(), ")");
      }
      auto [it, first] = symbols.emplace(dim.str(), std::make_pair(size, i));
      if (!first && it->second.first != actual.dims[static_cast<size_t>(d)]) {
        raiseAs<InputValueError>("input '", expected.name, "' (#", i, "): dim ", d, " '", dim.str(), "' is ",
                                 actual.dims[static_cast<size_t>(d)], ", but input '", inputs_[it->second.second].name,
                                 "' has ", dim.str(), " = ", it->second.first);
      }
    }
  }
}


bool CompiledModel::isShapeInput(size_t i) const {
  std::lock_guard<std::mutex> lock(plans_mutex_);
  return i < shape_inputs_.size() && shape_inputs_[i];
}

std::shared_ptr<const Plan> CompiledModel::planFor(const std::vector<TensorDesc>& inputs,
                                                   const std::vector<HostTensor>* values) const {
  checkInputs(inputs);
  std::lock_guard<std::mutex> lock(plans_mutex_);
  // The values of the shape inputs, as constants for the plan and as part of its key.
  auto shapeValues = [&](const std::vector<bool>& which) {
    std::vector<Tensor> tensors(inputs.size());
    for (size_t i = 0; i < which.size(); ++i) {
      if (!which[i]) continue;
      if (!values) {
        raise("input '", inputs_[i].name, "' gives shapes to the graph: the model plans with its values, so it "
              "needs them (run the model rather than asking for a plan by shapes alone)");
      }
      tensors[i] = Tensor::copyOf(inputs[i].dtype, inputs[i].dimVector(), (*values)[i].data);
    }
    return tensors;
  };
  std::vector<Tensor> shape_values = shapeValues(shape_inputs_);
  std::string key = shapeSignature(inputs) + valueSignature(shape_values);
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    plan_use_order_.splice(plan_use_order_.begin(), plan_use_order_, it->second.use);
    return it->second.plan;
  }
  // Held until the plan's measurements are saved, for the next build sharing the cache.
  const std::unique_ptr<Tuner::Turn> turn = tuner_->waitForTurn();
  std::shared_ptr<const Plan> plan;
  try {
    plan = buildTunedPlan(inputs, shape_values);
  } catch (const ResourceLimitError&) {
    throw;
  } catch (const std::bad_alloc&) {
    raiseAs<ResourceLimitError>("out of memory planning the model for inputs ", shapeSignature(inputs));
  } catch (const Error&) {
    // The first plan decides which inputs carry shapes: if planning by shapes alone fails
    // and small integer inputs were given with their values, they are planned by value
    // from now on, as TensorRT does with shape tensors.
    std::vector<bool> candidates(inputs.size());
    bool any = false;
    for (size_t i = 0; i < inputs.size(); ++i) any |= candidates[i] = mayBeShapeInput(inputs[i]);
    if (shape_inputs_decided_ || !values || !any) throw;
    shape_values = shapeValues(candidates);
    plan = buildTunedPlan(inputs, shape_values);
    shape_inputs_ = candidates;
    key = shapeSignature(inputs) + valueSignature(shape_values);
  }
  if (values) shape_inputs_decided_ = true;
  // Run contexts hold the plans they use, so dropping the least recently used one here
  // frees it once no context runs it.
  if (plans_.size() >= std::max<size_t>(options_.limits.plans, 1)) {
    plans_.erase(plan_use_order_.back());
    plan_use_order_.pop_back();
  }
  plan_use_order_.push_front(key);
  plans_.emplace(std::move(key), CachedPlan{plan, plan_use_order_.begin()});
  // A plan built on first use (a new batch size) may have measured: kept for the next build
  // that reads the timing cache, as a build's own plans are. A cache that cannot be written
  // now (a full disk) costs the next build its measurements, not this run its answer.
  try {
    tuner_->saveCache();
  } catch (const Error& error) {
    report_.warnings.push_back(std::string("the timing cache was not updated: ") + error.what());
  }
  return plan;
}

std::shared_ptr<Plan> CompiledModel::buildTunedPlan(const std::vector<TensorDesc>& inputs,
                                                    const std::vector<Tensor>& shape_values) const {
  const std::vector<Layout> layouts = device_.activationLayouts();
  if (options_.activation_layout || layouts.empty()) {
    return buildPlan(*graph_, inputs, device_, options_, report_, tuner_.get(), shape_values, shared_.get());
  }
  auto build = [&](std::optional<Layout> layout, BuildReport& report) {
    BuildOptions options = options_;
    options.activation_layout = layout;
    return buildPlan(*graph_, inputs, device_, options, report, tuner_.get(), shape_values, shared_.get());
  };
  return tuner_->choosePlan(planTuningKey(*graph_, inputs, device_, num_threads_), layouts, device_, num_threads_,
                            build, report_);
}

std::unique_ptr<RunContext> CompiledModel::createContext() const {
  return std::unique_ptr<RunContext>(new RunContext(shared_from_this()));
}

}  // namespace estuary::ge
