#pragma once
// The threads Estuary's own parallel kernels share. Unlike an OpenMP parallel region, whose
// end waits for every thread of the team to arrive, a call here waits only for work that a
// thread has started: the calling thread takes shards itself from the first moment, and a
// worker that the OS has not scheduled (another process holds its core) simply finds nothing
// left when it wakes. So a busy machine costs a call the share of the cores it lost, not a
// time slice per call. ONNX Runtime's thread pool works the same way.
//
// Workers spin briefly between calls, so that back-to-back kernels on an idle machine do not
// pay a wake-up each, and then sleep.
#include <cstdint>

#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge {

// Runs body(shard) once for every shard in [0, shards), on the calling thread and on up to
// `helpers` pool workers, shards taken in order by whichever thread is free. Returns when
// every shard has run; rethrows the first exception a body threw. Calls may nest and may
// come from several threads at once.
void runShards(int64_t shards, int helpers, FunctionRef<void(int64_t shard)> body);

// Sends the workers that spin waiting for the next call to sleep now. A caller about to run
// another runtime's threads (oneDNN's OpenMP team) calls it, so that no spinning worker
// holds a core the team needs.
void restSpinningWorkers();

// The threads a run should use out of `wanted` (at least 1): no more than the cores other
// processes leave free. With more runnable threads than cores, the thread that runs the
// graph's steps one after another waits for a core at every turn, and the whole run with
// it; with fewer threads a busy machine costs a run the cores it lost and no more. Measured
// over the last 200 ms or so.
int threadsToUse(int wanted);

// Sets the calling thread's OpenMP thread count (oneDNN's team size) for its lifetime (0
// leaves it), then gives the caller's back: the caller (PyTorch, whose torch.compile guards
// on it, shares this OpenMP runtime) must find it as it left it. Runs hold one; so do kernel
// factories, since oneDNN sizes a primitive's work split to the count when it is created.
class ScopedOpenMpThreads {
 public:
  explicit ScopedOpenMpThreads(int threads);
  ~ScopedOpenMpThreads();
  ScopedOpenMpThreads(const ScopedOpenMpThreads&) = delete;
  ScopedOpenMpThreads& operator=(const ScopedOpenMpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace estuary::ge
