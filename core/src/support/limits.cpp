#include "estuary/support/limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace estuary {

namespace {

// cgroup v2's memory.max, then v1's limit_in_bytes; "max" or an absurd v1 value: no limit.
std::optional<size_t> cgroupMemoryLimit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream file(path);
    std::string text;
    if (!(file >> text) || text == "max") continue;
    try {
      unsigned long long limit = std::stoull(text);
      if (limit > 0 && limit < (1ull << 60)) return static_cast<size_t>(limit);
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

}  // namespace

size_t availableMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  size_t bytes = pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                                            : size_t{8} << 30;
  if (std::optional<size_t> cgroup = cgroupMemoryLimit()) bytes = std::min(bytes, *cgroup);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      bytes = std::min(bytes, static_cast<size_t>(limit.rlim_cur));
    }
  }
  return bytes;
}

ResourceLimits ResourceLimits::forThisMachine() {
  static const size_t memory = availableMemoryBytes();
  ResourceLimits limits;
  limits.tensor_bytes = memory / 2;
  limits.plan_bytes = memory / 4 * 3;
  limits.run_bytes = memory;
  limits.plans = 64;
  return limits;
}

std::optional<size_t> checkedByteSize(const int64_t* dims, int rank, size_t element_bytes) {
  size_t bytes = element_bytes;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] < 0) return std::nullopt;
    if (__builtin_mul_overflow(bytes, static_cast<size_t>(dims[i]), &bytes)) return std::nullopt;
  }
  return bytes;
}

void checkLimit(const std::string& what, std::optional<size_t> bytes, size_t limit, std::string_view limit_name) {
  if (bytes && *bytes <= limit) return;
  std::string size = bytes ? formatByteSize(static_cast<double>(*bytes)) : "more than 16 EiB";
  raiseAs<ResourceLimitError>(what, " needs ", size, ", more than the ", limit_name, " limit of ",
                              formatByteSize(static_cast<double>(limit)),
                              " (the limits come from this machine's memory; docs/security.md tells how to set them)");
}

std::string formatByteSize(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(units)) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

size_t parseByteSize(const std::string& text) {
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::pair<const char*, double> units[] = {
      {"", 1},         {"b", 1},           {"k", 1e3},         {"kb", 1e3},     {"m", 1e6},
      {"mb", 1e6},     {"g", 1e9},         {"gb", 1e9},        {"t", 1e12},     {"tb", 1e12},
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  for (const auto& [name, scale] : units) {
    if (used == 0 || unit != name) continue;
    double bytes = number * scale;
    if (std::isfinite(bytes) && bytes >= 0 && bytes < 1.8e19) return static_cast<size_t>(bytes);
  }
  raise("'", text, "' is not a size: expected a number of bytes with an optional unit (4096, 512MB, 12GiB)");
}

}  // namespace estuary
