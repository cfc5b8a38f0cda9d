// The C API (estuary_c.h) over the session and build API. Every entry point catches
// everything: a C caller cannot receive a C++ exception.
#include "estuary_c.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "estuary/frontend/frontend.h"
#include "estuary/ge/kernel.h"
#include "estuary/sdk/build.h"
#include "estuary/sdk/session.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"

using namespace estuary;

// A compiled model, run in a session of its own (graph 0), as estuary.Model is.
struct estuary_model {
  static constexpr sdk::GraphId kGraphId = 0;
  std::shared_ptr<const ge::CompiledModel> model;
  sdk::Session session;
  // The strings estuary_io_info points to: the dims' symbol names, per input then output.
  std::vector<std::vector<std::string>> dim_names;
};

struct estuary_session {
  sdk::Session session;
  explicit estuary_session(const std::map<std::string, std::string>& options) : session(options) {}
};

struct estuary_outputs {
  std::vector<sdk::NamedTensor> tensors;
  std::vector<std::array<int64_t, ge::kMaxRank>> dims;
  std::vector<estuary_tensor> views;
};

namespace {

static_assert(ESTUARY_F32 == static_cast<int>(DType::F32) && ESTUARY_BOOL == static_cast<int>(DType::Bool) &&
                  ESTUARY_BF16 == static_cast<int>(DType::BF16) && ESTUARY_I64 == static_cast<int>(DType::I64),
              "estuary_dtype codes are DType's values");
static_assert(ESTUARY_MAX_RANK == ge::kMaxRank, "estuary_io_info holds every dim of a tensor");

thread_local std::string last_error;

estuary_status fail(estuary_status status, const char* message) {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message; the status still says what happened
  }
  return status;
}

// Runs `body`, turning every exception into a status and the thread's last error.
template <typename Body>
estuary_status guarded(Body&& body) {
  try {
    body();
    return ESTUARY_OK;
  } catch (const InputValueError& error) {
    return fail(ESTUARY_INVALID_ARGUMENT, error.what());
  } catch (const InputTypeError& error) {
    return fail(ESTUARY_INVALID_ARGUMENT, error.what());
  } catch (const UnsupportedOpsError& error) {
    return fail(ESTUARY_UNSUPPORTED, error.what());
  } catch (const ge::NoKernelError& error) {
    return fail(ESTUARY_UNSUPPORTED, error.what());
  } catch (const ResourceLimitError& error) {
    return fail(ESTUARY_RESOURCE_EXHAUSTED, error.what());
  } catch (const std::bad_alloc&) {
    return fail(ESTUARY_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const Error& error) {
    return fail(ESTUARY_FAILED, error.what());
  } catch (const std::exception& error) {
    return fail(ESTUARY_INTERNAL, (std::string("internal error: ") + error.what()).c_str());
  } catch (...) {
    return fail(ESTUARY_INTERNAL, "internal error: an unknown exception");
  }
}

template <typename Handle>
Handle* required(Handle* handle, const char* what) {
  if (!handle) raiseAs<InputValueError>(what, " is NULL");
  return handle;
}

std::map<std::string, std::string> optionMap(const estuary_option* options, size_t count) {
  std::map<std::string, std::string> map;
  if (count > 0) required(options, "options");
  for (size_t i = 0; i < count; ++i) {
    if (!options[i].key || !options[i].value) raiseAs<InputValueError>("option #", i, " has a NULL key or value");
    map[options[i].key] = options[i].value;
  }
  return map;
}

ge::HostTensor hostTensorOf(const estuary_tensor& tensor, const char* role) {
  const char* name = tensor.name ? tensor.name : "(unnamed)";
  if (tensor.dtype < ESTUARY_F32 || tensor.dtype > ESTUARY_BOOL) {
    raiseAs<InputTypeError>(role, " '", name, "': ", tensor.dtype, " is not an estuary_dtype");
  }
  if (tensor.rank < 0 || tensor.rank > ge::kMaxRank) {
    raiseAs<InputValueError>(role, " '", name, "': rank ", tensor.rank, " is outside 0..", ge::kMaxRank);
  }
  if (tensor.rank > 0 && !tensor.dims) raiseAs<InputValueError>(role, " '", name, "': dims is NULL");
  ge::HostTensor host;
  host.dtype = static_cast<DType>(tensor.dtype);
  host.rank = tensor.rank;
  for (int d = 0; d < tensor.rank; ++d) {
    if (tensor.dims[d] < 0) raiseAs<InputValueError>(role, " '", name, "': dim ", d, " is ", tensor.dims[d]);
    host.dims[d] = tensor.dims[d];
  }
  host.data = tensor.data;
  return host;
}

std::vector<sdk::NamedTensor> namedTensors(const estuary_tensor* tensors, size_t count, const char* role) {
  if (count > 0) required(tensors, role);
  std::vector<sdk::NamedTensor> named(count);
  for (size_t k = 0; k < count; ++k) {
    if (!tensors[k].name) raiseAs<InputValueError>(role, " #", k, " has no name");
    named[k].name = tensors[k].name;
    named[k].tensor = hostTensorOf(tensors[k], role);
  }
  return named;
}

estuary_outputs* outputsOf(std::vector<sdk::NamedTensor> tensors) {
  auto outputs = std::make_unique<estuary_outputs>();
  outputs->tensors = std::move(tensors);
  outputs->dims.resize(outputs->tensors.size());
  for (size_t k = 0; k < outputs->tensors.size(); ++k) {
    const ge::HostTensor& host = outputs->tensors[k].tensor;
    outputs->dims[k] = host.dims;
    outputs->views.push_back({outputs->tensors[k].name.c_str(), static_cast<int32_t>(host.dtype), host.rank,
                              outputs->dims[k].data(), host.data});
  }
  return outputs.release();
}

estuary_model* modelHandle(std::shared_ptr<const ge::CompiledModel> compiled) {
  auto handle = std::make_unique<estuary_model>();
  auto names = [](const std::vector<ge::IoInfo>& operands, std::vector<std::vector<std::string>>& into) {
    for (const ge::IoInfo& operand : operands) {
      std::vector<std::string> symbols;
      for (const Dim& dim : operand.type.shape.dims()) symbols.push_back(dim.isStatic() ? "" : dim.str());
      into.push_back(std::move(symbols));
    }
  };
  names(compiled->inputs(), handle->dim_names);
  names(compiled->outputs(), handle->dim_names);
  handle->session.addCompiledModel(estuary_model::kGraphId, compiled);
  handle->model = std::move(compiled);
  return handle.release();
}

estuary_status ioInfo(const estuary_model* model, size_t index, estuary_io_info* info, bool output) {
  return guarded([&] {
    required(model, "model");
    required(info, "info");
    const std::vector<ge::IoInfo>& operands = output ? model->model->outputs() : model->model->inputs();
    if (index >= operands.size()) {
      raiseAs<InputValueError>("the model has ", operands.size(), output ? " outputs" : " inputs", ", index ", index,
                               " is past them");
    }
    const ge::IoInfo& operand = operands[index];
    const std::vector<std::string>& symbols =
        model->dim_names[output ? model->model->inputs().size() + index : index];
    *info = estuary_io_info{};
    info->name = operand.name.c_str();
    info->dtype = static_cast<int32_t>(operand.type.dtype);
    info->rank = static_cast<int32_t>(operand.type.shape.rank());
    for (int d = 0; d < info->rank && d < ESTUARY_MAX_RANK; ++d) {
      const Dim& dim = operand.type.shape.dims()[static_cast<size_t>(d)];
      info->dims[d] = dim.isStatic() ? dim.value() : -1;
      info->dim_names[d] = symbols[static_cast<size_t>(d)].c_str();
    }
  });
}

}  // namespace

extern "C" {

const char* estuary_version(void) { return ESTUARY_VERSION; }

uint32_t estuary_c_api_version(void) { return ESTUARY_C_API_VERSION; }

const char* estuary_last_error(void) { return last_error.c_str(); }

const char* estuary_status_name(estuary_status status) {
  switch (status) {
    case ESTUARY_OK: return "ESTUARY_OK";
    case ESTUARY_INVALID_ARGUMENT: return "ESTUARY_INVALID_ARGUMENT";
    case ESTUARY_UNSUPPORTED: return "ESTUARY_UNSUPPORTED";
    case ESTUARY_RESOURCE_EXHAUSTED: return "ESTUARY_RESOURCE_EXHAUSTED";
    case ESTUARY_FAILED: return "ESTUARY_FAILED";
    case ESTUARY_INTERNAL: return "ESTUARY_INTERNAL";
  }
  return "(not an estuary_status)";
}

void estuary_free(void* data) { std::free(data); }

estuary_status estuary_model_open(const char* path, const estuary_option* options, size_t option_count,
                                  estuary_model** model) {
  return guarded([&] {
    required(path, "path");
    required(model, "model");
    *model = nullptr;
    sdk::BuildConfig config = sdk::BuildConfig::fromMap(optionMap(options, option_count));
    *model = modelHandle(sdk::openModel(std::string(path), config));
  });
}

estuary_status estuary_model_open_memory(const void* data, size_t size, const estuary_option* options,
                                         size_t option_count, estuary_model** model) {
  return guarded([&] {
    required(data, "data");
    required(model, "model");
    *model = nullptr;
    sdk::BuildConfig config = sdk::BuildConfig::fromMap(optionMap(options, option_count));
    *model = modelHandle(sdk::openModelFromMemory(data, size, config));
  });
}

estuary_status estuary_model_save(const estuary_model* model, const char* path) {
  return guarded([&] { required(model, "model")->model->save(required(path, "path")); });
}

estuary_status estuary_model_save_memory(const estuary_model* model, void** data, size_t* size) {
  return guarded([&] {
    required(data, "data");
    required(size, "size");
    *data = nullptr;
    *size = 0;
    std::string bytes = required(model, "model")->model->saveToBytes();
    void* copy = std::malloc(bytes.size());
    if (!copy) throw std::bad_alloc();
    std::memcpy(copy, bytes.data(), bytes.size());
    *data = copy;
    *size = bytes.size();
  });
}

void estuary_model_release(estuary_model* model) { delete model; }

size_t estuary_model_input_count(const estuary_model* model) { return model ? model->model->inputs().size() : 0; }

size_t estuary_model_output_count(const estuary_model* model) { return model ? model->model->outputs().size() : 0; }

estuary_status estuary_model_input_info(const estuary_model* model, size_t index, estuary_io_info* info) {
  return ioInfo(model, index, info, false);
}

estuary_status estuary_model_output_info(const estuary_model* model, size_t index, estuary_io_info* info) {
  return ioInfo(model, index, info, true);
}

estuary_status estuary_model_output_shapes(estuary_model* model, const estuary_tensor* inputs, size_t input_count,
                                           estuary_tensor* outputs, size_t output_count) {
  return guarded([&] {
    const ge::CompiledModel& compiled = *required(model, "model")->model;
    if (output_count != compiled.outputs().size()) {
      raiseAs<InputValueError>("the model has ", compiled.outputs().size(), " outputs, ", output_count, " were given");
    }
    if (output_count > 0) required(outputs, "outputs");
    std::vector<ge::TensorDesc> descs =
        model->session.outputDescs(estuary_model::kGraphId, namedTensors(inputs, input_count, "input"));
    for (size_t k = 0; k < output_count; ++k) {
      if (!outputs[k].dims) raiseAs<InputValueError>("output #", k, ": dims is NULL");
      outputs[k].name = compiled.outputs()[k].name.c_str();
      outputs[k].dtype = static_cast<int32_t>(descs[k].dtype);
      outputs[k].rank = descs[k].rank;
      std::memcpy(const_cast<int64_t*>(outputs[k].dims), descs[k].dims.data(), sizeof(int64_t) * descs[k].rank);
    }
  });
}

estuary_status estuary_model_run(estuary_model* model, const estuary_tensor* inputs, size_t input_count,
                                 estuary_tensor* outputs, size_t output_count) {
  return guarded([&] {
    std::vector<sdk::NamedTensor> named_outputs = namedTensors(outputs, output_count, "output");
    required(model, "model")
        ->session.runGraph(estuary_model::kGraphId, namedTensors(inputs, input_count, "input"), named_outputs);
  });
}

estuary_status estuary_session_create(const estuary_option* options, size_t option_count, estuary_session** session) {
  return guarded([&] {
    required(session, "session");
    *session = nullptr;
    *session = new estuary_session(optionMap(options, option_count));
  });
}

void estuary_session_destroy(estuary_session* session) { delete session; }

estuary_status estuary_session_add_model(estuary_session* session, uint32_t graph_id, const char* path,
                                         const estuary_option* options, size_t option_count) {
  return guarded([&] {
    required(session, "session")
        ->session.addModel(graph_id, ModelInput::path(required(path, "path")), optionMap(options, option_count));
  });
}

estuary_status estuary_session_add_graph_text(estuary_session* session, uint32_t graph_id, const char* ir_text,
                                              const estuary_option* options, size_t option_count) {
  return guarded([&] {
    std::unique_ptr<Graph> graph = parseGraph(required(ir_text, "ir_text"));
    required(session, "session")->session.addGraph(graph_id, *graph, optionMap(options, option_count));
  });
}

estuary_status estuary_session_remove_graph(estuary_session* session, uint32_t graph_id) {
  return guarded([&] { required(session, "session")->session.removeGraph(graph_id); });
}

estuary_status estuary_session_build_graph(estuary_session* session, uint32_t graph_id) {
  return guarded([&] { required(session, "session")->session.buildGraph(graph_id); });
}

estuary_status estuary_session_get_model(estuary_session* session, uint32_t graph_id, estuary_model** model) {
  return guarded([&] {
    required(model, "model");
    *model = nullptr;
    *model = modelHandle(required(session, "session")->session.compiledModel(graph_id));
  });
}

estuary_status estuary_session_run(estuary_session* session, uint32_t graph_id, const estuary_tensor* inputs,
                                   size_t input_count, estuary_tensor* outputs, size_t output_count) {
  return guarded([&] {
    std::vector<sdk::NamedTensor> named_outputs = namedTensors(outputs, output_count, "output");
    required(session, "session")
        ->session.runGraph(graph_id, namedTensors(inputs, input_count, "input"), named_outputs);
  });
}

estuary_status estuary_session_run_alloc(estuary_session* session, uint32_t graph_id, const estuary_tensor* inputs,
                                         size_t input_count, estuary_outputs** outputs) {
  return guarded([&] {
    required(outputs, "outputs");
    *outputs = nullptr;
    *outputs = outputsOf(
        required(session, "session")->session.runGraph(graph_id, namedTensors(inputs, input_count, "input")));
  });
}

estuary_status estuary_session_run_async(estuary_session* session, uint32_t graph_id, const estuary_tensor* inputs,
                                         size_t input_count, estuary_run_callback callback, void* user_data) {
  return guarded([&] {
    required(callback, "callback");
    required(session, "session")
        ->session.runGraphAsync(graph_id, namedTensors(inputs, input_count, "input"),
                                [callback, user_data](std::exception_ptr error, std::vector<sdk::NamedTensor> result) {
                                  if (!error) {
                                    estuary_outputs* outputs = nullptr;
                                    estuary_status status = guarded([&] { outputs = outputsOf(std::move(result)); });
                                    callback(user_data, status, status == ESTUARY_OK ? "" : last_error.c_str(), outputs);
                                    return;
                                  }
                                  estuary_status status = guarded([&] { std::rethrow_exception(error); });
                                  callback(user_data, status, last_error.c_str(), nullptr);
                                });
  });
}

size_t estuary_outputs_count(const estuary_outputs* outputs) { return outputs ? outputs->views.size() : 0; }

const estuary_tensor* estuary_outputs_get(const estuary_outputs* outputs, size_t index) {
  return outputs && index < outputs->views.size() ? &outputs->views[index] : nullptr;
}

void estuary_outputs_release(estuary_outputs* outputs) { delete outputs; }

}  // extern "C"
