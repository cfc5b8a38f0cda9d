#include "tuning.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "estuary/ge/device.h"
#include "estuary/ge/model.h"
#include "estuary/support/atomic_file.h"
#include "estuary/support/error.h"
#include "plan.h"
#include "worker_pool.h"

namespace estuary::ge {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kCacheHeader[] = "# estuary timing cache 1";
// Each tactic runs once to warm up, then until it has run kMaxRuns times or for
// kSecondsPerTactic, at least kMinRuns times; its time is the median.
constexpr int kMinRuns = 3, kMaxRuns = 15;
constexpr double kSecondsPerTactic = 0.05;
// Whole plans run at least once more after the warm-up and on for kSecondsPerPlan: a plan
// of seconds (ResNet-50 at batch 8 on one thread) is timed once, which is enough for the
// layouts' differences of 5% and more that matter.
constexpr int kMinPlanRuns = 1;
constexpr double kSecondsPerPlan = 1.0;
// A tactic replaces an earlier one (the rules prefer earlier ones) only when this much
// faster: smaller differences are within the noise of a few timed runs on a shared machine.
// MobileNetV2 at batch 8 ran 1.5% slower when a 4% faster 1x1 kernel replaced the rules' one.
constexpr double kRequiredGain = 0.05;

// The last-level cache of the core this runs on, from sysfs (8 MiB when unknown).
size_t lastLevelCacheBytes() {
  for (int index = 4; index >= 0; --index) {
    std::ifstream size_file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(size_file >> text) || text.empty()) continue;
    size_t multiplier = 1;
    if (text.back() == 'K') multiplier = size_t{1} << 10;
    if (text.back() == 'M') multiplier = size_t{1} << 20;
    const size_t value = std::strtoull(text.c_str(), nullptr, 10) * multiplier;
    if (value > 0) return value;
  }
  return size_t{8} << 20;
}

// Reads every cache line of `bytes` bytes at `data`.
void touch(const void* data, size_t bytes) {
  const auto* lines = static_cast<const unsigned char*>(data);
  unsigned sum = 0;
  for (size_t i = 0; i < bytes; i += 64) sum += lines[i];
  volatile unsigned sink = sum;
  (void)sink;
}

// Reads a buffer twice the last-level cache, so that the next run finds its weights in
// memory, as a run of a whole model does once its weights outgrow the caches. A kernel
// timed alone would keep them cached between runs, and the tuner would reward what computes
// fastest on cached data rather than what streams fastest, which a decode step needs: GPT-2's
// 768x768 product takes 0.10 ms with warm caches and 0.23 ms with its weights in memory
// (Zen 1). The activations a kernel reads are then read once more: in a model they come hot
// from the kernel before.
void evictCaches() {
  static const std::vector<uint64_t> sweep(std::clamp<size_t>(2 * lastLevelCacheBytes(), size_t{16} << 20,
                                                              size_t{256} << 20) / sizeof(uint64_t), 1);
  touch(sweep.data(), sweep.size() * sizeof(uint64_t));
}

std::string cpuModelName() {
  static const std::string name = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("model name", 0) != 0) continue;
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
    return std::string("unknown CPU");
  }();
  return name;
}

// Keys and tactic names are single fields of a tab-separated line.
std::string oneField(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; }, ' ');
  return text;
}

void appendAttributes(std::ostringstream& out, const AttributeMap& attributes);

// A subgraph attribute (a fused epilogue) by its ops and their attributes, not its value
// names, so that every layer with the same epilogue shares a key.
void appendGraph(std::ostringstream& out, const Graph& graph) {
  out << '[';
  for (const Node* node : graph.nodes()) {
    out << node->qualifiedOpType();
    appendAttributes(out, node->attributes());
    out << ' ';
  }
  out << ']';
}

void appendAttribute(std::ostringstream& out, const Attribute& attribute) {
  switch (attribute.kind()) {
    case AttrKind::Int: out << attribute.asInt(); break;
    case AttrKind::Float: out << attribute.asFloat(); break;
    case AttrKind::String: out << '"' << attribute.asString() << '"'; break;
    case AttrKind::Type: out << dtypeName(attribute.asType()); break;
    // A tensor attribute by its type: its values change no timing.
    case AttrKind::Tensor:
      out << "tensor<" << dtypeName(attribute.asTensor().dtype());
      for (int64_t d : attribute.asTensor().shape()) out << ',' << d;
      out << '>';
      break;
    case AttrKind::Graph: appendGraph(out, *attribute.asGraph()); break;
    case AttrKind::Ints:
      for (int64_t v : attribute.asInts()) out << v << ',';
      break;
    case AttrKind::Floats:
      for (double v : attribute.asFloats()) out << v << ',';
      break;
    case AttrKind::Strings:
      for (const std::string& v : attribute.asStrings()) out << '"' << v << "\",";
      break;
  }
}

void appendAttributes(std::ostringstream& out, const AttributeMap& attributes) {
  out << '{';
  for (const auto& [name, attribute] : attributes) {
    out << name << '=';
    appendAttribute(out, attribute);
    out << ';';
  }
  out << '}';
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<void, FreeDeleter>;

AlignedBuffer alignedBuffer(size_t bytes) {
  void* memory = std::aligned_alloc(64, std::max<size_t>((bytes + 63) / 64 * 64, 64));
  if (!memory) throw std::bad_alloc();
  std::memset(memory, 0, std::max<size_t>(bytes, 1));
  return AlignedBuffer(memory);
}

// Values in [-1, 1): float kernels time as on real data (zeros could take shortcuts), and
// nothing overflows. Other element types stay zero, a valid index for any gather.
void fillSynthetic(const TensorDesc& desc, void* data) {
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<double>(state >> 8) / (1u << 23) - 1.0;
  };
  const int64_t count = desc.storedElements();
  if (desc.dtype == DType::F32) {
    auto* values = static_cast<float*>(data);
    for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(next());
  } else if (desc.dtype == DType::F64) {
    auto* values = static_cast<double*>(data);
    for (int64_t i = 0; i < count; ++i) values[i] = next();
  }
}

// The median seconds of run(): once to warm up, then `min_runs` times and on up to kMaxRuns
// while the runs took less than `seconds`, each after prepare(), which is not timed; nullopt
// when run() raises an Error.
std::optional<double> medianSeconds(const std::function<void()>& run, size_t min_runs, double seconds,
                                    const std::function<void()>& prepare = [] {}) {
  try {
    run();
    std::vector<double> times;
    double total = 0;
    while (times.size() < min_runs || (times.size() < kMaxRuns && total < seconds)) {
      prepare();
      const auto before = Clock::now();
      run();
      times.push_back(std::chrono::duration<double>(Clock::now() - before).count());
      total += times.back();
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return times[times.size() / 2];
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The median seconds of a run of `kernel` on synthetic inputs of the context's types, with
// the context's threads; nullopt when the kernel fails on them.
std::optional<double> timeKernel(const Kernel& kernel, const KernelBuildContext& context) {
  std::vector<AlignedBuffer> owned;
  std::vector<const void*> inputs;
  std::vector<std::pair<const void*, size_t>> activations;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    if (!context.hasInput(i)) {
      inputs.push_back(nullptr);
    } else if (const Tensor* constant = context.constantInput(i)) {
      inputs.push_back(constant->data());
    } else {
      owned.push_back(alignedBuffer(context.input(i).byteSize()));
      fillSynthetic(context.input(i), owned.back().get());
      inputs.push_back(owned.back().get());
      activations.emplace_back(owned.back().get(), context.input(i).byteSize());
    }
  }
  std::vector<void*> outputs;
  for (size_t o = 0; o < context.numOutputs(); ++o) {
    owned.push_back(alignedBuffer(context.output(o).byteSize()));
    outputs.push_back(owned.back().get());
  }
  AlignedBuffer scratch = alignedBuffer(kernel.scratchBytes());
  std::unique_ptr<KernelState> state = kernel.createState();
  std::unique_ptr<DeviceRunState> device_state = context.device().createRunState();
  const int threads = std::max(context.maxThreads(), 1);
  ScopedOpenMpThreads openmp_threads(threads);  // as a run does (RunContext::execute)
  KernelArgs args{inputs.data(), outputs.data(), scratch.get(), threads, device_state.get()};
  return medianSeconds([&] { kernel.run(args, state.get()); }, kMinRuns, kSecondsPerTactic, [&] {
    evictCaches();
    for (const auto& [data, bytes] : activations) touch(data, bytes);
  });
}

// The median seconds of a whole run of `plan` on synthetic inputs; nullopt when a run
// fails on them (a graph whose inputs must hold meaningful values).
std::optional<double> timePlan(const Plan& plan, const Device& device, int threads) {
  std::vector<AlignedBuffer> owned;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  for (const TensorDesc& desc : plan.input_descs) {
    owned.push_back(alignedBuffer(desc.byteSize()));
    fillSynthetic(desc, owned.back().get());
    inputs.push_back(owned.back().get());
  }
  for (const TensorDesc& desc : plan.output_descs) {
    owned.push_back(alignedBuffer(desc.byteSize()));
    outputs.push_back(owned.back().get());
  }
  AlignedBuffer arena = alignedBuffer(plan.arena_bytes);
  PlanState state(plan);
  state.place(static_cast<std::byte*>(arena.get()));
  std::unique_ptr<DeviceRunState> device_state = device.createRunState();
  ScopedOpenMpThreads openmp_threads(threads);
  return medianSeconds([&] { state.execute(inputs.data(), outputs.data(), threads, device_state.get()); },
                       kMinPlanRuns, kSecondsPerPlan);
}

// The layout a plan keeps convolution activations in, or Plain when it keeps none.
Layout activationLayoutOf(const Plan& plan) {
  for (const Slot& slot : plan.slots) {
    if (slot.desc.layout != Layout::Plain) return slot.desc.layout;
  }
  return Layout::Plain;
}

std::string formatMilliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", seconds * 1e3);
  return text;
}

}  // namespace

std::string tuningKey(const KernelBuildContext& context) {
  const Node& node = context.node();
  std::ostringstream key;
  key << cpuModelName() << " | " << context.device().name() << '/' << context.device().isa() << " | "
      << context.maxThreads() << "t | " << node.qualifiedOpType();
  appendAttributes(key, node.attributes());
  key << ' ';
  for (size_t i = 0; i < context.numInputs(); ++i) {
    key << (i ? ", " : "") << (context.hasInput(i) ? context.input(i).str() : "_");
    if (context.constantInput(i)) key << " const";
  }
  key << " ->";
  for (size_t o = 0; o < context.numOutputs(); ++o) key << ' ' << context.output(o).str();
  return oneField(key.str());
}

std::string planTuningKey(const Graph& graph, const std::vector<TensorDesc>& inputs, const Device& device,
                          int threads) {
  std::string structure;
  for (const Node* node : graph.nodes()) {
    structure += node->qualifiedOpType();
    for (const Value* output : node->outputs()) structure += ' ' + output->type().str();
    structure += ';';
  }
  std::ostringstream key;
  key << cpuModelName() << " | " << device.name() << '/' << device.isa() << " | " << threads << "t | plan of graph '"
      << graph.name() << "' (" << graph.numNodes() << " nodes, #" << std::hex << std::hash<std::string>()(structure)
      << std::dec << ") for " << shapeSignature(inputs);
  return oneField(key.str());
}

std::string Tuner::Record::origin() const {
  const char* from = source == Source::OfflineModel ? "the offline model"
                     : source == Source::CacheFile  ? "the timing cache"
                                                    : "an earlier plan";
  return std::string("from ") + from + (times.empty() ? "" : ": " + times);
}

std::unique_ptr<Kernel> KernelBuildContext::choose(const std::vector<KernelTactic>& tactics) const {
  if (tuner_ && !probing_ && tactics.size() > 1) return tuner_->choose(*this, tactics);
  for (const KernelTactic& tactic : tactics) {
    if (auto kernel = tactic.make()) return kernel;
  }
  return nullptr;
}

std::string Tuner::readCacheFile(std::map<std::string, Record>& records, bool& ours) const {
  std::ifstream file(cache_path_);
  if (!file) return "";  // the first build that uses this cache creates it
  std::string line;
  size_t number = 0;
  auto problem = [&](const std::string& what) { return cache_path_ + ":" + std::to_string(number) + ": " + what; };
  while (std::getline(file, line)) {
    ++number;
    if (number == 1) {
      if (line != kCacheHeader) {
        ours = false;
        return problem("not an Estuary timing cache (expected the line '" + std::string(kCacheHeader) +
                       "', found '" + line.substr(0, 60) + "')");
      }
      continue;
    }
    if (line.empty()) continue;
    const size_t first = line.find('\t'), second = first == std::string::npos ? first : line.find('\t', first + 1);
    if (second == std::string::npos || first == 0 || second == first + 1) {
      return problem("expected 'key<TAB>tactic<TAB>times', found '" + line.substr(0, 80) + "'");
    }
    records[line.substr(0, first)] =
        Record{line.substr(first + 1, second - first - 1), line.substr(second + 1), Source::CacheFile};
  }
  return "";
}

Tuner::Tuner(const BuildOptions& options)
    : measure_(options.tune_kernels),
      budget_seconds_(options.tuning_budget_seconds),
      cache_path_(options.tune_kernels ? options.timing_cache : std::string()) {
  if (cache_path_.empty()) return;
  // A cache that does not read back whole is not trusted in part: its choices may have come
  // from another build of Estuary or from a write cut short. Estuary's own is rewritten;
  // another file (the wrong one given) is left alone.
  bool ours = true;
  const std::string problem = readCacheFile(records_, ours);
  if (problem.empty()) return;
  keep_cache_ = ours;
  unsaved_ = ours;
  cache_warning_ = problem + ": the timing cache was ignored, every choice measured again, " +
                   (ours ? "and the file rewritten with this build's timings"
                         : "and the file left as it was (give --timing-cache another file to keep timings)");
  records_.clear();
}

std::unique_ptr<Kernel> Tuner::choose(const KernelBuildContext& context, const std::vector<KernelTactic>& tactics) {
  const std::string key = tuningKey(context);
  auto firstThatMakes = [&]() -> std::pair<std::unique_ptr<Kernel>, std::string> {
    for (const KernelTactic& tactic : tactics) {
      if (auto kernel = tactic.make()) return {std::move(kernel), tactic.name};
    }
    return {nullptr, ""};
  };
  auto use = [&](const std::string& tactic, std::string line) {
    std::lock_guard<std::mutex> lock(mutex_);
    used_[key] = tactic;
    if (!line.empty()) report_lines_.push_back(context.node().describe() + ": " + std::move(line));
  };

  std::optional<Record> recorded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = records_.find(key); found != records_.end()) recorded = found->second;
  }
  if (recorded) {
    for (const KernelTactic& tactic : tactics) {
      if (tactic.name != recorded->chosen) continue;
      if (auto kernel = tactic.make()) {
        use(tactic.name, tactic.name + " (" + recorded->origin() + ")");
        return kernel;
      }
    }
  }
  if (!measure_) return firstThatMakes().first;
  if (secondsSpent() >= budget_seconds_) {
    auto [kernel, name] = firstThatMakes();
    char budget[32];
    std::snprintf(budget, sizeof budget, "%g s", budget_seconds_);
    if (kernel) use(name, name + " (the tuning budget of " + budget + " was spent: the rules chose)");
    return std::move(kernel);
  }

  // Every tactic's kernel first: those that do not take the node drop out, and a node left
  // with one kernel needs no timing.
  std::vector<std::pair<std::string, std::unique_ptr<Kernel>>> made;
  for (const KernelTactic& tactic : tactics) {
    if (auto kernel = tactic.make()) made.emplace_back(tactic.name, std::move(kernel));
  }
  if (made.size() < 2) return made.empty() ? nullptr : std::move(made.front().second);

  const auto started = Clock::now();
  size_t best = made.size();
  double best_seconds = 0;
  std::string times;
  for (size_t i = 0; i < made.size(); ++i) {
    std::optional<double> seconds = timeKernel(*made[i].second, context);
    if (!seconds) continue;
    times += (times.empty() ? "" : ", ") + made[i].first + " " + formatMilliseconds(*seconds);
    if (best == made.size() || *seconds < best_seconds * (1 - kRequiredGain)) {
      best = i;
      best_seconds = *seconds;
    }
  }
  const double spent = std::chrono::duration<double>(Clock::now() - started).count();
  if (best == made.size()) best = 0;  // no tactic ran on synthetic inputs: the rules' choice
  const std::string& best_name = made[best].first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spent_seconds_ += spent;
    if (!times.empty()) {
      records_[key] = Record{best_name, times, Source::Measured};
      unsaved_ = true;
    }
  }
  use(best_name, best_name + (times.empty() ? " (no tactic ran on synthetic inputs: the rules chose)"
                                            : " (measured: " + times + ")"));
  return std::move(made[best].second);
}

std::shared_ptr<Plan> Tuner::choosePlan(const std::string& key, const std::vector<Layout>& layouts,
                                        const Device& device, int threads, const PlanBuilder& build,
                                        BuildReport& report) {
  // "layout:rules" is the plan the rules make (they may leave some chains plain); the others
  // force one layout on every chain.
  const std::string rules_tactic = "layout:rules";
  auto tacticOf = [](Layout layout) { return std::string("layout:") + layoutName(layout); };
  auto layoutNamed = [&](const std::string& tactic) -> std::optional<std::optional<Layout>> {
    // Built in place: GCC 12 warns that copying an empty std::optional<Layout> into the
    // outer one reads its uninitialized payload.
    if (tactic == rules_tactic) return std::optional<std::optional<Layout>>(std::in_place);
    for (Layout layout : layouts) {
      if (tactic == tacticOf(layout)) return std::optional<Layout>(layout);
    }
    return std::nullopt;
  };
  auto finish = [&](std::shared_ptr<Plan> plan, BuildReport chosen_report, const std::string& tactic,
                    const std::string& how) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      used_[key] = tactic;
    }
    chosen_report.tuning.insert(chosen_report.tuning.begin(),
                                "plan for inputs " + shapeSignature(plan->input_descs) + ": " + tactic + " (" + how +
                                    ")");
    report = std::move(chosen_report);
    return plan;
  };

  std::optional<Record> recorded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = records_.find(key); found != records_.end()) recorded = found->second;
  }
  if (recorded) {
    if (std::optional<std::optional<Layout>> layout = layoutNamed(recorded->chosen)) {
      BuildReport recorded_report = report;
      std::shared_ptr<Plan> plan = build(*layout, recorded_report);
      return finish(plan, std::move(recorded_report), recorded->chosen, recorded->origin());
    }
  }

  BuildReport rules_report = report;
  std::shared_ptr<Plan> rules = build(std::nullopt, rules_report);
  const Layout rules_layout = activationLayoutOf(*rules);
  // A plan without convolution chains has no layout to choose; neither has a build that
  // does not tune, or whose budget is spent.
  if (!measure_ || rules_layout == Layout::Plain || secondsSpent() >= budget_seconds_) {
    report = std::move(rules_report);
    return rules;
  }
  const auto started = Clock::now();
  const double nodes_spent_before = secondsSpent();  // node tactics timed inside the builds count once
  std::optional<double> rules_seconds = timePlan(*rules, device, threads);
  if (!rules_seconds) {  // the rules' plan does not run on synthetic inputs: nothing to compare
    report = std::move(rules_report);
    return rules;
  }
  // One plan alive at a time, since each holds its own packed weights: the winner is built
  // again at the end unless it was the last one built (its kernels then come from the
  // records, untimed).
  std::string best_tactic = rules_tactic, times = rules_tactic + " " + formatMilliseconds(*rules_seconds);
  std::optional<Layout> best_layout;
  double best_seconds = *rules_seconds;
  std::shared_ptr<Plan> in_hand = std::move(rules);
  BuildReport in_hand_report = std::move(rules_report);
  std::string in_hand_tactic = rules_tactic;
  for (Layout layout : layouts) {
    if (layout == rules_layout) continue;
    in_hand.reset();
    BuildReport candidate_report = report;
    try {
      in_hand = build(layout, candidate_report);
    } catch (const Error&) {
      continue;  // a layout some node has no kernel for
    }
    in_hand_report = std::move(candidate_report);
    in_hand_tactic = tacticOf(layout);
    std::optional<double> seconds = timePlan(*in_hand, device, threads);
    if (!seconds) continue;
    times += ", " + in_hand_tactic + " " + formatMilliseconds(*seconds);
    if (*seconds < best_seconds * (1 - kRequiredGain)) {
      best_tactic = in_hand_tactic;
      best_layout = layout;
      best_seconds = *seconds;
    }
  }
  if (!in_hand || in_hand_tactic != best_tactic) {
    in_hand.reset();
    in_hand_report = report;
    in_hand = build(best_layout, in_hand_report);
  }
#ifdef __GLIBC__
  malloc_trim(0);  // the dropped plans' packed weights go back to the system, not to the heap
#endif
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spent_seconds_ += std::chrono::duration<double>(Clock::now() - started).count() -
                      (spent_seconds_ - nodes_spent_before);
    records_[key] = Record{best_tactic, times, Source::Measured};
    unsaved_ = true;
  }
  in_hand_report.tuning_seconds = secondsSpent();
  return finish(in_hand, std::move(in_hand_report), best_tactic,
                "the rules keep " + std::string(layoutName(rules_layout)) + "; measured: " + times);
}

std::map<std::string, std::string> Tuner::usedTactics() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

void Tuner::addRecorded(const std::map<std::string, std::string>& tactics) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, tactic] : tactics) records_[key] = Record{tactic, "", Source::OfflineModel};
}

void Tuner::saveCache() {
  if (cache_path_.empty() || !keep_cache_) return;
  std::lock_guard<std::mutex> saving(save_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!unsaved_ && std::ifstream(cache_path_)) return;  // a file write per new plan only when it measured
  }
  // Replicas on a node share one cache: what another build wrote since this one read the file
  // is kept (and used by this one's later plans), not overwritten by the last writer. A file
  // that no longer reads whole is replaced by this build's records.
  mergeRecordsOnDisk();
  std::ostringstream text;
  text << kCacheHeader << '\n';
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, record] : records_) {
      if (record.source == Source::OfflineModel) continue;
      text << key << '\t' << oneField(record.chosen) << '\t' << oneField(record.times) << '\n';
    }
  }
  // Whole or not at all: another build may be reading the cache meanwhile.
  writeFileAtomically(cache_path_, text.str());
  std::lock_guard<std::mutex> lock(mutex_);
  unsaved_ = false;
}

std::unique_ptr<Tuner::Turn> Tuner::waitForTurn() {
  if (!measure_ || cache_path_.empty() || !keep_cache_) return nullptr;
  // A lock file beside the cache rather than the cache itself: saves replace the cache by
  // renaming a new file over it, which a lock on the old one would not follow. Opened
  // read-only: flock needs no write access, and another user's lock file (0644) still opens.
  const int fd = ::open((cache_path_ + ".lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;  // a read-only directory: tuned, just not in turn
  auto turn = std::make_unique<Turn>(fd);
  int locked;
  while ((locked = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (locked != 0) return nullptr;
  mergeRecordsOnDisk();
  return turn;
}

void Tuner::mergeRecordsOnDisk() {
  std::map<std::string, Record> on_disk;
  bool ours = true;
  if (!readCacheFile(on_disk, ours).empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  records_.merge(on_disk);  // a key this build has keeps this build's record
}

Tuner::Turn::~Turn() { ::close(fd_); }

std::vector<std::string> Tuner::takeReportLines() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(report_lines_, {});
}

double Tuner::secondsSpent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spent_seconds_;
}

}  // namespace estuary::ge
