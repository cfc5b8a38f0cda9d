// The worklist driver: fixed point, revisiting, dead-node erasure, node order, subgraphs,
// types of new nodes, and errors of replacements.
#include <gtest/gtest.h>

#include "estuary/ops/schema.h"
#include "estuary/pass/pass.h"
#include "estuary/rewrite/pattern_pass.h"
#include "estuary/rewrite/rewriter.h"
#include "rewrite_test_util.h"

namespace estuary {
namespace {

using estuary::errorOf;
using testing::rewrite;
using testing::setOf;

// Neg(Neg(x)) -> x.
Pattern doubleNeg() {
  Pattern p("double_neg");
  PatternValue x = p.capture("x");
  p.results({p.node("Neg", {p.node("Neg", {x})})});
  p.replace([x](const Match& m, Rewriter&) { return std::vector<Value*>{m[x]}; });
  return p;
}

// Relu(Relu(x)) -> Relu(x), built new each time.
Pattern doubleRelu() {
  Pattern p("double_relu");
  PatternValue x = p.capture("x");
  p.results({p.node("Relu", {p.node("Relu", {x})})});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("Relu", {m[x]})->output()};
  });
  return p;
}

TEST(RewriteDriver, RunsToAFixedPoint) {
  RewriteStats stats;
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4]) {
  %a = Neg(%x) : f32[4]
  %b = Neg(%a) : f32[4]
  %c = Neg(%b) : f32[4]
  %d = Neg(%c) : f32[4]
  %e = Neg(%d) : f32[4]
  return %e
})",
                    setOf(doubleNeg()), &stats),
            R"(graph @main(%x: f32[4]) {
  %e = Neg(%x) : f32[4]
  return %e
}
)");
  EXPECT_EQ(stats.rewrites, 2);
}

TEST(RewriteDriver, RevisitsWhatARewriteCreated) {
  // Each rewrite makes a new Relu whose user is another Relu: the new pair must be
  // matched again, down to one Relu.
  RewriteStats stats;
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4]) {
  %a = Relu(%x) : f32[4]
  %b = Relu(%a) : f32[4]
  %c = Relu(%b) : f32[4]
  %d = Relu(%c) : f32[4]
  %e = Relu(%d) : f32[4]
  return %e
})",
                    setOf(doubleRelu()), &stats),
            R"(graph @main(%x: f32[4]) {
  %e = Relu(%x) : f32[4]
  return %e
}
)");
  EXPECT_EQ(stats.rewrites, 4);
  EXPECT_EQ(stats.per_pattern, std::vector<int64_t>{4});
}

TEST(RewriteDriver, ARewriteEnablesAnotherPatternUpstream) {
  // Sub(x, Neg(y)) -> Add(x, y) creates an Add that the Add(Mul) pattern then folds; the
  // Mul's only other user disappears with the Sub.
  Pattern sub("sub_neg");
  PatternValue x = sub.capture("x"), y = sub.capture("y");
  sub.results({sub.node("Sub", {x, sub.node("Neg", {y})})});
  sub.replace([x, y](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("Add", {m[x], m[y]})->output()};
  });
  Pattern fold("mul_add");
  PatternValue a = fold.capture("a"), b = fold.capture("b"), c = fold.capture("c");
  fold.results({fold.node("Add", {fold.node("Mul", {a, b}), c})});
  fold.replace([a, b, c](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::MulAdd", {m[a], m[b], m[c]})->output()};
  });
  PatternSet set;
  set.add(std::move(fold));
  set.add(std::move(sub));
  RewriteStats stats;
  EXPECT_EQ(rewrite(R"(graph @main(%p: f32[4], %q: f32[4], %z: f32[4]) {
  %m = Mul(%p, %q) : f32[4]
  %n = Neg(%z) : f32[4]
  %s = Sub(%m, %n) : f32[4]
  return %s
})",
                    set, &stats),
            R"(graph @main(%p: f32[4], %q: f32[4], %z: f32[4]) {
  %s = test::MulAdd(%p, %q, %z) : f32[4]
  return %s
}
)");
  EXPECT_EQ(stats.per_pattern, (std::vector<int64_t>{1, 1}));
}

TEST(RewriteDriver, LosingAUseLetsAnotherMatchHappen) {
  // %m has two users, so Add(Mul) cannot fold until the Neg pair that also uses it is
  // rewritten away: the driver must revisit the Add when %m loses that use.
  Pattern fold("mul_add");
  PatternValue a = fold.capture("a"), b = fold.capture("b"), c = fold.capture("c");
  fold.results({fold.node("Add", {fold.node("Mul", {a, b}), c})});
  fold.replace([a, b, c](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::MulAdd", {m[a], m[b], m[c]})->output()};
  });
  PatternSet set;
  set.add(std::move(fold));
  // The other user of %m, which a second pattern turns into something not using %m.
  Pattern unuse("neg_of_mul");
  PatternValue p = unuse.capture("p"), q = unuse.capture("q");
  PatternNode inner = unuse.node("Mul", {p, q});
  unuse.allowOtherUses(inner);
  unuse.results({unuse.node("Neg", {inner})});
  unuse.replace([p, q](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::NegMul", {m[p], m[q]})->output()};
  });
  set.add(std::move(unuse));
  EXPECT_EQ(rewrite(R"(graph @main(%p: f32[4], %q: f32[4], %z: f32[4]) {
  %m = Mul(%p, %q) : f32[4]
  %s = Add(%m, %z) : f32[4]
  %t = Neg(%m) : f32[4]
  return %s, %t
})",
                    set),
            R"(graph @main(%p: f32[4], %q: f32[4], %z: f32[4]) {
  %s = test::MulAdd(%p, %q, %z) : f32[4]
  %t = test::NegMul(%p, %q) : f32[4]
  return %s, %t
}
)");
}

TEST(RewriteDriver, ErasesWhatTheRewriteLeftDead) {
  // The Constant and the Shape only fed the matched Mul; they go with it. The Neg was
  // dead before and is no business of the pattern.
  Pattern p("mul_by_const");
  PatternValue x = p.capture("x"), c = p.capture("c");
  p.results({p.node("Mul", {x, c})});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::Scale", {m[x]})->output()};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4]) {
  %dead = Neg(%x) : f32[4]
  %shape = Shape(%x) : i64[1]
  %c = Cast(%shape) {to = f32} : f32[1]
  %y = Mul(%x, %c) : f32[4]
  return %y
})",
                    setOf(std::move(p))),
            R"(graph @main(%x: f32[4]) {
  %dead = Neg(%x) : f32[4]
  %y = test::Scale(%x) : f32[4]
  return %y
}
)");
}

TEST(RewriteDriver, MovesEarlierUsersOfResultsAfterTheReplacement) {
  Pattern p("add_norm");
  PatternValue x1 = p.capture("x1"), x2 = p.capture("x2"), g = p.capture("g");
  PatternNode add = p.node("Add", {x1, x2});
  p.results({p.node("RMSNormalization", {add, g}), add});
  p.replace([x1, x2, g](const Match& m, Rewriter& r) {
    Node* fused = r.create("test::AddNorm", {m[x1], m[x2], m[g]}, 2);
    return std::vector<Value*>{fused->output(0), fused->output(1)};
  });
  // %u and %w use the sum before the norm; %w also feeds %late, after it.
  EXPECT_EQ(rewrite(R"(graph @main(%a: f32[8], %b: f32[8]) {
  %s = Add(%a, %b) : f32[8]
  %u = Neg(%s) : f32[8]
  %w = Relu(%u) : f32[8]
  %g = Sigmoid(%b) : f32[8]
  %y = RMSNormalization(%s, %g) : f32[8]
  %late = Mul(%w, %y) : f32[8]
  return %late
})",
                    setOf(std::move(p))),
            R"(graph @main(%a: f32[8], %b: f32[8]) {
  %g = Sigmoid(%b) : f32[8]
  %y, %s = test::AddNorm(%a, %b, %g) : f32[8], f32[8]
  %u = Neg(%s) : f32[8]
  %w = Relu(%u) : f32[8]
  %late = Mul(%w, %y) : f32[8]
  return %late
}
)");
}

TEST(RewriteDriver, SkipsAMatchWhoseCapturesDependOnItsResults) {
  Pattern p("add_norm");
  PatternValue x1 = p.capture("x1"), x2 = p.capture("x2"), g = p.capture("g");
  PatternNode add = p.node("Add", {x1, x2});
  p.results({p.node("RMSNormalization", {add, g}), add});
  p.replace([x1, x2, g](const Match& m, Rewriter& r) {
    Node* fused = r.create("test::AddNorm", {m[x1], m[x2], m[g]}, 2);
    return std::vector<Value*>{fused->output(0), fused->output(1)};
  });
  // gamma is computed from the sum: the fused node would need its own output.
  const char* text = R"(graph @main(%a: f32[8], %b: f32[8]) {
  %s = Add(%a, %b) : f32[8]
  %g = Sigmoid(%s) : f32[8]
  %y = RMSNormalization(%s, %g) : f32[8]
  return %y
}
)";
  RewriteStats stats;
  EXPECT_EQ(rewrite(text, setOf(std::move(p)), &stats), text);
  EXPECT_EQ(stats.rewrites, 0);
}

TEST(RewriteDriver, RewritesInsideSubgraphs) {
  RewriteStats stats;
  EXPECT_EQ(rewrite(R"(graph @main(%c: bool[], %x: f32[4]) {
  %r = If(%c) {else_branch = graph @else() {
    %a = Neg(%x) : f32[4]
    %b = Neg(%a) : f32[4]
    return %b
  }, then_branch = graph @then() {
    return %x
  }} : f32[4]
  return %r
})",
                    setOf(doubleNeg()), &stats),
            R"(graph @main(%c: bool[], %x: f32[4]) {
  %r = If(%c) {else_branch = graph @else() {
    return %x
  }, then_branch = graph @then() {
    return %x
  }} : f32[4]
  return %r
}
)");
  EXPECT_EQ(stats.rewrites, 1);
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%c: bool[], %x: f32[4]) {
  %r = If(%c) {else_branch = graph @else() {
    %a = Neg(%x) : f32[4]
    %b = Neg(%a) : f32[4]
    return %b
  }, then_branch = graph @then() {
    return %x
  }} : f32[4]
  return %r
})");
  RewriteOptions top_only;
  top_only.subgraphs = false;
  EXPECT_EQ(applyPatterns(*graph, setOf(doubleNeg()), top_only).rewrites, 0);
}

TEST(RewriteDriver, UseOfAValueInsideASubgraphIsAnotherUser) {
  Pattern p("mul_add");
  PatternValue a = p.capture("a"), b = p.capture("b"), c = p.capture("c");
  p.results({p.node("Add", {p.node("Mul", {a, b}), c})});
  p.replace([a, b, c](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::MulAdd", {m[a], m[b], m[c]})->output()};
  });
  RewriteStats stats;
  rewrite(R"(graph @main(%k: bool[], %x: f32[4]) {
  %m = Mul(%x, %x) : f32[4]
  %s = Add(%m, %x) : f32[4]
  %r = If(%k) {else_branch = graph @else() {
    return %m
  }, then_branch = graph @then() {
    return %s
  }} : f32[4]
  return %r
})",
          setOf(std::move(p)), &stats);
  EXPECT_EQ(stats.rewrites, 0);
}

TEST(RewriteDriver, InfersTypesOfNewNodesAndNamesThemAfterTheReplaced) {
  Pattern p("sub_neg");
  PatternValue x = p.capture("x"), y = p.capture("y");
  p.results({p.node("Sub", {x, p.node("Neg", {y})})});
  p.replace([x, y](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("Add", {m[x], m[y]})->output()};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%x: f16[batch,4], %y: f16[4]) {
  %n = Neg(%y)
  %d = Sub(%x, %n)
  return %d
})",
                    setOf(std::move(p))),
            R"(graph @main(%x: f16[batch,4], %y: f16[4]) {
  %d = Add(%x, %y) : f16[batch,4]
  return %d
}
)");
}

TEST(RewriteDriver, HigherBenefitWins) {
  auto named = [](const char* name, const char* op, int benefit) {
    Pattern p(name);
    PatternValue x = p.capture("x");
    p.results({p.node("Neg", {x})});
    p.benefit(benefit);
    p.replace([x, op](const Match& m, Rewriter& r) {
      return std::vector<Value*>{r.create(op, {m[x]})->output()};
    });
    return p;
  };
  PatternSet set;
  set.add(named("low", "test::Low", 1));
  set.add(named("high", "test::High", 2));
  RewriteStats stats;
  EXPECT_EQ(rewrite("graph @main(%x: f32[4]) {\n  %y = Neg(%x) : f32[4]\n  return %y\n}", set, &stats),
            "graph @main(%x: f32[4]) {\n  %y = test::High(%x) : f32[4]\n  return %y\n}\n");
  EXPECT_EQ(stats.per_pattern, (std::vector<int64_t>{0, 1}));
}

TEST(RewriteDriver, PatternsThatNeverSettleAreStopped) {
  Pattern p("neg_forever");
  PatternValue x = p.capture("x");
  p.results({p.node("Neg", {x})});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("Neg", {m[x]})->output()};
  });
  std::unique_ptr<Graph> graph =
      parseGraph("graph @main(%x: f32[4]) {\n  %y = Neg(%x) : f32[4]\n  return %y\n}");
  RewriteOptions options;
  options.max_rewrites = 50;
  std::string error = errorOf([&] { applyPatterns(*graph, setOf(std::move(p)), options); });
  EXPECT_NE(error.find("did not reach a fixed point after 50 rewrites; pattern 'neg_forever' at "
                       "node #"),
            std::string::npos)
      << error;
}

TEST(RewriteDriver, ReplacementsThatBreakTheContractAreErrors) {
  const char* text = "graph @main(%x: f32[4]) {\n  %y = Neg(%x) : f32[4] loc(\"n\")\n  return %y\n}";
  auto run = [&](ReplaceFn replacement) {
    Pattern p("bad");
    PatternValue x = p.capture("x");
    p.results({p.node("Neg", {x})});
    p.replace(std::move(replacement));
    std::unique_ptr<Graph> graph = parseGraph(text);
    return errorOf([&] { applyPatterns(*graph, setOf(std::move(p))); });
  };
  EXPECT_EQ(run([](const Match&, Rewriter&) { return std::vector<Value*>{}; }),
            "pattern 'bad' at node 'n' (Neg): the replacement returned 0 value(s) for 1 result(s)");
  EXPECT_EQ(run([](const Match&, Rewriter&) { return std::vector<Value*>{nullptr}; }),
            "pattern 'bad' at node 'n' (Neg): the replacement returned no value for result 0");
  EXPECT_EQ(run([](const Match& m, Rewriter&) { return std::vector<Value*>{m.result(0)}; }),
            "pattern 'bad' at node 'n' (Neg): the replacement uses result 0 of the match, which "
            "it replaces");
  EXPECT_EQ(run([](const Match& m, Rewriter& r) {
              return std::vector<Value*>{r.create("Relu", {m.result(0)})->output()};
            }),
            "pattern 'bad' at node 'n' (Neg): the replacement uses result 0 of the match, which "
            "it replaces");
  EXPECT_EQ(run([](const Match& m, Rewriter&) {
              m.graph().createNode("Relu", {m.capture("x")});
              return std::vector<Value*>{m.capture("x")};
            }),
            "pattern 'bad' at node 'n' (Neg): the replacement changed the graph other than "
            "through its Rewriter");
  std::string inference = run([](const Match& m, Rewriter& r) {
    Node* bad = r.create("Add", {m.capture("x"), m.capture("x")});
    bad->output()->setType(TensorType(DType::I64, Shape::unranked()));
    return std::vector<Value*>{bad->output()};
  });
  EXPECT_EQ(inference.find("pattern 'bad' at node 'n' (Neg): the replacement built node #"), 0u)
      << inference;
}

TEST(RewriteDriver, PatternPassReportsRewritesAsChanges) {
  PatternPass pass(setOf(doubleNeg()));
  std::unique_ptr<Graph> graph = parseGraph(R"(graph @main(%x: f32[4]) {
  %a = Neg(%x) : f32[4]
  %b = Neg(%a) : f32[4]
  %c = Relu(%b) : f32[4]
  return %c
})");
  PassContext context;
  context.ops = &OpRegistry::global();
  EXPECT_EQ(pass.run(*graph, context).changes, 1);
  EXPECT_EQ(pass.lastStats().per_pattern, std::vector<int64_t>{1});
  EXPECT_EQ(pass.run(*graph, context).changes, 0);
}

}  // namespace
}  // namespace estuary
