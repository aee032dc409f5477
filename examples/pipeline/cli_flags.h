#ifndef ACTORFLOW_EXAMPLES_PIPELINE_CLI_FLAGS_H_
#define ACTORFLOW_EXAMPLES_PIPELINE_CLI_FLAGS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow::examples {

// --name=value and --name value flags, checked against the names a program
// declares with their defaults.
class CliFlags {
 public:
  explicit CliFlags(std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {}

  // False with `error` set on an unknown flag or a missing value; `help`
  // set on --help or -h.
  absl::Status Parse(int argc, char** argv, bool* help) {
    *help = false;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        *help = true;
        return absl::OkStatus();
      }
      if (arg.rfind("--", 0) != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unexpected argument '", arg, "' (flags are --name=value)"));
      }
      std::string name = arg.substr(2), value;
      const size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " needs a value"));
      }
      if (!values_.count(name)) {
        std::string known;
        for (const auto& [key, unused] : values_) {
          absl::StrAppend(&known, known.empty() ? "--" : ", --", key);
        }
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag --", name, " (flags: ", known, ")"));
      }
      values_[name] = value;
    }
    return absl::OkStatus();
  }

  // Sets a value (a default that depends on other flags).
  void Set(const std::string& name, std::string value) {
    values_[name] = std::move(value);
  }
  const std::string& String(const std::string& name) const {
    return values_.at(name);
  }
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t min) const {
    int64_t value = 0;
    if (!absl::SimpleAtoi(values_.at(name), &value) || value < min) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": wants an integer of at least ", min,
                       ", got '", values_.at(name), "'"));
    }
    return value;
  }
  absl::StatusOr<double> Double(const std::string& name, double min) const {
    double value = 0;
    if (!absl::SimpleAtod(values_.at(name), &value) || !(value >= min)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": wants a number of at least ", min,
                       ", got '", values_.at(name), "'"));
    }
    return value;
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace actorflow::examples

#endif  // ACTORFLOW_EXAMPLES_PIPELINE_CLI_FLAGS_H_
