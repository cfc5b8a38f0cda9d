#pragma once
// Kernel choice measured at build, per shape, on the machine at hand (TensorRT's tactics).
//
// A kernel factory with several ways to compute a node lists them as KernelTactics
// (KernelBuildContext::choose). The Tuner of a compiled model keys each such problem by the
// CPU, the thread count, the op, its attributes and its input and output types, and
// answers with the tactic recorded for the key (by an earlier plan, the offline model or a
// timing cache file) or, when the build tunes, times every tactic on synthetic inputs and
// records the fastest.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include "estuary/ge/kernel.h"

namespace estuary::ge {

struct BuildOptions;
struct BuildReport;
class Plan;

class Tuner {
 public:
  // Reads options.timing_cache when set and present. A file that is not a timing cache, or
  // has a line that does not read, is ignored as a whole (cacheWarning() says why).
  explicit Tuner(const BuildOptions& options);

  // Why the timing cache file was ignored, naming the file and line; empty when it was not.
  const std::string& cacheWarning() const { return cache_warning_; }

  std::unique_ptr<Kernel> choose(const KernelBuildContext& context, const std::vector<KernelTactic>& tactics);

  // The plan-wide choice of an activation layout for convolution chains. `build` makes the
  // plan with a layout (nullopt: the rules' one) and fills its report. The rules' plan comes
  // first; when it keeps activations in a layout, the plan is built in each of `layouts` as
  // well and whole runs are timed. Returns the chosen plan with its report.
  using PlanBuilder = std::function<std::shared_ptr<Plan>(std::optional<Layout>, BuildReport&)>;
  std::shared_ptr<Plan> choosePlan(const std::string& key, const std::vector<Layout>& layouts, const Device& device,
                                   int threads, const PlanBuilder& build, BuildReport& report);

  // The choices this model's plans made, by problem key: what the offline model keeps.
  std::map<std::string, std::string> usedTactics() const;
  // An offline model's choices, reused for plans of the same problems on the same CPU.
  void addRecorded(const std::map<std::string, std::string>& tactics);
  // Rewrites the timing cache file (when one was given, and is not someone else's file) with
  // every record, old and new, and those other builds wrote to it meanwhile. Does nothing when
  // nothing was measured since the last save and the file exists.
  void saveCache();
  // While the returned object lives, this build holds the timing cache's lock file (FILE.lock),
  // and it has taken the records other builds saved before it got the lock: builds sharing a
  // cache (replicas on a node) tune their plans one at a time, none measures a problem
  // another already measured, and none times its kernels under another's measuring load.
  // Null when this build does not tune with a cache of its own, or the lock cannot be had.
  class Turn;
  std::unique_ptr<Turn> waitForTurn();
  // Report lines since the last call, and the seconds measuring took in total.
  std::vector<std::string> takeReportLines();
  double secondsSpent() const;

 private:
  enum class Source { Measured, CacheFile, OfflineModel };
  struct Record {
    std::string chosen;
    std::string times;  // "cpu:gemv 0.181 ms, onednn:gemm:jit 0.412 ms": what was measured
    Source source;
    std::string origin() const;  // "from the timing cache: cpu:gemv 0.181 ms, ..."
  };
  // Adds the cache file's records; returns what makes it unreadable, naming file and line
  // (empty when it reads whole or does not exist), with `ours` false when it is not a cache.
  std::string readCacheFile(std::map<std::string, Record>& records, bool& ours) const;
  // Takes in the records other builds sharing the cache saved since this one read it; a file
  // that no longer reads whole adds nothing.
  void mergeRecordsOnDisk();

  const bool measure_;
  const double budget_seconds_;
  const std::string cache_path_;
  bool keep_cache_ = true;  // false: the file is not Estuary's, and saveCache leaves it alone
  std::string cache_warning_;
  std::mutex save_mutex_;  // one save at a time: each reads the file, then replaces it
  mutable std::mutex mutex_;
  bool unsaved_ = false;  // a record measured since the cache was read or saved
  std::map<std::string, Record> records_;
  std::map<std::string, std::string> used_;
  std::vector<std::string> report_lines_;
  double spent_seconds_ = 0;
};

class Tuner::Turn {
 public:
  explicit Turn(int fd) : fd_(fd) {}
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  ~Turn();  // closing the file releases the lock

 private:
  int fd_;
};

// The timing cache key of a node's problem (exposed for tests).
std::string tuningKey(const KernelBuildContext& context);
// The key of a plan's problem: the graph (its ops and types, not its weights) and the inputs.
std::string planTuningKey(const Graph& graph, const std::vector<TensorDesc>& inputs, const Device& device,
                          int threads);

}  // namespace estuary::ge
