#pragma once
// The session API: several graphs by id, built on demand, run synchronously or asynchronously
// with named tensors (GE's Session::AddGraph / BuildGraph / RunGraph / RunGraphAsync).
//
//   sdk::Session session({{"threads", "2"}});              // build options every graph starts from
//   session.addGraph(1, graph);                            // a Graph (copied), or
//   session.addModel(2, ModelInput::path("bert.onnx"), {{"input_shape", "ids:1,128"}});
//   session.buildGraph(1);                                 // optional: runs build on first use
//   std::vector<sdk::NamedTensor> out = session.runGraph(1, {{"x", x_tensor}});
//   session.runGraphAsync(2, inputs, [](std::exception_ptr error, std::vector<sdk::NamedTensor> out) {...});
//
// Threads: every member function may be called from any number of threads at once. Runs of
// one graph from several threads each get a run context of their own (no lock is held while
// they compute); building a graph happens once, whichever thread asks first.
// Memory: input tensors are read where they lie (the caller's buffers; they must stay valid
// until runGraph returns, or until an async run's callback is called). Outputs go into the
// caller's buffers when given, else into memory the returned tensors own.
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "estuary/frontend/model_input.h"
#include "estuary/ge/model.h"
#include "estuary/ir/graph.h"
#include "estuary/sdk/options.h"

namespace estuary::sdk {

using GraphId = uint32_t;

// A tensor by name. `tensor.data` is the caller's memory, or the session's when `storage`
// is set (outputs the session allocated; `storage` keeps them alive).
struct NamedTensor {
  std::string name;
  ge::HostTensor tensor;
  std::shared_ptr<void> storage;
};

class Session {
 public:
  // `options` are build options (sdk::BuildConfig keys) every graph starts from, and the
  // session's own: "async_workers" (threads that run runGraphAsync's work; default 1).
  // Unknown keys raise an Error naming them.
  explicit Session(const std::map<std::string, std::string>& options = {});
  // Session session({{"threads", "2"}}) reads as it should.
  Session(std::initializer_list<std::pair<const std::string, std::string>> options)
      : Session(std::map<std::string, std::string>(options)) {}
  // Waits for the asynchronous runs still queued, then stops their threads.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Adds a graph under `id` (an id in use is an Error naming it). `options` are build
  // options over the session's. A Graph is copied; a model (an .eom, an IR file, or any model
  // a frontend reads) is opened when the graph is built.
  void addGraph(GraphId id, const Graph& graph, const std::map<std::string, std::string>& options = {});
  void addModel(GraphId id, const ModelInput& model, const std::map<std::string, std::string>& options = {});
  void addCompiledModel(GraphId id, std::shared_ptr<const ge::CompiledModel> model);
  // Runs in flight finish on the graph they started with.
  void removeGraph(GraphId id);
  bool hasGraph(GraphId id) const;
  std::vector<GraphId> graphIds() const;

  // Builds the graph now (otherwise its first run does); a second call does nothing.
  void buildGraph(GraphId id);
  // The built model (building it if needed): its inputs, outputs, report, save().
  std::shared_ptr<const ge::CompiledModel> compiledModel(GraphId id);

  // Runs with inputs by name (every input of the graph, once). Returns the outputs in graph
  // output order, in memory they own.
  std::vector<NamedTensor> runGraph(GraphId id, const std::vector<NamedTensor>& inputs);
  // Runs writing the outputs into the caller's buffers, given by name (each output once) with
  // the dims a run with these inputs produces (compiledModel(id)'s outputDescs, or known from
  // the graph). An output whose length depends on the data gets its actual dims written back.
  void runGraph(GraphId id, const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs);

  // The lean form, as GE's RunGraph takes tensors: inputs and output buffers in graph order,
  // no names to match (for integrations that resolved the order once: torch.compile's).
  void runGraph(GraphId id, const std::vector<ge::HostTensor>& inputs, const std::vector<ge::HostTensor>& outputs);
  // The output descs a run with these inputs (in graph order) produces: what its buffers need.
  // An output whose length depends on the data has its upper bound here.
  std::vector<ge::TensorDesc> outputDescs(GraphId id, const std::vector<ge::HostTensor>& inputs);
  // The same with inputs by name.
  std::vector<ge::TensorDesc> outputDescs(GraphId id, const std::vector<NamedTensor>& inputs);

  // Queues a run and returns at once; `done` is called on a worker thread with the outputs,
  // or with the error (and no outputs). Errors in the call itself (an unknown id) are raised
  // here. The inputs' memory must stay valid until `done` is called.
  using RunCallback = std::function<void(std::exception_ptr error, std::vector<NamedTensor> outputs)>;
  void runGraphAsync(GraphId id, std::vector<NamedTensor> inputs, RunCallback done);

 private:
  struct Entry;
  class Workers;
  std::shared_ptr<Entry> entry(GraphId id) const;
  void add(GraphId id, std::shared_ptr<Entry> entry);
  static Entry& built(Entry& entry);

  BuildConfig defaults_;
  int async_workers_ = 1;
  mutable std::shared_mutex graphs_mutex_;
  std::map<GraphId, std::shared_ptr<Entry>> graphs_;
  std::unique_ptr<Workers> workers_;
};

}  // namespace estuary::sdk
