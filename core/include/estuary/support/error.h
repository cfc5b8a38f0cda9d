#pragma once
// One exception type for every user-facing failure. Messages carry their own context
// ("model.est:12: ...", "node 'conv1' (Conv): ...") so that whoever catches the error
// can print it as is and exit non-zero.
#include <sstream>
#include <stdexcept>
#include <string>

namespace estuary {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds a message from any streamable parts and throws it as an Error.
template <typename... Parts>
[[noreturn]] void raise(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw Error(message.str());
}

}  // namespace estuary
