#include "estuary/sdk/options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "estuary/support/error.h"
#include "estuary/support/limits.h"

namespace estuary::sdk {

namespace {

std::string_view trim(std::string_view text) {
  size_t start = text.find_first_not_of(" \t");
  if (start == std::string_view::npos) return {};
  return text.substr(start, text.find_last_not_of(" \t") - start + 1);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Items separated by ';' or ',' (ATC separates --out_nodes with ';'), blanks dropped.
std::vector<std::string> listOf(std::string_view text) {
  std::vector<std::string> items;
  std::string item;
  for (char c : std::string(text) + ";") {
    if (c == ';' || c == ',') {
      std::string_view kept = trim(item);
      if (!kept.empty()) items.emplace_back(kept);
      item.clear();
    } else {
      item += c;
    }
  }
  return items;
}

int64_t integerOf(std::string_view key, std::string_view text, int64_t minimum) {
  std::optional<int64_t> value = parseInteger(text);
  if (!value || *value < minimum) {
    raiseAs<InputValueError>("build option '", key, "' needs an integer of at least ", minimum, ", got '", text, "'");
  }
  return *value;
}

bool booleanOf(std::string_view key, std::string_view text) {
  std::string_view value = trim(text);
  if (value == "1" || value == "true" || value == "on" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "off" || value == "no") return false;
  raiseAs<InputValueError>("build option '", key, "' is a switch (true/false, on/off, 1/0), got '", text, "'");
}

size_t byteSizeOf(std::string_view key, std::string_view text) {
  try {
    return parseByteSize(std::string(trim(text)));
  } catch (const Error& error) {
    raiseAs<InputValueError>("build option '", key, "': ", error.what());
  }
}

double secondsOf(std::string_view key, std::string_view text) {
  const std::string value(trim(text));
  char* end = nullptr;
  const double seconds = value.empty() ? -1 : std::strtod(value.c_str(), &end);
  if (seconds < 0 || end != value.c_str() + value.size() || !std::isfinite(seconds)) {
    raiseAs<InputValueError>("build option '", key, "' needs seconds (a number of at least 0), got '", text, "'");
  }
  return seconds;
}

std::string deviceOf(std::string_view key, std::string_view text) {
  const std::string name(trim(text));
  const std::vector<std::string> known = ge::deviceNames();
  if (std::find(known.begin(), known.end(), name) != known.end()) return name;
  std::string list;
  for (const std::string& device : known) list += (list.empty() ? "" : ", ") + device;
  raiseAs<InputValueError>("build option '", key, "': unknown device '", text, "' (known: ", list, ")");
}

using Setter = std::function<void(BuildConfig&, std::string_view key, std::string_view value)>;

struct KeyEntry {
  BuildConfig::Key key;
  Setter set;
};

const std::vector<KeyEntry>& keyTable() {
  static const std::vector<KeyEntry> table = {
      {{"framework", "NAME", "the frontend: onnx, tensorflow, paddle, mindspore (ATC's 1, 3, 5 too); found from "
                             "the model when not given"},
       [](BuildConfig& c, auto, auto v) { c.framework = frameworkName(trim(v)); }},
      {{"signature", "NAME", "the variant to load, e.g. a SavedModel's signature"},
       [](BuildConfig& c, auto, auto v) { c.frontend.variant = trim(v); }},
      {{"weights", "PATH", "the weights, when not where the frontend looks by default"},
       [](BuildConfig& c, auto, auto v) { c.frontend.weights = trim(v); }},
      {{"allow_dirs", "DIR;DIR", "folders besides the model's own where files it names may lie"},
       [](BuildConfig& c, auto, auto v) { c.frontend.allowed_dirs = listOf(v); }},
      {{"out_nodes", "NAME;NAME", "values to return as outputs instead of the model's (ATC's --out_nodes)"},
       [](BuildConfig& c, auto, auto v) { c.frontend.outputs = listOf(v); }},
      {{"input_shape", "SPEC", "input dims: \"x:1,3,224,224;y:-1,128;z:1~16,64\" (-1 keeps a dim, 1~16 bounds it)"},
       [](BuildConfig& c, auto, auto v) {
         c.input_shapes.clear();
         c.input_ranges.clear();
         parseInputShapeSpec(v, c.input_shapes, c.input_ranges);
       }},
      {{"pipeline", "NAME|FILE|PASSES", "a shipped pipeline (O0..O3), a pipeline YAML file, or a pass list"},
       [](BuildConfig& c, auto, auto v) { c.pipeline = trim(v); }},
      {{"disable", "NAME,NAME", "passes or groups to switch off"},
       [](BuildConfig& c, auto, auto v) { c.disabled_passes = listOf(v); }},
      {{"fusion_switch_file", "FILE", "YAML mapping of pass names to on/off (ATC's fusion switch file)"},
       [](BuildConfig& c, auto, auto v) { c.switch_file = trim(v); }},
      {{"plugins", "NAME;PATH", "plugins to load first (their ops, passes, frontends and conversions)"},
       [](BuildConfig& c, auto, auto v) { c.plugins = listOf(v); }},
      {{"debug", "BOOL", "dump the IR before and after every pass and verify after each"},
       [](BuildConfig& c, auto k, auto v) { c.debug = booleanOf(k, v); }},
      {{"dump_dir", "DIR", "where debug dumps go"}, [](BuildConfig& c, auto, auto v) { c.dump_dir = trim(v); }},
      {{"precision_mode", "MODE", "which float computations run in 16 bits: origin (default: the model's dtypes), fp32, "
                                  "bf16, fp16, mixed-bf16, mixed-fp16, or ATC's names (force_fp32, allow_mix_precision, ...)"},
       [](BuildConfig& c, auto k, auto v) {
         std::optional<PrecisionMode> mode = parsePrecisionMode(trim(v));
         if (!mode) raiseAs<InputValueError>("build option '", k, "': unknown mode '", v, "' (known: ", precisionModeSpellings(), ")");
         c.precision_mode = *mode;
       }},
      {{"precision_lists", "FILE", "the mixed modes' lists of ops that go to 16 bits, stay f32, or follow "
                                   "(configs/precision/mixed.yaml by default)"},
       [](BuildConfig& c, auto, auto v) { c.precision_lists = trim(v); }},
      {{"modify_mixlist", "FILE", "ATC's edits of the mixed lists (white-list/black-list/gray-list, to-add/to-remove)"},
       [](BuildConfig& c, auto, auto v) { c.modify_mixlist = trim(v); }},
      {{"keep_dtype", "FILE", "ATC's file of node names (or OpType::X) that keep their model's dtypes"},
       [](BuildConfig& c, auto, auto v) { c.keep_dtype = trim(v); }},
      {{"allow_slow_precision", "BOOL", "build a 16-bit mode even where the device has no fast kernels for it"},
       [](BuildConfig& c, auto k, auto v) { c.allow_slow_precision = booleanOf(k, v); }},
      {{"device", "NAME", "the device to build for and run on: cpu (default), or reference (plain kernels in "
                          "f32/f64, to check results against)"},
       [](BuildConfig& c, auto k, auto v) { c.device = deviceOf(k, v); }},
      {{"threads", "N", "intra-op threads of a run; 0 is one per core"},
       [](BuildConfig& c, auto k, auto v) { c.backend.num_threads = static_cast<int>(integerOf(k, v, 0)); }},
      {{"fuse_epilogues", "BOOL", "move bias adds, residual adds and activations into the matrix products before "
                                  "them (default true)"},
       [](BuildConfig& c, auto k, auto v) { c.backend.fuse_epilogues = booleanOf(k, v); }},
      {{"tune_kernels", "BOOL", "time each kernel a node could run on this machine and keep the fastest (default "
                                "false here; estuary convert and build tune unless --tuning off)"},
       [](BuildConfig& c, auto k, auto v) { c.backend.tune_kernels = booleanOf(k, v); }},
      {{"timing_cache", "FILE", "a timing cache: problems measured in an earlier build are not timed again, and "
                                "what this build measures is added"},
       [](BuildConfig& c, auto, auto v) { c.backend.timing_cache = trim(v); }},
      {{"tuning_budget", "SECONDS", "the most time tuning may spend measuring (default 60)"},
       [](BuildConfig& c, auto k, auto v) { c.backend.tuning_budget_seconds = secondsOf(k, v); }},
      {{"max_tensor_size", "SIZE", "refuse any one value larger than this (512MB, 4GiB)"},
       [](BuildConfig& c, auto k, auto v) { c.backend.limits.tensor_bytes = byteSizeOf(k, v); }},
      {{"max_plan_size", "SIZE", "refuse a plan whose activation memory is larger than this"},
       [](BuildConfig& c, auto k, auto v) { c.backend.limits.plan_bytes = byteSizeOf(k, v); }},
      {{"max_run_size", "SIZE", "refuse a run that would allocate more than this"},
       [](BuildConfig& c, auto k, auto v) { c.backend.limits.run_bytes = byteSizeOf(k, v); }},
      {{"max_plans", "N", "plans (one per input shape) a model keeps"},
       [](BuildConfig& c, auto k, auto v) { c.backend.limits.plans = static_cast<size_t>(integerOf(k, v, 1)); }},
  };
  return table;
}

constexpr std::string_view kFrontendPrefix = "frontend.";

}  // namespace

void BuildConfig::set(std::string_view key, std::string_view value) {
  if (key.substr(0, kFrontendPrefix.size()) == kFrontendPrefix && key.size() > kFrontendPrefix.size()) {
    // Checked against the frontend's declared keys when the model is loaded.
    frontend.keys[std::string(key.substr(kFrontendPrefix.size()))] = std::string(value);
    return;
  }
  for (const KeyEntry& entry : keyTable()) {
    if (key == entry.key.name) {
      entry.set(*this, key, value);
      return;
    }
  }
  std::string known;
  for (const KeyEntry& entry : keyTable()) known += std::string(known.empty() ? "" : ", ") + entry.key.name;
  raiseAs<InputValueError>("unknown build option '", key, "' (known: ", known, ", and frontend.<key>)");
}

BuildConfig BuildConfig::fromMap(const std::map<std::string, std::string>& options) {
  return fromMap(options, BuildConfig{});
}

BuildConfig BuildConfig::fromMap(const std::map<std::string, std::string>& options, BuildConfig base) {
  for (const auto& [key, value] : options) base.set(key, value);
  return base;
}

const std::vector<BuildConfig::Key>& BuildConfig::keys() {
  static const std::vector<Key> keys = [] {
    std::vector<Key> list;
    for (const KeyEntry& entry : keyTable()) list.push_back(entry.key);
    list.push_back({"frontend.<key>", "VALUE", "a frontend-specific key (an unknown one is an error listing the "
                                               "frontend's keys)"});
    return list;
  }();
  return keys;
}

void parseInputShapeSpec(std::string_view text, InputShapes& shapes, InputDimRanges& ranges) {
  for (std::string_view raw : split(text, ';')) {
    std::string_view entry = trim(raw);
    if (entry.empty()) continue;
    size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || trim(entry.substr(0, colon)).empty()) {
      raiseAs<InputValueError>("input shape '", entry, "' is not NAME:DIMS (e.g. \"x:1,3,224,224;y:-1,128\")");
    }
    const std::string name(trim(entry.substr(0, colon)));
    auto number = [&](std::string_view digits, int64_t minimum) {
      std::optional<int64_t> value = parseInteger(digits);
      if (!value || *value < minimum) {
        raiseAs<InputValueError>("input shape of '", name, "': '", digits,
                                 "' is not a dimension (a size, -1 to keep it, or a range such as 1~16)");
      }
      return *value;
    };
    std::vector<int64_t> dims;
    std::string_view dim_list = trim(entry.substr(colon + 1));
    if (!dim_list.empty()) {
      for (std::string_view part : split(dim_list, ',')) {
        std::string_view dim = trim(part);
        size_t tilde = dim.find('~');
        if (tilde == std::string_view::npos) {
          dims.push_back(number(dim, -1));
          continue;
        }
        DimRange range{number(dim.substr(0, tilde), 0), number(dim.substr(tilde + 1), 0)};
        if (range.min > range.max) raiseAs<InputValueError>("input shape of '", name, "': the range ", dim, " is empty");
        ranges[name][dims.size()] = range;
        dims.push_back(-1);
      }
    }
    if (!shapes.emplace(name, dims).second) raiseAs<InputValueError>("input shape of '", name, "' is given twice");
  }
}

std::optional<int64_t> parseInteger(std::string_view text) {
  std::string digits(trim(text));
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(digits, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != digits.size()) return std::nullopt;
  return value;
}

std::string frameworkName(std::string_view name) {
  if (name == "1") return "mindspore";
  if (name == "3") return "tensorflow";
  if (name == "5") return "onnx";
  if (name == "0") raiseAs<InputValueError>("framework 0 (Caffe) is not a framework Estuary reads");
  return std::string(name);
}

}  // namespace estuary::sdk
