#include "cli/flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace actorflow::internal {

namespace {

constexpr size_t kHelpColumn = 22;  // where each flag's text starts
constexpr size_t kWidth = 79;

// `text` wrapped to kWidth, every line indented by `indent` spaces but the
// first (which continues a line `first_used` characters long). Newlines in
// `text` start new lines.
std::string Wrap(const std::string& text, size_t indent, size_t first_used) {
  std::string out;
  size_t used = first_used;
  bool line_start = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!line_start || used > indent) {
      out += "\n" + std::string(indent, ' ');
      used = indent;
    }
    line_start = true;
    for (absl::string_view word :
         absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (!line_start && used + 1 + word.size() > kWidth) {
        out += "\n" + std::string(indent, ' ');
        used = indent;
        line_start = true;
      }
      if (!line_start) {
        out += ' ';
        ++used;
      }
      absl::StrAppend(&out, word);
      used += word.size();
      line_start = false;
    }
  }
  return out;
}

// `text` with each line longer than the screen wrapped; shorter lines (a
// table, an indented list) are kept as written.
std::string WrapLongLines(const std::string& text) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    lines.push_back(line.size() <= kWidth ? std::string(line)
                                          : Wrap(std::string(line), 0, 0));
  }
  return absl::StrJoin(lines, "\n");
}

std::string FormatDouble(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

FlagSet::FlagSet(std::string usage, std::string about, std::string epilog)
    : usage_(std::move(usage)),
      about_(std::move(about)),
      epilog_(std::move(epilog)) {}

FlagSet& FlagSet::Add(Flag flag) {
  flags_.push_back(std::move(flag));
  return *this;
}

FlagSet& FlagSet::String(const std::string& name, std::string* value,
                         const std::string& meta, const std::string& help) {
  Flag flag{name, Kind::kString, value, meta, help, *value};
  return Add(std::move(flag));
}

FlagSet& FlagSet::Int(const std::string& name, int64_t* value,
                      const std::string& help, int64_t min, int64_t max) {
  Flag flag{name, Kind::kInt, value, "N", help, absl::StrCat(*value)};
  flag.int_min = min;
  flag.int_max = max;
  return Add(std::move(flag));
}

FlagSet& FlagSet::Double(const std::string& name, double* value,
                         const std::string& help, double min) {
  Flag flag{name, Kind::kDouble, value, "X", help, FormatDouble(*value)};
  flag.double_min = min;
  return Add(std::move(flag));
}

FlagSet& FlagSet::Bool(const std::string& name, bool* value,
                       const std::string& help) {
  Flag flag{name, Kind::kBool, value, "B", help, *value ? "true" : "false"};
  return Add(std::move(flag));
}

FlagSet& FlagSet::Choice(const std::string& name, std::string* value,
                         std::vector<std::string> choices,
                         const std::string& help) {
  Flag flag{name, Kind::kChoice, value, absl::StrJoin(choices, "|"),
            help, *value};
  flag.choices = std::move(choices);
  return Add(std::move(flag));
}

FlagSet& FlagSet::Custom(const std::string& name, const std::string& meta,
                         const std::string& help,
                         std::function<std::string(const std::string&)> set) {
  Flag flag{name, Kind::kCustom, nullptr, meta, help, ""};
  flag.custom = std::move(set);
  return Add(std::move(flag));
}

FlagSet& FlagSet::Required() {
  if (!flags_.empty()) flags_.back().required = true;
  return *this;
}

FlagSet& FlagSet::NoDefault() {
  if (!flags_.empty()) flags_.back().default_text.clear();
  return *this;
}

FlagSet& FlagSet::Hidden() {
  if (!flags_.empty()) flags_.back().hidden = true;
  return *this;
}

FlagSet& FlagSet::Positional(std::vector<std::string>* args,
                             const std::string& meta, const std::string& help) {
  positional_ = args;
  positional_meta_ = meta;
  positional_help_ = help;
  return *this;
}

FlagSet::Flag* FlagSet::Find(const std::string& name) {
  for (Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

absl::Status FlagSet::Set(Flag& flag, const std::string& text) {
  const std::string name = "--" + flag.name;
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.value) = text;
      break;
    case Kind::kInt: {
      int64_t v = 0;
      if (!absl::SimpleAtoi(text, &v) || v < flag.int_min || v > flag.int_max) {
        std::string range =
            flag.int_max != std::numeric_limits<int64_t>::max()
                ? absl::StrCat(" from ", flag.int_min, " to ", flag.int_max)
            : flag.int_min != std::numeric_limits<int64_t>::min()
                ? absl::StrCat(" of at least ", flag.int_min)
                : "";
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": wants an integer", range, ", got '", text, "'"));
      }
      *static_cast<int64_t*>(flag.value) = v;
      break;
    }
    case Kind::kDouble: {
      double v = 0;
      if (!absl::SimpleAtod(text, &v) || !std::isfinite(v) ||
          !(v >= flag.double_min)) {
        std::string range =
            std::isinf(flag.double_min)
                ? ""
                : absl::StrCat(" of at least ", FormatDouble(flag.double_min));
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": wants a number", range, ", got '", text, "'"));
      }
      *static_cast<double*>(flag.value) = v;
      break;
    }
    case Kind::kBool:
      if (text != "true" && text != "false") {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": true or false, got '", text, "'"));
      }
      *static_cast<bool*>(flag.value) = text == "true";
      break;
    case Kind::kChoice: {
      bool known = false;
      for (const std::string& choice : flag.choices) known |= choice == text;
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", absl::StrJoin(flag.choices, " or "),
                         ", got '", text, "'"));
      }
      *static_cast<std::string*>(flag.value) = text;
      break;
    }
    case Kind::kCustom: {
      std::string problem = flag.custom(text);
      if (!problem.empty()) return absl::InvalidArgumentError(problem);
      break;
    }
  }
  flag.seen = true;
  return absl::OkStatus();
}

absl::Status FlagSet::Parse(int argc, const char* const* argv) {
  help_requested_ = false;
  given_args_.clear();
  for (Flag& flag : flags_) flag.seen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_requested_ = true;
      return absl::OkStatus();
    }
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (positional_ != nullptr && arg != "--") {
        positional_->push_back(arg);
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "' (flags are --name=value)"));
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    Flag* flag = Find(name);
    if (flag == nullptr) {
      // The other spelling ('_' for '-' or the reverse) of a declared flag:
      // taken, with a line saying how it is spelled now.
      std::string respelled = name;
      const bool dashed = name.find('-') != std::string::npos;
      std::replace(respelled.begin(), respelled.end(), dashed ? '-' : '_',
                   dashed ? '_' : '-');
      flag = Find(respelled);
      if (flag != nullptr) {
        std::fprintf(stderr,
                     "warning: --%s is spelled --%s; the old spelling will "
                     "go\n",
                     name.c_str(), flag->name.c_str());
        name = flag->name;
      }
    }
    if (flag == nullptr) {
      std::vector<std::string> known;
      for (const Flag& f : flags_) {
        if (!f.hidden) known.push_back("--" + f.name);
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name,
                       " (flags: ", absl::StrJoin(known, ", "), ", --help)"));
    }
    if (!has_value) {
      // A bare boolean means true; any other flag takes the next argument.
      if (flag->kind == Kind::kBool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " needs a value"));
      }
    }
    absl::Status set = Set(*flag, value);
    if (!set.ok()) return set;
    given_args_.push_back(absl::StrCat("--", name, "=", value));
  }
  for (const Flag& flag : flags_) {
    if (flag.required &&
        (!flag.seen || (flag.kind == Kind::kString &&
                        static_cast<std::string*>(flag.value)->empty()))) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag.name, " is required"));
    }
  }
  return absl::OkStatus();
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return Parse(static_cast<int>(argv.size()), argv.data());
}

bool FlagSet::given(const std::string& name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return flag.seen;
  }
  return false;
}

std::string FlagSet::Help() const {
  std::string out = usage_ + "\n";
  if (!about_.empty()) absl::StrAppend(&out, "\n", WrapLongLines(about_), "\n");
  absl::StrAppend(&out, "\nFlags:\n");
  auto entry = [&out](const std::string& left, const std::string& text) {
    std::string line = "  " + left;
    if (line.size() + 2 > kHelpColumn) {
      absl::StrAppend(&out, line, Wrap(text, kHelpColumn, kWidth), "\n");
    } else {
      line.resize(kHelpColumn, ' ');
      absl::StrAppend(&out, line, Wrap(text, kHelpColumn, kHelpColumn), "\n");
    }
  };
  if (positional_ != nullptr) entry(positional_meta_, positional_help_);
  for (const Flag& flag : flags_) {
    if (flag.hidden) continue;
    std::string text = flag.help;
    if (flag.required) {
      absl::StrAppend(&text, " (required)");
    } else if (!flag.default_text.empty()) {
      absl::StrAppend(&text, " (default ", flag.default_text, ")");
    }
    // A boolean that is off by default is switched on by its bare name.
    const bool bare = flag.kind == Kind::kBool && flag.default_text == "false";
    if (bare) text = flag.help;
    entry(
        bare ? "--" + flag.name : absl::StrCat("--", flag.name, "=", flag.meta),
        text);
  }
  entry("--help", "this text");
  if (!epilog_.empty()) {
    absl::StrAppend(&out, "\n", WrapLongLines(epilog_), "\n");
  }
  return out;
}

void FlagSet::ParseOrExit(int argc, const char* const* argv) {
  absl::Status status = Parse(argc, argv);
  if (help_requested_) {
    std::fputs(Help().c_str(), stdout);
    std::exit(0);
  }
  if (!status.ok()) {
    const std::string program = usage_.substr(0, usage_.find(' '));
    std::fprintf(stderr, "%s: %s (see --help)\n", program.c_str(),
                 std::string(status.message()).c_str());
    std::exit(2);
  }
}

}  // namespace actorflow::internal
