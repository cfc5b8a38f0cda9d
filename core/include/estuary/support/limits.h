#pragma once
// How much memory one model may ask for, so that a hostile or mistaken shape (a 2^40-element
// input, an Expand to a huge shape) is refused with a clear error instead of an allocation
// that fails deep inside a run or, worse, succeeds and takes the machine down. The defaults
// come from the memory this process may use; a user sets them per model.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "estuary/support/error.h"

namespace estuary {

// A model needs more memory than its limits or the machine allow. The message names the
// value or plan and its size, and the limit with how to change it.
class ResourceLimitError : public Error {
 public:
  using Error::Error;
};

struct ResourceLimits {
  size_t tensor_bytes = 0;  // any one value: an input, an output, an activation, a constant
  size_t plan_bytes = 0;    // a plan's activation memory (its arena), which each run context holds
  size_t run_bytes = 0;     // all one run allocates: the arena and the outputs it returns
  size_t plans = 0;         // plans (one per input shape signature) a model keeps; the least recently
                            // used one makes room for a new one

  // Derived from availableMemoryBytes(): a tensor up to half of it, a plan up to three
  // quarters, a run up to all of it; 64 plans.
  static ResourceLimits forThisMachine();
};

// The memory this process may use: the least of the machine's physical memory, the cgroup's
// limit (a container's) and RLIMIT_AS / RLIMIT_DATA.
size_t availableMemoryBytes();

// elements * element_bytes of a shape, or nullopt when the product overflows 64 bits.
std::optional<size_t> checkedByteSize(const int64_t* dims, int rank, size_t element_bytes);

// Raises ResourceLimitError when `bytes` (nullopt: too many to count) passes `limit`:
// "<what> needs 4 TiB, more than the tensor limit of 12 GiB (--max-tensor-size)".
void checkLimit(const std::string& what, std::optional<size_t> bytes, size_t limit, std::string_view limit_name);

// "12 GiB", "1.5 MiB", "312 B".
std::string formatByteSize(double bytes);
// "12GiB", "512MB", "1e9", "4096" (bytes) -> bytes. Raises an Error naming `text` otherwise.
size_t parseByteSize(const std::string& text);

}  // namespace estuary
