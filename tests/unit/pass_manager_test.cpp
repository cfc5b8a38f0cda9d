#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "estuary/pass/manager.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;

// Counts its runs; changes nothing.
class CountPass : public Pass {
 public:
  explicit CountPass(int* runs) : runs_(runs) {}
  PassResult run(Graph&, PassContext&) override {
    ++*runs_;
    return {};
  }

 private:
  int* runs_;
};

// Erases one unused node per run: a group of it reaches its fixed point once none is left.
class EraseOnePass : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override {
    for (Node* node = graph.lastNode(); node; node = node->prev()) {
      if (!node->output()->hasUses()) {
        graph.eraseNode(node);
        return {1};
      }
    }
    return {0};
  }
};

// Claims a change every time, so a group of it never converges.
class ChurnPass : public Pass {
 public:
  PassResult run(Graph&, PassContext&) override { return {1}; }
};

// Breaks the IR: moves the last node in front of the node defining its operand.
class CorruptPass : public Pass {
 public:
  PassResult run(Graph& graph, PassContext&) override {
    graph.lastNode()->moveBefore(graph.firstNode());
    return {1};
  }
};

class ThrowPass : public Pass {
 public:
  explicit ThrowPass(bool estuary_error) : estuary_error_(estuary_error) {}
  PassResult run(Graph&, PassContext&) override {
    if (estuary_error_) raise("node #3 (Neg): cannot fold");
    throw std::out_of_range("vector::at");
  }

 private:
  bool estuary_error_;
};

// Environment variables set for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

class PassManagerTest : public testing::Test {
 protected:
  PassManagerTest() {
    auto add = [&](std::string name, std::function<std::unique_ptr<Pass>(const PassOptions&)> factory,
                   std::vector<OptionSpec> options = {}) {
      PassInfo info;
      info.name = std::move(name);
      info.options = std::move(options);
      info.factory = std::move(factory);
      registry_.add(std::move(info));
    };
    add("count", [this](const PassOptions&) { return std::make_unique<CountPass>(&count_runs_); });
    add("other", [this](const PassOptions&) { return std::make_unique<CountPass>(&other_runs_); });
    add("erase-one", [](const PassOptions&) { return std::make_unique<EraseOnePass>(); });
    add("churn", [](const PassOptions&) { return std::make_unique<ChurnPass>(); });
    add("corrupt", [](const PassOptions&) { return std::make_unique<CorruptPass>(); });
    add("throw", [](const PassOptions& options) {
      return std::make_unique<ThrowPass>(options.getBool("estuary_error"));
    }, {{"estuary_error", OptionSpec::Kind::Bool, true, ""}});
    dump_dir_ = fs::temp_directory_path() /
                ("estuary_manager_test_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dump_dir_);
  }
  ~PassManagerTest() override { fs::remove_all(dump_dir_); }

  Pipeline yaml(const std::string& text) {
    return parsePipelineYaml(text, "test.yaml", ".", registry_);
  }
  std::unique_ptr<PassManager> manager(const std::string& text) {
    auto result = std::make_unique<PassManager>(yaml(text), registry_);
    result->setLog(&log_);
    return result;
  }

  // x -> Neg -> Neg -> ... -> output, plus `dead` unused Neg nodes of x.
  static std::unique_ptr<Graph> chain(int length, int dead = 0) {
    auto graph = std::make_unique<Graph>("main");
    TensorType type(DType::F32, Shape::ofStatic({4}));
    Value* value = graph->addInput("x", type);
    Value* x = value;
    for (int i = 0; i < length; ++i) {
      Node* node = graph->createNode("Neg", {value});
      node->output()->setType(type);
      value = node->output();
    }
    for (int i = 0; i < dead; ++i) graph->createNode("Neg", {x})->output()->setType(type);
    graph->addOutput(value);
    return graph;
  }

  std::string errorOfRun(PassManager& pass_manager, Graph& graph) {
    try {
      pass_manager.run(graph);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }

  PassRegistry registry_;
  int count_runs_ = 0;
  int other_runs_ = 0;
  std::ostringstream log_;
  fs::path dump_dir_;
};

TEST_F(PassManagerTest, RecordsTimeChangesAndNodeCountsPerPassRun) {
  auto graph = chain(3, 2);
  auto pm = manager("passes: [count, erase-one, erase-one, other]\n");
  pm->run(*graph);
  const std::vector<PassRecord>& records = pm->records();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].name, "count");
  EXPECT_EQ(records[0].changes, 0);
  EXPECT_EQ(records[0].nodes_before, 5u);
  EXPECT_EQ(records[0].nodes_after, 5u);
  EXPECT_EQ(records[1].name, "erase-one");
  EXPECT_EQ(records[1].changes, 1);
  EXPECT_EQ(records[1].nodes_after, 4u);
  EXPECT_EQ(records[2].nodes_before, 4u);
  EXPECT_EQ(records[2].nodes_after, 3u);
  for (const PassRecord& record : records) {
    EXPECT_GE(record.seconds, 0.0);
    EXPECT_TRUE(record.group.empty());
    EXPECT_EQ(record.iteration, 0);
  }
  EXPECT_EQ(pm->totalChanges(), 2);
  EXPECT_EQ(count_runs_, 1);
  EXPECT_EQ(other_runs_, 1);

  // A second run starts a fresh record.
  pm->run(*graph);
  EXPECT_EQ(pm->records().size(), 4u);
  EXPECT_EQ(pm->totalChanges(), 0);
}

TEST_F(PassManagerTest, GroupRepeatsUntilAnIterationChangesNothing) {
  auto graph = chain(2, 3);
  auto pm = manager("passes:\n  - group: cleanup\n    passes: [erase-one, count]\n  - other\n");
  pm->run(*graph);
  // Three iterations erase one dead node each; the fourth finds none and stops the group.
  EXPECT_EQ(count_runs_, 4);
  EXPECT_EQ(other_runs_, 1);
  EXPECT_EQ(graph->numNodes(), 2u);
  ASSERT_EQ(pm->groupRecords().size(), 1u);
  EXPECT_EQ(pm->groupRecords()[0].name, "cleanup");
  EXPECT_EQ(pm->groupRecords()[0].iterations, 4);
  EXPECT_TRUE(pm->groupRecords()[0].converged);
  EXPECT_EQ(pm->records()[0].group, "cleanup");
  EXPECT_EQ(pm->records()[0].iteration, 1);
  EXPECT_EQ(pm->records()[6].iteration, 4);
  EXPECT_TRUE(pm->warnings().empty());
}

TEST_F(PassManagerTest, GroupStopsAtMaxIterationsWithAWarning) {
  auto graph = chain(1);
  auto pm = manager("passes:\n  - group: spin\n    max_iterations: 3\n    passes: [churn, count]\n");
  pm->run(*graph);
  EXPECT_EQ(count_runs_, 3);
  ASSERT_EQ(pm->groupRecords().size(), 1u);
  EXPECT_FALSE(pm->groupRecords()[0].converged);
  ASSERT_EQ(pm->warnings().size(), 1u);
  EXPECT_THAT(pm->warnings()[0],
              HasSubstr("test.yaml:2:12: group 'spin' did not reach a fixed point in 3 iterations"));
  EXPECT_THAT(log_.str(), HasSubstr("group 'spin' did not reach a fixed point"));
}

TEST_F(PassManagerTest, NestedGroupsIterateInsideTheOuterGroup) {
  auto graph = chain(1, 2);
  auto pm = manager(
      "passes:\n  - group: outer\n    passes:\n      - group: inner\n        passes: [erase-one]\n"
      "      - count\n");
  pm->run(*graph);
  // Outer iteration 1: inner erases 2 nodes in 3 iterations; outer iteration 2 changes nothing.
  EXPECT_EQ(count_runs_, 2);
  ASSERT_EQ(pm->groupRecords().size(), 3u);
  EXPECT_EQ(pm->groupRecords()[0].iterations, 3);
  EXPECT_EQ(pm->groupRecords()[1].iterations, 1);
  EXPECT_EQ(pm->groupRecords()[2].name, "outer");
  EXPECT_EQ(pm->groupRecords()[2].iterations, 2);
}

TEST_F(PassManagerTest, EnabledFalseSkipsPassesAndGroups) {
  auto graph = chain(1, 1);
  auto pm = manager(
      "passes:\n  - pass: count\n    enabled: false\n  - group: g\n    enabled: no\n"
      "    passes: [erase-one]\n  - other\n");
  pm->run(*graph);
  EXPECT_EQ(count_runs_, 0);
  EXPECT_EQ(other_runs_, 1);
  EXPECT_EQ(graph->numNodes(), 2u);
  ASSERT_EQ(pm->records().size(), 1u);
}

TEST_F(PassManagerTest, SwitchesOverrideThePipeline) {
  auto graph = chain(1);
  auto pm = manager("passes:\n  - pass: count\n    enabled: false\n  - other\n");
  pm->applySwitches({{"count", true}, {"other", false}});
  pm->run(*graph);
  EXPECT_EQ(count_runs_, 1);
  EXPECT_EQ(other_runs_, 0);
  pm->setEnabled("other", true);
  pm->run(*graph);
  EXPECT_EQ(other_runs_, 1);
}

TEST_F(PassManagerTest, SwitchFileFromDisk) {
  fs::create_directories(dump_dir_);
  fs::path file = dump_dir_ / "switches.yaml";
  std::ofstream(file) << "# like ATC's fusion switch file\ncount: on\nother: off\n";
  auto graph = chain(1);
  auto pm = manager("passes:\n  - pass: count\n    enabled: false\n  - other\n");
  pm->applySwitches(loadPassSwitchFile(file.string()));
  pm->run(*graph);
  EXPECT_EQ(count_runs_, 1);
  EXPECT_EQ(other_runs_, 0);
  std::ofstream(file) << "count: on\nohter: off\n";
  try {
    pm->applySwitches(loadPassSwitchFile(file.string()));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot switch 'ohter'"));
  }
}

TEST_F(PassManagerTest, SwitchingAGroupOffSkipsItsPasses) {
  auto graph = chain(1, 1);
  auto pm = manager("passes:\n  - group: cleanup\n    passes: [erase-one]\n");
  pm->setEnabled("cleanup", false);
  pm->run(*graph);
  EXPECT_EQ(graph->numNodes(), 2u);
}

TEST_F(PassManagerTest, SwitchingARegisteredPassOutsideThePipelineIsAccepted) {
  auto pm = manager("passes: [count]\n");
  EXPECT_NO_THROW(pm->setEnabled("churn", false));
}

TEST_F(PassManagerTest, SwitchingAnUnknownNameSuggestsCloseNames) {
  auto pm = manager("passes:\n  - group: cleanup\n    passes: [count]\n");
  try {
    pm->setEnabled("cleanpu", false);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot switch 'cleanpu': no pass or group has that name; did you mean: cleanup"));
  }
}

TEST_F(PassManagerTest, DisablePassesFromTheEnvironment) {
  ScopedEnv env("ESTUARY_DISABLE_PASSES", "count, other");
  auto graph = chain(1);
  auto pm = manager("passes: [count, other, erase-one]\n");
  pm->run(*graph);
  EXPECT_EQ(count_runs_, 0);
  EXPECT_EQ(other_runs_, 0);
  EXPECT_EQ(pm->records().size(), 1u);
}

TEST_F(PassManagerTest, UnknownNameInTheEnvironmentIsAnError) {
  ScopedEnv env("ESTUARY_DISABLE_PASSES", "cout");
  try {
    manager("passes: [count]\n");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("ESTUARY_DISABLE_PASSES: cannot switch 'cout'"));
    EXPECT_THAT(error.what(), HasSubstr("did you mean: count"));
  }
}

TEST_F(PassManagerTest, OptionErrorsNameThePipelineLocation) {
  Pipeline pipeline = yaml("passes: [count]\n");
  pipeline.steps.push_back(PipelineStep::pass("throw", {{"estuary_error", int64_t{1}}}));
  pipeline.steps.back().origin = "test.yaml:7:5";
  try {
    PassManager pm(pipeline, registry_);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("test.yaml:7:5: pass 'throw': option 'estuary_error' expects a bool"));
  }
  Pipeline bad_group;
  bad_group.steps.push_back(PipelineStep::group("g", {PipelineStep::pass("count")}, 0));
  EXPECT_THROW(PassManager(bad_group, registry_), Error);
}

TEST_F(PassManagerTest, DebugDumpsIrBeforeAndAfterEachPass) {
  ScopedEnv debug("ESTUARY_DEBUG", "1");
  ScopedEnv dir("ESTUARY_DUMP_DIR", dump_dir_.string());
  fs::create_directories(dump_dir_);
  std::ofstream(dump_dir_ / "009_after_stale.est") << "old";
  std::ofstream(dump_dir_ / "notes.txt") << "kept";
  auto graph = chain(2, 1);
  auto pm = manager("passes:\n  - count\n  - group: g\n    passes: [erase-one]\n");
  EXPECT_TRUE(pm->debug());
  EXPECT_TRUE(pm->verifies());
  pm->run(*graph);
  std::vector<std::string> expected = {"001_before_count.est",     "001_after_count.est",
                                       "002_before_erase-one.est", "002_after_erase-one.est",
                                       "003_before_erase-one.est", "003_after_erase-one.est"};
  ASSERT_EQ(pm->dumpFiles().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(fs::path(pm->dumpFiles()[i]).filename().string(), expected[i]);
    EXPECT_TRUE(fs::exists(dump_dir_ / expected[i])) << expected[i];
  }
  EXPECT_FALSE(fs::exists(dump_dir_ / "009_after_stale.est"));
  EXPECT_TRUE(fs::exists(dump_dir_ / "notes.txt"));
  // The dumps are IR text: before the erase there are 3 nodes, after it 2.
  auto read = [&](const std::string& name) {
    std::ifstream in(dump_dir_ / name);
    std::stringstream text;
    text << in.rdbuf();
    return parseGraph(text.str(), name);
  };
  EXPECT_EQ(read("002_before_erase-one.est")->numNodes(), 3u);
  EXPECT_EQ(read("002_after_erase-one.est")->numNodes(), 2u);
}

TEST_F(PassManagerTest, PipelineDebugSettingDumpsWithoutTheEnvironment) {
  auto graph = chain(1);
  auto pm = manager("settings:\n  debug: true\n  dump_dir: " + dump_dir_.string() + "\npasses: [count]\n");
  pm->run(*graph);
  EXPECT_TRUE(fs::exists(dump_dir_ / "001_before_count.est"));
  EXPECT_TRUE(fs::exists(dump_dir_ / "001_after_count.est"));
}

TEST_F(PassManagerTest, NoDumpsOutsideDebugRuns) {
  auto graph = chain(1);
  auto pm = manager("passes: [count]\n");
  pm->setDumpDir(dump_dir_.string());
  EXPECT_FALSE(pm->debug());
  pm->run(*graph);
  EXPECT_TRUE(pm->dumpFiles().empty());
  EXPECT_FALSE(fs::exists(dump_dir_));
}

TEST_F(PassManagerTest, VerificationNamesThePassThatBrokeTheIr) {
  auto graph = chain(3);
  auto pm = manager("passes:\n  - count\n  - corrupt\n  - other\n");
  pm->setVerify(true);
  std::string message = errorOfRun(*pm, *graph);
  EXPECT_THAT(message, HasSubstr("pass 'corrupt' (test.yaml:3:5) left invalid IR: "));
  EXPECT_EQ(other_runs_, 0);
}

TEST_F(PassManagerTest, DebugRunsVerifyToo) {
  auto graph = chain(3);
  auto pm = manager("passes: [corrupt]\n");
  pm->setDebug(true);
  pm->setDumpDir(dump_dir_.string());
  EXPECT_THAT(errorOfRun(*pm, *graph), HasSubstr("pass 'corrupt' (test.yaml:1:10) left invalid IR"));
  // The broken graph was dumped for inspection before verification stopped the run.
  EXPECT_TRUE(fs::exists(dump_dir_ / "001_after_corrupt.est"));
}

TEST_F(PassManagerTest, WithoutVerificationACorruptingPassGoesUnnoticed) {
  auto graph = chain(3);
  auto pm = manager("passes: [corrupt, other]\n");
  EXPECT_FALSE(pm->verifies());
  EXPECT_NO_THROW(pm->run(*graph));
  EXPECT_EQ(other_runs_, 1);
}

TEST_F(PassManagerTest, InvalidInputIsBlamedOnTheInputNotAPass) {
  auto graph = chain(3);
  graph->lastNode()->moveBefore(graph->firstNode());
  auto pm = manager("passes: [count]\n");
  pm->setVerify(true);
  EXPECT_THAT(errorOfRun(*pm, *graph),
              HasSubstr("the input graph fails verification before any pass ran"));
  EXPECT_EQ(count_runs_, 0);
}

TEST_F(PassManagerTest, FailingPassIsNamed) {
  auto graph = chain(1);
  auto pm = manager("passes:\n  - count\n  - throw\n");
  EXPECT_THAT(errorOfRun(*pm, *graph),
              HasSubstr("pass 'throw' (test.yaml:3:5) failed: node #3 (Neg): cannot fold"));
  auto internal = manager("passes:\n  - pass: throw\n    options: {estuary_error: false}\n");
  EXPECT_THAT(errorOfRun(*internal, *graph),
              HasSubstr("pass 'throw' (test.yaml:2:11) failed with an internal error: vector::at"));
}

TEST_F(PassManagerTest, TimingReportHasOneRowPerEntry) {
  auto graph = chain(2, 2);
  auto pm = manager(
      "name: demo\npasses:\n  - count\n  - group: cleanup\n    passes: [erase-one]\n"
      "  - pass: other\n    enabled: false\n");
  pm->run(*graph);
  std::ostringstream report;
  pm->printTimingReport(report);
  std::string text = report.str();
  EXPECT_THAT(text, HasSubstr("Pass timing, pipeline 'demo'"));
  EXPECT_THAT(text, testing::ContainsRegex("\n  count +1 +[0-9.]+ +[0-9.]+% +0   4 -> 4\n"));
  EXPECT_THAT(text, HasSubstr("group cleanup"));
  EXPECT_THAT(text, HasSubstr("3 iterations"));
  EXPECT_THAT(text, testing::ContainsRegex("\n    erase-one +3 +[0-9.]+ +[0-9.]+% +2   4 -> 2\n"));
  EXPECT_THAT(text, testing::ContainsRegex("\n  other +0   \\(off\\)\n"));
  EXPECT_THAT(text, testing::ContainsRegex("\n  total +4 +[0-9.]+ +100.0% +2   4 -> 2\n"));
}

}  // namespace
}  // namespace estuary
