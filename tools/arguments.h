#pragma once
// A small command-line parser shared by the `estuary` subcommands: declared options with
// help text, `--name value` / `--name=value` / boolean `--flag`, and positionals.
#include <map>
#include <optional>
#include <string>
#include <sstream>
#include <vector>

#include "estuary/support/error.h"

namespace estuary::cli {

// A mistake in how a command was called (exit code 2), as opposed to bad input (exit 1).
class UsageError : public Error {
 public:
  using Error::Error;
};

template <typename... Parts>
[[noreturn]] void usageError(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw UsageError(message.str());
}

struct OptionDecl {
  std::string name;         // without the leading dashes
  std::string value_name;   // empty for a boolean flag
  std::string help;
  std::string default_text; // shown in --help; empty: no default
  bool repeatable = false;
};

class Arguments {
 public:
  Arguments(std::string command, std::string usage, std::string summary,
            std::vector<OptionDecl> options);

  // Declares more options (a group shared between commands), listed after the others.
  void addOptions(const std::vector<OptionDecl>& options);

  // Parses argv (after the subcommand). Raises an Error naming the unknown or malformed
  // option. Returns false when --help was given (help is printed then).
  bool parse(const std::vector<std::string>& args);

  bool flag(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  std::string help() const;

 private:
  const OptionDecl* find(const std::string& name) const;
  std::string command_, usage_, summary_;
  std::vector<OptionDecl> options_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

}  // namespace estuary::cli
