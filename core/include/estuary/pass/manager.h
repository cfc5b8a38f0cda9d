#pragma once
// The pass manager: runs a pipeline over a graph and instruments every pass run (wall
// time, change counts, node counts, IR dumps and verification in debug runs), so that no
// pass has to do any of this itself.
//
// Environment:
//   ESTUARY_DEBUG=1               dumps and verification as with `settings: {debug: true}`
//   ESTUARY_DUMP_DIR=<dir>        overrides the pipeline's dump directory
//   ESTUARY_DISABLE_PASSES=a,b    switches passes or groups off by name (unless the pipeline's
//                                 settings.environment_switches is false)
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/pass/pass.h"
#include "estuary/pass/pipeline.h"

namespace estuary {

// One run of one pass.
struct PassRecord {
  std::string name;
  // The innermost group the pass ran in, and its iteration (1-based); empty/0 outside groups.
  std::string group;
  int64_t iteration = 0;
  double seconds = 0;
  int64_t changes = 0;
  // Nodes of the top-level graph (an O(1) count; counting subgraph nodes would walk the
  // whole graph twice per pass). Rewrites inside subgraphs show in `changes`.
  size_t nodes_before = 0;
  size_t nodes_after = 0;
};

// One run of a fixed-point group.
struct GroupRecord {
  std::string name;
  int64_t iterations = 0;
  // False when the group stopped at max_iterations with the last iteration still changing
  // the graph.
  bool converged = false;
};

class PassManager {
 public:
  // Creates every pass of the pipeline (disabled ones too, so that a bad option is reported
  // before anything runs and a switch can turn them on). Reads the environment variables
  // above; the setters below override them.
  explicit PassManager(Pipeline pipeline, const PassRegistry& registry = PassRegistry::global());
  ~PassManager();
  PassManager(const PassManager&) = delete;
  PassManager& operator=(const PassManager&) = delete;

  // Turns every pass or group called `name` on or off, overriding the pipeline's `enabled`.
  // A name that is neither in the pipeline nor a registered pass raises an Error listing
  // close names.
  void setEnabled(std::string_view name, bool enabled);
  // setEnabled() for each entry of a switch file (see loadPassSwitchFile()).
  void applySwitches(const std::map<std::string, bool>& switches);
  // Debugging: IR dumps before/after each pass plus verification after each pass.
  void setDebug(bool debug) { debug_ = debug; }
  void setVerify(bool verify) { verify_ = verify; }
  void setDumpDir(std::string dir) { dump_dir_ = std::move(dir); }
  // Where warnings (a group that did not converge) are written; std::cerr by default,
  // nullptr for nowhere. They are kept in warnings() either way.
  void setLog(std::ostream* log) { log_ = log; }

  bool debug() const { return debug_; }
  bool verifies() const { return debug_ || verify_; }
  const std::string& dumpDir() const { return dump_dir_; }
  const Pipeline& pipeline() const { return pipeline_; }

  // Runs the pipeline. A pass that fails, or leaves IR that fails verification, raises an
  // Error naming the pass. Records of earlier runs are cleared.
  void run(Graph& graph);

  const std::vector<PassRecord>& records() const { return records_; }
  const std::vector<GroupRecord>& groupRecords() const { return group_records_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  int64_t totalChanges() const;
  // Files written by the last run in debug mode, in order.
  const std::vector<std::string>& dumpFiles() const { return dump_files_; }

  // A table with one row per pipeline entry: runs, time, share of the total, changes and
  // node counts before the first and after the last run.
  void printTimingReport(std::ostream& out) const;

 private:
  struct Step;
  static std::vector<Step> buildSteps(const std::vector<PipelineStep>& specs,
                                      const PassRegistry& registry);
  int64_t runSteps(const std::vector<Step>& steps, Graph& graph, const std::string& group,
                   int64_t iteration);
  int64_t runPass(const Step& step, Graph& graph, const std::string& group, int64_t iteration);
  bool isEnabled(const Step& step) const;
  void dump(const Graph& graph, std::string_view stage, const std::string& pass);
  void verify(const Graph& graph, const Step* after) const;
  void reportSteps(std::ostream& out, const std::vector<Step>& steps, int depth,
                   double total_seconds) const;

  Pipeline pipeline_;
  std::vector<Step> steps_;
  std::map<std::string, bool, std::less<>> switches_;
  std::vector<std::string> registry_names_;
  bool debug_ = false;
  bool verify_ = false;
  std::string dump_dir_;
  std::ostream* log_;
  PassContext context_;

  std::vector<PassRecord> records_;
  std::vector<const Step*> record_steps_;  // the step of each record, for the report
  std::vector<GroupRecord> group_records_;
  std::vector<const Step*> group_record_steps_;
  std::vector<std::string> warnings_;
  std::vector<std::string> dump_files_;
  int dump_sequence_ = 0;
};

}  // namespace estuary
