// `actorflow launch --nproc=N PLAN`: a multi-machine plan as N local
// processes.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/run_flags.h"
#include "net/launch.h"

namespace actorflow::internal::cli {
namespace {

// The flags are run's, checked here once before any rank starts and passed
// on to every rank but those launch sets itself (the ranks' places and
// where rank 0 serves).
class LaunchCommand : public Command {
 public:
  LaunchCommand()
      : Command("actorflow launch --nproc=N PLAN [run flags]",
                "Starts N processes of `actorflow run PLAN` on this machine "
                "as ranks 0..N-1 of one job (on 127.0.0.1, a free port "
                "unless given), waits for all of them and prints one JSON "
                "line for the job: the sinks of every rank, or the first "
                "error. A rank that fails stops the others; no rank outlives "
                "it. Takes every flag of run.") {
    flags().Custom(
        "nproc", "N", "processes to start, 1..1024 (required)",
        [this](const std::string& text) -> std::string {
          if (!absl::SimpleAtoi(text, &nproc_) || nproc_ < 1 || nproc_ > 1024) {
            return absl::StrCat(
                "--nproc needs a number of processes in 1..1024, got '", text,
                "'");
          }
          return "";
        });
    TakesPlanOperand();
    DeclareRunFlags(&run_, &flags());
  }

  int Run(const std::vector<std::string>& libraries) override {
    for (const char* own : {"rank", "world-size"}) {
      if (flags().given(own)) {
        return UsageError(absl::StrCat("launch: --", own,
                                       " is launch's to set (--nproc says "
                                       "how many)"));
      }
    }
    if (!flags().given("nproc")) return UsageError("launch: missing --nproc=N");
    if (operands_.empty()) return UsageError("launch: missing PLAN");
    absl::Status checked = CheckRunFlags(&run_);
    if (!checked.ok()) return UsageError(std::string(checked.message()));
    net::LaunchOptions options;
    options.nproc = static_cast<int>(nproc_);
    if (flags().given("master-port")) {
      options.master_port = run_.job.master_port;
    }
    if (flags().given("master-addr")) {
      options.master_addr = run_.job.master_addr;
    }
    if (flags().given("peer-timeout")) {
      options.peer_timeout = run_.job.peer_timeout;
    }
    options.run_args.push_back(ResolvePath(operands_[0]));
    for (const std::string& arg : flags().given_args()) {
      // launch sets these for every rank.
      if (absl::StartsWith(arg, "--nproc=") ||
          absl::StartsWith(arg, "--master-")) {
        continue;
      }
      options.run_args.push_back(arg);
    }
    for (const std::string& library : libraries) {
      options.run_args.push_back("--load=" + library);
    }
    return net::Launch(options);
  }

 private:
  int64_t nproc_ = 0;
  RunFlags run_;
};

}  // namespace

std::unique_ptr<Command> MakeLaunchCommand() {
  return std::make_unique<LaunchCommand>();
}

}  // namespace actorflow::internal::cli
