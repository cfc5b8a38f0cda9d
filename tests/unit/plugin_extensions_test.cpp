#include <gtest/gtest.h>

#include "estuary/plugin/extensions.h"
#include "estuary/support/error.h"

namespace estuary {
namespace {

TEST(ExtensionPoints, ContributionsWaitForTheirRegistry) {
  ExtensionPoints points;
  std::vector<std::string> registry;
  auto keep_alive = std::make_shared<int>(1);
  points.contribute("test.early", [](void* target, const std::shared_ptr<const void>& alive) {
    static_cast<std::vector<std::string>*>(target)->push_back(alive ? "early, kept alive" : "early");
  }, keep_alive);
  EXPECT_TRUE(registry.empty());
  EXPECT_FALSE(points.isProvided("test.early"));
  points.provide("test.early", &registry);
  EXPECT_EQ(registry, std::vector<std::string>{"early, kept alive"});
  points.contribute("test.early", [](void* target, const std::shared_ptr<const void>&) {
    static_cast<std::vector<std::string>*>(target)->push_back("late");
  }, nullptr);
  EXPECT_EQ(registry, (std::vector<std::string>{"early, kept alive", "late"}));
}

TEST(ExtensionPoints, ProvidingTwiceIsRefused) {
  ExtensionPoints points;
  int registry = 0;
  points.provide("test.twice", &registry);
  EXPECT_THROW(points.provide("test.twice", &registry), Error);
}

TEST(ExtensionPoints, AWaitingContributionKeepsItsPluginAlive) {
  ExtensionPoints points;
  auto keep_alive = std::make_shared<int>(1);
  std::weak_ptr<int> watch = keep_alive;
  points.contribute("test.alive", [](void*, const std::shared_ptr<const void>&) {}, keep_alive);
  keep_alive.reset();
  EXPECT_FALSE(watch.expired());
  int registry = 0;
  points.provide("test.alive", &registry);
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace estuary
