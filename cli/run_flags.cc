#include "cli/run_flags.h"

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"

namespace actorflow::internal::cli {
namespace {

// "4096", "64K", "512M", "16G" (binary units).
bool ParseBytes(std::string text, int64_t* bytes) {
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift != 0) text.pop_back();
  }
  int64_t count = 0;
  if (!absl::SimpleAtoi(text, &count) || count <= 0 ||
      count > (INT64_MAX >> shift)) {
    return false;
  }
  *bytes = count << shift;
  return true;
}

// A flag of whole numbers in [min, max] stored into an integer of any width;
// the message names the flag and what it wants.
template <typename Int>
std::function<std::string(const std::string&)> WholeNumber(
    const std::string& name, Int* value, int64_t min, int64_t max,
    const std::string& wants) {
  return [name, value, min, max, wants](const std::string& text) {
    int64_t number = 0;
    if (!absl::SimpleAtoi(text, &number) || number < min || number > max) {
      return absl::StrCat("--", name, " needs ", wants, ", got '", text, "'");
    }
    *value = static_cast<Int>(number);
    return std::string();
  };
}

// A flag of seconds > 0, up to `max`.
std::function<std::string(const std::string&)> Seconds(const std::string& name,
                                                       double max,
                                                       double* seconds) {
  return [name, max, seconds](const std::string& text) {
    if (!absl::SimpleAtod(text, seconds) || !(*seconds > 0) || *seconds > max) {
      return absl::StrCat("--", name, " needs a number of seconds > 0, got '",
                          text, "'");
    }
    return std::string();
  };
}

std::function<std::string(const std::string&)> Duration(
    const std::string& name, absl::Duration* duration) {
  return [name, duration](const std::string& text) {
    double seconds = 0;
    std::string problem = Seconds(name, 1e6, &seconds)(text);
    if (problem.empty()) *duration = absl::Seconds(seconds);
    return problem;
  };
}

// A flag naming a file or directory, resolved as the user meant it.
std::function<std::string(const std::string&)> Path(const std::string& problem,
                                                    std::string* path) {
  return [problem, path](const std::string& text) {
    if (text.empty()) return problem;
    *path = ResolvePath(text);
    return std::string();
  };
}

// A flag naming a host.
std::function<std::string(const std::string&)> Host(const std::string& name,
                                                    std::string* host) {
  return [name, host](const std::string& text) {
    if (text.empty()) return absl::StrCat("--", name, " needs a host");
    *host = text;
    return std::string();
  };
}

}  // namespace

void DeclareRegisterLimit(int64_t* bytes, FlagSet* flags) {
  flags->Custom(
      "max-register-bytes", "N",
      "refuse a plan whose registers (every register_num of every "
      "descriptor, host and device, at least 256 bytes each) need more than "
      "N bytes, before allocating any; suffix K, M, G (default 16G)",
      [bytes](const std::string& text) -> std::string {
        if (!ParseBytes(text, bytes)) {
          return absl::StrCat(
              "--max-register-bytes needs a byte count > 0 (suffix K, M or G "
              "for KiB, MiB, GiB), got '",
              text, "'");
        }
        return "";
      });
}

void DeclareRunFlags(RunFlags* run, FlagSet* flags) {
  flags->Custom(
      "pieces", "N", "pieces to run, overriding the plan's total_piece_num",
      WholeNumber("pieces", &run->pieces, 0, INT64_MAX, "a whole number >= 0"));
  flags->Custom("trace", "FILE",
                "write when every act ran as a Chrome trace "
                "(chrome://tracing or ui.perfetto.dev): a row per task",
                Path("--trace needs a file name", &run->trace_path));
  flags->Bool("stats", &run->stats,
              "print a table per task on stderr: acts, busy time (in its "
              "kernel), time blocked on inputs (raise the producer's "
              "register_num, or speed it up) and on free outputs (raise this "
              "task's register_num, or speed its consumers up); and what the "
              "run found of its CPUs (usable count, how streams share "
              "threads). The JSON line gets them under \"stats\", keyed by "
              "task name, the CPUs under \"runtime\", where it stalled (by "
              "stage, with a verdict: see --stats-every) under \"stalls\"");
  flags->Custom("stats-every", "S",
                "while the run goes on, a line on stderr every S seconds "
                "saying where it stalled in that window: pieces/s and a "
                "verdict, \"input-bound 38 %: decode, 2 of 2 threads busy "
                "98 %\" (the share of the time the plan's last tasks waited "
                "for input, and the stage whose threads were busiest), or "
                "\"the last tasks are the bottleneck: ...\"; --stats adds "
                "the whole run's verdict",
                Seconds("stats-every", 1e6, &run->stats_every_s));
  flags->Bool("check-memory-sharing", &run->check_memory_sharing,
              "check the registers that share memory (mem_block_id) as the "
              "plan runs: a register written while another of its block "
              "holds data fails the run, naming both, and a free register's "
              "bytes are poisoned (NaN)");
  flags->Custom(
      "cpus", "N",
      "the CPUs the run may keep busy (default: the affinity mask, "
      "fewer under a cgroup CPU quota, or ACTORFLOW_CPUS): a "
      "waiting thread spins only while no more threads than that "
      "are awake, and CPU streams beyond it share threads",
      WholeNumber("cpus", &run->cpus, 1, 1 << 20, "a whole number >= 1"));
  flags->Custom(
      "sharing", "MODE",
      "how CPU streams beyond the usable CPUs share threads: consecutive "
      "(each thread a fixed block of streams), any_thread (any thread runs "
      "any waiting stream, one thread at a time: balanced, but every message "
      "between streams crosses a queue), or auto (consecutive unless the "
      "blocks' task counts come out over 1.2x their mean; one thread when "
      "the plan's acts are too short to pay for handing pieces between "
      "threads, as the stats line says)",
      [run](const std::string& text) -> std::string {
        if (text == "auto") {
          run->sharing = StreamSharing::kAuto;
        } else if (text == "consecutive") {
          run->sharing = StreamSharing::kConsecutive;
        } else if (text == "any_thread") {
          run->sharing = StreamSharing::kAnyThread;
        } else {
          return absl::StrCat(
              "--sharing is auto, consecutive or any_thread, got '", text, "'");
        }
        return "";
      });
  flags->Custom("timeout", "S",
                "fail a run that takes longer than S seconds, printing a "
                "hang report on stderr (what each task waits for and who "
                "holds it, running kernels, any cycle of waits); exit 1",
                Seconds("timeout", 1e9, &run->timeout_s));
  flags->Custom("stall", "S",
                "fail a run in which no task acts for S seconds, with the "
                "same report. A kernel that never returns is the one thread "
                "left unjoined",
                Seconds("stall", 1e9, &run->stall_s));
  DeclareRegisterLimit(&run->max_register_bytes, flags);
  flags->Bool("progress", &run->progress_on,
              "show a progress line on stderr (pieces done, rate); by "
              "default it shows on a terminal once a run has taken a second");
  flags->Bool("no-progress", &run->progress_off, "never show it");
  flags->Custom(
      "checkpoint-dir", "DIR",
      "write checkpoints under DIR (DIR/ckpt-<piece>): every task's "
      "state at a cut between pieces, written atomically and "
      "checksummed; one at the end of the run. In a job, each rank "
      "under DIR/rank-R, every rank the same cut",
      Path("--checkpoint-dir needs a directory", &run->checkpoint_dir));
  flags->Custom("checkpoint-every", "N",
                "a checkpoint after every N pieces too, taken as the run goes "
                "by (each task saves its state as it passes the piece) and "
                "written while the next pieces run; results are unchanged",
                WholeNumber("checkpoint-every", &run->checkpoint_every, 1,
                            INT64_MAX / 2, "a whole number >= 1"));
  flags->Custom("keep-last", "N",
                "keep only the newest N checkpoints (default: all)",
                WholeNumber("keep-last", &run->keep_last, 1, 1000000,
                            "a whole number >= 1"));
  flags->Bool("resume", &run->resume,
              "start from the newest checkpoint in --checkpoint-dir (none "
              "yet: from piece 0, saying so; in a job, the newest every rank "
              "completed) and run the pieces left; the JSON line says "
              "\"resumed_from\", and the sinks report the whole run's figures");
  net::JobConfig& job = run->job;
  flags->Custom(
      "rank", "R",
      "this process's rank in a multi-machine job, 0..N-1 "
      "(overrides RANK)",
      WholeNumber("rank", &job.rank, 0, INT32_MAX, "a whole number >= 0"));
  flags->Custom("world-size", "N",
                "processes in the job (overrides WORLD_SIZE)",
                WholeNumber("world-size", &job.world_size, 1, 65536,
                            "a number of processes >= 1"));
  flags->Custom("master-addr", "HOST",
                "where rank 0 serves the job's control service (overrides "
                "MASTER_ADDR; default 127.0.0.1, under Slurm the first host "
                "of SLURM_JOB_NODELIST)",
                [&job](const std::string& text) {
                  job.master_missing.clear();
                  return Host("master-addr", &job.master_addr)(text);
                });
  flags->Custom("master-port", "PORT",
                "its port (overrides MASTER_PORT; default 29500)",
                WholeNumber("master-port", &job.master_port, 1, 65535,
                            "a port in 1..65535"));
  flags->Custom("host", "HOST",
                "the address other ranks reach this one at, and where it "
                "listens (default: 127.0.0.1 when the master address is "
                "loopback, else the address of the interface the route to "
                "the master leaves from)",
                Host("host", &job.host));
  flags->Custom("peer-timeout", "S",
                "a rank silent this long after its first heartbeat is dead: "
                "every rank fails, naming it (default 30; before that first "
                "beat, --join-timeout bounds it)",
                Duration("peer-timeout", &job.peer_timeout));
  flags->Custom(
      "hang-timeout", "S",
      "in a job, when no task on any rank has acted for S seconds (default "
      "300; 0: never), rank 0 asks every rank what its tasks and edges wait "
      "for and fails the job with their answers: every rank exits 1 with "
      "that report",
      [&job](const std::string& text) -> std::string {
        if (text == "0") {
          job.hang_timeout = absl::ZeroDuration();
          return "";
        }
        return Duration("hang-timeout", &job.hang_timeout)(text);
      });
  flags->Custom("tls-cert", "FILE",
                "this rank's certificate (PEM) for TLS between ranks; with "
                "--tls-key and --tls-ca, every connection is mutual TLS",
                Path("--tls-cert needs a file", &job.tls.cert));
  flags->Custom("tls-key", "FILE", "the private key of --tls-cert (PEM)",
                Path("--tls-key needs a file", &job.tls.key));
  flags->Custom("tls-ca", "FILE",
                "the CA certificate (PEM) that signed every rank's: peers "
                "are verified against it",
                Path("--tls-ca needs a file", &job.tls.ca));
  flags->Custom(
      "net-compress", "TASKS",
      "in a job, compress (zstd, its fastest level) the registers these "
      "tasks send to other ranks: task names separated by commas, or all; "
      "a register that does not shrink goes as it is (default: none; pays "
      "for compressible data on a slow link)",
      [&job](const std::string& text) -> std::string {
        job.net_compress.clear();
        for (absl::string_view name : absl::StrSplit(text, ',')) {
          if (name.empty()) {
            return "--net-compress needs task names separated by commas, "
                   "or all";
          }
          job.net_compress.emplace_back(name);
        }
        return "";
      });
  flags->Custom(
      "net-shm", "0|1",
      "in a job, ranks on one host (same boot id and namespaces) move "
      "registers through shared memory, with only their order and credit "
      "on the network; 0 sends every register over gRPC (default 1; also "
      "ACTORFLOW_NET_SHM)",
      [&job](const std::string& text) -> std::string {
        if (text != "0" && text != "1") return "--net-shm needs 0 or 1";
        job.net_shm = text == "1";
        return "";
      });
  flags->Custom(
      "preempt-grace", "S",
      "in a job, SIGTERM or SIGUSR1 to any rank preempts the whole job: "
      "every rank ends its run at one agreed piece, checkpoints there "
      "(with --checkpoint-dir) and exits with status 3; a run resumed "
      "from that checkpoint ends bit for bit as one never stopped. If "
      "that takes longer than S seconds (default 25: keep it under your "
      "scheduler's, such as Slurm's KillWait or Kubernetes' "
      "terminationGracePeriodSeconds), the job fails instead (exit 1)",
      Seconds("preempt-grace", 1e6, &run->preempt_grace_s));
  flags->Custom("join-timeout", "S",
                "how long rank 0 waits for every rank to join, then for each "
                "rank's first heartbeat (default 60)",
                Duration("join-timeout", &job.join_timeout));
}

absl::Status CheckRunFlags(RunFlags* run) {
  if (!run->checkpoints()) {
    const char* needs_dir = run->resume             ? "--resume"
                            : run->keep_last > 0    ? "--keep-last"
                            : run->checkpoint_every ? "--checkpoint-every"
                                                    : nullptr;
    if (needs_dir != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(needs_dir, " needs --checkpoint-dir=DIR"));
    }
  }
  run->job.checkpoint_dir = run->checkpoint_dir;
  run->job.resume = run->resume;
  if (run->job.world_size > 1 && !run->job.master_missing.empty()) {
    return absl::InvalidArgumentError(run->job.master_missing);
  }
  if (run->job.rank >= run->job.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", run->job.rank, " is outside 0..", run->job.world_size - 1,
        " (world size ", run->job.world_size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::cli
