#ifndef ACTORFLOW_CLI_FLAGS_H_
#define ACTORFLOW_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace actorflow::internal {

// A program's flags, declared once each (name, variable, help) and parsed
// from --name=value or --name value; --help prints the usage generated
// from the declarations. The variables hold the defaults when declared,
// and --help shows them.
//
//   int64_t threads = 1;
//   std::string dir;
//   FlagSet flags("image_pipeline --dir=DIR [flags]", "Reads ...");
//   flags.String("dir", &dir, "DIR", "the images").Required();
//   flags.Int("threads", &threads, "CPU worker threads", /*min=*/1);
//   flags.ParseOrExit(argc, argv);
//
// Errors name the flag and what it wants: "--threads: wants an integer of
// at least 1, got 'x'", "unknown flag --thread (flags: --dir, ...)".
class FlagSet {
 public:
  // `usage`: the first line of --help; `about`: the paragraphs under it;
  // `epilog`: the text after the flags (what the program prints, say).
  FlagSet(std::string usage, std::string about, std::string epilog = "");
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Each returns the set, so that the last declaration can be Required().
  FlagSet& String(const std::string& name, std::string* value,
                  const std::string& meta, const std::string& help);
  FlagSet& Int(const std::string& name, int64_t* value, const std::string& help,
               int64_t min = std::numeric_limits<int64_t>::min(),
               int64_t max = std::numeric_limits<int64_t>::max());
  FlagSet& Double(const std::string& name, double* value,
                  const std::string& help,
                  double min = -std::numeric_limits<double>::infinity());
  // --name=true|false; a bare --name means true.
  FlagSet& Bool(const std::string& name, bool* value, const std::string& help);
  // One of `choices`.
  FlagSet& Choice(const std::string& name, std::string* value,
                  std::vector<std::string> choices, const std::string& help);
  // A flag whose value `set` parses itself: it returns the problem ("--pieces
  // needs a whole number >= 0, got 'x'"), or "" once it has taken the value.
  FlagSet& Custom(const std::string& name, const std::string& meta,
                  const std::string& help,
                  std::function<std::string(const std::string&)> set);
  // The flag just declared must be given (a non-empty value).
  FlagSet& Required();
  // --help shows no default for the flag just declared (its default means
  // "not given").
  FlagSet& NoDefault();
  // --help leaves out the flag just declared (a program's internal flag,
  // such as the one it passes to its own child processes).
  FlagSet& Hidden();
  // Plain arguments (not starting with --) are collected instead of
  // refused; `meta` names them in the usage's flag list.
  FlagSet& Positional(std::vector<std::string>* args, const std::string& meta,
                      const std::string& help);

  // argv[1..]: OK with the variables set, or the first problem. On --help
  // or -h it stops there, returns OK and help_requested() is true.
  absl::Status Parse(int argc, const char* const* argv);
  // The same over args[1..] (args[0]: the program or command).
  absl::Status Parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  // Whether the last Parse set flag `name` (a default is not given).
  bool given(const std::string& name) const;
  // The flags the last Parse set, as "--name=value" in the order given (a
  // bare boolean as "--name=true"): what a program passes on to another
  // that takes the same flags.
  const std::vector<std::string>& given_args() const { return given_args_; }
  // The generated usage text.
  std::string Help() const;
  // Its first line, as given to the constructor.
  const std::string& usage() const { return usage_; }
  // Parse, for a program's main: --help prints Help() and exits 0; an error
  // prints "<program>: <error> (see --help)" and exits 2.
  void ParseOrExit(int argc, const char* const* argv);

 private:
  enum class Kind { kString, kInt, kDouble, kBool, kChoice, kCustom };
  struct Flag {
    std::string name;
    Kind kind;
    void* value;
    std::string meta;
    std::string help;
    std::string default_text;
    int64_t int_min = 0;
    int64_t int_max = 0;
    double double_min = 0;
    std::vector<std::string> choices;
    std::function<std::string(const std::string&)> custom;
    bool required = false;
    bool hidden = false;
    bool seen = false;
  };
  FlagSet& Add(Flag flag);
  Flag* Find(const std::string& name);
  absl::Status Set(Flag& flag, const std::string& text);

  const std::string usage_;
  const std::string about_;
  const std::string epilog_;
  std::vector<Flag> flags_;
  std::vector<std::string> given_args_;
  std::vector<std::string>* positional_ = nullptr;
  std::string positional_meta_;
  std::string positional_help_;
  bool help_requested_ = false;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_CLI_FLAGS_H_
