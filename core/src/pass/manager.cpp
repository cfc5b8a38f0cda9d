#include "estuary/pass/manager.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "estuary/ir/verifier.h"
#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "estuary/text/printer.h"

namespace estuary {

struct PassManager::Step {
  const PipelineStep* spec;
  std::shared_ptr<Pass> pass;  // Pass steps
  std::vector<Step> children;  // Group steps
};

namespace {

bool envFlag(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return false;
  OptionValue parsed;
  return parseOptionValue(OptionSpec::Kind::Bool, value, parsed) && std::get<bool>(parsed);
}

std::vector<std::string> splitNames(std::string_view text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view name = text.substr(start, comma - start);
    size_t begin = name.find_first_not_of(" \t");
    if (begin != std::string_view::npos) {
      size_t end = name.find_last_not_of(" \t");
      names.emplace_back(name.substr(begin, end - begin + 1));
    }
    start = comma + 1;
  }
  return names;
}

// Dump file names must be portable whatever a plugin calls its pass.
std::string fileSafe(std::string_view name) {
  std::string result(name);
  for (char& c : result) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return result;
}

bool isDumpFile(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  if (path.extension() != ".est" || name.size() < 5) return false;
  size_t digits = name.find('_');
  if (digits == std::string::npos || digits < 3) return false;
  for (size_t i = 0; i < digits; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  std::string_view rest = std::string_view(name).substr(digits + 1);
  return rest.rfind("before_", 0) == 0 || rest.rfind("after_", 0) == 0;
}

void collectNames(const std::vector<PipelineStep>& steps, std::vector<std::string>& names) {
  for (const PipelineStep& step : steps) {
    names.push_back(step.name);
    collectNames(step.steps, names);
  }
}

}  // namespace

std::vector<PassManager::Step> PassManager::buildSteps(const std::vector<PipelineStep>& specs,
                                                      const PassRegistry& registry) {
  std::vector<PassManager::Step> steps;
  steps.reserve(specs.size());
  for (const PipelineStep& spec : specs) {
    PassManager::Step step{&spec, nullptr, {}};
    if (spec.kind == PipelineStep::Kind::Pass) {
      try {
        step.pass = registry.create(spec.name, spec.options);
      } catch (const Error& error) {
        if (spec.origin.empty()) throw;
        raise(spec.origin, ": ", error.what());
      }
    } else {
      if (spec.max_iterations < 1) {
        raise(spec.origin.empty() ? "" : spec.origin + ": ", "group '", spec.name,
              "': max_iterations must be at least 1, got ", spec.max_iterations);
      }
      step.children = buildSteps(spec.steps, registry);
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

PassManager::PassManager(Pipeline pipeline, const PassRegistry& registry)
    : pipeline_(std::move(pipeline)), log_(&std::cerr) {
  steps_ = buildSteps(pipeline_.steps, registry);
  debug_ = pipeline_.settings.debug || envFlag("ESTUARY_DEBUG");
  verify_ = pipeline_.settings.verify;
  dump_dir_ = pipeline_.settings.dump_dir;
  if (const char* dir = std::getenv("ESTUARY_DUMP_DIR"); dir && *dir) dump_dir_ = dir;
  context_.ops = &OpRegistry::global();
  for (const PassInfo* info : registry.all()) registry_names_.push_back(info->name);
  const char* disabled = pipeline_.settings.environment_switches ? std::getenv("ESTUARY_DISABLE_PASSES") : nullptr;
  if (disabled) {
    for (const std::string& name : splitNames(disabled)) {
      try {
        setEnabled(name, false);
      } catch (const Error& error) {
        raise("ESTUARY_DISABLE_PASSES: ", error.what());
      }
    }
  }
}

PassManager::~PassManager() = default;

void PassManager::setEnabled(std::string_view name, bool enabled) {
  std::vector<std::string> names;
  collectNames(pipeline_.steps, names);
  bool known = std::find(names.begin(), names.end(), name) != names.end() ||
               std::find(registry_names_.begin(), registry_names_.end(), name) !=
                   registry_names_.end();
  if (!known) {
    names.insert(names.end(), registry_names_.begin(), registry_names_.end());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::vector<std::string> close = closeNames(name, names);
    std::ostringstream message;
    message << "cannot switch '" << name << "': no pass or group has that name";
    if (!close.empty()) {
      message << "; did you mean: ";
      for (size_t i = 0; i < close.size(); ++i) message << (i ? ", " : "") << close[i];
    }
    throw Error(message.str());
  }
  switches_[std::string(name)] = enabled;
}

void PassManager::applySwitches(const std::map<std::string, bool>& switches) {
  for (const auto& [name, enabled] : switches) setEnabled(name, enabled);
}

bool PassManager::isEnabled(const Step& step) const {
  auto it = switches_.find(step.spec->name);
  return it == switches_.end() ? step.spec->enabled : it->second;
}

int64_t PassManager::totalChanges() const {
  int64_t total = 0;
  for (const PassRecord& record : records_) total += record.changes;
  return total;
}

void PassManager::run(Graph& graph) {
  records_.clear();
  record_steps_.clear();
  group_records_.clear();
  group_record_steps_.clear();
  warnings_.clear();
  dump_files_.clear();
  dump_sequence_ = 0;
  context_.debug = debug_;
  if (debug_) {
    std::error_code error;
    std::filesystem::create_directories(dump_dir_, error);
    if (error) raise("cannot create the dump directory '", dump_dir_, "': ", error.message());
    // Numbered files of an earlier, longer run would read as part of this one.
    for (const auto& entry : std::filesystem::directory_iterator(dump_dir_, error)) {
      if (entry.is_regular_file() && isDumpFile(entry.path())) {
        std::filesystem::remove(entry.path(), error);
      }
    }
  }
  if (verifies()) verify(graph, nullptr);
  runSteps(steps_, graph, "", 0);
}

int64_t PassManager::runSteps(const std::vector<Step>& steps, Graph& graph,
                              const std::string& group, int64_t iteration) {
  int64_t changes = 0;
  for (const Step& step : steps) {
    if (!isEnabled(step)) continue;
    if (step.spec->kind == PipelineStep::Kind::Pass) {
      changes += runPass(step, graph, group, iteration);
      continue;
    }
    GroupRecord record{step.spec->name, 0, false};
    int64_t last = 0;
    while (record.iterations < step.spec->max_iterations) {
      ++record.iterations;
      last = runSteps(step.children, graph, step.spec->name, record.iterations);
      changes += last;
      if (last == 0) {
        record.converged = true;
        break;
      }
    }
    if (!record.converged) {
      std::ostringstream warning;
      warning << "warning: " << (step.spec->origin.empty() ? "" : step.spec->origin + ": ")
              << "group '" << step.spec->name << "' did not reach a fixed point in "
              << step.spec->max_iterations << " iterations (the last one made " << last
              << " changes); raise max_iterations or look for passes that undo each other";
      warnings_.push_back(warning.str());
      if (log_) *log_ << warnings_.back() << '\n';
    }
    group_records_.push_back(record);
    group_record_steps_.push_back(&step);
  }
  return changes;
}

int64_t PassManager::runPass(const Step& step, Graph& graph, const std::string& group,
                             int64_t iteration) {
  const std::string& name = step.spec->name;
  PassRecord record;
  record.name = name;
  record.group = group;
  record.iteration = iteration;
  record.nodes_before = graph.numNodes();
  if (debug_) dump(graph, "before", name);
  auto start = std::chrono::steady_clock::now();
  PassResult result;
  std::string where = step.spec->origin.empty() ? "" : " (" + step.spec->origin + ")";
  try {
    result = step.pass->run(graph, context_);
  } catch (const Error& error) {
    raise("pass '", name, "'", where, " failed: ", error.what());
  } catch (const std::exception& error) {
    raise("pass '", name, "'", where, " failed with an internal error: ", error.what());
  }
  record.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record.changes = result.changes;
  record.nodes_after = graph.numNodes();
  records_.push_back(record);
  record_steps_.push_back(&step);
  if (debug_) dump(graph, "after", name);
  if (verifies()) verify(graph, &step);
  return result.changes;
}

void PassManager::dump(const Graph& graph, std::string_view stage, const std::string& pass) {
  if (stage == "before") ++dump_sequence_;
  char number[16];
  std::snprintf(number, sizeof number, "%03d", dump_sequence_);
  std::filesystem::path path = std::filesystem::path(dump_dir_) /
                               (std::string(number) + "_" + std::string(stage) + "_" +
                                fileSafe(pass) + ".est");
  std::ofstream out(path, std::ios::binary);
  // Large weights are elided: dumps are for reading, and a model's weights would make every
  // dump as large as the model.
  PrintOptions options;
  options.elide_tensors_above_bytes = 4096;
  out << "# " << stage << " pass '" << pass << "' (pipeline " << pipeline_.name << ")\n"
      << printGraph(graph, options);
  out.close();
  if (!out) raise("cannot write the IR dump '", path.string(), "'");
  dump_files_.push_back(path.string());
}

void PassManager::verify(const Graph& graph, const Step* after) const {
  try {
    VerifyOptions options;
    options.registry = context_.ops;
    verifyGraph(graph, options);
  } catch (const Error& error) {
    if (!after) raise("the input graph fails verification before any pass ran: ", error.what());
    std::string where = after->spec->origin.empty() ? "" : " (" + after->spec->origin + ")";
    raise("pass '", after->spec->name, "'", where, " left invalid IR: ", error.what());
  }
}

void PassManager::printTimingReport(std::ostream& out) const {
  double total_seconds = 0;
  size_t nodes_before = 0, nodes_after = 0;
  for (const PassRecord& record : records_) total_seconds += record.seconds;
  if (!records_.empty()) {
    nodes_before = records_.front().nodes_before;
    nodes_after = records_.back().nodes_after;
  }
  std::ios flags(nullptr);
  flags.copyfmt(out);
  out << "Pass timing, pipeline '" << pipeline_.name << "':\n";
  out << std::left << std::setw(34) << "  pass" << std::right << std::setw(6) << "runs"
      << std::setw(12) << "time (ms)" << std::setw(8) << "%" << std::setw(10) << "changes"
      << "   nodes before -> after\n";
  reportSteps(out, steps_, 1, total_seconds);
  out << std::left << std::setw(34) << "  total" << std::right << std::setw(6)
      << records_.size() << std::setw(12) << std::fixed << std::setprecision(3)
      << total_seconds * 1e3 << std::setw(7) << std::setprecision(1)
      << (total_seconds > 0 ? 100.0 : 0.0) << '%' << std::setw(10) << totalChanges() << "   "
      << nodes_before << " -> " << nodes_after << '\n';
  out.copyfmt(flags);
}

void PassManager::reportSteps(std::ostream& out, const std::vector<Step>& steps, int depth,
                              double total_seconds) const {
  for (const Step& step : steps) {
    std::string label(static_cast<size_t>(depth) * 2, ' ');
    bool enabled = isEnabled(step);
    if (step.spec->kind == PipelineStep::Kind::Group) {
      label += "group " + step.spec->name;
      int64_t iterations = 0;
      bool converged = true;
      for (size_t i = 0; i < group_records_.size(); ++i) {
        if (group_record_steps_[i] != &step) continue;
        iterations += group_records_[i].iterations;
        converged = converged && group_records_[i].converged;
      }
      out << std::left << std::setw(34) << label << std::right;
      if (!enabled) {
        out << "   (off)\n";
      } else {
        out << "   " << iterations << " iteration" << (iterations == 1 ? "" : "s")
            << (converged ? "" : ", no fixed point") << '\n';
      }
      reportSteps(out, step.children, depth + 1, total_seconds);
      continue;
    }
    label += step.spec->name;
    int64_t runs = 0, changes = 0;
    double seconds = 0;
    size_t before = 0, after = 0;
    for (size_t i = 0; i < records_.size(); ++i) {
      if (record_steps_[i] != &step) continue;
      if (runs == 0) before = records_[i].nodes_before;
      after = records_[i].nodes_after;
      ++runs;
      changes += records_[i].changes;
      seconds += records_[i].seconds;
    }
    out << std::left << std::setw(34) << label << std::right << std::setw(6) << runs;
    if (runs == 0) {
      out << (enabled ? "" : "   (off)") << '\n';
      continue;
    }
    out << std::setw(12) << std::fixed << std::setprecision(3) << seconds * 1e3 << std::setw(7)
        << std::setprecision(1) << (total_seconds > 0 ? 100.0 * seconds / total_seconds : 0.0)
        << '%' << std::setw(10) << changes << "   " << before << " -> " << after << '\n';
  }
}

}  // namespace estuary
