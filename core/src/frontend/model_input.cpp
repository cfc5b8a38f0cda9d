#include "estuary/frontend/model_input.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "estuary/support/error.h"

namespace fs = std::filesystem;

namespace estuary {

ModelInput ModelInput::path(std::string path) {
  std::error_code error;
  fs::file_status status = fs::status(path, error);
  ModelInput input;
  if (fs::is_directory(status)) {
    input.kind_ = Kind::Directory;
  } else if (fs::exists(status)) {
    input.kind_ = Kind::File;
  } else {
    raise(path, ": no such file or directory");
  }
  input.name_ = path;
  input.paths_ = {std::move(path)};
  return input;
}

ModelInput ModelInput::files(std::vector<std::string> paths) {
  if (paths.empty()) raise("a model given as a set of files needs at least one file");
  if (paths.size() == 1) return path(std::move(paths.front()));
  ModelInput input;
  input.kind_ = Kind::Files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (!fs::exists(path, error)) raise(path, ": no such file or directory (a part of the model given)");
    input.name_ += (input.name_.empty() ? "" : " + ") + path;
  }
  input.paths_ = std::move(paths);
  return input;
}

ModelInput ModelInput::object(std::string type, const void* object, std::shared_ptr<const void> owner,
                              std::string name) {
  if (!object) raise("an in-memory model of type '", type, "' is null");
  ModelInput input;
  input.kind_ = Kind::Object;
  input.object_type_ = std::move(type);
  input.object_ = object;
  input.owner_ = std::move(owner);
  input.name_ = std::move(name);
  return input;
}

std::optional<std::string> ModelInput::pathEndingWith(std::string_view suffix) const {
  for (const std::string& path : paths_) {
    if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return path;
    }
  }
  return std::nullopt;
}

std::string ModelInput::describe() const {
  switch (kind_) {
    case Kind::File: return "file " + name_;
    case Kind::Directory: return "directory " + name_;
    case Kind::Files: return "files " + name_;
    case Kind::Object: return "in-memory " + object_type_ + " '" + name_ + "'";
  }
  return name_;
}

std::vector<std::string> ModelInput::extensions() const {
  std::vector<std::string> extensions;
  for (const std::string& path : paths_) {
    std::string extension = fs::path(path).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (!extension.empty()) extensions.push_back(extension);
  }
  return extensions;
}

std::string ModelInput::head(size_t count) const {
  if (kind_ == Kind::Object || kind_ == Kind::Directory) return {};
  std::ifstream file(paths_.front(), std::ios::binary);
  std::string bytes(count, '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(count));
  bytes.resize(file ? count : static_cast<size_t>(std::max<std::streamsize>(file.gcount(), 0)));
  return bytes;
}

}  // namespace estuary
