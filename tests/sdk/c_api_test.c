/* The C API from a C program: a graph added as IR text, built, run synchronously into the
 * caller's buffers and into the library's, asynchronously from a callback, saved to memory and
 * loaded back; every error a status with a message naming what was wrong. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estuary_c.h"

static int failures = 0;

#define CHECK(condition)                                                     \
  do {                                                                       \
    if (!(condition)) {                                                      \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

#define CHECK_OK(call)                                                                          \
  do {                                                                                          \
    estuary_status status_ = (call);                                                            \
    if (status_ != ESTUARY_OK) {                                                                \
      fprintf(stderr, "%s:%d: %s gave %s: %s\n", __FILE__, __LINE__, #call,                     \
              estuary_status_name(status_), estuary_last_error());                              \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)

/* The call fails with `expected` and a message containing `words`. */
#define CHECK_FAILS(call, expected, words)                                                       \
  do {                                                                                           \
    estuary_status status_ = (call);                                                             \
    if (status_ != (expected) || strstr(estuary_last_error(), (words)) == NULL) {                \
      fprintf(stderr, "%s:%d: %s gave %s \"%s\", expected %s mentioning \"%s\"\n", __FILE__,      \
              __LINE__, #call, estuary_status_name(status_), estuary_last_error(),               \
              estuary_status_name(expected), (words));                                           \
      ++failures;                                                                                \
    }                                                                                            \
  } while (0)

static const char* kGraph =
    "graph @scaled_relu(%x: f32[batch,4], %y: f32[batch,4]) {\n"
    "  %s = Add(%x, %y) : f32[batch,4]\n"
    "  %r = Relu(%s) : f32[batch,4]\n"
    "  return %r\n"
    "}\n";

enum { kBatch = 3, kWidth = 4, kElements = kBatch * kWidth };
static const int64_t kDims[2] = {kBatch, kWidth};

static void fillInputs(float* x, float* y) {
  int i;
  for (i = 0; i < kElements; ++i) {
    x[i] = (float)i - 5.0f;
    y[i] = 0.5f * (float)(i % 3);
  }
}

static int matchesReference(const float* x, const float* y, const float* r) {
  int i;
  for (i = 0; i < kElements; ++i) {
    float expected = x[i] + y[i] > 0 ? x[i] + y[i] : 0.0f;
    if (r[i] != expected) return 0;
  }
  return 1;
}

struct AsyncState {
  pthread_mutex_t mutex;
  pthread_cond_t done;
  int finished;
  int correct;
  int failed;
  const float* x;
  const float* y;
};

static void onRunDone(void* user_data, estuary_status status, const char* message, estuary_outputs* outputs) {
  struct AsyncState* state = (struct AsyncState*)user_data;
  int correct = 0;
  if (status == ESTUARY_OK && estuary_outputs_count(outputs) == 1) {
    const estuary_tensor* r = estuary_outputs_get(outputs, 0);
    correct = r->rank == 2 && r->dims[0] == kBatch && matchesReference(state->x, state->y, (const float*)r->data);
  } else if (status != ESTUARY_OK) {
    fprintf(stderr, "async run failed: %s\n", message);
  }
  estuary_outputs_release(outputs);
  pthread_mutex_lock(&state->mutex);
  ++state->finished;
  state->correct += correct;
  state->failed += status != ESTUARY_OK;
  pthread_cond_signal(&state->done);
  pthread_mutex_unlock(&state->mutex);
}

int main(void) {
  estuary_session* session = NULL;
  estuary_model* model = NULL;
  estuary_model* reloaded = NULL;
  estuary_model* refused_model = NULL;
  estuary_session* refused_session = NULL;
  estuary_outputs* outputs = NULL;
  estuary_io_info info;
  float x[kElements], y[kElements], r[kElements];
  estuary_option options[] = {{"threads", "1"}, {"pipeline", "O2"}};
  estuary_option bad_option[] = {{"treads", "1"}};
  estuary_tensor inputs[2];
  estuary_tensor output;
  void* bytes = NULL;
  size_t size = 0;
  struct AsyncState state;
  int i;

  CHECK(estuary_c_api_version() == ESTUARY_C_API_VERSION);
  CHECK(strlen(estuary_version()) > 0);
  fillInputs(x, y);
  inputs[0].name = "x", inputs[0].dtype = ESTUARY_F32, inputs[0].rank = 2, inputs[0].dims = kDims, inputs[0].data = x;
  inputs[1].name = "y", inputs[1].dtype = ESTUARY_F32, inputs[1].rank = 2, inputs[1].dims = kDims, inputs[1].data = y;
  output.name = "r", output.dtype = ESTUARY_F32, output.rank = 2, output.dims = kDims, output.data = r;

  CHECK_OK(estuary_session_create(options, 2, &session));
  CHECK_OK(estuary_session_add_graph_text(session, 7, kGraph, NULL, 0));
  CHECK_OK(estuary_session_build_graph(session, 7));

  /* Synchronously, into the caller's buffer. */
  memset(r, 0, sizeof r);
  CHECK_OK(estuary_session_run(session, 7, inputs, 2, &output, 1));
  CHECK(matchesReference(x, y, r));

  /* Into the library's memory. */
  CHECK_OK(estuary_session_run_alloc(session, 7, inputs, 2, &outputs));
  CHECK(estuary_outputs_count(outputs) == 1);
  CHECK(strcmp(estuary_outputs_get(outputs, 0)->name, "r") == 0);
  CHECK(matchesReference(x, y, (const float*)estuary_outputs_get(outputs, 0)->data));
  CHECK(estuary_outputs_get(outputs, 1) == NULL);
  estuary_outputs_release(outputs);

  /* Asynchronously: 16 runs, every callback sees the right outputs. */
  memset(&state, 0, sizeof state);
  pthread_mutex_init(&state.mutex, NULL);
  pthread_cond_init(&state.done, NULL);
  state.x = x;
  state.y = y;
  for (i = 0; i < 16; ++i) CHECK_OK(estuary_session_run_async(session, 7, inputs, 2, onRunDone, &state));
  pthread_mutex_lock(&state.mutex);
  while (state.finished < 16) pthread_cond_wait(&state.done, &state.mutex);
  pthread_mutex_unlock(&state.mutex);
  CHECK(state.correct == 16 && state.failed == 0);

  /* The compiled model: its inputs, with the symbolic dim by name. */
  CHECK_OK(estuary_session_get_model(session, 7, &model));
  CHECK(estuary_model_input_count(model) == 2 && estuary_model_output_count(model) == 1);
  CHECK_OK(estuary_model_input_info(model, 0, &info));
  CHECK(strcmp(info.name, "x") == 0 && info.dtype == ESTUARY_F32 && info.rank == 2);
  CHECK(info.dims[0] == -1 && strcmp(info.dim_names[0], "batch") == 0 && info.dims[1] == 4);
  CHECK_FAILS(estuary_model_output_info(model, 1, &info), ESTUARY_INVALID_ARGUMENT, "1 outputs");

  /* Saved to memory, loaded back, run directly. */
  CHECK_OK(estuary_model_save_memory(model, &bytes, &size));
  CHECK(size > 256);
  CHECK_OK(estuary_model_open_memory(bytes, size, NULL, 0, &reloaded));
  estuary_free(bytes);
  memset(r, 0, sizeof r);
  CHECK_OK(estuary_model_run(reloaded, inputs, 2, &output, 1));
  CHECK(matchesReference(x, y, r));
  CHECK_FAILS(estuary_model_open_memory("not a model", 11, NULL, 0, &refused_model), ESTUARY_FAILED, "magic");

  /* Errors: each a status and a message naming what was wrong. */
  CHECK_FAILS(estuary_session_create(bad_option, 1, &refused_session), ESTUARY_INVALID_ARGUMENT, "'treads'");
  CHECK(refused_session == NULL && refused_model == NULL);
  CHECK_FAILS(estuary_session_run(session, 8, inputs, 2, &output, 1), ESTUARY_INVALID_ARGUMENT, "id 8");
  CHECK_FAILS(estuary_session_add_graph_text(session, 7, kGraph, NULL, 0), ESTUARY_INVALID_ARGUMENT, "id 7");
  CHECK_FAILS(estuary_session_add_graph_text(session, 9, "graph @g(", NULL, 0), ESTUARY_FAILED, "<text>:1");
  CHECK_FAILS(estuary_session_run(NULL, 7, inputs, 2, &output, 1), ESTUARY_INVALID_ARGUMENT, "session is NULL");
  inputs[1].name = "z";
  CHECK_FAILS(estuary_session_run(session, 7, inputs, 2, &output, 1), ESTUARY_INVALID_ARGUMENT, "'z'");
  inputs[1].name = "y";
  inputs[1].dtype = ESTUARY_I64;
  CHECK_FAILS(estuary_session_run(session, 7, inputs, 2, &output, 1), ESTUARY_INVALID_ARGUMENT, "y");
  inputs[1].dtype = ESTUARY_F32;
  output.rank = 1;
  CHECK_FAILS(estuary_session_run(session, 7, inputs, 2, &output, 1), ESTUARY_FAILED, "output 'r'");
  output.rank = 2;
  CHECK_FAILS(estuary_model_open("/nonexistent/model.onnx", NULL, 0, &refused_model), ESTUARY_FAILED, "/nonexistent/model.onnx");
  /* And the session still serves. */
  memset(r, 0, sizeof r);
  CHECK_OK(estuary_session_run(session, 7, inputs, 2, &output, 1));
  CHECK(matchesReference(x, y, r));
  CHECK_OK(estuary_session_remove_graph(session, 7));
  CHECK_FAILS(estuary_session_remove_graph(session, 7), ESTUARY_INVALID_ARGUMENT, "id 7");

  estuary_model_release(reloaded);
  estuary_model_release(model);
  estuary_session_destroy(session);
  pthread_cond_destroy(&state.done);
  pthread_mutex_destroy(&state.mutex);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("C API: all checks passed (estuary %s, C API %u)\n", estuary_version(), estuary_c_api_version());
  return 0;
}
