#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "estuary/pass/pass.h"
#include "estuary/support/error.h"

namespace estuary {
namespace {

using testing::HasSubstr;

// Records the options it was created with.
class OptionsPass : public Pass {
 public:
  explicit OptionsPass(PassOptions options) : options(std::move(options)) {}
  PassResult run(Graph&, PassContext&) override { return {}; }
  PassOptions options;
};

PassInfo optionsPassInfo(std::string name = "tile") {
  PassInfo info;
  info.name = std::move(name);
  info.description = "test pass with one option of each kind";
  info.options = {
      {"aggressive", OptionSpec::Kind::Bool, false, ""},
      {"max_depth", OptionSpec::Kind::Int, int64_t{4}, ""},
      {"ratio", OptionSpec::Kind::Float, 0.5, ""},
      {"mode", OptionSpec::Kind::String, std::string("fast"), ""},
      {"ops", OptionSpec::Kind::StringList, std::vector<std::string>{"Add"}, ""},
  };
  info.factory = [](const PassOptions& options) { return std::make_unique<OptionsPass>(options); };
  return info;
}

std::string errorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(PassRegistry, CreateFillsDefaults) {
  PassRegistry registry;
  registry.add(optionsPassInfo());
  std::shared_ptr<Pass> pass = registry.create("tile", {});
  const PassOptions& options = static_cast<OptionsPass&>(*pass).options;
  EXPECT_FALSE(options.getBool("aggressive"));
  EXPECT_EQ(options.getInt("max_depth"), 4);
  EXPECT_DOUBLE_EQ(options.getFloat("ratio"), 0.5);
  EXPECT_EQ(options.getString("mode"), "fast");
  EXPECT_EQ(options.getStringList("ops"), std::vector<std::string>{"Add"});
}

TEST(PassRegistry, CreateAppliesGivenOptionsAndWidensIntToFloat) {
  PassRegistry registry;
  registry.add(optionsPassInfo());
  std::shared_ptr<Pass> pass = registry.create(
      "tile", {{"aggressive", true}, {"ratio", int64_t{2}}, {"ops", std::vector<std::string>{"Mul", "Div"}}});
  const PassOptions& options = static_cast<OptionsPass&>(*pass).options;
  EXPECT_TRUE(options.getBool("aggressive"));
  EXPECT_DOUBLE_EQ(options.getFloat("ratio"), 2.0);
  EXPECT_EQ(options.getStringList("ops"), (std::vector<std::string>{"Mul", "Div"}));
}

TEST(PassRegistry, UnknownPassSuggestsCloseNames) {
  PassRegistry registry;
  registry.add(optionsPassInfo("canonicalize"));
  registry.add(optionsPassInfo("cse"));
  registry.add(optionsPassInfo("dce"));
  std::string message = errorOf([&] { registry.create("canonicalise", {}); });
  EXPECT_THAT(message, HasSubstr("unknown pass 'canonicalise'"));
  EXPECT_THAT(message, HasSubstr("did you mean: canonicalize"));
  EXPECT_THAT(message, testing::Not(HasSubstr("dce")));
}

TEST(PassRegistry, UnknownPassWithoutCloseNameListsAllPasses) {
  PassRegistry registry;
  registry.add(optionsPassInfo("cse"));
  registry.add(optionsPassInfo("dce"));
  std::string message = errorOf([&] { registry.get("vectorize-everything"); });
  EXPECT_THAT(message, HasSubstr("unknown pass 'vectorize-everything'; registered passes: cse, dce"));
}

TEST(PassRegistry, UnknownOptionNamesPassOptionAndValidOptions) {
  PassRegistry registry;
  registry.add(optionsPassInfo());
  std::string message = errorOf([&] { registry.create("tile", {{"depth", int64_t{3}}}); });
  EXPECT_THAT(message, HasSubstr("pass 'tile' has no option 'depth'"));
  EXPECT_THAT(message, HasSubstr("aggressive (bool), max_depth (int), ratio (float), "
                                 "mode (string), ops (list of strings)"));
}

TEST(PassRegistry, UnknownOptionOfPassWithoutOptions) {
  PassRegistry registry;
  PassInfo info = optionsPassInfo("plain");
  info.options.clear();
  registry.add(info);
  EXPECT_THAT(errorOf([&] { registry.create("plain", {{"x", true}}); }),
              HasSubstr("pass 'plain' has no option 'x'; it takes no options"));
}

TEST(PassRegistry, WrongKindNamesExpectedKind) {
  PassRegistry registry;
  registry.add(optionsPassInfo());
  std::string message = errorOf([&] { registry.create("tile", {{"max_depth", std::string("deep")}}); });
  EXPECT_THAT(message, HasSubstr("pass 'tile': option 'max_depth' expects an int, got a string (deep)"));
  EXPECT_THAT(errorOf([&] { registry.create("tile", {{"aggressive", int64_t{1}}}); }),
              HasSubstr("option 'aggressive' expects a bool, got an int"));
  EXPECT_THAT(errorOf([&] { registry.create("tile", {{"ops", std::string("Add")}}); }),
              HasSubstr("option 'ops' expects a list of strings"));
}

TEST(PassRegistry, RefusesDuplicatesAndBadDeclarations) {
  PassRegistry registry;
  registry.add(optionsPassInfo());
  EXPECT_THAT(errorOf([&] { registry.add(optionsPassInfo()); }),
              HasSubstr("pass 'tile' is already registered"));
  PassInfo bad_default = optionsPassInfo("bad");
  bad_default.options[1].default_value = std::string("four");
  EXPECT_THAT(errorOf([&] { registry.add(bad_default); }),
              HasSubstr("the default of option 'max_depth' is a string, the option is declared an int"));
  PassInfo no_factory = optionsPassInfo("nofactory");
  no_factory.factory = nullptr;
  EXPECT_THAT(errorOf([&] { registry.add(no_factory); }), HasSubstr("without a factory"));
  EXPECT_THAT(errorOf([&] { registry.add(PassInfo{}); }), HasSubstr("without a name"));
  PassInfo int_path = optionsPassInfo("intpath");
  int_path.options[1].is_path = true;
  EXPECT_THAT(errorOf([&] { registry.add(int_path); }),
              HasSubstr("pass 'intpath': option 'max_depth' is declared a path but is an int"));
}

TEST(PassRegistry, AllIsSortedByName) {
  PassRegistry registry;
  registry.add(optionsPassInfo("zeta"));
  registry.add(optionsPassInfo("alpha"));
  std::vector<const PassInfo*> all = registry.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->name, "alpha");
  EXPECT_EQ(all[1]->name, "zeta");
  EXPECT_EQ(registry.find("missing"), nullptr);
}

TEST(PassRegistry, CreatedPassKeepsItsPluginAlive) {
  PassRegistry registry;
  auto plugin = std::make_shared<int>(7);
  std::weak_ptr<int> watch = plugin;
  registry.add(optionsPassInfo(), std::move(plugin));
  std::shared_ptr<Pass> pass = registry.create("tile", {});
  registry = PassRegistry();  // the registry lets go of the plugin
  EXPECT_FALSE(watch.expired());
  pass.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(PassRegistry, GlobalHoldsTheCorePasses) {
  PassRegistry& registry = PassRegistry::global();
  for (const char* name : {"canonicalize", "cse", "dce", "infer_shapes"}) {
    EXPECT_NE(registry.find(name), nullptr) << name;
  }
  EXPECT_NE(registry.create("canonicalize", {{"disable", std::vector<std::string>{"cast"}}}), nullptr);
  EXPECT_THAT(errorOf([&] {
                registry.create("canonicalize", {{"disable", std::vector<std::string>{"castt"}}});
              }),
              HasSubstr("unknown rule 'castt'"));
}

TEST(PassOptions, TypedGettersRefuseOtherKindsAndUndeclaredNames) {
  PassOptions options;
  options.set("n", int64_t{3});
  EXPECT_EQ(options.getInt("n"), 3);
  EXPECT_DOUBLE_EQ(options.getFloat("n"), 3.0);
  EXPECT_THAT(errorOf([&] { options.getString("n"); }),
              HasSubstr("pass option 'n' is an int, not a string"));
  EXPECT_THAT(errorOf([&] { options.getBool("missing"); }),
              HasSubstr("pass option 'missing' is not declared"));
}

TEST(OptionValues, ParseEachKind) {
  OptionValue value;
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::Bool, "off", value));
  EXPECT_EQ(std::get<bool>(value), false);
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::Bool, "True", value));
  EXPECT_EQ(std::get<bool>(value), true);
  EXPECT_FALSE(parseOptionValue(OptionSpec::Kind::Bool, "maybe", value));
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::Int, " -12 ", value));
  EXPECT_EQ(std::get<int64_t>(value), -12);
  EXPECT_FALSE(parseOptionValue(OptionSpec::Kind::Int, "1.5", value));
  EXPECT_FALSE(parseOptionValue(OptionSpec::Kind::Int, "99999999999999999999", value));
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::Float, "1e-6", value));
  EXPECT_DOUBLE_EQ(std::get<double>(value), 1e-6);
  EXPECT_FALSE(parseOptionValue(OptionSpec::Kind::Float, "fast", value));
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::String, "any text", value));
  EXPECT_EQ(std::get<std::string>(value), "any text");
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::StringList, "[a, b]", value));
  EXPECT_EQ(std::get<std::vector<std::string>>(value), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(parseOptionValue(OptionSpec::Kind::StringList, "[]", value));
  EXPECT_TRUE(std::get<std::vector<std::string>>(value).empty());
  EXPECT_FALSE(parseOptionValue(OptionSpec::Kind::StringList, "[a,,b]", value));
  EXPECT_FALSE(parseOptionValue(OptionSpec::Kind::StringList, "a,", value));
  EXPECT_EQ(formatOptionValue(std::vector<std::string>{"x", "y"}), "[x, y]");
  EXPECT_EQ(formatOptionValue(true), "true");
}

TEST(CloseNames, FindsTyposAndContainedNames) {
  std::vector<std::string> names = {"canonicalize", "cse", "dce", "infer_shapes"};
  EXPECT_EQ(closeNames("cse", names).front(), "cse");
  EXPECT_EQ(closeNames("infer-shape", names), std::vector<std::string>{"infer_shapes"});
  EXPECT_EQ(closeNames("ces", names).front(), "cse");
  EXPECT_TRUE(closeNames("vectorize", names).empty());
}

}  // namespace
}  // namespace estuary
