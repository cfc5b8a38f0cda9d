// Pattern matching: op types, wiring, commutativity, attribute predicates, captures,
// use constraints, multi-output patterns and checks.
#include <gtest/gtest.h>

#include "estuary/rewrite/pattern.h"
#include "estuary/rewrite/rewriter.h"
#include "rewrite_test_util.h"

namespace estuary {
namespace {

using estuary::errorOf;
using testing::rewrite;
using testing::setOf;

// Add(Mul(a, b), c) -> test::MulAdd(a, b, c).
Pattern mulAdd(bool commutative = true) {
  Pattern p("mul_add");
  PatternValue a = p.capture("a"), b = p.capture("b"), c = p.capture("c");
  PatternNode mul = p.node("Mul", {a, b});
  PatternNode add = p.node("Add", {mul, c}).commutative(commutative);
  p.results({add});
  p.replace([a, b, c](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::MulAdd", {m[a], m[b], m[c]})->output()};
  });
  return p;
}

TEST(RewritePattern, MatchesWiringAndErasesTheMatch) {
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = Add(%m, %z) : f32[4]
  return %s
})",
                    setOf(mulAdd())),
            R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %s = test::MulAdd(%x, %y, %z) : f32[4]
  return %s
}
)");
}

TEST(RewritePattern, CommutativeOperandsMatchInEitherOrder) {
  const char* swapped = R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = Add(%z, %m) : f32[4]
  return %s
})";
  EXPECT_EQ(rewrite(swapped, setOf(mulAdd())), R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %s = test::MulAdd(%x, %y, %z) : f32[4]
  return %s
}
)");
  RewriteStats stats;
  rewrite(swapped, setOf(mulAdd(/*commutative=*/false)), &stats);
  EXPECT_EQ(stats.rewrites, 0);
}

TEST(RewritePattern, CommutativeSearchBacktracksIntoTheSecondOrder) {
  // Both operands of the Add are Muls; only the second one is exclusive to the Add, so
  // the first order fails on the use constraint and the swapped order must be tried.
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4], %y: f32[4]) {
  %shared = Mul(%x, %x) : f32[4]
  %own = Mul(%y, %y) : f32[4]
  %s = Add(%shared, %own) : f32[4]
  return %s, %shared
})",
                    setOf(mulAdd())),
            R"(graph @main(%x: f32[4], %y: f32[4]) {
  %shared = Mul(%x, %x) : f32[4]
  %s = test::MulAdd(%y, %y, %shared) : f32[4]
  return %s, %shared
}
)");
}

TEST(RewritePattern, SharedOperandMustBeTheSameValue) {
  Pattern p("square");
  PatternValue x = p.capture("x");
  p.results({p.node("Mul", {x, x})});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::Square", {m[x]})->output()};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%a: f32[4], %b: f32[4]) {
  %s = Mul(%a, %a) : f32[4]
  %t = Mul(%a, %b) : f32[4]
  return %s, %t
})",
                    setOf(std::move(p))),
            R"(graph @main(%a: f32[4], %b: f32[4]) {
  %s = test::Square(%a) : f32[4]
  %t = Mul(%a, %b) : f32[4]
  return %s, %t
}
)");
}

TEST(RewritePattern, AttributeEqualityUsesSchemaDefaults) {
  Pattern p("last_axis_softmax");
  PatternValue x = p.capture("x");
  p.results({p.node("Softmax", {x}).attr("axis", -1)});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::FastSoftmax", {m[x]})->output()};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[2,4]) {
  %a = Softmax(%x) : f32[2,4]
  %b = Softmax(%x) {axis = 0} : f32[2,4]
  %c = Softmax(%x) {axis = -1} : f32[2,4]
  return %a, %b, %c
})",
                    setOf(std::move(p))),
            R"(graph @main(%x: f32[2,4]) {
  %a = test::FastSoftmax(%x) : f32[2,4]
  %b = Softmax(%x) {axis = 0} : f32[2,4]
  %c = test::FastSoftmax(%x) : f32[2,4]
  return %a, %b, %c
}
)");
}

TEST(RewritePattern, AttributePredicateSeesDefaultOrAbsence) {
  std::vector<bool> seen_absent;
  Pattern p("small_alpha");
  PatternValue x = p.capture("x");
  p.results({p.node("LeakyRelu", {x}).attrWhere("alpha", [](const Attribute* alpha) {
    return alpha && alpha->asFloat() < 0.05;
  })});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("Relu", {m[x]})->output()};
  });
  // The default alpha of LeakyRelu is 0.01.
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[4]) {
  %a = LeakyRelu(%x) : f32[4]
  %b = LeakyRelu(%x) {alpha = 0.2} : f32[4]
  %c = LeakyRelu(%x) {alpha = 0.001} : f32[4]
  return %a, %b, %c
})",
                    setOf(std::move(p))),
            R"(graph @main(%x: f32[4]) {
  %a = Relu(%x) : f32[4]
  %b = LeakyRelu(%x) {alpha = 0.2} : f32[4]
  %c = Relu(%x) : f32[4]
  return %a, %b, %c
}
)");
  Pattern q("no_schema");
  PatternValue y = q.capture("y");
  q.results({q.node("test::Op", {y}).attrWhere("k", [&](const Attribute* k) {
    seen_absent.push_back(k == nullptr);
    return true;
  })});
  q.replace([y](const Match& m, Rewriter&) { return std::vector<Value*>{m[y]}; });
  rewrite("graph @main(%x: f32[4]) {\n  %a = test::Op(%x)\n  return %a\n}", setOf(std::move(q)));
  EXPECT_EQ(seen_absent, std::vector<bool>{true});
}

TEST(RewritePattern, CapturePredicatesRestrictValues) {
  Pattern p("f16_neg");
  PatternValue x = p.capture("x", [](const Value& v) { return v.dtype() == DType::F16; });
  p.results({p.node("Neg", {x})});
  p.replace([x](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::NegF16", {m[x]})->output()};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%a: f16[4], %b: f32[4]) {
  %x = Neg(%a) : f16[4]
  %y = Neg(%b) : f32[4]
  return %x, %y
})",
                    setOf(std::move(p))),
            R"(graph @main(%a: f16[4], %b: f32[4]) {
  %x = test::NegF16(%a) : f16[4]
  %y = Neg(%b) : f32[4]
  return %x, %y
}
)");
}

TEST(RewritePattern, IntermediateWithOtherUsersBlocksTheMatch) {
  const char* text = R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = Add(%m, %z) : f32[4]
  %t = Neg(%m) : f32[4]
  return %s, %t
})";
  RewriteStats stats;
  rewrite(text, setOf(mulAdd()), &stats);
  EXPECT_EQ(stats.rewrites, 0);

  // A graph output is another user too.
  rewrite(R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = Add(%m, %z) : f32[4]
  return %s, %m
})",
          setOf(mulAdd()), &stats);
  EXPECT_EQ(stats.rewrites, 0);

  // Allowed other users keep the original node.
  Pattern shared = mulAdd();
  shared.allowOtherUses(shared.valueHandle(shared.nodes()[0].outputs[0]));
  EXPECT_EQ(rewrite(text, setOf(std::move(shared))),
            R"(graph @main(%x: f32[4], %y: f32[4], %z: f32[4]) {
  %m = Mul(%x, %y) : f32[4]
  %s = test::MulAdd(%x, %y, %z) : f32[4]
  %t = Neg(%m) : f32[4]
  return %s, %t
}
)");
}

// Add then RMSNormalization -> one two-output node; both values are results.
Pattern addNorm() {
  Pattern p("add_norm");
  PatternValue x1 = p.capture("x1"), x2 = p.capture("x2"), g = p.capture("g");
  PatternNode add = p.node("Add", {x1, x2});
  PatternNode norm = p.node("RMSNormalization", {add, g});
  p.results({norm, add});
  p.replace([x1, x2, g](const Match& m, Rewriter& r) {
    Node* fused = r.create("test::AddNorm", {m[x1], m[x2], m[g]}, 2);
    return std::vector<Value*>{fused->output(0), fused->output(1)};
  });
  return p;
}

TEST(RewritePattern, MultiOutputPatternRewiresEveryUserOfEachResult) {
  EXPECT_EQ(rewrite(R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %s = Add(%a, %b) : f32[2,8]
  %y = RMSNormalization(%s, %g) : f32[2,8]
  %u = Neg(%y) : f32[2,8]
  %v = Mul(%s, %u) : f32[2,8]
  return %v, %s
})",
                    setOf(addNorm())),
            R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %y, %s = test::AddNorm(%a, %b, %g) : f32[2,8], f32[2,8]
  %u = Neg(%y) : f32[2,8]
  %v = Mul(%s, %u) : f32[2,8]
  return %v, %s
}
)");
}

TEST(RewritePattern, PatternWithTwoSinksFindsTheSecondThroughUsers) {
  Pattern p("neg_pair");
  PatternValue x = p.capture("x");
  PatternNode neg = p.node("Neg", {x});
  PatternNode relu = p.node("Relu", {neg});
  PatternNode sigmoid = p.node("Sigmoid", {neg});
  p.results({relu, sigmoid});
  p.replace([x](const Match& m, Rewriter& r) {
    Node* fused = r.create("test::NegReluSigmoid", {m[x]}, 2);
    return std::vector<Value*>{fused->output(0), fused->output(1)};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%a: f32[4], %b: f32[4]) {
  %n = Neg(%a) : f32[4]
  %r = Relu(%n) : f32[4]
  %m = Neg(%b) : f32[4]
  %t = Tanh(%m) : f32[4]
  %s = Sigmoid(%n) : f32[4]
  return %r, %s, %t
})",
                    setOf(std::move(p))),
            R"(graph @main(%a: f32[4], %b: f32[4]) {
  %m = Neg(%b) : f32[4]
  %t = Tanh(%m) : f32[4]
  %r, %s = test::NegReluSigmoid(%a) : f32[4], f32[4]
  return %r, %s, %t
}
)");
}

TEST(RewritePattern, AbsentOperands) {
  Pattern p("resize_without_roi");
  PatternValue x = p.capture("x"), scales = p.capture("scales");
  p.results({p.node("Resize", {x, p.absent(), scales})});
  p.replace([x, scales](const Match& m, Rewriter& r) {
    return std::vector<Value*>{r.create("test::Scale", {m[x], m[scales]})->output()};
  });
  EXPECT_EQ(rewrite(R"(graph @main(%x: f32[1,1,2,2], %roi: f32[8], %s: f32[4]) {
  %a = Resize(%x, _, %s) : ?[*]
  %b = Resize(%x, %roi, %s) : ?[*]
  %c = Resize(%x, _, %s, _) : ?[*]
  return %a, %b, %c
})",
                    setOf(std::move(p))),
            R"(graph @main(%x: f32[1,1,2,2], %roi: f32[8], %s: f32[4]) {
  %a = test::Scale(%x, %s) : ?[*]
  %b = Resize(%x, %roi, %s) : ?[*]
  %c = test::Scale(%x, %s) : ?[*]
  return %a, %b, %c
}
)");
}

TEST(RewritePattern, CheckSeesTheWholeMatchAndCanVeto) {
  std::vector<std::string> seen;
  Pattern p = addNorm();
  p.check([&](const Match& m) {
    seen.push_back(m.capture("x1")->name() + "+" + m.capture("x2")->name() + ":" +
                   m.result(1)->type().str() + ":" + m.root()->opType());
    return m.capture("g")->shape()[0] == Dim(8);
  });
  RewriteStats stats;
  rewrite(R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8], %h: f32[1]) {
  %s = Add(%a, %b) : f32[2,8]
  %y = RMSNormalization(%s, %h) : f32[2,8]
  return %y
})",
          setOf(p), &stats);
  EXPECT_EQ(stats.rewrites, 0);
  // A veto rejects one binding; the other order of the commutative Add is tried too.
  EXPECT_EQ(seen, (std::vector<std::string>{"a+b:f32[2,8]:RMSNormalization",
                                            "b+a:f32[2,8]:RMSNormalization"}));
  rewrite(R"(graph @main(%a: f32[2,8], %b: f32[2,8], %g: f32[8]) {
  %s = Add(%a, %b) : f32[2,8]
  %y = RMSNormalization(%s, %g) : f32[2,8]
  return %y
})",
          setOf(p), &stats);
  EXPECT_EQ(stats.rewrites, 1);
}

TEST(RewritePattern, MatchGivesNodesAndAttributesByName) {
  Pattern p("named");
  PatternValue x = p.capture("x");
  PatternNode softmax = p.node("Softmax", {x}).name("sm");
  p.results({softmax});
  std::string seen;
  p.replace([&, x, softmax](const Match& m, Rewriter& r) {
    seen = m.node("sm")->name() + " axis=" + std::to_string(m.attr(softmax, "axis")->asInt());
    EXPECT_EQ(m.node(softmax), m.node("sm"));
    EXPECT_EQ(m.attr(softmax, "nope"), nullptr);
    EXPECT_NE(errorOf([&] { m.capture("nope"); }).find("pattern 'named' has no capture named 'nope'"),
              std::string::npos);
    EXPECT_NE(errorOf([&] { m.node("nope"); }).find("pattern 'named' has no node named 'nope'"),
              std::string::npos);
    return std::vector<Value*>{r.create("Identity", {m[x]})->output()};
  });
  rewrite("graph @main(%x: f32[4]) {\n  %y = Softmax(%x) : f32[4] loc(\"head\")\n  return %y\n}",
          setOf(std::move(p)));
  EXPECT_EQ(seen, "head axis=-1");
}

TEST(RewritePattern, HandlesWorkInChecksAfterThePatternIsGone) {
  PatternSet set;
  {
    // Built in a scope that ends before the match: the handles the lambdas captured must
    // not reach back into this Pattern object.
    Pattern p("scoped");
    PatternValue x = p.capture("x");
    PatternNode neg = p.node("Neg", {x});
    p.results({neg});
    p.check([neg](const Match& m) { return m[neg]->dtype() == DType::F32; });
    p.replace([neg, x](const Match& m, Rewriter& r) {
      EXPECT_EQ(m.value(neg.out(0)), m.result(0));
      return std::vector<Value*>{r.create("test::Neg", {m[x]})->output()};
    });
    set.add(std::move(p));
  }
  RewriteStats stats;
  rewrite("graph @main(%x: f32[4]) {\n  %y = Neg(%x) : f32[4]\n  return %y\n}", set, &stats);
  EXPECT_EQ(stats.rewrites, 1);
}

TEST(RewritePattern, ValidationNamesThePatternAndTheProblem) {
  auto error = [](Pattern p) { return errorOf([&] { setOf(std::move(p)); }); };
  auto identity = [](const Match& m, Rewriter&) { return std::vector<Value*>{m.result(0)}; };
  {
    Pattern p("no_results");
    p.node("Neg", {p.capture("x")});
    p.replace(identity);
    EXPECT_EQ(error(std::move(p)), "pattern 'no_results' has no results");
  }
  {
    Pattern p("no_replacement");
    p.results({p.node("Neg", {p.capture("x")})});
    EXPECT_EQ(error(std::move(p)), "pattern 'no_replacement' has no replacement");
  }
  {
    Pattern p("capture_result");
    PatternValue x = p.capture("x");
    p.node("Neg", {x});
    p.results({x});
    p.replace(identity);
    EXPECT_EQ(error(std::move(p)),
              "pattern 'capture_result': result 0 is capture 'x', not an output of a pattern node");
  }
  {
    Pattern p("unused");
    PatternValue x = p.capture("x");
    p.capture("y");
    p.results({p.node("Neg", {x})});
    p.replace(identity);
    EXPECT_EQ(error(std::move(p)), "pattern 'unused': capture 'y' is not an operand of any node");
  }
  {
    Pattern p("split");
    p.results({p.node("Neg", {p.capture("x")}), p.node("Relu", {p.capture("y")})});
    p.replace(identity);
    EXPECT_EQ(error(std::move(p)),
              "pattern 'split': node Relu is not connected to node Neg; a pattern must be one "
              "connected graph");
  }
  {
    Pattern p("twice");
    PatternValue a = p.capture("x"), b = p.capture("x");
    p.results({p.node("Add", {a, b})});
    p.replace(identity);
    EXPECT_EQ(error(std::move(p)), "pattern 'twice': two captures are named 'x'");
  }
  {
    Pattern p("bad_output");
    PatternNode neg = p.node("Neg", {p.capture("x")});
    EXPECT_EQ(errorOf([&] { neg.out(1); }),
              "pattern node #0 has 1 output(s), output 1 does not exist");
  }
  {
    Pattern p("foreign");
    Pattern other("other");
    EXPECT_EQ(errorOf([&] { p.node("Neg", {other.capture("x")}); }),
              "pattern 'foreign': an operand of node Neg is not a value of this pattern");
    EXPECT_EQ(errorOf([&] { p.allowOtherUses(p.capture("c")); }),
              "pattern 'foreign': allowOtherUses() needs a node output, not a capture");
  }
}

}  // namespace
}  // namespace estuary
