/* A C program built against the installed SDK: a graph given as IR text runs in a session
 * through the C API, and an error comes back as a status with a message. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "estuary_c.h"

int main(void) {
  static const char* graph =
      "graph @g(%x: f32[2,3], %w: f32[3,2]) {\n"
      "  %m = MatMul(%x, %w)\n"
      "  %y = Relu(%m)\n"
      "  return %y\n"
      "}\n";
  float x[6] = {1, 2, 3, -4, -5, -6}, w[6] = {1, 0, 0, 1, 1, 1}, y[4] = {0};
  const float expected[4] = {4, 5, 0, 0};
  const int64_t x_dims[2] = {2, 3}, w_dims[2] = {3, 2}, y_dims[2] = {2, 2};
  estuary_tensor inputs[2] = {{"x", ESTUARY_F32, 2, x_dims, x}, {"w", ESTUARY_F32, 2, w_dims, w}};
  estuary_tensor output = {"y", ESTUARY_F32, 2, y_dims, y};
  estuary_option options[1] = {{"pipeline", "O2"}};
  estuary_session* session = NULL;
  int i;

  if (estuary_c_api_version() != ESTUARY_C_API_VERSION) {
    fprintf(stderr, "consumer_c: the library has C API %u, this program was built for %d\n",
            estuary_c_api_version(), ESTUARY_C_API_VERSION);
    return 1;
  }
  if (estuary_session_create(options, 1, &session) != ESTUARY_OK ||
      estuary_session_add_graph_text(session, 1, graph, NULL, 0) != ESTUARY_OK ||
      estuary_session_run(session, 1, inputs, 2, &output, 1) != ESTUARY_OK) {
    fprintf(stderr, "consumer_c: %s\n", estuary_last_error());
    return 1;
  }
  for (i = 0; i < 4; ++i) {
    if (fabsf(y[i] - expected[i]) > 1e-6f) {
      fprintf(stderr, "consumer_c: y[%d] = %g, expected %g\n", i, y[i], expected[i]);
      return 1;
    }
  }
  if (estuary_session_run(session, 2, inputs, 2, &output, 1) != ESTUARY_INVALID_ARGUMENT ||
      strstr(estuary_last_error(), "id 2") == NULL) {
    fprintf(stderr, "consumer_c: an unknown graph id was not refused as such: %s\n", estuary_last_error());
    return 1;
  }
  estuary_session_destroy(session);
  printf("consumer_c: ran a MatMul + Relu graph through the C API (estuary %s)\n", estuary_version());
  return 0;
}
