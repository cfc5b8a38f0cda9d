// The plugin loader: finding plugins, the version handshake, refusals, all-or-nothing
// registration, and libraries kept loaded by what they created.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "estuary/frontend/node_context.h"
#include "estuary/ops/schema.h"
#include "estuary/pass/pass.h"
#include "estuary/plugin/loader.h"
#include "estuary/plugin/plugin.h"
#include "estuary/text/parser.h"
#include "error_of.h"

namespace estuary {
namespace {

namespace fs = std::filesystem;

const std::string kTestPluginDir = ESTUARY_BINARY_DIR "/tests/plugins";

std::string testPlugin(const std::string& name) {
  return kTestPluginDir + "/" + PluginLoader::fileNameFor(name);
}

std::string canonical(const std::string& path) { return fs::canonical(path).string(); }

bool isLoaded(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

// Sets ESTUARY_PLUGIN_PATH for one scope.
class PluginPathScope {
 public:
  explicit PluginPathScope(const char* value) {
    if (const char* old = std::getenv("ESTUARY_PLUGIN_PATH")) old_ = old, had_ = true;
    if (value) setenv("ESTUARY_PLUGIN_PATH", value, 1); else unsetenv("ESTUARY_PLUGIN_PATH");
  }
  ~PluginPathScope() {
    if (had_) setenv("ESTUARY_PLUGIN_PATH", old_.c_str(), 1); else unsetenv("ESTUARY_PLUGIN_PATH");
  }

 private:
  std::string old_;
  bool had_ = false;
};

// A fresh temporary directory, removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::path(::testing::TempDir()) / ("estuary_" + name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

struct Registries {
  OpRegistry ops;
  PassRegistry passes;
  FrontendRegistry frontends;
  ConversionExtensions conversions;
};

TEST(PluginLoader, LoadsAPluginAndReportsWhatItRegistered) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  PluginHandle plugin = loader.load(testPlugin("test_good"));
  EXPECT_EQ(plugin->name(), "test_good");
  EXPECT_EQ(plugin->version(), "1.2.3");
  EXPECT_EQ(plugin->description(), "A plugin for the loader tests");
  EXPECT_EQ(plugin->path(), canonical(testPlugin("test_good")));
  EXPECT_EQ(plugin->passes(), std::vector<std::string>{"test_plugin_mark"});
  EXPECT_EQ(plugin->ops(), std::vector<std::string>{"test_plugin::Twice"});
  ASSERT_NE(r.passes.find("test_plugin_mark"), nullptr);
  ASSERT_NE(r.ops.find("Twice", "test_plugin"), nullptr);
  EXPECT_EQ(loader.loaded(), std::vector<PluginHandle>{plugin});

  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[batch,3]) {
  %a, %b = test_plugin::Twice(%x)
  return %a, %b
})");
  KnownValueMap known;
  EXPECT_EQ(inferNode(*graph->firstNode(), known, r.ops), InferStatus::Changed);
  EXPECT_EQ(graph->output(1)->type().str(), "f32[batch,3]");
  std::shared_ptr<Pass> pass = r.passes.create("test_plugin_mark", {{"name", std::string("x")}});
  PassContext context;
  EXPECT_EQ(pass->run(*graph, context).changes, 1);
  EXPECT_EQ(graph->name(), "x");
}

TEST(PluginLoader, LoadingTheSameFileTwiceIsANoOp) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  PluginHandle first = loader.load(testPlugin("test_good"));
  EXPECT_EQ(loader.load(testPlugin("test_good")), first);
  EXPECT_EQ(loader.load("test_good", kTestPluginDir), first);
  EXPECT_EQ(loader.load("./" + PluginLoader::fileNameFor("test_good"), kTestPluginDir), first);
  EXPECT_EQ(loader.load("plugins/" + PluginLoader::fileNameFor("test_good"),
                        ESTUARY_BINARY_DIR "/tests"),
            first);
  EXPECT_EQ(loader.loaded().size(), 1u);
}

TEST(PluginLoader, RefusesASecondPluginOfTheSameName) {
  TempDir dir("plugin_copy");
  std::string copy = dir.file(PluginLoader::fileNameFor("test_good"));
  fs::copy_file(testPlugin("test_good"), copy);
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  loader.load(testPlugin("test_good"));
  EXPECT_EQ(errorOf([&] { loader.load(copy); }),
            "cannot load plugin " + canonical(copy) +
                ": a plugin named 'test_good' is already loaded from " +
                canonical(testPlugin("test_good")));
}

TEST(PluginLoader, FindsNamesInTheYamlDirThenThePluginPathThenTheInstallDir) {
  TempDir empty("plugin_empty");
  {
    PluginPathScope path(("/nonexistent/dir:" + kTestPluginDir).c_str());
    std::vector<std::string> dirs = PluginLoader::searchDirs(empty.str());
    ASSERT_EQ(dirs.size(), 4u);
    EXPECT_EQ(dirs[0], empty.str());
    EXPECT_EQ(dirs[1], "/nonexistent/dir");
    EXPECT_EQ(dirs[2], kTestPluginDir);
    EXPECT_EQ(dirs[3], PluginLoader::installDir());
    Registries r;
    PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
    EXPECT_EQ(loader.load("test_good", empty.str())->path(), canonical(testPlugin("test_good")));
  }
  {
    // A file name is searched like a plugin name.
    PluginPathScope path(nullptr);
    Registries r;
    PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
    EXPECT_EQ(loader.load(PluginLoader::fileNameFor("test_good"), kTestPluginDir)->name(),
              "test_good");
  }
}

TEST(PluginLoader, TheInstallDirIsBesideTheCoreLibrary) {
  EXPECT_EQ(canonical(PluginLoader::installDir()), canonical(ESTUARY_PLUGIN_DIR));
  PluginPathScope path(nullptr);
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  PluginHandle fusion = loader.load("fusion_add_rms_norm");
  EXPECT_EQ(fusion->path(),
            canonical(std::string(ESTUARY_PLUGIN_DIR) + "/libestuary_fusion_add_rms_norm.so"));
}

TEST(PluginLoader, MissingFilesNameWhereTheyWereLookedFor) {
  PluginPathScope path("/nonexistent/a:/nonexistent/b");
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  EXPECT_EQ(errorOf([&] { loader.load("nope", "/pipelines"); }),
            "plugin 'nope' not found: no file libestuary_nope.so in /pipelines, /nonexistent/a, "
            "/nonexistent/b, " +
                PluginLoader::installDir() +
                " (searched the pipeline's directory, ESTUARY_PLUGIN_PATH and the install "
                "directory; give a path or set ESTUARY_PLUGIN_PATH)");
  EXPECT_EQ(errorOf([&] { loader.load("/nonexistent/libx.so"); }),
            "plugin file '/nonexistent/libx.so' not found");
  EXPECT_EQ(errorOf([&] { loader.load("sub/libx.so", "/pipelines"); }),
            "plugin file '/pipelines/sub/libx.so' not found (given as 'sub/libx.so')");
  EXPECT_EQ(errorOf([&] { loader.load(""); }), "cannot load a plugin with an empty name");
}

TEST(PluginLoader, RefusesFilesThatAreNotSharedObjects) {
  TempDir dir("plugin_bad_files");
  std::string text = dir.file("libestuary_text.so");
  std::ofstream(text) << "this is not a library\n";
  std::string truncated = dir.file("libestuary_truncated.so");
  std::ofstream(truncated, std::ios::binary) << "\x7f" "ELF" << std::string(60, '\x01');
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  EXPECT_EQ(errorOf([&] { loader.load(text); }),
            "cannot load plugin " + canonical(text) + ": not a shared object (no ELF header)");
  std::string error = errorOf([&] { loader.load("truncated", dir.str()); });
  EXPECT_EQ(error.rfind("cannot load plugin " + canonical(truncated) +
                            ": the dynamic loader failed: ",
                        0),
            0u)
      << error;
  // The system loader's reason, not libltdl's blanket "file not found".
  EXPECT_NE(error.find("wrong ELF class"), std::string::npos) << error;
}

TEST(PluginLoader, RefusesASharedObjectWithoutEntryPoint) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  EXPECT_EQ(errorOf([&] { loader.load(testPlugin("test_no_entry")); }),
            "cannot load plugin " + canonical(testPlugin("test_no_entry")) +
                ": no entry point 'estuary_plugin_descriptor': not an Estuary plugin (define one "
                "with ESTUARY_PLUGIN from estuary/plugin/plugin.h)");
}

TEST(PluginLoader, RefusesAnotherAbiVersionBeforeRunningAnyOfItsCode) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  // Its register function aborts the process: reaching it fails the test.
  std::string error = errorOf([&] { loader.load(testPlugin("test_wrong_abi")); });
  EXPECT_EQ(error.rfind("cannot load plugin " + canonical(testPlugin("test_wrong_abi")) +
                            ": plugin ABI version mismatch: this Estuary (",
                        0),
            0u)
      << error;
  std::string versions = ") expects version " + std::to_string(ESTUARY_PLUGIN_ABI_VERSION) +
                         ", the plugin was built for version " +
                         std::to_string(ESTUARY_PLUGIN_ABI_VERSION + 1) +
                         "; rebuild the plugin against this Estuary";
  EXPECT_NE(error.find(versions), std::string::npos) << error;
  EXPECT_TRUE(loader.loaded().empty());
}

TEST(PluginLoader, RefusesBrokenDescriptors) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  // Their register functions abort the process: reaching one fails the test.
  auto refusal = [&](const std::string& name) {
    std::string error = errorOf([&] { loader.load(testPlugin(name)); });
    std::string prefix = "cannot load plugin " + canonical(testPlugin(name)) + ": ";
    EXPECT_EQ(error.rfind(prefix, 0), 0u) << error;
    return error.substr(std::min(prefix.size(), error.size()));
  };
  EXPECT_EQ(refusal("test_bad_null_descriptor"), "its entry point returned no descriptor");
  EXPECT_EQ(refusal("test_bad_descriptor_size"),
            "its descriptor has " + std::to_string(sizeof(EstuaryPluginDescriptor) + 8) +
                " bytes, ABI version " + std::to_string(ESTUARY_PLUGIN_ABI_VERSION) + " has " +
                std::to_string(sizeof(EstuaryPluginDescriptor)));
  EXPECT_EQ(refusal("test_bad_cxx_abi"),
            "C++ runtime mismatch: built with C++ ABI tag " +
                std::to_string(ESTUARY_PLUGIN_CXX_ABI + 1) + ", this Estuary uses " +
                std::to_string(ESTUARY_PLUGIN_CXX_ABI) +
                "; rebuild it with the compiler and standard library Estuary was built with");
  EXPECT_EQ(refusal("test_bad_no_name"), "its descriptor has no name");
  EXPECT_EQ(refusal("test_bad_no_register"), "its descriptor has no register function");
  EXPECT_TRUE(loader.loaded().empty());
}

TEST(PluginLoader, RegistrationThatThrowsRegistersNothing) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  EXPECT_EQ(errorOf([&] { loader.load(testPlugin("test_throws")); }),
            "cannot load plugin " + canonical(testPlugin("test_throws")) +
                ": its registration failed: no accelerator found");
  EXPECT_EQ(errorOf([&] { loader.load(testPlugin("test_throws_int")); }),
            "cannot load plugin " + canonical(testPlugin("test_throws_int")) +
                ": its registration threw an exception that is not a std::exception");
  EXPECT_EQ(r.passes.find("test_thrower_pass"), nullptr);
  EXPECT_TRUE(loader.loaded().empty());
  EXPECT_FALSE(isLoaded(testPlugin("test_throws")));
}

TEST(PluginLoader, NameClashesRegisterNothing) {
  auto noPass = [](const PassOptions&) -> std::unique_ptr<Pass> { return nullptr; };
  {
    Registries r;
    r.ops.add(OpSchema("Clash", "test_plugin").input("x", "T").output("y", "T").typeConstraint("T", allTypes()));
    PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
    EXPECT_EQ(errorOf([&] { loader.load(testPlugin("test_clash")); }),
              "cannot load plugin " + canonical(testPlugin("test_clash")) +
                  ": it registers op test_plugin::Clash, which is already registered");
    EXPECT_EQ(r.passes.find("test_clash_pass"), nullptr);
  }
  {
    Registries r;
    r.passes.add(PassInfo{"test_clash_pass", "taken", {}, noPass});
    PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
    EXPECT_EQ(errorOf([&] { loader.load(testPlugin("test_clash")); }),
              "cannot load plugin " + canonical(testPlugin("test_clash")) +
                  ": it registers pass 'test_clash_pass', which is already registered");
    EXPECT_EQ(r.ops.find("Clash", "test_plugin"), nullptr);
  }
}

TEST(PluginLoader, RefusesAPassWhoseOptionDefaultHasAnotherKind) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  EXPECT_EQ(errorOf([&] { loader.load(testPlugin("test_bad_option")); }),
            "cannot load plugin " + canonical(testPlugin("test_bad_option")) +
                ": pass 'test_clash_pass': the default of option 'depth' is a string, the option "
                "is declared an int");
  EXPECT_EQ(r.ops.find("Clash", "test_plugin"), nullptr);
  EXPECT_TRUE(loader.loaded().empty());
}

TEST(PluginLoader, APassOutlivesHandleLoaderAndRegistriesAndKeepsItsCodeLoaded) {
  const std::string path = testPlugin("test_good");
  ASSERT_FALSE(isLoaded(path));
  std::shared_ptr<Pass> pass;
  {
    Registries r;
    PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
    PluginHandle handle = loader.load(path);
    pass = r.passes.create("test_plugin_mark", {});
    EXPECT_TRUE(isLoaded(path));
  }
  EXPECT_TRUE(isLoaded(path));
  std::unique_ptr<Graph> graph = parseGraph("graph @main(%x: f32[1]) {\n  return %x\n}");
  PassContext context;
  EXPECT_EQ(pass->run(*graph, context).changes, 1);
  EXPECT_EQ(graph->name(), "marked");
  pass.reset();
  EXPECT_FALSE(isLoaded(path));
}

TEST(PluginLoader, AFrontendKeepsItsPluginLoaded) {
  const std::string path = testPlugin("test_frontend");
  std::shared_ptr<const Frontend> frontend;
  {
    Registries r;
    PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
    PluginHandle plugin = loader.load(path);
    EXPECT_EQ(plugin->frontends(), std::vector<std::string>{"test"});
    ASSERT_NE(r.frontends.find("test"), nullptr);
    frontend = r.frontends.create("test");
  }
  EXPECT_TRUE(isLoaded(path));
  std::string text = "# estuary test model\ngraph @g() {\n  return\n}\n";
  EXPECT_TRUE(frontend->supports(ModelInput::object("test.model_text", &text, nullptr, "text"), {}));
  frontend.reset();
  EXPECT_FALSE(isLoaded(path));
}

TEST(PluginLoader, RegistersConversionExtensionsAndRefusesClashes) {
  Registries r;
  PluginLoader loader(r.ops, r.passes, r.frontends, r.conversions);
  PluginHandle plugin = loader.load(testPlugin("test_conversions"));
  EXPECT_EQ(plugin->conversions(),
            (std::vector<std::string>{"onnx:test.ops::ScaledTanh", "pytorch:estuary_test.scaled_tanh.default"}));
  const ConversionExtension* extension = r.conversions.find("onnx", "test.ops", "ScaledTanh");
  ASSERT_NE(extension, nullptr);
  EXPECT_EQ(extension->origin, "plugin 'test_conversions' (" + canonical(testPlugin("test_conversions")) + ")");

  Registries other;
  other.conversions.add({"onnx", "test.ops", "ScaledTanh", [](NodeContext& node) { return node.inputs(); }, "a user"});
  PluginLoader second(other.ops, other.passes, other.frontends, other.conversions);
  EXPECT_EQ(errorOf([&] { second.load(testPlugin("test_conversions")); }),
            "cannot load plugin " + canonical(testPlugin("test_conversions")) +
                ": it registers a conversion extension for 'ScaledTanh', which a user registered already");
  EXPECT_EQ(other.conversions.size(), 1u);  // nothing of the refused plugin
}

TEST(PluginLoader, AnOpSchemaKeepsItsInferenceCodeLoaded) {
  const std::string path = testPlugin("test_good");
  auto ops = std::make_unique<OpRegistry>();
  {
    PassRegistry passes;
    FrontendRegistry frontends;
    ConversionExtensions conversions;
    PluginLoader loader(*ops, passes, frontends, conversions);
    loader.load(path);
  }
  EXPECT_TRUE(isLoaded(path));
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: i64[7]) {
  %a, %b = test_plugin::Twice(%x)
  return %a, %b
})");
  KnownValueMap known;
  inferNode(*graph->firstNode(), known, *ops);
  EXPECT_EQ(graph->output(0)->type().str(), "i64[7]");
  ops.reset();
  EXPECT_FALSE(isLoaded(path));
}

}  // namespace
}  // namespace estuary
