#include <chrono>
#include <cstdlib>
#include <cstring>

#include "estuary/ge/model.h"
#include "plan.h"
#include "worker_pool.h"

namespace estuary::ge {

RunContext::RunContext(std::shared_ptr<const CompiledModel> model)
    : model_(std::move(model)), device_state_(model_->device().createRunState()) {}

RunContext::~RunContext() { std::free(arena_); }

void RunContext::bind(const std::vector<HostTensor>& inputs) {
  bool same = plan_ && inputs.size() == input_descs_.size();
  for (size_t i = 0; same && i < inputs.size(); ++i) same = inputs[i].desc() == input_descs_[i];
  // Shape inputs (CompiledModel::planFor) select the plan by value too.
  for (size_t i = 0; same && i < shape_input_values_.size(); ++i) {
    const std::vector<std::byte>& bound = shape_input_values_[i];
    same = bound.empty() || std::memcmp(bound.data(), inputs[i].data, bound.size()) == 0;
  }
  if (same) return;

  // The descs are the bound ones only once a plan takes them: after a refused input, the
  // same input must be refused again, not run with the plan bound before.
  std::vector<TensorDesc> descs;
  descs.reserve(inputs.size());
  for (const HostTensor& input : inputs) descs.push_back(input.desc());
  std::shared_ptr<const Plan> plan = model_->planFor(descs, &inputs);
  input_descs_ = std::move(descs);
  shape_input_values_.assign(inputs.size(), {});
  for (size_t i = 0; i < plan->shape_input_values.size(); ++i) {
    const Tensor& value = plan->shape_input_values[i];
    if (value.isNull()) continue;
    const auto* bytes = static_cast<const std::byte*>(value.data());
    shape_input_values_[i].assign(bytes, bytes + value.byteSize());
  }
  if (plan == plan_) return;
  // Forget the bound plan first: should anything below fail, the next run binds again
  // rather than running a state made for another plan.
  plan_state_.reset();
  plan_.reset();
  if (plan->arena_bytes > arena_bytes_) {
    std::free(arena_);
    arena_bytes_ = 0;
    arena_ = std::aligned_alloc(64, (plan->arena_bytes + 63) / 64 * 64);
    if (!arena_) {
      raiseAs<ResourceLimitError>("out of memory allocating the ", formatByteSize(static_cast<double>(plan->arena_bytes)),
                                  " of activation memory for inputs ", shapeSignature(input_descs_));
    }
    arena_bytes_ = plan->arena_bytes;
  }
  plan_ = std::move(plan);
  plan_state_ = std::make_unique<PlanState>(*plan_);
  plan_state_->place(static_cast<std::byte*>(arena_));
  plan_state_->setProfiling(profiling_);
  plan_state_->setObserver(observer_ ? &observer_ : nullptr);
  owned_outputs_.assign(plan_->output_descs.size(), {});
  output_views_.clear();
  for (const TensorDesc& desc : plan_->output_descs) output_views_.push_back(HostTensor::of(desc, nullptr));
  produced_descs_ = plan_->output_descs;
}

PlanState::PlanState(const Plan& plan) : plan_(plan), pointers_(plan.slots.size(), nullptr) {
  for (const Step& step : plan.steps) kernel_states_.push_back(step.kernel->createState());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& slot = plan.slots[i];
    if (slot.kind == Slot::Kind::Constant) pointers_[i] = const_cast<void*>(slot.constant);
  }
}

void PlanState::place(std::byte* arena) {
  arena_ = arena;
  for (size_t i = 0; i < plan_.slots.size(); ++i) {
    if (plan_.slots[i].kind == Slot::Kind::Arena) pointers_[i] = arena + plan_.slots[i].offset;
  }
}

void PlanState::execute(const void* const* inputs, void* const* outputs, int threads, DeviceRunState* device) {
  const Plan& plan = plan_;
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& slot = plan.slots[i];
    if (slot.kind == Slot::Kind::Input) pointers_[i] = const_cast<void*>(inputs[slot.index]);
    if (slot.kind == Slot::Kind::Output) pointers_[i] = outputs[slot.index];
  }
  using Clock = std::chrono::steady_clock;
  Clock::time_point started = profiling_ ? Clock::now() : Clock::time_point{};
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    void* const* slots = pointers_.data() + step.first_slot;
    KernelArgs args{slots, slots + step.num_inputs, arena_ + step.scratch_offset, threads, device};
    step.kernel->run(args, kernel_states_[s].get());
    if (profiling_) {
      Clock::time_point finished = Clock::now();
      step_seconds_[s] += std::chrono::duration<double>(finished - started).count();
      started = finished;
    }
    if (observer_ && step.node) observe(step, slots + step.num_inputs);
  }
  if (profiling_) ++profiled_runs_;
}

void PlanState::observe(const Step& step, void* const* outputs) {
  for (uint32_t o = 0; o < step.num_outputs; ++o) {
    const TensorDesc& stored = plan_.slots[step.first_slot + step.num_inputs + o].desc;
    HostTensor tensor = HostTensor::of(stored, outputs[o]);
    if (stored.layout != Layout::Plain) {
      plain_copy_.resize(static_cast<size_t>(stored.numElements()) * dtypeSize(stored.dtype));
      copyToPlain(stored, outputs[o], plain_copy_.data());
      tensor.data = plain_copy_.data();
    }
    (*observer_)(ObservedValue{*step.node, o, tensor});
  }
}

void PlanState::setProfiling(bool on) {
  profiling_ = on;
  step_seconds_.assign(on ? plan_.steps.size() : 0, 0.0);
  profiled_runs_ = 0;
}

void PlanState::producedDescs(std::vector<TensorDesc>& descs) const {
  descs.assign(plan_.output_descs.begin(), plan_.output_descs.end());
  for (const RuntimeDim& runtime : plan_.runtime_dims) {
    descs[runtime.output].dims[runtime.axis] = *reinterpret_cast<const int64_t*>(arena_ + runtime.count.offset);
  }
}

void RunContext::execute(const std::vector<HostTensor>& inputs, void* const* outputs) {
  input_pointers_.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) input_pointers_[i] = inputs[i].data;
  const int threads = threadsToUse(model_->numThreads());
  ScopedOpenMpThreads openmp_threads(threads);
  plan_state_->execute(input_pointers_.data(), outputs, threads, device_state_.get());
  if (!plan_->runtime_dims.empty()) plan_state_->producedDescs(produced_descs_);
}

const std::vector<HostTensor>& RunContext::run(const std::vector<HostTensor>& inputs) {
  bind(inputs);
  for (size_t k = 0; k < output_views_.size(); ++k) {
    size_t bytes = plan_->output_descs[k].byteSize();
    if (owned_outputs_[k].size() < bytes + 64) {
      try {
        owned_outputs_[k].resize(bytes + 64);
      } catch (const std::bad_alloc&) {
        raiseAs<ResourceLimitError>("out of memory allocating output '", model_->outputs()[k].name, "' (",
                                    plan_->output_descs[k].str(), ", ", formatByteSize(static_cast<double>(bytes)), ")");
      }
    }
    auto address = reinterpret_cast<uintptr_t>(owned_outputs_[k].data());
    output_views_[k].data = reinterpret_cast<void*>((address + 63) & ~uintptr_t{63});
  }
  output_pointers_.resize(output_views_.size());
  for (size_t k = 0; k < output_views_.size(); ++k) output_pointers_[k] = output_views_[k].data;
  execute(inputs, output_pointers_.data());
  for (const RuntimeDim& runtime : plan_->runtime_dims) {
    output_views_[runtime.output].dims[runtime.axis] = produced_descs_[runtime.output].dims[runtime.axis];
  }
  return output_views_;
}

void RunContext::run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) {
  bind(inputs);
  if (outputs.size() != plan_->output_descs.size()) {
    raise("the model has ", plan_->output_descs.size(), " outputs, ", outputs.size(), " buffers were given");
  }
  output_pointers_.resize(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].desc() != plan_->output_descs[k]) {
      raise("output '", model_->outputs()[k].name, "' (#", k, "): expected ", plan_->output_descs[k].str(),
            ", the buffer given is ", outputs[k].desc().str());
    }
    output_pointers_[k] = outputs[k].data;
  }
  execute(inputs, output_pointers_.data());
}

void RunContext::setProfiling(bool on) {
  profiling_ = on;
  if (plan_state_) plan_state_->setProfiling(on);
}

void RunContext::setObserver(ValueObserver observer) {
  observer_ = std::move(observer);
  if (plan_state_) plan_state_->setObserver(observer_ ? &observer_ : nullptr);
}

std::vector<StepProfile> RunContext::profile() const {
  std::vector<StepProfile> steps;
  if (!plan_ || !profiling_) return steps;
  for (size_t s = 0; s < plan_->steps.size(); ++s) {
    steps.push_back({plan_->steps[s].label, plan_state_->stepSeconds()[s], plan_state_->profiledRuns()});
  }
  return steps;
}

std::vector<TensorDesc> RunContext::outputDescs(const std::vector<HostTensor>& inputs) {
  bind(inputs);
  return plan_->output_descs;
}

std::map<std::string, HostTensor> RunContext::runNamed(const std::map<std::string, HostTensor>& named) {
  std::vector<HostTensor> inputs(model_->inputs().size());
  std::vector<bool> given(inputs.size(), false);
  for (const auto& [name, tensor] : named) {
    size_t index = model_->inputIndex(name);
    inputs[index] = tensor;
    given[index] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!given[i]) raise("input '", model_->inputs()[i].name, "' was not given");
  }
  const std::vector<HostTensor>& outputs = run(inputs);
  std::map<std::string, HostTensor> result;
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string name = model_->outputs()[k].name;
    result[name.empty() ? "output" + std::to_string(k) : name] = outputs[k];
  }
  return result;
}

RunContextPool::RunContextPool(std::shared_ptr<const CompiledModel> model) : model_(std::move(model)) {}

RunContextPool::Lease RunContextPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<RunContext> context = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(context));
    }
    ++created_;
    idle_.reserve(created_);  // so that giving a context back never allocates
  }
  return Lease(this, model_->createContext());  // made outside the lock: it allocates
}

RunContextPool::Lease::~Lease() {
  if (!context_) return;  // moved from
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  pool_->idle_.push_back(std::move(context_));
}

void RunContextPool::run(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) {
  acquire()->run(inputs, outputs);
}

size_t RunContextPool::contexts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

}  // namespace estuary::ge
