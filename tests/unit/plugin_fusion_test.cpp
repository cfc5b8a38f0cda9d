// The fusion plugin, end to end: loaded from the install directory into the global
// registries, run as a pass and from a pipeline.
#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pass.h"
#include "estuary/pass/pipeline.h"
#include "estuary/plugin/loader.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"
#include "error_of.h"

namespace estuary {
namespace {

PluginHandle fusionPlugin() { return PluginLoader::global().load("fusion_add_rms_norm"); }

// Runs fuse_add_rms_norm with `options` on `text`; returns the number of fusions.
int64_t fuse(Graph& graph, const OptionMap& options = {}) {
  fusionPlugin();
  std::shared_ptr<Pass> pass = PassRegistry::global().create("fuse_add_rms_norm", options);
  PassContext context;
  context.ops = &OpRegistry::global();
  return pass->run(graph, context).changes;
}

const char* kTwoLayers = R"(graph @main(%h: f32[batch,seq,4096], %d1: f32[batch,seq,4096], %g1: f32[4096], %g2: f32[4096]) {
  %s1 = Add(%h, %d1) : f32[batch,seq,4096]
  %y1 = RMSNormalization(%s1, %g1) {epsilon = 1e-06} : f32[batch,seq,4096] loc("layer0/norm")
  %t = Tanh(%y1) : f32[batch,seq,4096]
  %s2 = Add(%s1, %t) : f32[batch,seq,4096]
  %y2 = RMSNormalization(%s2, %g2) : f32[batch,seq,4096]
  return %y2, %s2
})";

TEST(PluginFusion, RegistersTheOpAndThePass) {
  PluginHandle plugin = fusionPlugin();
  EXPECT_EQ(plugin->name(), "fusion_add_rms_norm");
  EXPECT_EQ(plugin->passes(), std::vector<std::string>{"fuse_add_rms_norm"});
  EXPECT_EQ(plugin->ops(), std::vector<std::string>{"estuary::AddRMSNorm"});
  const OpSchema* schema = OpRegistry::global().find("AddRMSNorm", "estuary");
  ASSERT_NE(schema, nullptr);
  ASSERT_EQ(schema->inputs().size(), 3u);
  EXPECT_EQ(schema->inputs()[2].name, "gamma");
  ASSERT_EQ(schema->outputs().size(), 2u);
  EXPECT_EQ(schema->outputs()[1].name, "x_sum");
  EXPECT_EQ(schema->findAttr("epsilon")->default_value->asFloat(), 1e-5);
  EXPECT_EQ(schema->findAttr("axis")->default_value->asInt(), -1);
  const PassInfo* info = PassRegistry::global().find("fuse_add_rms_norm");
  ASSERT_NE(info, nullptr);
  EXPECT_NE(info->findOption("last_dims"), nullptr);
  EXPECT_NE(info->findOption("last_dim_multiple_of"), nullptr);
}

TEST(PluginFusion, FusesEachLayerAndRewiresOtherUsersOfTheSum) {
  std::unique_ptr<Graph> graph = parseGraph(kTwoLayers);
  EXPECT_EQ(fuse(*graph), 2);
  // The second layer's Add reads the first sum from the fused op, and then fuses itself;
  // the default epsilon of the second norm is written out.
  EXPECT_EQ(printGraph(*graph),
            R"(graph @main(%h: f32[batch,seq,4096], %d1: f32[batch,seq,4096], %g1: f32[4096], %g2: f32[4096]) {
  %y1, %s1 = estuary::AddRMSNorm(%h, %d1, %g1) {axis = -1, epsilon = 1e-06} : f32[batch,seq,4096], f32[batch,seq,4096] loc("layer0/norm")
  %t = Tanh(%y1) : f32[batch,seq,4096]
  %y2, %s2 = estuary::AddRMSNorm(%s1, %t, %g2) {axis = -1, epsilon = 1e-05} : f32[batch,seq,4096], f32[batch,seq,4096]
  return %y2, %s2
}
)");
  EXPECT_EQ(fuse(*graph), 0);
}

TEST(PluginFusion, ShapeCheckRestrictsTheLastDimension) {
  auto fusions = [](const OptionMap& options) {
    std::unique_ptr<Graph> graph = parseGraph(kTwoLayers);
    return fuse(*graph, options);
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(fusions({{"last_dims", Names{"4096", "8192"}}}), 2);
  EXPECT_EQ(fusions({{"last_dims", Names{"7168"}}}), 0);
  EXPECT_EQ(fusions({{"last_dim_multiple_of", int64_t{128}}}), 2);
  EXPECT_EQ(fusions({{"last_dim_multiple_of", int64_t{3000}}}), 0);
  EXPECT_EQ(fusions({{"last_dims", Names{"4096"}}, {"last_dim_multiple_of", int64_t{3}}}), 0);
}

TEST(PluginFusion, ARestrictionNeedsAStaticLastDimension) {
  const char* symbolic = R"(graph @main(%a: f32[batch,hidden], %b: f32[batch,hidden], %g: f32[hidden]) {
  %s = Add(%a, %b) : f32[batch,hidden]
  %y = RMSNormalization(%s, %g) : f32[batch,hidden]
  return %y
})";
  std::unique_ptr<Graph> graph = parseGraph(symbolic);
  EXPECT_EQ(fuse(*graph, {{"last_dim_multiple_of", int64_t{1}}}), 0);
  EXPECT_EQ(fuse(*graph), 1);
}

TEST(PluginFusion, LeavesNormsWithAnotherStashTypeAlone) {
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %s = Add(%a, %b) : f32[2,8]
  %y = RMSNormalization(%s, %g) {stash_type = f16} : f32[2,8]
  %z = RMSNormalization(%s, %g) {stash_type = f32} : f32[2,8]
  return %y, %z
})");
  // Only the second norm can fuse, and the sum keeps its other user.
  EXPECT_EQ(fuse(*graph), 1);
  EXPECT_EQ(printGraph(*graph), R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %z, %s = estuary::AddRMSNorm(%a, %b, %g) {axis = -1, epsilon = 1e-05} : f32[2,8], f32[2,8]
  %y = RMSNormalization(%s, %g) {stash_type = f16} : f32[2,8]
  return %y, %z
}
)");
}

// The fused kernel computes f32 addends of one shape with a gamma of the normalized dims:
// anything else stays unfused, since the build would find no kernel for it.
TEST(PluginFusion, FusesOnlyWhatItsKernelComputes) {
  for (const char* text : {
           R"(graph @main(%a: bf16[2,8], %b: bf16[2,8], %g: bf16[8]) {
  %s = Add(%a, %b) : bf16[2,8]
  %y = RMSNormalization(%s, %g) : bf16[2,8]
  return %y
})",
           R"(graph @main(%a: f32[2,8], %b: f32[8], %g: f32[8]) {
  %s = Add(%a, %b) : f32[2,8]
  %y = RMSNormalization(%s, %g) : f32[2,8]
  return %y
})",
           R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[1]) {
  %s = Add(%a, %b) : f32[2,8]
  %y = RMSNormalization(%s, %g) : f32[2,8]
  return %y
})",
       }) {
    std::unique_ptr<Graph> graph = parseGraph(text);
    EXPECT_EQ(fuse(*graph), 0) << text;
  }
}

TEST(PluginFusion, BadOptionsNameThePassAndOption) {
  fusionPlugin();
  using Names = std::vector<std::string>;
  EXPECT_EQ(errorOf([] {
              PassRegistry::global().create("fuse_add_rms_norm", {{"last_dims", Names{"4k"}}});
            }),
            "pass 'fuse_add_rms_norm': option 'last_dims' takes positive integers, got '4k'");
  EXPECT_EQ(errorOf([] {
              PassRegistry::global().create("fuse_add_rms_norm",
                                            {{"last_dim_multiple_of", int64_t{-2}}});
            }),
            "pass 'fuse_add_rms_norm': option 'last_dim_multiple_of' must be 0 (off) or "
            "positive, got -2");
}

TEST(PluginFusion, AddRmsNormInfersBothOutputs) {
  fusionPlugin();
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%a: f32[batch,1,64], %b: f32[64], %g: f32[64], %bad: f32[32]) {
  %y, %s = estuary::AddRMSNorm(%a, %b, %g)
  %y2, %s2 = estuary::AddRMSNorm(%a, %b, %bad) loc("bad_gamma")
  %y3, %s3 = estuary::AddRMSNorm(%a, %b, %g) {axis = 3} loc("bad_axis")
  return %y, %s, %y2, %y3
})");
  std::vector<Node*> nodes = graph->nodeList();
  KnownValueMap known;
  inferNode(*nodes[0], known);
  EXPECT_EQ(graph->output(0)->type().str(), "f32[batch,1,64]");
  EXPECT_EQ(graph->output(1)->type().str(), "f32[batch,1,64]");
  EXPECT_EQ(errorOf([&] { inferNode(*nodes[1], known); }),
            "node 'bad_gamma' (estuary::AddRMSNorm): gamma [32] does not broadcast to the "
            "normalized part of [batch,1,64]");
  std::string axis = errorOf([&] { inferNode(*nodes[2], known); });
  EXPECT_EQ(axis.rfind("node 'bad_axis' (estuary::AddRMSNorm): ", 0), 0u) << axis;
  EXPECT_NE(axis.find("axis"), std::string::npos) << axis;
}

TEST(PluginFusion, RunsFromAPipelineThatListsThePlugin) {
  Pipeline pipeline = parsePipelineYaml(R"(plugins: [fusion_add_rms_norm]
passes:
  - pass: fuse_add_rms_norm
    options:
      last_dims: [4096]
)",
                                        "fusion.yaml");
  PassManager manager(std::move(pipeline));
  manager.setLog(nullptr);
  std::unique_ptr<Graph> graph = parseGraph(kTwoLayers);
  manager.run(*graph);
  EXPECT_EQ(manager.totalChanges(), 2);
  EXPECT_EQ(graph->numNodes(), 3u);
}

}  // namespace
}  // namespace estuary
