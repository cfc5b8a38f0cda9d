#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

#include "estuary/ge/model.h"
#include "estuary/plugin/loader.h"
#include "estuary/text/parser.h"

// Every heap allocation in the process, from any thread or library, goes through these
// while counting is on (the executable's definitions interpose glibc's).
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<bool> counting{false};
std::atomic<size_t> allocations{0};
void note() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) {
  note();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  note();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  note();
  return __libc_realloc(pointer, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  note();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  note();
  *out = __libc_memalign(alignment, size);
  return *out ? 0 : 12;  // ENOMEM
}
}

namespace estuary::ge {
namespace {

// Estuary's runtime and its own kernels allocate nothing once a shape's plan is bound.
TEST(NoAllocation, RepeatedRunsAllocateNothing) {
  PluginLoader::global().load("fusion_add_rms_norm");
  auto graph = parseGraph(R"(graph @g(%x: f32[batch,256], %r: f32[batch,256], %gamma: f32[256]) {
  %n, %s = estuary::AddRMSNorm(%x, %r, %gamma) {axis = -1, epsilon = 1e-05} : f32[batch,256], f32[batch,256]
  %n2, %s2 = estuary::AddRMSNorm(%n, %s, %gamma) {axis = -1, epsilon = 1e-05} : f32[batch,256], f32[batch,256]
  return %n2, %s
})");
  BuildOptions options;
  options.num_threads = 2;
  auto model = CompiledModel::build(*graph, options);
  auto context = model->createContext();
  std::vector<float> x(64 * 256, 1.f), r(64 * 256, 2.f), gamma(256, 3.f), out0(64 * 256), out1(64 * 256);
  std::vector<HostTensor> inputs{HostTensor::of(TensorDesc::of(DType::F32, {64, 256}), x.data()),
                                 HostTensor::of(TensorDesc::of(DType::F32, {64, 256}), r.data()),
                                 HostTensor::of(TensorDesc::of(DType::F32, {256}), gamma.data())};
  std::vector<HostTensor> outputs{HostTensor::of(TensorDesc::of(DType::F32, {64, 256}), out0.data()),
                                  HostTensor::of(TensorDesc::of(DType::F32, {64, 256}), out1.data())};
  // The first run with a shape binds its plan, and the first into the context's own output
  // buffers sizes them: both may allocate.
  context->run(inputs, outputs);
  context->run(inputs);
  counting = true;
  for (int i = 0; i < 20; ++i) context->run(inputs, outputs);
  context->run(inputs);
  counting = false;
  EXPECT_EQ(allocations.load(), 0u);
  EXPECT_FLOAT_EQ(out1[0], 3.f);
}

}  // namespace
}  // namespace estuary::ge
