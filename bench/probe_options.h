#pragma once
// The command line the machine probes (bandwidth_probe, fma_probe) share:
//   [--threads N]... [--repeats N] [--json] [--mib N]   (--mib where the probe has a buffer)
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

struct ProbeOptions {
  std::vector<int> thread_counts;  // 1 and every processor when none is given
  int repeats = 0;
  bool json = false;
  size_t mib = 0;
};

// The options, or nullopt after printing the usage (an unknown option, a value that is not a
// positive number, --mib where `default_mib` is 0).
inline std::optional<ProbeOptions> parseProbeOptions(int argc, char** argv, int default_repeats, size_t default_mib) {
  ProbeOptions options;
  options.repeats = default_repeats;
  options.mib = default_mib;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto number = [&]() -> long {
      if (i + 1 >= argc) return -1;
      char* end = nullptr;
      const long value = std::strtol(argv[++i], &end, 10);
      return *end == '\0' && value > 0 ? value : -1;
    };
    long value = 0;
    if (arg == "--json") {
      options.json = true;
    } else if (arg == "--mib" && default_mib > 0 && (value = number()) > 0) {
      options.mib = static_cast<size_t>(value);
    } else if (arg == "--threads" && (value = number()) > 0) {
      options.thread_counts.push_back(static_cast<int>(value));
    } else if (arg == "--repeats" && (value = number()) > 0) {
      options.repeats = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "usage: %s%s [--threads N]... [--repeats N] [--json]\n", argv[0],
                   default_mib > 0 ? " [--mib N]" : "");
      return std::nullopt;
    }
  }
  if (options.thread_counts.empty()) options.thread_counts = {1, omp_get_num_procs()};
  return options;
}
