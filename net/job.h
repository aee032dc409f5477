#ifndef ACTORFLOW_NET_JOB_H_
#define ACTORFLOW_NET_JOB_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actorflow/checkpoint.h"
#include "actorflow/session.h"
#include "base/mutex.h"
#include "net/control.h"
#include "net/plan_partition.h"
#include "net/transport.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::net {

// Where this process stands in a job, as torchrun and mpirun say it.
struct JobConfig {
  int32_t rank = 0;
  int32_t world_size = 1;
  std::string master_addr = "127.0.0.1";
  int32_t master_port = 29500;
  // The host other ranks reach this one at; empty: MASTER_ADDR when that is
  // a loopback address, else this machine's host name.
  std::string host;
  absl::Duration join_timeout = absl::Seconds(60);
  absl::Duration peer_timeout = absl::Seconds(30);
  // Checkpoints: each rank's go under <checkpoint_dir>/rank-<rank>.
  std::string checkpoint_dir;
  // Start from the newest checkpoint that every rank has complete (none:
  // from the beginning).
  bool resume = false;
};

// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; Open MPI's
// OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE where RANK and WORLD_SIZE
// are absent. Errors name the variable. Absent everything: one process.
absl::StatusOr<JobConfig> JobConfigFromEnv();

// Fingerprint of what a rank runs: the plan (deterministically serialized)
// and the piece count. Every rank's must equal rank 0's.
std::string PlanFingerprint(const Plan& plan, int64_t pieces);

// One process of a multi-machine job: its share of the plan as a Session,
// a gRPC server (RegisterTransfer; on rank 0 also Control on MASTER_PORT),
// and its link to rank 0. Create joins the job (every rank must call it
// with the same plan and pieces), connects the registers that cross
// machines and waits until every rank is ready; then Run; then Finish,
// which waits for every rank.
//
// A failure anywhere ends the job everywhere: this process's first failure
// goes to rank 0, which tells every rank; each aborts its run with that
// message (which names the rank, and its task and piece). A rank that
// exits, or is silent for peer_timeout, fails the job the same way.
//
// Unless `options.channel.spin_ns` was changed from its default, idle actor
// threads sleep at once (spin_ns 0), as in a data pipeline.
class Job {
 public:
  static absl::StatusOr<std::unique_ptr<Job>> Create(const Plan& plan,
                                                     int64_t pieces,
                                                     JobConfig config,
                                                     SessionOptions options);
  ~Job();

  // Runs `pieces` pieces (< 0: the plan's) through this rank's tasks.
  absl::StatusOr<RunStats> Run(int64_t pieces);
  // Waits until every rank has called Barrier as often as this one: after
  // Run, the point where every rank's share of that run is done (Run itself
  // returns once this rank's tasks are, with the last pieces it sent
  // possibly still on their way). Fails with the job's failure.
  absl::Status Barrier();
  // After the last run: ends the transfers and waits for every rank.
  absl::Status Finish();
  // Between runs (every rank at the same piece): this rank's checkpoint,
  // written under checkpoint_root(); then a barrier, so that once it
  // returns every rank has this piece's checkpoint complete; then this
  // rank keeps its newest `keep_last` (0: all). A checkpoint that some rank
  // did not finish is never resumed from (see JoinReply.resume_piece).
  absl::StatusOr<WrittenCheckpoint> Checkpoint(int keep_last = 0);
  std::string checkpoint_root() const;
  // With JobConfig::resume: the piece the job resumed from (0: no
  // checkpoint every rank had); -1 without resume.
  int64_t resumed_from() const { return resumed_from_; }
  // The first piece of the next run.
  int64_t next_piece() const { return next_piece_; }
  // This rank's session; null when the rank has no tasks.
  Session* session() const { return session_.get(); }
  const LocalPlan& local_plan() const { return local_; }
  const JobConfig& config() const { return config_; }

 private:
  explicit Job(JobConfig config) : config_(std::move(config)) {}
  absl::Status Start(const Plan& plan, int64_t pieces, SessionOptions options);
  // The job failed (here or elsewhere): stop everything local.
  void OnFailure(const absl::Status& status, bool local);

  const JobConfig config_;
  LocalPlan local_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ControlService> control_;  // rank 0
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Session> session_;
  bool finished_ = false;
  int64_t barriers_ = 0;     // Barrier calls so far: each one's name
  int64_t plan_pieces_ = 0;  // the plan's total_piece_num
  int64_t next_piece_ = 0;
  int64_t resumed_from_ = -1;

  Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  Session* live_session_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_JOB_H_
