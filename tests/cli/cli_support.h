#pragma once
// Running the real `estuary` binary from a test.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs `estuary <arguments>` with `environment` ("NAME=value ...") prepended.
inline CliRun runCli(const std::string& arguments, const std::string& environment = "") {
  std::string command = environment + " " + std::string(ESTUARY_CLI) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  CliRun run{0, {}};
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

#define EXPECT_CONTAINS(text, piece) \
  EXPECT_NE(std::string(text).find(piece), std::string::npos) << "missing '" << (piece) << "' in:\n" << (text)
