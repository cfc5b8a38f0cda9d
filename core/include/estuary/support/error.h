#pragma once
// One exception type for every user-facing failure. Messages carry their own context
// ("model.est:12: ...", "node 'conv1' (Conv): ...") so that whoever catches the error
// can print it as is and exit non-zero. Two kinds of it describe a run's inputs, for the
// languages that tell them apart (Python's TypeError and ValueError).
#include <sstream>
#include <stdexcept>
#include <string>

namespace estuary {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An input of the wrong type or kind: a wrong dtype, or no tensor at all.
class InputTypeError : public Error {
 public:
  using Error::Error;
};

// An input of the right type with a wrong value: its shape, a size out of range, a name the
// model does not have, a missing one, a wrong count.
class InputValueError : public Error {
 public:
  using Error::Error;
};

// Builds a message from any streamable parts and throws it as an ErrorType.
template <typename ErrorType = Error, typename... Parts>
[[noreturn]] void raiseAs(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw ErrorType(message.str());
}

template <typename... Parts>
[[noreturn]] void raise(const Parts&... parts) {
  raiseAs<Error>(parts...);
}

}  // namespace estuary
