#include "estuary/sdk/session.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "estuary/sdk/build.h"
#include "estuary/support/error.h"

namespace estuary::sdk {

struct Session::Entry {
  // What to build from: a graph, or a model to open. Dropped once built.
  std::unique_ptr<Graph> graph;
  std::unique_ptr<ModelInput> model_input;
  BuildConfig config;

  std::mutex build_mutex;
  std::atomic<bool> ready{false};
  std::shared_ptr<const ge::CompiledModel> model;
  std::unique_ptr<ge::RunContextPool> contexts;

  void adopt(std::shared_ptr<const ge::CompiledModel> built) {
    model = std::move(built);
    contexts = std::make_unique<ge::RunContextPool>(model);
    graph.reset();
    model_input.reset();
    ready.store(true, std::memory_order_release);
  }
};

// The threads that run runGraphAsync's work, started on first use.
class Session::Workers {
 public:
  explicit Workers(int count) {
    for (int i = 0; i < count; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

 private:
  void work() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued has run
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

namespace {

constexpr const char* kAsyncWorkersKey = "async_workers";

// Where each operand of the graph (in graph order) is among `given`, matched by name:
// given[slot[i]] is operand i. `indexOf` finds an operand by name, raising for an unknown one;
// a repeated or missing one is an Error naming it ("input", "output").
template <typename IndexOf>
std::vector<size_t> slotsByName(const std::vector<ge::IoInfo>& expected, const std::vector<NamedTensor>& given,
                                const char* role, IndexOf&& indexOf) {
  const size_t unset = given.size();
  std::vector<size_t> slot(expected.size(), unset);
  for (size_t k = 0; k < given.size(); ++k) {
    // Operands given in graph order need no search.
    size_t index = k < expected.size() && given[k].name == expected[k].name ? k : indexOf(given[k].name);
    if (slot[index] != unset) raiseAs<InputValueError>(role, " '", given[k].name, "' is given twice");
    slot[index] = k;
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    if (slot[i] == unset) raiseAs<InputValueError>(role, " '", expected[i].name, "' was not given");
  }
  return slot;
}

std::vector<ge::HostTensor> orderedInputs(const ge::CompiledModel& model, const std::vector<NamedTensor>& inputs) {
  std::vector<size_t> slot =
      slotsByName(model.inputs(), inputs, "input", [&](const std::string& name) { return model.inputIndex(name); });
  std::vector<ge::HostTensor> ordered(slot.size());
  for (size_t i = 0; i < slot.size(); ++i) ordered[i] = inputs[slot[i]].tensor;
  return ordered;
}

std::vector<NamedTensor> runOwned(const ge::CompiledModel& model, ge::RunContextPool& contexts,
                                  const std::vector<NamedTensor>& inputs) {
  std::vector<ge::HostTensor> ordered = orderedInputs(model, inputs);
  ge::RunContextPool::Lease context = contexts.acquire();
  std::vector<ge::TensorDesc> descs = context->outputDescs(ordered);
  std::vector<NamedTensor> outputs(descs.size());
  std::vector<ge::HostTensor> buffers(descs.size());
  for (size_t k = 0; k < descs.size(); ++k) {
    size_t bytes = std::max<size_t>(descs[k].byteSize(), 1);
    std::shared_ptr<void> storage(::operator new(bytes, std::align_val_t{64}),
                                  [](void* data) { ::operator delete(data, std::align_val_t{64}); });
    buffers[k] = ge::HostTensor::of(descs[k], storage.get());
    outputs[k] = {model.outputs()[k].name, buffers[k], std::move(storage)};
  }
  context->run(ordered, buffers);
  const std::vector<ge::TensorDesc>& produced = context->producedOutputDescs();
  for (size_t k = 0; k < outputs.size(); ++k) outputs[k].tensor = ge::HostTensor::of(produced[k], buffers[k].data);
  return outputs;
}

}  // namespace

Session::Session(const std::map<std::string, std::string>& options) {
  for (const auto& [key, value] : options) {
    if (key == kAsyncWorkersKey) {
      std::optional<int64_t> count = parseInteger(value);
      if (!count || *count < 1 || *count > 1024) {
        raiseAs<InputValueError>("session option '", key, "' needs a count from 1 to 1024, got '", value, "'");
      }
      async_workers_ = static_cast<int>(*count);
    } else {
      defaults_.set(key, value);
    }
  }
}

Session::~Session() { workers_.reset(); }

void Session::add(GraphId id, std::shared_ptr<Entry> entry) {
  std::unique_lock<std::shared_mutex> lock(graphs_mutex_);
  if (!graphs_.emplace(id, std::move(entry)).second) {
    raiseAs<InputValueError>("the session has a graph with id ", id, " already; remove it first");
  }
}

void Session::addGraph(GraphId id, const Graph& graph, const std::map<std::string, std::string>& options) {
  auto entry = std::make_shared<Entry>();
  entry->config = BuildConfig::fromMap(options, defaults_);
  entry->graph = graph.clone();
  add(id, std::move(entry));
}

void Session::addModel(GraphId id, const ModelInput& model, const std::map<std::string, std::string>& options) {
  auto entry = std::make_shared<Entry>();
  entry->config = BuildConfig::fromMap(options, defaults_);
  entry->model_input = std::make_unique<ModelInput>(model);
  add(id, std::move(entry));
}

void Session::addCompiledModel(GraphId id, std::shared_ptr<const ge::CompiledModel> model) {
  if (!model) raiseAs<InputValueError>("addCompiledModel: no model given for graph ", id);
  auto entry = std::make_shared<Entry>();
  entry->adopt(std::move(model));
  add(id, std::move(entry));
}

void Session::removeGraph(GraphId id) {
  std::unique_lock<std::shared_mutex> lock(graphs_mutex_);
  if (graphs_.erase(id) == 0) raiseAs<InputValueError>("the session has no graph with id ", id);
}

bool Session::hasGraph(GraphId id) const {
  std::shared_lock<std::shared_mutex> lock(graphs_mutex_);
  return graphs_.count(id) != 0;
}

std::vector<GraphId> Session::graphIds() const {
  std::shared_lock<std::shared_mutex> lock(graphs_mutex_);
  std::vector<GraphId> ids;
  for (const auto& entry : graphs_) ids.push_back(entry.first);
  return ids;
}

std::shared_ptr<Session::Entry> Session::entry(GraphId id) const {
  std::shared_lock<std::shared_mutex> lock(graphs_mutex_);
  auto found = graphs_.find(id);
  if (found == graphs_.end()) raiseAs<InputValueError>("the session has no graph with id ", id);
  return found->second;
}

Session::Entry& Session::built(Entry& entry) {
  if (entry.ready.load(std::memory_order_acquire)) return entry;
  std::lock_guard<std::mutex> lock(entry.build_mutex);
  if (entry.ready.load(std::memory_order_relaxed)) return entry;
  entry.adopt(entry.graph ? sdk::buildGraph(*entry.graph, entry.config) : openModel(*entry.model_input, entry.config));
  return entry;
}

void Session::buildGraph(GraphId id) { built(*entry(id)); }

std::shared_ptr<const ge::CompiledModel> Session::compiledModel(GraphId id) { return built(*entry(id)).model; }

std::vector<NamedTensor> Session::runGraph(GraphId id, const std::vector<NamedTensor>& inputs) {
  std::shared_ptr<Entry> graph = entry(id);
  Entry& ready = built(*graph);
  return runOwned(*ready.model, *ready.contexts, inputs);
}

void Session::runGraph(GraphId id, const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs) {
  std::shared_ptr<Entry> graph = entry(id);
  Entry& ready = built(*graph);
  const ge::CompiledModel& model = *ready.model;
  std::vector<ge::HostTensor> ordered = orderedInputs(model, inputs);
  const size_t count = model.outputs().size();
  if (outputs.size() != count) {
    raiseAs<InputValueError>("the model has ", count, " outputs, ", outputs.size(), " buffers were given");
  }
  std::vector<size_t> slot =
      slotsByName(model.outputs(), outputs, "output", [&](const std::string& name) { return model.outputIndex(name); });
  std::vector<ge::HostTensor> buffers(count);
  for (size_t i = 0; i < count; ++i) buffers[i] = outputs[slot[i]].tensor;
  ge::RunContextPool::Lease context = ready.contexts->acquire();
  context->run(ordered, buffers);
  const std::vector<ge::TensorDesc>& produced = context->producedOutputDescs();
  for (size_t i = 0; i < count; ++i) {
    if (!(produced[i] == buffers[i].desc())) outputs[slot[i]].tensor = ge::HostTensor::of(produced[i], buffers[i].data);
  }
}

void Session::runGraph(GraphId id, const std::vector<ge::HostTensor>& inputs,
                       const std::vector<ge::HostTensor>& outputs) {
  std::shared_ptr<Entry> graph = entry(id);
  built(*graph).contexts->run(inputs, outputs);
}

std::vector<ge::TensorDesc> Session::outputDescs(GraphId id, const std::vector<ge::HostTensor>& inputs) {
  std::shared_ptr<Entry> graph = entry(id);
  return built(*graph).contexts->acquire()->outputDescs(inputs);
}

std::vector<ge::TensorDesc> Session::outputDescs(GraphId id, const std::vector<NamedTensor>& inputs) {
  std::shared_ptr<Entry> graph = entry(id);
  Entry& ready = built(*graph);
  return ready.contexts->acquire()->outputDescs(orderedInputs(*ready.model, inputs));
}

void Session::runGraphAsync(GraphId id, std::vector<NamedTensor> inputs, RunCallback done) {
  if (!done) raiseAs<InputValueError>("runGraphAsync: no callback given for graph ", id);
  std::shared_ptr<Entry> graph = entry(id);
  {
    std::unique_lock<std::shared_mutex> lock(graphs_mutex_);
    if (!workers_) workers_ = std::make_unique<Workers>(async_workers_);
  }
  workers_->post([this, graph = std::move(graph), inputs = std::move(inputs), done = std::move(done)] {
    std::vector<NamedTensor> outputs;
    std::exception_ptr error;
    try {
      Entry& ready = built(*graph);
      outputs = runOwned(*ready.model, *ready.contexts, inputs);
    } catch (...) {
      error = std::current_exception();
    }
    done(error, std::move(outputs));
  });
}

}  // namespace estuary::sdk
