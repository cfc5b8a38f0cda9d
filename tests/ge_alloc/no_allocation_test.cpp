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

// Heap allocations of 20 runs of `text` after a first one, flipping the bool input (if
// any) between runs. Builds and binds first.
size_t allocationsOfRuns(const std::string& text, std::vector<HostTensor> inputs, uint8_t* flag = nullptr) {
  BuildOptions options;
  options.num_threads = 2;
  auto model = CompiledModel::build(*parseGraph(text), options);
  auto context = model->createContext();
  context->run(inputs);
  allocations = 0;
  counting = true;
  for (int i = 0; i < 20; ++i) {
    if (flag) *flag = i % 2;
    context->run(inputs);
  }
  counting = false;
  return allocations.load();
}

// Control flow (subgraph plans run by the If/Loop kernels, a loop with a scan output) and a
// data-dependent NonZero output allocate nothing either. The subgraphs use Estuary's own
// kernels: oneDNN's primitive execution allocates (9 times per binary Add, 6 per matmul,
// measured with this test's counter), and Attention's matmuls are oneDNN primitives.
TEST(NoAllocation, ControlFlowAndRuntimeLengthsAllocateNothing) {
  uint8_t condition = 1;
  std::vector<float> x(32, 0.5f);
  x[3] = 0.f;
  HostTensor cond = HostTensor::of(TensorDesc::of(DType::Bool, {}), &condition);
  HostTensor x_in = HostTensor::of(TensorDesc::of(DType::F32, {4, 8}), x.data());
  EXPECT_EQ(allocationsOfRuns(R"(graph @g(%c: bool[], %x: f32[4,8]) {
  %r = If(%c) {else_branch = graph @else() {
    %n = Neg(%x)
    return %n
  }, then_branch = graph @then() {
    %e = Exp(%x)
    return %e
  }}
  return %r
})",
                              {cond, x_in}, &condition),
            0u)
      << "If";
  EXPECT_EQ(allocationsOfRuns(R"(graph @g(%x: f32[4,8]) {
  %m = Constant() {value = tensor<i64[]> [3]}
  %final, %scan = Loop(%m, _, %x) {body = graph @body(%i: i64[], %cond: bool[], %acc: f32[4,8]) {
    %next = Max(%acc, %x)
    return %cond, %next, %acc
  }}
  return %final, %scan
})",
                              {x_in}),
            0u)
      << "Loop";
  EXPECT_EQ(allocationsOfRuns("graph @g(%x: f32[4,8]) {\n  %nz = NonZero(%x)\n  return %nz\n}", {x_in}), 0u)
      << "NonZero";
}

}  // namespace
}  // namespace estuary::ge
