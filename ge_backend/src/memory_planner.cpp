#include "estuary/ge/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace estuary::ge {

namespace {

size_t alignUp(size_t bytes, size_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

}  // namespace

MemoryPlan planMemory(const std::vector<BufferLifetime>& buffers, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  if (buffers.empty()) return plan;

  // Lower bound: sweep the steps, adding a buffer when it starts and removing it after it ends.
  size_t last_step = 0;
  for (const BufferLifetime& buffer : buffers) last_step = std::max(last_step, buffer.last_step);
  std::vector<ptrdiff_t> delta(last_step + 2, 0);
  for (const BufferLifetime& buffer : buffers) {
    delta[buffer.first_step] += static_cast<ptrdiff_t>(alignUp(buffer.bytes, alignment));
    delta[buffer.last_step + 1] -= static_cast<ptrdiff_t>(alignUp(buffer.bytes, alignment));
  }
  ptrdiff_t live = 0;
  for (ptrdiff_t change : delta) {
    live += change;
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, static_cast<size_t>(live));
  }

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  struct Placed {
    size_t offset, end, first, last;
  };
  std::vector<Placed> placed;  // kept sorted by offset
  placed.reserve(buffers.size());
  std::vector<const Placed*> conflicts;
  for (size_t index : order) {
    const BufferLifetime& buffer = buffers[index];
    size_t size = alignUp(std::max<size_t>(buffer.bytes, 1), alignment);
    conflicts.clear();
    for (const Placed& other : placed) {
      if (other.first <= buffer.last_step && buffer.first_step <= other.last) conflicts.push_back(&other);
    }
    // Conflicts are in offset order: take the first gap that fits.
    size_t offset = 0;
    for (const Placed* other : conflicts) {
      if (other->offset >= offset + size) break;
      offset = std::max(offset, other->end);
    }
    Placed entry{offset, offset + size, buffer.first_step, buffer.last_step};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), entry,
                                   [](const Placed& a, const Placed& b) { return a.offset < b.offset; }),
                  entry);
    plan.offsets[index] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
  }
  return plan;
}

}  // namespace estuary::ge
