#include "worker_pool.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <omp.h>
#endif

namespace estuary::ge {

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long an idle worker looks for work before it sleeps: long enough to bridge the small
// single-threaded kernels between two parallel ones (a wake-up costs the caller a system call
// and the worker tens of microseconds), short enough that a pool with nothing to do gives
// its core back at once.
constexpr auto kSpinTime = std::chrono::microseconds(200);
// Pauses the caller spends waiting for workers to finish their last shards before it yields
// its core instead: a worker still busy after that is most likely not running at all.
constexpr int kCallerSpins = 4096;

struct Job {
  const FunctionRef<void(int64_t)>* body = nullptr;
  int64_t shards = 0;
  std::atomic<int64_t> next{0};
  int open_seats = 0;  // guarded by the pool's mutex
  std::atomic<int> working{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  bool open() const { return open_seats > 0 && next.load(std::memory_order_relaxed) < shards; }

  void work() {
    for (int64_t shard; (shard = next.fetch_add(1, std::memory_order_relaxed)) < shards;) {
      try {
        (*body)(shard);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(shards, std::memory_order_relaxed);  // the others stop taking shards
      }
    }
  }
};

class WorkerPool {
 public:
  // The process's pool. A child process made by fork() has none of the parent's workers:
  // it gets a new, empty pool (the parent's may have been locked mid-call by a thread that
  // does not exist in the child).
  static WorkerPool& instance() {
    static const bool registered = [] {
      pthread_atfork(nullptr, nullptr, [] { current_ = new WorkerPool; });
      return true;
    }();
    (void)registered;
    WorkerPool* pool = current_.load(std::memory_order_acquire);
    if (pool) return *pool;
    auto* fresh = new WorkerPool;
    if (current_.compare_exchange_strong(pool, fresh)) return *fresh;
    delete fresh;
    return *pool;
  }

  void rest() { rests_.fetch_add(1, std::memory_order_relaxed); }

  void run(int64_t shards, int helpers, FunctionRef<void(int64_t)> body) {
    Job job;
    job.body = &body;
    job.shards = shards;
    job.open_seats = helpers;
    {
      std::lock_guard lock(mutex_);
      try {
        while (workers_ < helpers) {
          std::thread([this] { workerLoop(); }).detach();
          ++workers_;
        }
      } catch (const std::system_error&) {
        // No more threads to be had (a process or container limit): the call still
        // completes, with the caller and the workers there are.
      }
      jobs_.push_back(&job);
      epoch_.fetch_add(1, std::memory_order_release);
      if (sleeping_ > 0) {
        if (helpers >= sleeping_) {
          wake_.notify_all();
        } else {
          for (int i = 0; i < helpers; ++i) wake_.notify_one();
        }
      }
    }
    job.work();
    {
      std::lock_guard lock(mutex_);
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
    }
    // No worker joins any more; those that did are finishing the shards they took.
    for (int spins = 0; job.working.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < kCallerSpins) {
        cpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  // Pools are never destroyed: detached workers may be waiting on them at exit.
  WorkerPool() = default;

  Job* openJob() {
    for (Job* job : jobs_) {
      if (job->open()) return job;
    }
    return nullptr;
  }

  void workerLoop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (Job* job = openJob()) {
        --job->open_seats;
        job->working.fetch_add(1, std::memory_order_relaxed);
        lock.unlock();
        job->work();
        job->working.fetch_sub(1, std::memory_order_release);  // the job may be gone after this
        lock.lock();
        continue;
      }
      const uint64_t seen = epoch_.load(std::memory_order_relaxed);
      const uint64_t rests = rests_.load(std::memory_order_relaxed);
      lock.unlock();
      bool posted = false;
      const auto give_up = std::chrono::steady_clock::now() + kSpinTime;
      for (int i = 1;; ++i) {
        if (epoch_.load(std::memory_order_acquire) != seen) {
          posted = true;
          break;
        }
        cpuRelax();
        if (i % 64 == 0 && (rests_.load(std::memory_order_relaxed) != rests ||
                            std::chrono::steady_clock::now() > give_up)) {
          break;
        }
      }
      lock.lock();
      if (posted) continue;
      ++sleeping_;
      wake_.wait(lock, [&] { return epoch_.load(std::memory_order_relaxed) != seen; });
      --sleeping_;
    }
  }

  static inline std::atomic<WorkerPool*> current_{nullptr};

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Job*> jobs_;  // calls with shards left, oldest first
  std::atomic<uint64_t> epoch_{0};  // counts posted calls; changes wake idle workers
  std::atomic<uint64_t> rests_{0};  // counts rest() calls; changes end spinning
  int workers_ = 0;
  int sleeping_ = 0;
};

// CPU time, in seconds, that the whole machine (every core, all but idle and I/O wait; steal
// too: a hypervisor's other guests take cores as well) and this process have used since boot.
struct CpuTimes {
  double machine = 0;
  double process = 0;
};

std::optional<CpuTimes> readCpuTimes() {
  static const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuTimes times;
  std::FILE* file = std::fopen("/proc/stat", "r");
  if (!file) return std::nullopt;
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  const int fields = std::fscanf(file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                                 &iowait, &irq, &softirq, &steal);
  std::fclose(file);
  if (fields != 8) return std::nullopt;
  times.machine = static_cast<double>(user + nice + system + irq + softirq + steal) * tick;
  // /proc/self/stat: "pid (comm) state ..." with utime and stime the 12th and 13th fields
  // after the command, whose name may hold spaces and parentheses.
  file = std::fopen("/proc/self/stat", "r");
  if (!file) return std::nullopt;
  char line[1024];
  const bool read = std::fgets(line, sizeof line, file) != nullptr;
  std::fclose(file);
  const char* after_comm = read ? std::strrchr(line, ')') : nullptr;
  unsigned long long utime, stime;
  if (!after_comm || std::sscanf(after_comm + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                                 &stime) != 2) {
    return std::nullopt;
  }
  times.process = static_cast<double>(utime + stime) * tick;
  return times;
}

// Watches how many cores other processes keep busy (from the CPU time the machine and this
// process used over the last interval, so that this process's own threads, its pool's and
// OpenMP's spinning ones included, never count against it).
class LoadWatch {
 public:
  int threadsToUse(int wanted) {
    const auto now = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock && now - sampled_at_ >= kInterval) {
      if (std::optional<CpuTimes> times = readCpuTimes()) {
        const double wall = std::chrono::duration<double>(now - sampled_at_).count();
        if (last_) {
          const double others = ((times->machine - last_->machine) - (times->process - last_->process)) / wall;
          busy_cores_.store(static_cast<int>(std::max(0.0, others) + 0.5), std::memory_order_relaxed);
        }
        last_ = times;
      }
      sampled_at_ = now;
    }
    return std::clamp(online_cpus_ - busy_cores_.load(std::memory_order_relaxed), 1, wanted);
  }

 private:
  // /proc/stat counts in ticks of 10 ms: an interval of 200 ms measures others' load to about
  // a twentieth of a core.
  static constexpr auto kInterval = std::chrono::milliseconds(200);
  std::mutex mutex_;
  std::chrono::steady_clock::time_point sampled_at_{};
  std::optional<CpuTimes> last_;
  std::atomic<int> busy_cores_{0};
  // The machine's cores, not this process's affinity mask: the CPU times are the machine's.
  const int online_cpus_ = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
};

}  // namespace

int threadsToUse(int wanted) {
  if (wanted <= 1) return std::max(wanted, 1);
  static LoadWatch* watch = new LoadWatch;  // never destroyed: runs may outlive static destructors
  return watch->threadsToUse(wanted);
}

void restSpinningWorkers() { WorkerPool::instance().rest(); }

void runShards(int64_t shards, int helpers, FunctionRef<void(int64_t shard)> body) {
  if (shards <= 0) return;
  helpers = static_cast<int>(std::min<int64_t>(std::max(helpers, 0), shards - 1));
  if (helpers == 0) {
    for (int64_t shard = 0; shard < shards; ++shard) body(shard);
    return;
  }
  WorkerPool::instance().run(shards, helpers, body);
}

ScopedOpenMpThreads::ScopedOpenMpThreads(int threads) : saved_(omp_get_max_threads()) {
  if (threads > 0) omp_set_num_threads(threads);
}

ScopedOpenMpThreads::~ScopedOpenMpThreads() { omp_set_num_threads(saved_); }

}  // namespace estuary::ge
