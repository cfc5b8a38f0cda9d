#include "estuary/pass/pass.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "estuary/support/error.h"
#include "estuary/transforms/passes.h"

namespace estuary {

std::string_view optionKindName(OptionSpec::Kind kind) {
  switch (kind) {
    case OptionSpec::Kind::Bool: return "bool";
    case OptionSpec::Kind::Int: return "int";
    case OptionSpec::Kind::Float: return "float";
    case OptionSpec::Kind::String: return "string";
    case OptionSpec::Kind::StringList: return "list of strings";
  }
  return "?";
}

std::string optionKindPhrase(OptionSpec::Kind kind) {
  std::string_view name = optionKindName(kind);
  return (kind == OptionSpec::Kind::Int ? "an " : "a ") + std::string(name);
}

OptionSpec::Kind optionValueKind(const OptionValue& value) {
  // The variant's alternatives are in the order of OptionSpec::Kind.
  return static_cast<OptionSpec::Kind>(value.index());
}

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

bool parseBool(std::string_view text, bool& out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") {
    out = true;
    return true;
  }
  if (lower == "false" || lower == "no" || lower == "off" || lower == "0") {
    out = false;
    return true;
  }
  return false;
}

bool parseInt(std::string_view text, int64_t& out) {
  std::string copy(text);
  if (copy.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(copy.c_str(), &end, 10);
  if (errno != 0 || end != copy.c_str() + copy.size()) return false;
  out = value;
  return true;
}

bool parseFloat(std::string_view text, double& out) {
  std::string copy(text);
  if (copy.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(copy.c_str(), &end);
  if (errno == ERANGE || end != copy.c_str() + copy.size()) return false;
  out = value;
  return true;
}

}  // namespace

bool parseOptionValue(OptionSpec::Kind kind, std::string_view text, OptionValue& out) {
  text = trim(text);
  switch (kind) {
    case OptionSpec::Kind::Bool: {
      bool value;
      if (!parseBool(text, value)) return false;
      out = value;
      return true;
    }
    case OptionSpec::Kind::Int: {
      int64_t value;
      if (!parseInt(text, value)) return false;
      out = value;
      return true;
    }
    case OptionSpec::Kind::Float: {
      double value;
      if (!parseFloat(text, value)) return false;
      out = value;
      return true;
    }
    case OptionSpec::Kind::String:
      out = std::string(text);
      return true;
    case OptionSpec::Kind::StringList: {
      if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
        text = text.substr(1, text.size() - 2);
      }
      std::vector<std::string> items;
      while (!trim(text).empty()) {
        size_t comma = text.find(',');
        std::string_view item = trim(text.substr(0, comma));
        if (item.empty()) return false;
        items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
        if (trim(text).empty()) return false;  // a trailing comma
      }
      out = std::move(items);
      return true;
    }
  }
  return false;
}

std::string formatOptionValue(const OptionValue& value) {
  std::ostringstream out;
  switch (optionValueKind(value)) {
    case OptionSpec::Kind::Bool: out << (std::get<bool>(value) ? "true" : "false"); break;
    case OptionSpec::Kind::Int: out << std::get<int64_t>(value); break;
    case OptionSpec::Kind::Float: out << std::get<double>(value); break;
    case OptionSpec::Kind::String: out << std::get<std::string>(value); break;
    case OptionSpec::Kind::StringList: {
      out << '[';
      const auto& items = std::get<std::vector<std::string>>(value);
      for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
      out << ']';
      break;
    }
  }
  return out.str();
}

// --- PassOptions ------------------------------------------------------------------------

const OptionValue& PassOptions::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) raise("pass option '", name, "' is not declared");
  return it->second;
}

namespace {

template <typename T>
const T& getAs(const OptionValue& value, std::string_view name, OptionSpec::Kind kind) {
  if (const T* typed = std::get_if<T>(&value)) return *typed;
  raise("pass option '", name, "' is ", optionKindPhrase(optionValueKind(value)), ", not ",
        optionKindPhrase(kind));
}

}  // namespace

bool PassOptions::getBool(std::string_view name) const {
  return getAs<bool>(get(name), name, OptionSpec::Kind::Bool);
}
int64_t PassOptions::getInt(std::string_view name) const {
  return getAs<int64_t>(get(name), name, OptionSpec::Kind::Int);
}
double PassOptions::getFloat(std::string_view name) const {
  const OptionValue& value = get(name);
  if (const int64_t* integer = std::get_if<int64_t>(&value)) return static_cast<double>(*integer);
  return getAs<double>(value, name, OptionSpec::Kind::Float);
}
const std::string& PassOptions::getString(std::string_view name) const {
  return getAs<std::string>(get(name), name, OptionSpec::Kind::String);
}
const std::vector<std::string>& PassOptions::getStringList(std::string_view name) const {
  return getAs<std::vector<std::string>>(get(name), name, OptionSpec::Kind::StringList);
}

// --- PassInfo / PassRegistry ------------------------------------------------------------

const OptionSpec* PassInfo::findOption(std::string_view option) const {
  for (const OptionSpec& spec : options) {
    if (spec.name == option) return &spec;
  }
  return nullptr;
}

std::string PassInfo::describeOptions() const {
  if (options.empty()) return "it takes no options";
  std::ostringstream text;
  text << "its options are: ";
  for (size_t i = 0; i < options.size(); ++i) {
    text << (i ? ", " : "") << options[i].name << " (" << optionKindName(options[i].kind) << ")";
  }
  return text.str();
}

PassRegistry& PassRegistry::global() {
  // Never destroyed: plugins unloaded at exit may still hold entries.
  static PassRegistry* registry = [] {
    auto* created = new PassRegistry;
    registerCorePasses(*created);
    return created;
  }();
  return *registry;
}

void PassInfo::check() const {
  if (name.empty()) raise("a pass is declared without a name");
  if (!factory) raise("pass '", name, "' is declared without a factory");
  for (const OptionSpec& spec : options) {
    if (optionValueKind(spec.default_value) != spec.kind) {
      raise("pass '", name, "': the default of option '", spec.name, "' is ",
            optionKindPhrase(optionValueKind(spec.default_value)), ", the option is declared ",
            optionKindPhrase(spec.kind));
    }
    if (spec.is_path && spec.kind != OptionSpec::Kind::String &&
        spec.kind != OptionSpec::Kind::StringList) {
      raise("pass '", name, "': option '", spec.name, "' is declared a path but is ",
            optionKindPhrase(spec.kind), "; paths are strings or lists of strings");
    }
  }
}

void PassRegistry::add(PassInfo info, std::shared_ptr<const void> keep_alive) {
  info.check();
  if (entries_.count(info.name)) raise("pass '", info.name, "' is already registered");
  std::string name = info.name;
  entries_.emplace(std::move(name), Entry{std::move(keep_alive), std::move(info)});
}

const PassInfo* PassRegistry::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.info;
}

const PassInfo& PassRegistry::get(std::string_view name) const {
  if (const PassInfo* info = find(name)) return *info;
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [known, entry] : entries_) names.push_back(known);
  std::vector<std::string> close = closeNames(name, names);
  std::ostringstream message;
  message << "unknown pass '" << name << "'";
  const std::vector<std::string>& listed = close.empty() ? names : close;
  message << (close.empty() ? "; registered passes: " : "; did you mean: ");
  for (size_t i = 0; i < listed.size(); ++i) message << (i ? ", " : "") << listed[i];
  if (listed.empty()) message << "(none)";
  throw Error(message.str());
}

std::vector<const PassInfo*> PassRegistry::all() const {
  std::vector<const PassInfo*> result;
  result.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) result.push_back(&entry.info);
  return result;
}

std::shared_ptr<Pass> PassRegistry::create(std::string_view name,
                                           const OptionMap& options) const {
  const PassInfo& info = get(name);
  const Entry& entry = entries_.find(name)->second;
  PassOptions resolved;
  for (const OptionSpec& spec : info.options) resolved.set(spec.name, spec.default_value);
  for (const auto& [option, value] : options) {
    const OptionSpec* spec = info.findOption(option);
    if (!spec) {
      raise("pass '", name, "' has no option '", option, "'; ", info.describeOptions());
    }
    OptionSpec::Kind given = optionValueKind(value);
    if (given == spec->kind) {
      resolved.set(spec->name, value);
    } else if (spec->kind == OptionSpec::Kind::Float && given == OptionSpec::Kind::Int) {
      resolved.set(spec->name, static_cast<double>(std::get<int64_t>(value)));
    } else {
      raise("pass '", name, "': option '", option, "' expects ", optionKindPhrase(spec->kind),
            ", got ", optionKindPhrase(given), " (", formatOptionValue(value), ")");
    }
  }
  std::unique_ptr<Pass> pass = info.factory(resolved);
  if (!pass) raise("pass '", name, "': its factory returned no pass");
  std::shared_ptr<const void> keep_alive = entry.keep_alive;
  // The deleter owns the plugin handle, so the library is released only after the pass
  // object (whose code lives in it) is destroyed.
  return std::shared_ptr<Pass>(pass.release(),
                               [keep_alive](Pass* created) { delete created; });
}

// --- Suggestions ------------------------------------------------------------------------

namespace {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                                              std::tolower(static_cast<unsigned char>(b[j - 1]))
                                          ? 0
                                          : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closeNames(std::string_view name,
                                    const std::vector<std::string>& candidates) {
  // Close enough to be a typo: a third of the longer name, at least 2 edits; names that
  // contain each other (cse / cse-aggressive) count as close too.
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& candidate : candidates) {
    size_t distance = editDistance(name, candidate);
    size_t limit = std::max<size_t>(2, std::max(name.size(), candidate.size()) / 3);
    bool contains = !name.empty() && (candidate.find(name) != std::string::npos ||
                                      name.find(candidate) != std::string_view::npos);
    if (distance <= limit || contains) scored.emplace_back(distance, candidate);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> result;
  for (size_t i = 0; i < scored.size() && i < 5; ++i) result.push_back(scored[i].second);
  return result;
}

}  // namespace estuary
