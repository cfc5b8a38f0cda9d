#pragma once
#include <string>

#include "estuary/support/error.h"

namespace estuary {

// The message of the Error `statement` throws, or "" when it throws none.
template <typename F>
std::string errorOf(F&& statement) {
  try {
    statement();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace estuary
