// `actorflow launch --nproc=N PLAN`: a multi-machine plan as N processes
// here, on one node of several (--nnodes, --node-rank), restarted on
// failure (--max-restarts).
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/run_flags.h"
#include "net/job_token.h"
#include "net/launch.h"

namespace actorflow::internal::cli {
namespace {

// A flag of whole numbers in [min, max]; the message says what it wants.
std::function<std::string(const std::string&)> Count(const char* name,
                                                     int64_t* value,
                                                     int64_t min, int64_t max,
                                                     const char* wants) {
  return [name, value, min, max, wants](const std::string& text) {
    if (!absl::SimpleAtoi(text, value) || *value < min || *value > max) {
      return absl::StrCat("--", name, " needs ", wants, " in ", min, "..", max,
                          ", got '", text, "'");
    }
    return std::string();
  };
}

// launch's own flags, which are not passed on to the ranks.
constexpr const char* kOwnFlags[] = {
    "--nproc=",        "--nproc-per-node=",
    "--nnodes=",       "--node-rank=",
    "--master-",       "--log-dir=",
    "--max-restarts=", "--restart-backoff-scale="};

// The flags are run's, checked here once before any rank starts and passed
// on to every rank but those launch sets itself (the ranks' places and
// where rank 0 serves).
class LaunchCommand : public Command {
 public:
  LaunchCommand()
      : Command(
            "actorflow launch --nproc=N PLAN [run flags] (on one of M nodes: "
            "--nnodes=M --node-rank=K)",
            "Starts N processes of `actorflow run PLAN` here as ranks "
            "K*N .. K*N+N-1 of a job of M*N ranks (one node: 0..N-1 on "
            "127.0.0.1 and a free port unless given), each with RANK, "
            "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, "
            "MASTER_PORT and ACTORFLOW_JOB_TOKEN set; waits for all of them "
            "and prints one JSON line for this node's ranks: their sinks, or "
            "the first error, and \"restarts\". Each rank's stderr comes "
            "through line by line after \"[rank R] \". A rank that fails "
            "stops the others; no rank outlives the launcher. A job on "
            "several nodes needs --master-addr (node 0's address) and one "
            "ACTORFLOW_JOB_TOKEN on every node. Takes every flag of run.") {
    flags().Custom("nproc", "N", "processes to start here, 1..1024 (required)",
                   Count("nproc", &nproc_, 1, 1024, "a number of processes"));
    flags().Custom(
        "nproc-per-node", "N", "the same as --nproc (torchrun's)",
        Count("nproc-per-node", &nproc_, 1, 1024, "a number of processes"));
    flags().Custom("nnodes", "M",
                   "nodes in the job, each running its own launch with the "
                   "same --nproc (default 1)",
                   Count("nnodes", &nnodes_, 1, 65536, "a number of nodes"));
    flags().Custom("node-rank", "K", "this node's place, 0..M-1 (default 0)",
                   Count("node-rank", &node_rank_, 0, 65535, "a node rank"));
    flags().Custom("log-dir", "DIR",
                   "keep each rank's stdout and stderr in DIR/rank-R.out and "
                   "DIR/rank-R.err (made if missing; a restart appends)",
                   [this](const std::string& text) {
                     if (text.empty())
                       return std::string(
                           "--log-dir needs a "
                           "directory");
                     log_dir_ = ResolvePath(text);
                     return std::string();
                   });
    flags().Custom(
        "max-restarts", "K",
        "when the job fails, stop every rank and start them all "
        "again, up to K times, after 1, 2, 4, ... (at most 30) "
        "seconds; with --checkpoint-dir from the newest checkpoint "
        "every rank completed (default 0)",
        Count("max-restarts", &max_restarts_, 0, 1000, "a number of restarts"));
    flags().Custom("restart-backoff-scale", "X",
                   "multiplies the waits before restarts (default 1)",
                   [this](const std::string& text) {
                     if (!absl::SimpleAtod(text, &backoff_scale_) ||
                         !(backoff_scale_ >= 0) || backoff_scale_ > 100) {
                       return absl::StrCat(
                           "--restart-backoff-scale needs a number in "
                           "0..100, got '",
                           text, "'");
                     }
                     return std::string();
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
    if (!flags().given("nproc") && !flags().given("nproc-per-node")) {
      return UsageError("launch: missing --nproc=N");
    }
    if (node_rank_ >= nnodes_) {
      return UsageError(absl::StrCat("launch: --node-rank=", node_rank_,
                                     " is outside 0..", nnodes_ - 1,
                                     " (--nnodes=", nnodes_, ")"));
    }
    if (nnodes_ * nproc_ > 65536) {
      return UsageError("launch: --nnodes times --nproc is above 65536 ranks");
    }
    if (operands_.empty()) return UsageError("launch: missing PLAN");
    absl::Status checked = CheckRunFlags(&run_);
    if (!checked.ok()) return UsageError(std::string(checked.message()));
    net::LaunchOptions options;
    options.nproc = static_cast<int>(nproc_);
    options.nnodes = static_cast<int>(nnodes_);
    options.node_rank = static_cast<int>(node_rank_);
    options.log_dir = log_dir_;
    options.max_restarts = static_cast<int>(max_restarts_);
    options.backoff_scale = backoff_scale_;
    options.checkpoints = run_.checkpoints();
    options.preempt_grace = absl::Seconds(run_.preempt_grace_s);
    if (flags().given("master-port")) {
      options.master_port = run_.job.master_port;
    } else if (nnodes_ > 1) {
      // Every node's launch must name the same port: the default one.
      options.master_port = run_.job.master_port;
    }
    if (flags().given("master-addr")) {
      options.master_addr = run_.job.master_addr;
    } else if (nnodes_ > 1) {
      return UsageError(
          "launch: --nnodes above 1 needs --master-addr (node 0's address, "
          "the same on every node)");
    }
    if (flags().given("peer-timeout")) {
      options.peer_timeout = run_.job.peer_timeout;
    }
    // One secret for the job: the environment's, else (one node) a new one.
    const char* token = std::getenv("ACTORFLOW_JOB_TOKEN");
    if (token != nullptr && *token != '\0') {
      options.token = token;
    } else if (nnodes_ > 1) {
      return UsageError(
          "launch: --nnodes above 1 needs ACTORFLOW_JOB_TOKEN, one secret "
          "set alike on every node (for example from `openssl rand -hex "
          "16`)");
    } else {
      absl::StatusOr<std::string> made = net::NewJobToken();
      if (!made.ok()) return UsageError(std::string(made.status().message()));
      options.token = *made;
    }
    if (!log_dir_.empty()) {
      std::error_code error;
      std::filesystem::create_directories(log_dir_, error);
      if (error) {
        return UsageError(absl::StrCat("launch: --log-dir: cannot make ",
                                       log_dir_, ": ", error.message()));
      }
    }
    options.run_args.push_back(ResolvePath(operands_[0]));
    for (const std::string& arg : flags().given_args()) {
      bool own = false;
      for (const char* prefix : kOwnFlags) own |= absl::StartsWith(arg, prefix);
      if (!own) options.run_args.push_back(arg);
    }
    for (const std::string& library : libraries) {
      options.run_args.push_back("--load=" + library);
    }
    return net::Launch(options);
  }

 private:
  int64_t nproc_ = 0;
  int64_t nnodes_ = 1;
  int64_t node_rank_ = 0;
  int64_t max_restarts_ = 0;
  double backoff_scale_ = 1.0;
  std::string log_dir_;
  RunFlags run_;
};

}  // namespace

std::unique_ptr<Command> MakeLaunchCommand() {
  return std::make_unique<LaunchCommand>();
}

}  // namespace actorflow::internal::cli
