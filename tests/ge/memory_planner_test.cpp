#include <gtest/gtest.h>

#include <random>

#include "estuary/ge/memory_planner.h"

namespace estuary::ge {
namespace {

bool overlapInTime(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

void expectNoLiveOverlap(const std::vector<BufferLifetime>& buffers, const MemoryPlan& plan) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (!overlapInTime(buffers[i], buffers[j])) continue;
      bool disjoint = plan.offsets[i] + buffers[i].bytes <= plan.offsets[j] ||
                      plan.offsets[j] + buffers[j].bytes <= plan.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " are alive together and overlap";
    }
  }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  // a -> b -> c -> d: only two neighbours are alive at once.
  std::vector<BufferLifetime> buffers{{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  MemoryPlan plan = planMemory(buffers);
  expectNoLiveOverlap(buffers, plan);
  EXPECT_EQ(plan.lower_bound_bytes, 2048u);
  EXPECT_EQ(plan.arena_bytes, 2048u);
}

TEST(MemoryPlanner, RandomGraphsNeverOverlapAndStayNearTheBound) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLifetime> buffers;
    for (int i = 0; i < 200; ++i) {
      size_t first = random() % 100;
      buffers.push_back({64 * (1 + random() % 64), first, first + random() % 10});
    }
    MemoryPlan plan = planMemory(buffers);
    expectNoLiveOverlap(buffers, plan);
    EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
    EXPECT_LE(plan.arena_bytes, plan.lower_bound_bytes * 3 / 2) << "trial " << trial;
  }
}

TEST(MemoryPlanner, EmptyAndZeroSized) {
  EXPECT_EQ(planMemory({}).arena_bytes, 0u);
  MemoryPlan plan = planMemory({{0, 0, 0}, {0, 0, 0}});
  expectNoLiveOverlap({{0, 0, 0}, {0, 0, 0}}, plan);
}

}  // namespace
}  // namespace estuary::ge
