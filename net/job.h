#ifndef ACTORFLOW_NET_JOB_H_
#define ACTORFLOW_NET_JOB_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "actorflow/checkpoint.h"
#include "actorflow/session.h"
#include "base/mutex.h"
#include "net/control.h"
#include "net/job_config.h"
#include "net/plan_partition.h"
#include "net/transport.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::net {

// How long this rank waited on the control plane: its Join (until every
// rank had joined), the barrier after it (every rank connected), and the
// barrier in Finish (every rank done).
struct ControlTimes {
  double join_ms = 0;
  double ready_ms = 0;
  double end_ms = 0;
};

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
// Preemption: Preempt on any rank (the CLI calls it on SIGTERM or SIGUSR1)
// stops the whole job at one cut: every rank holds its sources, rank 0
// takes the largest piece any has begun, and every rank's run ends before
// it (Run returns fewer pieces; preempted_at() says where). The caller then
// checkpoints and finishes as after any run. A Run not yet started waits
// for the cut.
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
  // Rank 0, after Finish: every rank's sinks (each rank sends its own to
  // the last barrier); empty on the other ranks.
  std::vector<SinkReport> JobSinks() const;
  // What each register this rank sends to another has moved so far: its
  // bytes, those that went into messages (fewer where compressed:
  // JobConfig::net_compress; none for pieces through shared memory:
  // JobConfig::net_shm) and how many pieces went through shared memory.
  std::vector<Transport::EdgeBytes> SentBytes() const;
  // Any thread, any time after Create: stop the job at a cut (see above);
  // `why` ("SIGTERM") reaches every rank.
  void Preempt(const std::string& why);
  // Any thread: fails the job everywhere, as a local failure would, and
  // stops this rank's session.
  void Abort(const absl::Status& status);
  // Once this rank's runs ended at the job's cut, before the pieces asked
  // for: the cut; else -1.
  int64_t preempted_at() const;
  // Why the job was preempted ("SIGTERM to rank 1"); empty: it was not.
  std::string preempt_reason() const;
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
  int64_t next_piece() const;
  // This rank's session; null when the rank has no tasks.
  Session* session() const { return session_.get(); }
  const LocalPlan& local_plan() const { return local_; }
  const JobConfig& config() const { return config_; }
  const ControlTimes& control_times() const { return control_times_; }

 private:
  explicit Job(JobConfig config) : config_(std::move(config)) {}
  absl::Status Start(const Plan& plan, int64_t pieces, SessionOptions options);
  // The job failed (here or elsewhere): stop everything local.
  void OnFailure(const absl::Status& status, bool local);
  // Rank 0 says: hold (why), then end at the cut. Both only note it for
  // the preempter thread, which holds the sources and reports where.
  void OnHold(const std::string& why);
  void OnCut(int64_t cut);
  void HoldAndEndAtCut();
  // For rank 0's hang check: every act so far, and what waits now.
  int64_t Acts() const;
  std::string Waits() const;
  bool starting() const;

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
  int64_t resumed_from_ = -1;
  ControlTimes control_times_;

  Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  Session* live_session_ ABSL_GUARDED_BY(mu_) = nullptr;

  // Runs and preemption: the preempter waits while a run is starting, then
  // either sees it running (and holds its sources) or reports next_piece_,
  // which no run passes before the cut is known. Never held across a call
  // into the session, whose failure callback (OnFailure) takes it.
  mutable Mutex preempt_mu_;
  CondVar preempt_changed_;
  int64_t next_piece_ ABSL_GUARDED_BY(preempt_mu_) = 0;
  bool starting_ ABSL_GUARDED_BY(preempt_mu_) = false;  // in Session::Start
  bool run_in_progress_ ABSL_GUARDED_BY(preempt_mu_) = false;
  std::string preempt_why_ ABSL_GUARDED_BY(preempt_mu_);  // hold asked
  int64_t cut_ ABSL_GUARDED_BY(preempt_mu_) = -1;         // -1: undecided
  bool ran_to_cut_ ABSL_GUARDED_BY(preempt_mu_) = false;
  int64_t acts_done_ ABSL_GUARDED_BY(preempt_mu_) = 0;  // by ended runs
  bool failed_ ABSL_GUARDED_BY(preempt_mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(preempt_mu_) = false;
  std::thread preempter_;
};

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_JOB_H_
