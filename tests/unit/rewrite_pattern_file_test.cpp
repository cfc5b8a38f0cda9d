// Patterns written in YAML with graphs in the text form, and the apply_patterns pass.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "estuary/ops/schema.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pass.h"
#include "estuary/pass/pipeline.h"
#include "estuary/rewrite/graph_pattern.h"
#include "estuary/rewrite/pattern_file.h"
#include "estuary/rewrite/pattern_pass.h"
#include "rewrite_test_util.h"

namespace estuary {
namespace {

using estuary::errorOf;
using testing::rewrite;

PatternSet yaml(const std::string& text) { return parsePatternYaml(text, "p.yaml"); }

const char* kAddNorm = R"(patterns:
  - name: add_norm
    match: |
      graph @match(%x1: ?[*], %x2: ?[*], %g: ?[*]) {
        %s = Add(%x1, %x2) : ?[*]
        %y = RMSNormalization(%s, %g) : ?[*]
        return %y, %s
      }
    replace: |
      graph @replace(%x1: ?[*], %x2: ?[*], %g: ?[*]) {
        %y, %s = test::AddNorm(%x1, %x2, %g) {flag = 1} : ?[*], ?[*]
        return %y, %s
      }
    copy_attributes:
      - {from: y, to: "%y", names: [epsilon, axis]}
)";

TEST(RewritePatternFile, MultiOutputPatternWithCopiedAttributes) {
  // The matched norm leaves epsilon at its default: the copy writes the default out.
  EXPECT_EQ(rewrite(R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %s = Add(%b, %a) : f32[2,8]
  %y = RMSNormalization(%s, %g) {axis = 1} : f32[2,8]
  %z = Neg(%s) : f32[2,8]
  return %y, %z
})",
                    yaml(kAddNorm)),
            R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %y, %s = test::AddNorm(%b, %a, %g) {axis = 1, epsilon = 1e-05, flag = 1} : f32[2,8], f32[2,8]
  %z = Neg(%s) : f32[2,8]
  return %y, %z
}
)");
}

TEST(RewritePatternFile, ReplacementMayReturnACapture) {
  RewriteStats stats;
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4]) {
  %a = Neg(%x) : f32[4]
  %b = Neg(%a) : f32[4]
  %c = Relu(%b) : f32[4]
  return %c
})",
                    yaml(R"(patterns:
  - name: double_neg
    match: |
      graph @match(%x: ?[*]) {
        %a = Neg(%x)
        %b = Neg(%a)
        return %b
      }
    replace: |
      graph @replace(%x: ?[*]) {
        return %x
      }
)"),
                    &stats),
            R"(graph @main(%x: f32[4]) {
  %c = Relu(%x) : f32[4]
  return %c
}
)");
  EXPECT_EQ(stats.rewrites, 1);
}

const char* kTypedPattern = R"(patterns:
  - name: typed
    match: |
      graph @match(%x: f16[b,h], %g: ?[h]) {
        %y = RMSNormalization(%x, %g) {axis = -1}
        return %y
      }
    replace: |
      graph @replace(%x: ?[*], %g: ?[*]) {
        %y = test::Norm(%x, %g)
        return %y
      }
)";

TEST(RewritePatternFile, DeclaredTypesConstrainTheMatch) {
  std::string out = rewrite(R"(graph @main(%a: f16[2,8], %g8: f16[8], %g4: f16[4], %f: f32[2,8], %r: f16[2,2,8]) {
  %ok = RMSNormalization(%a, %g8) : f16[2,8]
  %bad_symbol = RMSNormalization(%a, %g4) : f16[2,8]
  %bad_dtype = RMSNormalization(%f, %g8) : f32[2,8]
  %bad_rank = RMSNormalization(%r, %g8) : f16[2,2,8]
  %bad_axis = RMSNormalization(%a, %g8) {axis = 0} : f16[2,8]
  return %ok, %bad_symbol, %bad_dtype, %bad_rank, %bad_axis
})",
                            yaml(kTypedPattern));
  EXPECT_NE(out.find("%ok = test::Norm(%a, %g8)"), std::string::npos) << out;
  EXPECT_NE(out.find("%bad_symbol = RMSNormalization"), std::string::npos) << out;
  EXPECT_NE(out.find("%bad_dtype = RMSNormalization"), std::string::npos) << out;
  EXPECT_NE(out.find("%bad_rank = RMSNormalization"), std::string::npos) << out;
  EXPECT_NE(out.find("%bad_axis = RMSNormalization"), std::string::npos) << out;
}

TEST(RewritePatternFile, WhereConstraints) {
  PatternSet patterns = yaml(R"(patterns:
  - name: constrained
    match: |
      graph @match(%x: ?[*]) {
        %y = Relu(%x)
        return %y
      }
    replace: |
      graph @replace(%x: ?[*]) {
        %y = test::FastRelu(%x)
        return %y
      }
    where:
      x:
        dtype: [f16, bf16]
        rank: [2, 3]
        dims:
          - {axis: -1, in: [4096, 8192]}
          - {axis: 0, multiple_of: 2}
)");
  std::string out = rewrite(R"(graph @main(%a: f16[2,4096], %b: bf16[4,2,8192], %c: f32[2,4096], %d: f16[4096], %e: f16[2,1024], %f: f16[3,4096], %g: f16[batch,4096]) {
  %ra = Relu(%a)
  %rb = Relu(%b)
  %rc = Relu(%c)
  %rd = Relu(%d)
  %re = Relu(%e)
  %rf = Relu(%f)
  %rg = Relu(%g)
  return %ra, %rb, %rc, %rd, %re, %rf, %rg
})",
                            patterns);
  for (const char* fused : {"%ra = test::FastRelu", "%rb = test::FastRelu"}) {
    EXPECT_NE(out.find(fused), std::string::npos) << out;
  }
  for (const char* kept : {"%rc = Relu", "%rd = Relu", "%re = Relu", "%rf = Relu", "%rg = Relu"}) {
    EXPECT_NE(out.find(kept), std::string::npos) << out;
  }
  PatternSet static_only = yaml(R"(patterns:
  - name: static_only
    match: |
      graph @match(%x: ?[*]) {
        %y = Relu(%x)
        return %y
      }
    replace: |
      graph @replace(%x: ?[*]) {
        %y = test::FastRelu(%x)
        return %y
      }
    where:
      y: {static_shape: true}
)");
  out = rewrite(R"(graph @main(%a: f16[2,4], %b: f16[batch,4]) {
  %ra = Relu(%a) : f16[2,4]
  %rb = Relu(%b) : f16[batch,4]
  return %ra, %rb
})",
                static_only);
  EXPECT_NE(out.find("%ra = test::FastRelu"), std::string::npos) << out;
  EXPECT_NE(out.find("%rb = Relu"), std::string::npos) << out;
}

TEST(RewritePatternFile, SharedIntermediatesKeepTheirNode) {
  const char* graph = R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = Add(%m, %z) : f32[4]
  %t = Neg(%m) : f32[4]
  return %s, %t
})";
  auto file = [](const char* extra) {
    return std::string(R"(patterns:
  - name: mul_add
    match: |
      graph @match(%a: ?[*], %b: ?[*], %c: ?[*]) {
        %m = Mul(%a, %b)
        %s = Add(%m, %c)
        return %s
      }
    replace: |
      graph @replace(%a: ?[*], %b: ?[*], %c: ?[*]) {
        %s = test::MulAdd(%a, %b, %c)
        return %s
      }
)") + extra;
  };
  RewriteStats stats;
  rewrite(graph, yaml(file("")), &stats);
  EXPECT_EQ(stats.rewrites, 0);
  EXPECT_EQ(rewrite(graph, yaml(file("    shared: [m]\n"))),
            R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = test::MulAdd(%x, %y, %z) : f32[4]
  %t = Neg(%m) : f32[4]
  return %s, %t
}
)");
}

TEST(RewritePatternFile, ErrorsNameTheFileAndLine) {
  auto error = [](const std::string& text) { return errorOf([&] { yaml(text); }); };
  EXPECT_EQ(error("patterns: [\n"), "p.yaml:2:1: end of sequence flow not found");
  EXPECT_EQ(error("rules: []\n"), "p.yaml: a pattern file is a mapping with a 'patterns' list");
  EXPECT_EQ(error("patterns: []\nextra: 1\n"),
            "p.yaml:2: unknown key 'extra' in the pattern file; expected one of: patterns");
  EXPECT_EQ(error("patterns:\n  - name: a\n    matc: x\n"),
            "p.yaml:3: unknown key 'matc' in a pattern; expected one of: benefit, copy_attributes, "
            "match, name, replace, shared, where");
  EXPECT_EQ(error("patterns:\n  - name: a\n    replace: x\n"),
            "p.yaml:2: pattern 'a' needs a 'match' graph");
  // A text error inside a graph reports the line of the YAML file.
  std::string text = error(R"(patterns:
  - name: a
    match: |
      graph @match(%x: ?[*]) {
        %y = Neg(%x
        return %y
      }
    replace: |
      graph @replace(%x: ?[*]) {
        return %x
      }
)");
  EXPECT_EQ(text.rfind("p.yaml:6:", 0), 0u) << text;

  std::string base = R"(patterns:
  - name: a
    match: |
      graph @match(%x: ?[*], %g: ?[*]) {
        %y = RMSNormalization(%x, %g)
        return %y
      }
)";
  EXPECT_EQ(error(base + "    replace: |\n      graph @r(%x: ?[*]) {\n        return %x\n      }\n"),
            "p.yaml:2: pattern 'a': the match graph has 2 inputs, the replace graph 1; both take "
            "the same captures");
  EXPECT_EQ(error(base + "    replace: |\n      graph @r(%x: ?[*], %h: ?[*]) {\n        return %x\n      }\n"),
            "p.yaml:2: pattern 'a': input 1 is %g in the match graph but %h in the replace graph");
  const std::string replace =
      "    replace: |\n      graph @r(%x: ?[*], %g: ?[*]) {\n        %z = Neg(%x)\n        return %z\n      }\n";
  EXPECT_EQ(error(base + replace + "    where:\n      q: {rank: 2}\n"),
            "p.yaml:2: pattern 'a': a constraint names %q, which is not a value of the match graph");
  EXPECT_EQ(error(base + replace + "    where:\n      x: {dtype: f99}\n"),
            "p.yaml:14: unknown dtype 'f99' (f32, f16, bf16, f64, i8, i16, i32, i64, u8, bool)");
  EXPECT_EQ(error(base + replace + "    where:\n      x: {dims: [{axis: 0}]}\n"),
            "p.yaml:14: a 'dims' entry needs 'in' or 'multiple_of'");
  EXPECT_EQ(error(base + replace + "    where:\n      x: {colour: red}\n"),
            "p.yaml:14: unknown key 'colour' in a value constraint; expected one of: dims, dtype, "
            "rank, static_shape");
  EXPECT_EQ(error(base + replace + "    shared: [x]\n"),
            "p.yaml:2: pattern 'a': 'shared' names %x, a capture; only intermediates can be shared");
  EXPECT_EQ(error(base + replace + "    copy_attributes:\n      - {from: y, to: w, names: [axis]}\n"),
            "p.yaml:2: pattern 'a': 'copy_attributes' copies to %w, which no node of the replace "
            "graph defines");
  EXPECT_EQ(error(base + replace + "  - name: a\n" + base.substr(base.find("    match")) + replace),
            "p.yaml:13: a second pattern is named 'a'");
  EXPECT_EQ(error(R"(patterns:
  - name: sym
    match: |
      graph @match(%x: ?[2*n]) {
        %y = Neg(%x)
        return %y
      }
    replace: |
      graph @replace(%x: ?[*]) {
        return %x
      }
)"),
            "p.yaml:2: pattern 'sym': %x has type ?[2*n]; match types may use static sizes, ? and "
            "plain symbols, not 2*n");
  EXPECT_EQ(error(R"(patterns:
  - name: ret_capture
    match: |
      graph @match(%x: ?[*]) {
        %y = Neg(%x)
        return %x
      }
    replace: |
      graph @replace(%x: ?[*]) {
        return %x
      }
)"),
            "p.yaml:2: pattern 'ret_capture': result 0 is capture 'x', not an output of a pattern node");
  EXPECT_EQ(errorOf([] { loadPatternFile("/nonexistent/p.yaml"); }),
            "cannot read pattern file '/nonexistent/p.yaml'");
}

TEST(RewritePatternFile, GraphPatternRefusesSubgraphsInMatchGraphs) {
  GraphPatternSpec spec;
  spec.name = "match_if";
  spec.match = parseGraph(R"(graph @m(%c: bool[], %x: ?[*]) {
  %y = If(%c) {then_branch = graph @t() {
    %n = Neg(%x)
    return %n
  }}
  return %y
})");
  spec.replace = parseGraph("graph @r(%c: bool[], %x: ?[*]) {\n  return %x\n}");
  EXPECT_EQ(errorOf([&] { patternFromGraphs(spec); }),
            "pattern 'match_if': node #0 (If) of the match graph has a subgraph; match graphs "
            "cannot contain subgraphs");
}

TEST(RewritePatternFile, GraphPatternRefusesSubgraphsInReplacements) {
  GraphPatternSpec spec;
  spec.name = "with_if";
  spec.match = parseGraph("graph @m(%c: bool[], %x: ?[*]) {\n  %y = Where(%c, %x, %x)\n  return %y\n}");
  spec.replace = parseGraph(R"(graph @r(%c: bool[], %x: ?[*]) {
  %y = If(%c) {else_branch = graph @e() {
    return %x
  }, then_branch = graph @t() {
    return %x
  }}
  return %y
})");
  EXPECT_EQ(errorOf([&] { patternFromGraphs(spec); }),
            "pattern 'with_if': node #0 (If) of the replace graph has a subgraph; replace graphs "
            "cannot contain subgraphs");
}

TEST(RewritePatternFile, ApplyPatternsPassLoadsFiles) {
  std::string path = ::testing::TempDir() + "estuary_rewrite_patterns.yaml";
  {
    std::ofstream file(path);
    file << kAddNorm;
  }
  PassRegistry registry;
  registerPatternPasses(registry);
  std::shared_ptr<Pass> pass = registry.create("apply_patterns", {{"files", std::vector<std::string>{path}}});
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%a: f32[8], %b: f32[8], %g: f32[8]) {
  %s = Add(%a, %b) : f32[8]
  %y = RMSNormalization(%s, %g) : f32[8]
  return %y
})");
  PassContext context;
  EXPECT_EQ(pass->run(*graph, context).changes, 1);
  EXPECT_EQ(graph->firstNode()->qualifiedOpType(), "test::AddNorm");
  EXPECT_EQ(errorOf([&] { registry.create("apply_patterns", {}); }),
            "pass 'apply_patterns' needs option 'files': the pattern files to apply");
  std::remove(path.c_str());
}

TEST(RewritePatternFile, APipelineFileFindsPatternFilesRelativeToItsDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "estuary_pipeline_with_patterns";
  fs::create_directories(dir / "patterns");
  std::ofstream(dir / "patterns" / "add_norm.yaml") << kAddNorm;
  std::ofstream(dir / "pipeline.yaml") << "passes:\n"
                                          "  - pass: apply_patterns\n"
                                          "    options:\n"
                                          "      files: [patterns/add_norm.yaml]\n";
  PassRegistry registry;
  registerPatternPasses(registry);

  // The working directory is elsewhere: the file is found beside the pipeline.
  ASSERT_NE(fs::current_path(), dir);
  Pipeline pipeline = loadPipelineFile((dir / "pipeline.yaml").string(), registry);
  EXPECT_EQ(std::get<std::vector<std::string>>(pipeline.steps.at(0).options.at("files")),
            std::vector<std::string>{(dir / "patterns" / "add_norm.yaml").string()});
  PassManager manager(pipeline, registry);
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%a: f32[8], %b: f32[8], %g: f32[8]) {
  %s = Add(%a, %b) : f32[8]
  %y = RMSNormalization(%s, %g) : f32[8]
  return %y
})");
  manager.run(*graph);
  EXPECT_EQ(graph->firstNode()->qualifiedOpType(), "test::AddNorm");

  // Absolute paths stay as written; so do a pass list's paths (the command line's are
  // relative to the working directory).
  const std::string absolute = (dir / "patterns" / "add_norm.yaml").string();
  Pipeline with_absolute = parsePipelineYaml(
      "passes:\n  - pass: apply_patterns\n    options:\n      files: [" + absolute + "]\n",
      "inline.yaml", "/elsewhere", registry);
  EXPECT_EQ(std::get<std::vector<std::string>>(with_absolute.steps.at(0).options.at("files")),
            std::vector<std::string>{absolute});
  Pipeline list = parsePassList("apply_patterns{files=[patterns/add_norm.yaml]}", registry);
  EXPECT_EQ(std::get<std::vector<std::string>>(list.steps.at(0).options.at("files")),
            std::vector<std::string>{"patterns/add_norm.yaml"});
  fs::remove_all(dir);
}

TEST(RewritePatternFile, TheExampleOfTheDocumentationWorks) {
  std::ifstream doc(ESTUARY_SOURCE_DIR "/docs/patterns.md");
  std::stringstream text;
  text << doc.rdbuf();
  std::string markdown = text.str();
  size_t begin = markdown.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  std::string example = markdown.substr(begin, markdown.find("```", begin) - begin);
  PatternSet patterns = parsePatternYaml(example, "docs/patterns.md");
  const char* graph = R"(graph @main(%a: f16[2,7,4096], %b: f16[2,7,4096], %g: f16[4096], %w: f16[1024]) {
  %s = Add(%a, %b) : f16[2,7,4096]
  %y = RMSNormalization(%s, %g) {epsilon = 1e-06} : f16[2,7,4096]
  %s2 = Add(%y, %s) : f16[2,7,4096]
  %y2 = RMSNormalization(%s2, %w) : f16[2,7,4096]
  return %y, %s, %y2
})";
  // The first norm fuses; the second is vetoed by the symbol: its gamma has another size.
  EXPECT_EQ(rewrite(graph, patterns),
            R"(graph @main(%a: f16[2,7,4096], %b: f16[2,7,4096], %g: f16[4096], %w: f16[1024]) {
  %y, %s = estuary::AddRMSNorm(%a, %b, %g) {axis = -1, epsilon = 1e-06} : f16[2,7,4096], f16[2,7,4096]
  %s2 = Add(%y, %s) : f16[2,7,4096]
  %y2 = RMSNormalization(%s2, %w) : f16[2,7,4096]
  return %y, %s, %y2
}
)");
}

}  // namespace
}  // namespace estuary
