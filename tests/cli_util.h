#ifndef ACTORFLOW_TESTS_CLI_UTIL_H_
#define ACTORFLOW_TESTS_CLI_UTIL_H_

// Running the project's binaries as a user would, from a test: exit code,
// stdout and its last line (where the JSON summaries are).
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "base/json.h"

namespace actorflow::internal::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;        // stdout
  std::string last_line;  // its last line
  std::string err;        // stderr
};

inline std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/" +
         std::getenv("TEST_WORKSPACE") + "/" + path;
}

// Runs `actorflow ARGS` (or another runner binary) in `dir` with `env`
// prepended (e.g. "X=1 ").
inline CliResult RunCli(const std::string& args, const std::string& dir = ".",
                        const std::string& env = "",
                        const std::string& binary = "actorflow") {
  static int calls = 0;
  const std::string err_path = std::string(std::getenv("TEST_TMPDIR")) +
                               "/cli_stderr_" + std::to_string(calls++);
  std::string command = "cd '" + dir + "' && " + env + "'" + Runfile(binary) +
                        "' " + args + " 2>'" + err_path + "'";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  CliResult result;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    result.out.append(buf.data(), n);
  }
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  result.err.assign(std::istreambuf_iterator<char>(err),
                    std::istreambuf_iterator<char>());
  std::string trimmed = result.out;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  size_t nl = trimmed.rfind('\n');
  result.last_line = nl == std::string::npos ? trimmed : trimmed.substr(nl + 1);
  return result;
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The value of top-level `key` in the JSON object `json`, as JSON text
// (strings keep their quotes); "" when `json` is not a JSON object or has no
// such key.
inline std::string Field(const std::string& json, const std::string& key) {
  const Json parsed = ParseJson(json);
  if (!parsed.is_object() || !parsed.contains(key)) return "";
  return JsonLine(parsed[key]);
}

}  // namespace actorflow::internal::testing

#endif  // ACTORFLOW_TESTS_CLI_UTIL_H_
