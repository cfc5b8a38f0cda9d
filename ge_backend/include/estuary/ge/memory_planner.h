#pragma once
// Static memory planning: offsets in one arena for buffers with known sizes and lifetimes.
#include <cstddef>
#include <vector>

namespace estuary::ge {

struct BufferLifetime {
  size_t bytes;
  size_t first_step;  // the step that writes it first
  size_t last_step;   // the last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per buffer, each a multiple of the alignment
  size_t arena_bytes = 0;
  // The most bytes alive at any one step (aligned sizes): no plan can use less.
  size_t lower_bound_bytes = 0;
};

// Greedy by size: the largest buffers are placed first, each at the lowest offset that
// overlaps no placed buffer alive at the same time. Two buffers share memory only when
// their lifetimes are disjoint.
MemoryPlan planMemory(const std::vector<BufferLifetime>& buffers, size_t alignment = 64);

}  // namespace estuary::ge
