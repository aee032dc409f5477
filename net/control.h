#ifndef ACTORFLOW_NET_CONTROL_H_
#define ACTORFLOW_NET_CONTROL_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "proto/net.grpc.pb.h"

namespace actorflow::internal::net {

struct ControlOptions {
  int32_t world_size = 1;
  // How long rank 0 waits for every rank to join.
  absl::Duration join_timeout = absl::Seconds(60);
  // A rank (or rank 0) silent this long is taken to be dead or stopped.
  absl::Duration peer_timeout = absl::Seconds(30);
  // The job's secret: carried on every call, required by every handler
  // (job_token.h). Empty: not checked.
  std::string token;
  // The job's name; a Join that names another is refused.
  std::string job_id;
  // How ranks reach rank 0 (TLS or plaintext); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Once every rank joined, no act on any rank for this long fails the job
  // with what each rank waits for. Zero: never.
  absl::Duration hang_timeout = absl::ZeroDuration();
};

// Heartbeats go out this often: a tenth of the peer timeout, within
// [20 ms, 1 s].
absl::Duration HeartbeatInterval(absl::Duration peer_timeout);

// Called once with the job's failure, on whichever thread learns of it.
using FailureFn = std::function<void(const absl::Status&)>;

// What the control plane asks of one process, on a gRPC or ticker thread.
// Preemption, each once (they must not block): `hold` (why the job stops)
// asks it to hold its sources and report where (Coordinator::ReportHeld);
// `cut` is the piece every rank agreed to end before (INT64_MAX: some rank
// had already finished, so the job runs to its end). Hangs: `acts`, every
// act this process has made (read each heartbeat); `waits`, what its tasks
// and edges wait for now (once no rank acted for the hang timeout; may
// take a second).
struct RankHooks {
  std::function<void(const std::string& why)> hold;
  std::function<void(int64_t cut)> cut;
  std::function<int64_t()> acts;
  std::function<std::string()> waits;
};

// What one process of a job needs from rank 0: the address exchange, the
// plan check, barriers, and word of any failure. Rank 0 gets it in process,
// the other ranks over gRPC.
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  // Every rank's RegisterTransfer address, by rank, once every rank joined
  // with the same plan hash; and the checkpoint they resume from.
  virtual absl::StatusOr<JoinReply> Join(const JoinRequest& request) = 0;
  // `sinks`: this rank's, at the last barrier (rank 0 keeps them all).
  virtual absl::Status Barrier(const std::string& name,
                               const std::vector<SinkReport>& sinks) = 0;
  // This process failed: tell every other rank.
  virtual void ReportFailure(const absl::Status& status) = 0;
  // This process is done (after the last barrier) and leaves.
  virtual void Leave() = 0;
  // This process was told to stop (a signal): the whole job stops at a cut.
  virtual void RequestPreempt(const std::string& why) = 0;
  // This process holds its sources; none has begun `piece`.
  virtual void ReportHeld(int64_t piece) = 0;
};

// Rank 0's Control service. A ticker thread sends every rank a heartbeat
// (with the job's failure, once there is one) each HeartbeatInterval and
// fails the job when a rank's heartbeats stop for the peer timeout (or,
// before its first one, when the join timeout passed since every rank
// joined); a rank whose Watch stream breaks before it said it was done has
// died.
//
// Preemption: the first rank to ask makes every rank hold its sources; once
// each said where, the cut is the largest of those pieces (no source has
// gone past it, so every rank can still end its run exactly there). A state
// change goes out at once, not at the next tick.
//
// Hangs: every beat carries the rank's act count. When none changed on any
// rank for the hang timeout, rank 0 asks every rank what it waits for and,
// unless some rank acts meanwhile, fails the job with their answers.
class ControlService final : public Control::Service {
 public:
  // `on_failure`: rank 0's own process learning of the job's failure.
  ControlService(ControlOptions options, FailureFn on_failure,
                 RankHooks hooks = {});
  ~ControlService() override;

  grpc::Status Join(grpc::ServerContext* context, const JoinRequest* request,
                    JoinReply* reply) override;
  grpc::Status Barrier(grpc::ServerContext* context,
                       const BarrierRequest* request,
                       BarrierReply* reply) override;
  grpc::Status Watch(grpc::ServerContext* context,
                     grpc::ServerReaderWriter<Event, Beat>* stream) override;

  // Rank 0's own calls.
  absl::StatusOr<JoinReply> JoinRank(const JoinRequest& request);
  absl::Status BarrierRank(int32_t rank, const std::string& name,
                           const std::vector<SinkReport>& sinks = {});
  // Every rank's sinks, as they came with their barriers.
  std::vector<SinkReport> Sinks() const;
  // `rank` failed with `message` (its own words, or rank 0's about it).
  void Fail(int32_t rank, const std::string& message);
  void Preempt(const std::string& why);
  void Held(int32_t rank, int64_t piece);
  // Waits until every other rank has left (its Watch stream ended), at
  // most `timeout`: rank 0 serves until then.
  void WaitForRanksToLeave(absl::Duration timeout);
  // Stops the ticker and cancels every Watch still open.
  void Stop();

 private:
  struct Watcher {
    Mutex write_mu;
    grpc::ServerReaderWriter<Event, Beat>* stream ABSL_GUARDED_BY(write_mu) =
        nullptr;
    grpc::ServerContext* context = nullptr;
  };
  void Tick();
  // Every rank held (or had left): the cut, told to rank 0's process.
  void MaybeDecideCut() ABSL_LOCKS_EXCLUDED(mu_);
  // The ticker's: rank 0's own progress, and the hang check.
  void CheckProgress() ABSL_LOCKS_EXCLUDED(mu_);
  std::string HangReportLocked(absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FailureLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return failure_;
  }

  const ControlOptions options_;
  const FailureFn on_failure_;
  const RankHooks hooks_;
  const absl::Duration interval_;

  mutable Mutex mu_;
  CondVar changed_;
  std::vector<bool> joined_ ABSL_GUARDED_BY(mu_);
  std::vector<JoinRequest> joins_ ABSL_GUARDED_BY(mu_);
  absl::Time join_deadline_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int32_t> barrier_count_ ABSL_GUARDED_BY(mu_);
  std::vector<SinkReport> sinks_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> last_heard_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> watching_ ABSL_GUARDED_BY(mu_);  // Watch stream open
  std::vector<bool> left_ ABSL_GUARDED_BY(mu_);      // said it was done
  std::vector<std::shared_ptr<Watcher>> watchers_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int32_t failed_rank_ ABSL_GUARDED_BY(mu_) = -1;
  std::string preempt_ ABSL_GUARDED_BY(mu_);  // why; empty: not preempted
  std::vector<int64_t> held_at_ ABSL_GUARDED_BY(mu_);  // -1: not yet
  int64_t cut_ ABSL_GUARDED_BY(mu_) = -1;              // -1: not decided
  std::vector<int64_t> acts_ ABSL_GUARDED_BY(mu_);     // by rank
  absl::Time last_progress_ ABSL_GUARDED_BY(mu_);      // any rank's act
  bool describing_ ABSL_GUARDED_BY(mu_) = false;       // asked what waits
  absl::Time describe_deadline_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> waits_ ABSL_GUARDED_BY(mu_);  // the answers
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread ticker_;
};

// The newest checkpoint piece that every rank listed (-1 if any rank does
// not resume, or they share none): where a job resumes.
int64_t CommonCheckpoint(const std::vector<JoinRequest>& joins);

// Rank 0's Coordinator: calls into its own ControlService.
std::unique_ptr<Coordinator> LocalCoordinator(ControlService* service);

// Any other rank's: connects to rank 0 at `master` (host:port), waiting up
// to options.join_timeout for it to come up, then keeps a Watch stream
// with heartbeats both ways. `on_failure` gets the job's failure: another
// rank's, or rank 0 silent for the peer timeout (the join timeout until
// its first heartbeat) or gone.
absl::StatusOr<std::unique_ptr<Coordinator>> ConnectToMaster(
    const std::string& master, int32_t rank, ControlOptions options,
    FailureFn on_failure, RankHooks hooks = {});

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_CONTROL_H_
