#include "estuary/frontend/translator_table.h"

#include <algorithm>

#include "estuary/support/error.h"

namespace estuary {

namespace {

std::string qualified(std::string_view domain, std::string_view op_type) {
  std::string name(domain);
  if (!name.empty()) name += "::";
  return name.append(op_type);
}

}  // namespace

const std::vector<TranslatorTable::Entry>* TranslatorTable::entriesOf(std::string_view domain,
                                                                      std::string_view op_type) const {
  auto ops = entries_.find(domain);
  if (ops == entries_.end()) return nullptr;
  auto found = ops->second.find(op_type);
  return found == ops->second.end() ? nullptr : &found->second;
}

const TranslatorTable& TranslatorTable::filledBy(std::initializer_list<void (*)(TranslatorTable&)> fills) {
  auto* table = new TranslatorTable;
  for (auto fill : fills) fill(*table);
  return *table;
}

TranslatorTable& TranslatorTable::add(std::string_view domain, std::string_view op_type, TranslateFn translate,
                                      int64_t since, int64_t until) {
  if (!translate) raise("the translator of ", qualified(domain, op_type), " is empty");
  if (since > until) raise("the translator of ", qualified(domain, op_type), " has versions ", since, " > ", until);
  std::vector<Entry>& entries = entries_[std::string(domain)][std::string(op_type)];
  for (const Entry& entry : entries) {
    if (since <= entry.until && entry.since <= until) {
      raise("two translators of ", qualified(domain, op_type), " take overlapping versions");
    }
  }
  entries.push_back({since, until, std::move(translate)});
  return *this;
}

const TranslateFn* TranslatorTable::find(std::string_view domain, std::string_view op_type, int64_t version) const {
  const std::vector<Entry>* entries = entriesOf(domain, op_type);
  if (!entries) return nullptr;
  for (const Entry& entry : *entries) {
    if (entry.since <= version && version <= entry.until) return &entry.translate;
  }
  return nullptr;
}

std::vector<std::string> TranslatorTable::ops() const {
  std::vector<std::string> ops;
  for (const auto& [domain, by_op] : entries_) {
    for (const auto& entry : by_op) ops.push_back(qualified(domain, entry.first));
  }
  std::sort(ops.begin(), ops.end());
  return ops;
}

ConversionExtensions& ConversionExtensions::global() {
  // Never destroyed: extensions may be released during static destruction.
  static auto* registry = new ConversionExtensions;
  return *registry;
}

void ConversionExtensions::add(ConversionExtension extension, std::shared_ptr<const void> keep_alive) {
  if (extension.op_type.empty()) raise("a conversion extension (", extension.origin, ") names no op");
  if (!extension.translate) raise("the conversion extension for '", extension.op_type, "' (", extension.origin,
                                  ") has no translator");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& entry : entries_) {
    const ConversionExtension& other = entry.extension;
    if (other.frontend == extension.frontend && other.domain == extension.domain &&
        other.op_type == extension.op_type) {
      raise("a conversion extension for '", extension.op_type, "'",
            extension.frontend.empty() ? "" : " of frontend '" + extension.frontend + "'", " is already registered (by ",
            other.origin, "); ", extension.origin, " registers another");
    }
  }
  entries_.push_back({std::move(keep_alive), std::move(extension)});
}

namespace {

bool applies(const ConversionExtension& extension, std::string_view frontend, std::string_view domain,
             std::string_view op_type) {
  return extension.op_type == op_type && extension.domain == domain &&
         (extension.frontend.empty() || extension.frontend == frontend);
}

}  // namespace

const ConversionExtension* ConversionExtensions::find(std::string_view frontend, std::string_view domain,
                                                      std::string_view op_type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // One for this frontend wins over one for every frontend.
  const ConversionExtension* general = nullptr;
  for (const Entry& entry : entries_) {
    if (!applies(entry.extension, frontend, domain, op_type)) continue;
    if (!entry.extension.frontend.empty()) return &entry.extension;
    general = &entry.extension;
  }
  return general;
}

const ConversionExtension* ConversionExtensions::registered(std::string_view frontend, std::string_view domain,
                                                            std::string_view op_type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& entry : entries_) {
    const ConversionExtension& extension = entry.extension;
    if (extension.frontend == frontend && extension.domain == domain && extension.op_type == op_type) return &extension;
  }
  return nullptr;
}

std::vector<std::string> ConversionExtensions::ops(std::string_view frontend) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> ops;
  for (const Entry& entry : entries_) {
    const ConversionExtension& extension = entry.extension;
    if (extension.frontend.empty() || extension.frontend == frontend) {
      ops.push_back(extension.domain.empty() ? extension.op_type : extension.domain + "::" + extension.op_type);
    }
  }
  return ops;
}

size_t ConversionExtensions::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

const ConversionExtension* findExtension(const std::vector<ConversionExtension>& extensions,
                                         std::string_view frontend, std::string_view domain, std::string_view op_type) {
  const ConversionExtension* general = nullptr;
  for (const ConversionExtension& extension : extensions) {
    if (!applies(extension, frontend, domain, op_type)) continue;
    if (!extension.frontend.empty()) return &extension;
    general = &extension;
  }
  return general;
}

}  // namespace estuary
