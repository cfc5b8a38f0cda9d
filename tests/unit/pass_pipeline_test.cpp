#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "estuary/pass/pipeline.h"
#include "estuary/support/error.h"

namespace estuary {
namespace {

using testing::HasSubstr;

class NoOpPass : public Pass {
 public:
  PassResult run(Graph&, PassContext&) override { return {}; }
};

PassInfo testPass(std::string name, std::vector<OptionSpec> options = {}) {
  PassInfo info;
  info.name = std::move(name);
  info.options = std::move(options);
  info.factory = [](const PassOptions&) { return std::make_unique<NoOpPass>(); };
  return info;
}

class PipelineYaml : public testing::Test {
 protected:
  PipelineYaml() {
    registry_.add(testPass("canonicalize", {{"disable", OptionSpec::Kind::StringList,
                                             std::vector<std::string>{}, ""}}));
    registry_.add(testPass("cse"));
    registry_.add(testPass("dce"));
    registry_.add(testPass("tile", {{"depth", OptionSpec::Kind::Int, int64_t{2}, ""},
                                    {"ratio", OptionSpec::Kind::Float, 1.0, ""},
                                    {"exact", OptionSpec::Kind::Bool, false, ""},
                                    {"mode", OptionSpec::Kind::String, std::string("a"), ""}}));
  }

  Pipeline parse(const std::string& yaml) { return parsePipelineYaml(yaml, "test.yaml", ".", registry_); }

  std::string errorOf(const std::string& yaml) {
    try {
      parse(yaml);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }

  PassRegistry registry_;
};

TEST_F(PipelineYaml, ParsesPassesGroupsOptionsAndSettings) {
  Pipeline pipeline = parse(R"(name: custom
description: a test pipeline
settings:
  debug: true
  verify: yes
  dump_dir: /tmp/dumps
passes:
  - cse
  - pass: tile
    options:
      depth: 5
      ratio: 2
      exact: on
      mode: "3"
  - pass: dce
    enabled: false
  - group: simplify
    max_iterations: 3
    passes:
      - pass: canonicalize
        options: {disable: [identity, cast]}
      - group: inner
        passes: [cse]
)");
  EXPECT_EQ(pipeline.name, "custom");
  EXPECT_EQ(pipeline.source, "test.yaml");
  EXPECT_TRUE(pipeline.settings.debug);
  EXPECT_TRUE(pipeline.settings.verify);
  EXPECT_EQ(pipeline.settings.dump_dir, "/tmp/dumps");
  ASSERT_EQ(pipeline.steps.size(), 4u);
  EXPECT_EQ(pipeline.steps[0].name, "cse");
  EXPECT_EQ(pipeline.steps[0].origin, "test.yaml:8:5");
  const PipelineStep& tile = pipeline.steps[1];
  EXPECT_EQ(std::get<int64_t>(tile.options.at("depth")), 5);
  EXPECT_DOUBLE_EQ(std::get<double>(tile.options.at("ratio")), 2.0);
  EXPECT_TRUE(std::get<bool>(tile.options.at("exact")));
  EXPECT_EQ(std::get<std::string>(tile.options.at("mode")), "3");
  EXPECT_FALSE(pipeline.steps[2].enabled);
  const PipelineStep& group = pipeline.steps[3];
  EXPECT_EQ(group.kind, PipelineStep::Kind::Group);
  EXPECT_EQ(group.name, "simplify");
  EXPECT_EQ(group.max_iterations, 3);
  ASSERT_EQ(group.steps.size(), 2u);
  EXPECT_EQ(std::get<std::vector<std::string>>(group.steps[0].options.at("disable")),
            (std::vector<std::string>{"identity", "cast"}));
  EXPECT_EQ(group.steps[1].kind, PipelineStep::Kind::Group);
  EXPECT_EQ(group.steps[1].max_iterations, 10);
}

TEST_F(PipelineYaml, NameDefaultsToTheFileStem) {
  Pipeline pipeline = parsePipelineYaml("passes: [cse]", "configs/fast.yaml", ".", registry_);
  EXPECT_EQ(pipeline.name, "fast");
  EXPECT_EQ(pipeline.settings.dump_dir, "estuary_dump");
  EXPECT_FALSE(pipeline.settings.debug);
}

TEST_F(PipelineYaml, SyntaxErrorNamesFileLineAndColumn) {
  EXPECT_THAT(errorOf("passes:\n  - cse\n  - [dce\n"), HasSubstr("test.yaml:4:1: invalid YAML"));
  EXPECT_THAT(errorOf("passes: [cse\nname: x\n"), testing::MatchesRegex("test\\.yaml:[0-9]+:[0-9]+: invalid YAML: .*"));
}

TEST_F(PipelineYaml, UnknownTopLevelKey) {
  EXPECT_THAT(errorOf("name: x\npases: [cse]\n"),
              HasSubstr("test.yaml:2:1: unknown key 'pases' in the pipeline; valid keys: name, "
                        "description, plugins, settings, passes"));
}

TEST_F(PipelineYaml, UnknownKeysInEntriesAndSettings) {
  EXPECT_THAT(errorOf("passes:\n  - pass: cse\n    enable: false\n"),
              HasSubstr("test.yaml:3:5: unknown key 'enable' in a pass entry; valid keys: pass, "
                        "options, enabled"));
  EXPECT_THAT(errorOf("passes:\n  - group: g\n    iterations: 3\n    passes: [cse]\n"),
              HasSubstr("test.yaml:3:5: unknown key 'iterations' in a group entry"));
  EXPECT_THAT(errorOf("settings:\n  dump: x\npasses: [cse]\n"),
              HasSubstr("test.yaml:2:3: unknown key 'dump' in 'settings'; valid keys: debug, "
                        "dump_dir, verify"));
}

TEST_F(PipelineYaml, UnknownPassSuggestsCloseNames) {
  EXPECT_THAT(errorOf("passes:\n  - cse\n  - canonicalise\n"),
              HasSubstr("test.yaml:3:5: unknown pass 'canonicalise'; did you mean: canonicalize"));
  EXPECT_THAT(errorOf("passes:\n  - pass: dse\n"),
              HasSubstr("test.yaml:2:11: unknown pass 'dse'; did you mean: cse, dce"));
}

TEST_F(PipelineYaml, UnknownOptionListsTheValidOnes) {
  EXPECT_THAT(errorOf("passes:\n  - pass: tile\n    options:\n      deep: 3\n"),
              HasSubstr("test.yaml:4:7: pass 'tile' has no option 'deep'; its options are: depth "
                        "(int), ratio (float), exact (bool), mode (string)"));
  EXPECT_THAT(errorOf("passes:\n  - pass: cse\n    options: {x: 1}\n"),
              HasSubstr("pass 'cse' has no option 'x'; it takes no options"));
}

TEST_F(PipelineYaml, OptionOfTheWrongKindNamesTheExpectedKind) {
  EXPECT_THAT(errorOf("passes:\n  - pass: tile\n    options:\n      depth: deep\n"),
              HasSubstr("test.yaml:4:14: pass 'tile': option 'depth' expects an int, got 'deep'"));
  EXPECT_THAT(errorOf("passes:\n  - pass: tile\n    options: {ratio: [1]}\n"),
              HasSubstr("option 'ratio' expects a float, got a list"));
  EXPECT_THAT(errorOf("passes:\n  - pass: tile\n    options: {exact: 2}\n"),
              HasSubstr("option 'exact' expects a bool, got '2'"));
  EXPECT_THAT(errorOf("passes:\n  - pass: canonicalize\n    options: {disable: cast}\n"),
              HasSubstr("option 'disable' expects a list of strings, got 'cast'"));
  EXPECT_THAT(errorOf("passes:\n  - pass: canonicalize\n    options: {disable: [[a]]}\n"),
              HasSubstr("option 'disable' expects a list of strings, got a list"));
}

TEST_F(PipelineYaml, MalformedEntries) {
  EXPECT_THAT(errorOf("passes:\n  - pass: cse\n    group: g\n"),
              HasSubstr("test.yaml:2:5: a pipeline entry mapping needs exactly one of 'pass'"));
  EXPECT_THAT(errorOf("passes:\n  - options: {}\n"), HasSubstr("needs exactly one of 'pass'"));
  EXPECT_THAT(errorOf("passes:\n  - [cse]\n"),
              HasSubstr("test.yaml:2:5: a pipeline entry must be a pass name or a mapping"));
  EXPECT_THAT(errorOf("passes:\n  - pass: [cse]\n"), HasSubstr("a pass name must be a single value"));
  EXPECT_THAT(errorOf("passes:\n  - pass: cse\n    enabled: sometimes\n"),
              HasSubstr("test.yaml:3:14: 'enabled' must be true or false"));
  EXPECT_THAT(errorOf("passes: cse\n"), HasSubstr("test.yaml:1:9: 'passes' must be a list"));
  EXPECT_THAT(errorOf("passes:\n  - pass: cse\n    pass: dce\n"),
              HasSubstr("test.yaml:3:5: duplicate key 'pass' in a pass entry"));
}

TEST_F(PipelineYaml, MalformedGroups) {
  EXPECT_THAT(errorOf("passes:\n  - group: g\n"),
              HasSubstr("test.yaml:2:5: group 'g' needs a non-empty 'passes' list"));
  EXPECT_THAT(errorOf("passes:\n  - group: g\n    passes: []\n"),
              HasSubstr("group 'g' needs a non-empty 'passes' list"));
  EXPECT_THAT(errorOf("passes:\n  - group: g\n    max_iterations: 0\n    passes: [cse]\n"),
              HasSubstr("test.yaml:3:21: 'max_iterations' must be a positive integer"));
  EXPECT_THAT(errorOf("passes:\n  - group: g\n    passes: [cse, nope]\n"),
              HasSubstr("test.yaml:3:19: unknown pass 'nope'"));
}

TEST_F(PipelineYaml, MalformedDocuments) {
  EXPECT_THAT(errorOf(""), HasSubstr("test.yaml: a pipeline must be a mapping with a 'passes' list"));
  EXPECT_THAT(errorOf("- cse\n"), HasSubstr("a pipeline must be a mapping"));
  EXPECT_THAT(errorOf("name: x\n"), HasSubstr("test.yaml: the pipeline has no 'passes' list"));
  EXPECT_THAT(errorOf("name: x\nname: y\npasses: [cse]\n"),
              HasSubstr("test.yaml:2:1: duplicate key 'name' in the pipeline"));
  EXPECT_THAT(errorOf("plugins: fusion\npasses: [cse]\n"),
              HasSubstr("test.yaml:1:10: 'plugins' must be a list of plugin names or paths"));
  EXPECT_THAT(errorOf("settings:\n  debug: 3\npasses: [cse]\n"),
              HasSubstr("test.yaml:2:10: 'debug' must be true or false"));
  EXPECT_THAT(errorOf("settings:\n  dump_dir: \"\"\npasses: [cse]\n"),
              HasSubstr("test.yaml:2:13: 'dump_dir' is empty"));
  EXPECT_THAT(errorOf("settings: [debug]\npasses: [cse]\n"),
              HasSubstr("test.yaml:1:11: 'settings' must be a mapping"));
}

std::string writeTemp(const std::string& name, const std::string& text) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "estuary_pipeline_test";
  std::filesystem::create_directories(dir);
  std::filesystem::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST_F(PipelineYaml, LoadFileReportsTheFilePath) {
  std::string path = writeTemp("broken.yaml", "passes:\n  - cse\n  - tile: {depth: 1}\n");
  try {
    loadPipelineFile(path, registry_);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr(path + ":3:5: a pipeline entry mapping needs exactly one"));
  }
  std::string good = writeTemp("good.yaml", "passes: [cse, dce]\n");
  Pipeline pipeline = loadPipelineFile(good, registry_);
  EXPECT_EQ(pipeline.name, "good");
  EXPECT_EQ(pipeline.base_dir, std::filesystem::path(good).parent_path().string());
  EXPECT_EQ(pipeline.steps.size(), 2u);
}

TEST_F(PipelineYaml, MissingFile) {
  try {
    loadPipelineFile("/nonexistent/O9.yaml", registry_);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("/nonexistent/O9.yaml: cannot open the pipeline file"));
  }
}

TEST_F(PipelineYaml, PassListWithOptions) {
  Pipeline pipeline =
      parsePassList(" cse, tile{depth=3, exact=true}, canonicalize{disable=[identity, cast]},dce", registry_);
  ASSERT_EQ(pipeline.steps.size(), 4u);
  EXPECT_EQ(pipeline.steps[0].name, "cse");
  EXPECT_EQ(std::get<int64_t>(pipeline.steps[1].options.at("depth")), 3);
  EXPECT_TRUE(std::get<bool>(pipeline.steps[1].options.at("exact")));
  EXPECT_EQ(std::get<std::vector<std::string>>(pipeline.steps[2].options.at("disable")),
            (std::vector<std::string>{"identity", "cast"}));
  EXPECT_EQ(pipeline.steps[3].name, "dce");
}

TEST_F(PipelineYaml, PassListErrors) {
  auto errorOfList = [&](const std::string& list) {
    try {
      parsePassList(list, registry_);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(errorOfList("cse,,dce"), HasSubstr("empty pass name"));
  EXPECT_THAT(errorOfList("cse, dcee"), HasSubstr("unknown pass 'dcee'; did you mean: dce"));
  EXPECT_THAT(errorOfList("tile{depth=x}"), HasSubstr("option 'depth' expects an int, got 'x'"));
  EXPECT_THAT(errorOfList("tile{deep=1}"), HasSubstr("pass 'tile' has no option 'deep'; its options are"));
  EXPECT_THAT(errorOfList("tile{depth}"), HasSubstr("option 'depth' of pass 'tile' needs a value"));
  EXPECT_THAT(errorOfList("tile{depth=1"), HasSubstr("lacks a closing '}'"));
}

TEST(PassSwitchFile, ReadsOnAndOff) {
  std::string path = writeTemp("switches.yaml", "# switches\ncse: off\ncanonicalize: on\n");
  std::map<std::string, bool> switches = loadPassSwitchFile(path);
  EXPECT_EQ(switches, (std::map<std::string, bool>{{"canonicalize", true}, {"cse", false}}));
  EXPECT_TRUE(loadPassSwitchFile(writeTemp("empty.yaml", "# nothing switched\n")).empty());
}

TEST(PassSwitchFile, Errors) {
  auto errorOfFile = [](const std::string& name, const std::string& text) {
    std::string path = writeTemp(name, text);
    try {
      loadPassSwitchFile(path);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(errorOfFile("bad1.yaml", "cse: maybe\n"), HasSubstr("bad1.yaml:1:6: switch 'cse' must be on or off"));
  EXPECT_THAT(errorOfFile("bad2.yaml", "- cse\n"), HasSubstr("bad2.yaml: a pass switch file must map pass names"));
  EXPECT_THAT(errorOfFile("bad3.yaml", "cse: off\ncse: on\n"), HasSubstr("bad3.yaml:2:1: duplicate key 'cse'"));
  EXPECT_THAT(errorOfFile("bad4.yaml", "cse: [off\n"), HasSubstr("bad4.yaml:2:1: invalid YAML"));
  EXPECT_THAT([] {
    try {
      loadPassSwitchFile("/nonexistent/switches.yaml");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  }(), HasSubstr("cannot open the pass switch file"));
}

}  // namespace
}  // namespace estuary

namespace estuary {
namespace {

std::string pipelineError(const std::string& yaml) {
  try {
    parsePipelineYaml(yaml, "plugins.yaml", ESTUARY_SOURCE_DIR "/configs");
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(PipelinePlugins, AreLoadedBeforeTheirPassesAreLookedUp) {
  Pipeline pipeline = parsePipelineYaml(
      "plugins: [fusion_add_rms_norm]\npasses:\n  - pass: fuse_add_rms_norm\n"
      "    options: {last_dim_multiple_of: 16}\n",
      "plugins.yaml", ESTUARY_SOURCE_DIR "/configs");
  EXPECT_EQ(pipeline.plugins, std::vector<std::string>{"fusion_add_rms_norm"});
  ASSERT_EQ(pipeline.steps.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(pipeline.steps[0].options.at("last_dim_multiple_of")), 16);
}

TEST(PipelinePlugins, AMissingPluginNamesTheYamlLineAndThePlugin) {
  std::string message = pipelineError("passes: [dce]\nplugins:\n  - fusion_nonexistent\n");
  EXPECT_THAT(message, HasSubstr("plugins.yaml:3:5: "));
  EXPECT_THAT(message, HasSubstr("fusion_nonexistent"));
}

TEST(PipelinePlugins, APluginPathThatIsNotASharedObjectIsRefused) {
  // A path relative to the pipeline's directory: this README is there but is no plugin.
  std::string message = pipelineError("plugins: [./README.md]\npasses: [dce]\n");
  EXPECT_THAT(message, HasSubstr("plugins.yaml:1:11: "));
  EXPECT_THAT(message, HasSubstr("README.md"));
}

TEST(PipelinePlugins, PipelinesBuiltInCodeLoadTheirPluginsOnRequest) {
  Pipeline pipeline;
  pipeline.base_dir = ESTUARY_SOURCE_DIR "/configs";
  pipeline.plugins = {"fusion_add_rms_norm"};
  loadPipelinePlugins(pipeline);
  EXPECT_NE(PassRegistry::global().find("fuse_add_rms_norm"), nullptr);
  pipeline.plugins = {"fusion_missing"};
  EXPECT_THROW(loadPipelinePlugins(pipeline), Error);
}

TEST(ShippedPipelines, AllLoadWithTheCoreAndPluginPasses) {
  for (const char* name : {"O0", "O1", "O2", "debug"}) {
    Pipeline pipeline = loadPipelineFile(std::string(ESTUARY_SOURCE_DIR) + "/configs/" + name + ".yaml");
    EXPECT_EQ(pipeline.name, name);
    EXPECT_FALSE(pipeline.steps.empty());
  }
  Pipeline debug = loadPipelineFile(ESTUARY_SOURCE_DIR "/configs/debug.yaml");
  EXPECT_TRUE(debug.settings.debug);
  EXPECT_TRUE(debug.settings.verify);
}

}  // namespace
}  // namespace estuary
