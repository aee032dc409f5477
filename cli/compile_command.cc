// `actorflow compile JOB`: a Job compiled into a Plan.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/job_compiler.h"
#include "actorflow/plan_validator.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "compiler/plan_or_job.h"
#include "google/protobuf/text_format.h"
#include "plan/plan_dot.h"

namespace actorflow::internal::cli {
namespace {

bool IsBinaryPlanName(const std::string& path) {
  return absl::EndsWith(path, ".pb") || absl::EndsWith(path, ".bin");
}

bool IsTextPlanName(const std::string& path) {
  return absl::EndsWith(path, ".pbtxt") || absl::EndsWith(path, ".textproto") ||
         absl::EndsWith(path, ".txt");
}

class CompileCommand : public Command {
 public:
  CompileCommand()
      : Command("actorflow compile JOB [-o PLAN] [--dot]",
                "Compiles JOB (a Job: operators with placements, "
                "proto/job.proto) into a Plan: one task per operator and "
                "device, copies and boxing between placements, streams and "
                "register_num chosen. Every device is assumed present: the "
                "plan may be for another machine.") {
    TakesOperand("JOB", "the Job, text (.pbtxt) or binary (.pb)");
    flags().String("output", &out_path_, "PLAN",
                   "write the plan there (.pbtxt text, .pb binary) and print "
                   "a JSON line of what it holds (ops, tasks, copies, boxing, "
                   "streams, register_bytes, shared_blocks, "
                   "shared_registers, bytes_saved); -o PLAN for short. "
                   "Without it the plan goes to stdout");
    flags().Bool("dot", &dot_, "print the plan's graph instead (Graphviz)");
  }

  // -o PLAN and -o=PLAN are --output's short form.
  std::vector<std::string> Respell(std::vector<std::string> args) override {
    for (std::string& arg : args) {
      if (arg == "-o") {
        arg = "--output";
      } else if (absl::StartsWith(arg, "-o=")) {
        arg = "--output=" + arg.substr(3);
      }
    }
    return args;
  }

  int Run(const std::vector<std::string>&) override {
    if (operands_.empty()) return UsageError("compile: missing JOB");
    const std::string& job_path = operands_[0];
    const std::string out_path =
        out_path_.empty() ? "" : ResolvePath(out_path_);
    const bool binary = IsBinaryPlanName(out_path);
    if (!out_path.empty() && !binary && !IsTextPlanName(out_path)) {
      return UsageError(absl::StrCat(
          "-o ", out_path, ": name the plan .pbtxt (text) or .pb (binary)"));
    }
    absl::StatusOr<PlanOrJob> read = ReadPlanOrJob(ResolvePath(job_path));
    if (!read.ok()) return InvalidStatus(read.status());
    const Job* job = std::get_if<Job>(&*read);
    if (job == nullptr) {
      return UsageError(absl::StrCat(
          "compile: ", job_path,
          " holds a Plan, not a Job: run, validate or dot it as it is"));
    }
    JobCompileOptions options;
    options.probe = [](int) { return absl::OkStatus(); };
    absl::StatusOr<CompiledJob> compiled = CompileJob(*job, options);
    if (!compiled.ok()) return InvalidStatus(compiled.status());
    std::string text;
    if (binary) {
      compiled->plan.SerializeToString(&text);
    } else {
      google::protobuf::TextFormat::PrintToString(compiled->plan, &text);
      text = absl::StrCat("# Compiled from ", job_path,
                          " by `actorflow compile`.\n", text);
    }
    if (dot_) {
      CompileOptions check;
      check.probe = options.probe;
      check.multi_machine = true;
      absl::StatusOr<std::unique_ptr<CompiledPlan>> plan =
          CompilePlan(compiled->plan, check);
      if (!plan.ok()) return InvalidStatus(plan.status());
      std::fputs(PlanToDot(**plan).c_str(), stdout);
    } else if (out_path.empty()) {
      std::fputs(text.c_str(), stdout);
    }
    if (out_path.empty()) return kExitOk;
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) {
      return UsageError(absl::StrCat("-o: cannot write ", out_path, ": ",
                                     std::strerror(errno)));
    }
    const JobCompileReport& r = compiled->report;
    for (const std::string& line : r.signatures) {
      std::fprintf(stderr, "signatures %s\n", line.c_str());
    }
    for (const std::string& line : r.inserted) {
      std::fprintf(stderr, "inserted %s\n", line.c_str());
    }
    if (!dot_) {
      PrintJsonLine({{"status", "ok"},
                     {"plan", out_path},
                     {"ops", r.ops},
                     {"tasks", r.tasks},
                     {"copies", r.copies},
                     {"boxing", r.boxing},
                     {"streams", r.streams},
                     {"register_bytes", r.register_bytes},
                     {"shared_blocks", r.shared_blocks},
                     {"shared_registers", r.shared_registers},
                     {"bytes_saved", r.bytes_saved}});
    }
    return kExitOk;
  }

 private:
  std::string out_path_;
  bool dot_ = false;
};

}  // namespace

std::unique_ptr<Command> MakeCompileCommand() {
  return std::make_unique<CompileCommand>();
}

}  // namespace actorflow::internal::cli
