/*
 * Estuary's C API: the SDK for programs in C and for languages that load C libraries (Rust,
 * Go, Java, C#, Python's ctypes). Only C types cross it: opaque handles, plain structs, status
 * codes. No exception crosses it: every failure is a status, and estuary_last_error() says
 * what went wrong in words (naming the file, option, input or node).
 *
 *   estuary_session* session;
 *   estuary_option options[] = {{"input_shape", "x:1,3,224,224"}};
 *   if (estuary_session_create(NULL, 0, &session) != ESTUARY_OK ||
 *       estuary_session_add_model(session, 1, "resnet50.onnx", options, 1) != ESTUARY_OK)
 *     fprintf(stderr, "%s\n", estuary_last_error());
 *   estuary_tensor x = {"x", ESTUARY_F32, 4, dims, pixels};
 *   estuary_tensor y = {"y", ESTUARY_F32, 2, out_dims, scores};      // the caller's buffer
 *   estuary_session_run(session, 1, &x, 1, &y, 1);
 *   estuary_session_destroy(session);
 *
 * Binary compatibility: the library is libestuary_sdk.so; the functions below keep their
 * signatures and the structs their layout for every release with the same
 * ESTUARY_C_API_VERSION (new functions may be added). A program that loads the library with
 * dlopen checks estuary_c_api_version() before anything else.
 *
 * Threads: every function may be called from any thread. A session and a model may be used
 * by many threads at once (each run gets a context of its own). estuary_last_error() is per
 * thread.
 */
#ifndef ESTUARY_C_H
#define ESTUARY_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ESTUARY_C_API_VERSION 1

#if defined(__GNUC__)
#define ESTUARY_C_EXPORT __attribute__((visibility("default")))
#else
#define ESTUARY_C_EXPORT
#endif

typedef enum estuary_status {
  ESTUARY_OK = 0,
  /* A wrong argument: a null handle or pointer, an unknown option or graph id, an input with
   * the wrong name, dtype or shape, an output buffer of the wrong size. */
  ESTUARY_INVALID_ARGUMENT = 1,
  /* The model uses ops that no frontend translation or kernel supports. */
  ESTUARY_UNSUPPORTED = 2,
  /* Past a resource limit (max_tensor_size and kin), or out of memory. */
  ESTUARY_RESOURCE_EXHAUSTED = 3,
  /* Anything else that is not a bug: a malformed model file, a build that failed. */
  ESTUARY_FAILED = 4,
  /* A bug in Estuary; the message says where. */
  ESTUARY_INTERNAL = 5
} estuary_status;

/* Element types; the codes are those of the offline model format. */
typedef enum estuary_dtype {
  ESTUARY_F32 = 1,
  ESTUARY_F16 = 2,
  ESTUARY_BF16 = 3,
  ESTUARY_F64 = 4,
  ESTUARY_I8 = 5,
  ESTUARY_I16 = 6,
  ESTUARY_I32 = 7,
  ESTUARY_I64 = 8,
  ESTUARY_U8 = 9,
  ESTUARY_BOOL = 10
} estuary_dtype;

#define ESTUARY_MAX_RANK 8

/* A tensor in the caller's memory (or, for outputs the library allocated, in its memory),
 * dense and row-major. `name` names the graph input or output; `dims` has `rank` entries. */
typedef struct estuary_tensor {
  const char* name;
  int32_t dtype; /* estuary_dtype */
  int32_t rank;
  const int64_t* dims;
  void* data;
} estuary_tensor;

/* A build option (the keys of docs/sdk.md: "input_shape", "pipeline", "threads", ...). */
typedef struct estuary_option {
  const char* key;
  const char* value;
} estuary_option;

/* What a graph input or output is. A symbolic dim is -1 in `dims`, with its name in
 * `dim_names` (an empty string for a static dim). Strings live as long as the model. */
typedef struct estuary_io_info {
  const char* name;
  int32_t dtype;
  int32_t rank;
  int64_t dims[ESTUARY_MAX_RANK];
  const char* dim_names[ESTUARY_MAX_RANK];
} estuary_io_info;

typedef struct estuary_session estuary_session; /* graphs by id, built on demand */
typedef struct estuary_model estuary_model;     /* one compiled model */
typedef struct estuary_outputs estuary_outputs; /* outputs a run allocated */

/* --- Library ------------------------------------------------------------------------- */
ESTUARY_C_EXPORT const char* estuary_version(void); /* "0.1.0" */
ESTUARY_C_EXPORT uint32_t estuary_c_api_version(void); /* ESTUARY_C_API_VERSION of the library */
/* The message of the last call on this thread that did not return ESTUARY_OK ("" if none);
 * valid until the next failing call on this thread. */
ESTUARY_C_EXPORT const char* estuary_last_error(void);
ESTUARY_C_EXPORT const char* estuary_status_name(estuary_status status); /* "ESTUARY_OK" */
/* Frees memory the library handed out (estuary_model_save_memory). */
ESTUARY_C_EXPORT void estuary_free(void* data);

/* --- Models -------------------------------------------------------------------------- */
/* Opens an offline model (.eom, mapped), an IR file (.est, .estir, built) or any model a
 * frontend reads (converted with the options: input shapes, pipeline, threads, ...). */
ESTUARY_C_EXPORT estuary_status estuary_model_open(const char* path, const estuary_option* options,
                                                   size_t option_count, estuary_model** model);
/* Loads an offline model from bytes (copied; `data` may be freed when this returns). */
ESTUARY_C_EXPORT estuary_status estuary_model_open_memory(const void* data, size_t size,
                                                          const estuary_option* options,
                                                          size_t option_count, estuary_model** model);
ESTUARY_C_EXPORT estuary_status estuary_model_save(const estuary_model* model, const char* path);
/* The offline model's bytes in memory from estuary_free's allocator. */
ESTUARY_C_EXPORT estuary_status estuary_model_save_memory(const estuary_model* model, void** data,
                                                          size_t* size);
ESTUARY_C_EXPORT void estuary_model_release(estuary_model* model); /* NULL is ignored */
ESTUARY_C_EXPORT size_t estuary_model_input_count(const estuary_model* model);
ESTUARY_C_EXPORT size_t estuary_model_output_count(const estuary_model* model);
ESTUARY_C_EXPORT estuary_status estuary_model_input_info(const estuary_model* model, size_t index,
                                                         estuary_io_info* info);
ESTUARY_C_EXPORT estuary_status estuary_model_output_info(const estuary_model* model, size_t index,
                                                          estuary_io_info* info);
/* The dims of every output for these inputs (outputs[k].dims must point to ESTUARY_MAX_RANK
 * int64_t each; names, dtypes and ranks are filled in): what the buffers of a run need. */
ESTUARY_C_EXPORT estuary_status estuary_model_output_shapes(estuary_model* model, const estuary_tensor* inputs,
                                                            size_t input_count, estuary_tensor* outputs,
                                                            size_t output_count);
/* Runs with inputs by name, writing each output into the caller's buffer named for it. */
ESTUARY_C_EXPORT estuary_status estuary_model_run(estuary_model* model, const estuary_tensor* inputs,
                                                  size_t input_count, estuary_tensor* outputs,
                                                  size_t output_count);

/* --- Sessions ------------------------------------------------------------------------ */
/* `options`: build options every graph starts from, and "async_workers". */
ESTUARY_C_EXPORT estuary_status estuary_session_create(const estuary_option* options, size_t option_count,
                                                       estuary_session** session);
/* Waits for queued asynchronous runs, then frees the session. NULL is ignored. */
ESTUARY_C_EXPORT void estuary_session_destroy(estuary_session* session);
/* A model file (as estuary_model_open takes) under `graph_id`, built on first use. */
ESTUARY_C_EXPORT estuary_status estuary_session_add_model(estuary_session* session, uint32_t graph_id,
                                                          const char* path, const estuary_option* options,
                                                          size_t option_count);
/* A graph in Estuary's IR text form (docs/text-format.md), optimized with the options'
 * pipeline (O2 unless given) when built. */
ESTUARY_C_EXPORT estuary_status estuary_session_add_graph_text(estuary_session* session, uint32_t graph_id,
                                                               const char* ir_text, const estuary_option* options,
                                                               size_t option_count);
ESTUARY_C_EXPORT estuary_status estuary_session_remove_graph(estuary_session* session, uint32_t graph_id);
ESTUARY_C_EXPORT estuary_status estuary_session_build_graph(estuary_session* session, uint32_t graph_id);
/* The graph's compiled model (built if needed): a new reference, released by the caller. */
ESTUARY_C_EXPORT estuary_status estuary_session_get_model(estuary_session* session, uint32_t graph_id,
                                                          estuary_model** model);
/* Runs writing outputs into the caller's buffers, by name. */
ESTUARY_C_EXPORT estuary_status estuary_session_run(estuary_session* session, uint32_t graph_id,
                                                    const estuary_tensor* inputs, size_t input_count,
                                                    estuary_tensor* outputs, size_t output_count);
/* Runs into memory the library allocates; release the outputs with estuary_outputs_release. */
ESTUARY_C_EXPORT estuary_status estuary_session_run_alloc(estuary_session* session, uint32_t graph_id,
                                                          const estuary_tensor* inputs, size_t input_count,
                                                          estuary_outputs** outputs);
/* Called once per asynchronous run on a worker thread: the outputs (the callee releases them)
 * or a status other than ESTUARY_OK with a message (and NULL outputs). */
typedef void (*estuary_run_callback)(void* user_data, estuary_status status, const char* message,
                                     estuary_outputs* outputs);
/* Queues a run and returns; the inputs' data must stay valid until the callback is called
 * (names and dims are copied). */
ESTUARY_C_EXPORT estuary_status estuary_session_run_async(estuary_session* session, uint32_t graph_id,
                                                          const estuary_tensor* inputs, size_t input_count,
                                                          estuary_run_callback callback, void* user_data);

ESTUARY_C_EXPORT size_t estuary_outputs_count(const estuary_outputs* outputs);
/* The k-th output in graph output order (NULL past the end); valid until released. */
ESTUARY_C_EXPORT const estuary_tensor* estuary_outputs_get(const estuary_outputs* outputs, size_t index);
ESTUARY_C_EXPORT void estuary_outputs_release(estuary_outputs* outputs); /* NULL is ignored */

#ifdef __cplusplus
}
#endif

#endif /* ESTUARY_C_H */
