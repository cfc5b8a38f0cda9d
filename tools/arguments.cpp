#include "arguments.h"

#include <iostream>
#include <sstream>

#include "estuary/support/error.h"

namespace estuary::cli {

Arguments::Arguments(std::string command, std::string usage, std::string summary,
                     std::vector<OptionDecl> options)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)),
      options_(std::move(options)) {}

void Arguments::addOptions(const std::vector<OptionDecl>& options) {
  options_.insert(options_.end(), options.begin(), options.end());
}

const OptionDecl* Arguments::find(const std::string& name) const {
  for (const OptionDecl& option : options_) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

bool Arguments::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << help();
      return false;
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionDecl* option = find(name);
    if (!option) usageError("estuary ", command_, ": unknown option '--", name, "' (see 'estuary ", command_, " --help')");
    if (option->value_name.empty()) {
      if (inline_value) usageError("estuary ", command_, ": option '--", name, "' takes no value");
      values_[name].push_back("1");
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        usageError("estuary ", command_, ": option '--", name, "' needs a value (", option->value_name, ")");
      }
      inline_value = args[++i];
    }
    auto& slot = values_[name];
    if (!slot.empty() && !option->repeatable) {
      usageError("estuary ", command_, ": option '--", name, "' given twice");
    }
    slot.push_back(*inline_value);
  }
  return true;
}

bool Arguments::flag(const std::string& name) const { return values_.count(name) != 0; }

std::optional<std::string> Arguments::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Arguments::values(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Arguments::help() const {
  std::ostringstream out;
  out << "usage: estuary " << command_ << " " << usage_ << "\n\n" << summary_ << "\n";
  if (!options_.empty()) out << "\noptions:\n";
  for (const OptionDecl& option : options_) {
    std::string left = "  --" + option.name + (option.value_name.empty() ? "" : " " + option.value_name);
    out << left;
    if (left.size() < 28) out << std::string(28 - left.size(), ' '); else out << "\n" << std::string(28, ' ');
    out << option.help;
    if (!option.default_text.empty()) out << " (default: " << option.default_text << ")";
    out << "\n";
  }
  out << "  -h, --help                show this help\n";
  return out.str();
}

}  // namespace estuary::cli
