#include "net/control.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "net/job_token.h"
#include "net/transport.h"
#include "thread/blocking_counter.h"

namespace actorflow::internal::net {
namespace {

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

std::string Secs(absl::Duration d) { return absl::FormatDuration(d); }

}  // namespace

absl::Duration HeartbeatInterval(absl::Duration peer_timeout) {
  return std::clamp(peer_timeout / 10, absl::Milliseconds(20),
                    absl::Seconds(1));
}

// ---------------------------------------------------------------- master

ControlService::ControlService(ControlOptions options, FailureFn on_failure,
                               RankHooks hooks)
    : options_(options),
      on_failure_(std::move(on_failure)),
      hooks_(std::move(hooks)),
      interval_(HeartbeatInterval(options.peer_timeout)) {
  const int n = options_.world_size;
  MutexLock lock(&mu_);
  joined_.assign(n, false);
  joins_.resize(n);
  last_heard_.assign(n, absl::Now());
  watching_.assign(n, false);
  left_.assign(n, false);
  watchers_.resize(n);
  held_at_.assign(n, -1);
  acts_.assign(n, 0);
  waits_.assign(n, "");
  last_progress_ = absl::Now();
  join_deadline_ = absl::Now() + options_.join_timeout;
  ticker_ = std::thread([this] { Tick(); });
}

ControlService::~ControlService() { Stop(); }

void ControlService::Stop() {
  std::vector<std::shared_ptr<Watcher>> watchers;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
    watchers = watchers_;
  }
  if (ticker_.joinable()) ticker_.join();
  for (const auto& watcher : watchers) {
    if (watcher == nullptr) continue;
    MutexLock lock(&watcher->write_mu);
    if (watcher->stream != nullptr) watcher->context->TryCancel();
  }
}

void ControlService::Fail(int32_t rank, const std::string& message) {
  absl::Status status = absl::AbortedError(message);
  {
    MutexLock lock(&mu_);
    if (!failure_.ok()) return;
    failure_ = status;
    failed_rank_ = rank;
    changed_.SignalAll();
  }
  if (rank != 0 && on_failure_) on_failure_(status);
}

void ControlService::Preempt(const std::string& why) {
  {
    MutexLock lock(&mu_);
    if (!failure_.ok() || !preempt_.empty() || stopping_) return;
    preempt_ = why;
    changed_.SignalAll();  // the ticker tells every rank now
  }
  if (hooks_.hold) hooks_.hold(why);
  MaybeDecideCut();  // every other rank may have left already
}

void ControlService::Held(int32_t rank, int64_t piece) {
  {
    MutexLock lock(&mu_);
    if (preempt_.empty() || held_at_[rank] >= 0) return;
    held_at_[rank] = piece;
  }
  MaybeDecideCut();
}

void ControlService::MaybeDecideCut() {
  int64_t cut = -1;
  {
    MutexLock lock(&mu_);
    if (preempt_.empty() || cut_ >= 0 || !failure_.ok()) return;
    int64_t largest = 0;
    for (int32_t r = 0; r < options_.world_size; ++r) {
      // A rank that left has run every piece: no cut can stop it.
      const int64_t at = left_[r] ? INT64_MAX : held_at_[r];
      if (at < 0) return;
      largest = std::max(largest, at);
    }
    cut_ = cut = largest;
    changed_.SignalAll();
  }
  if (hooks_.cut) hooks_.cut(cut);
}

void ControlService::Tick() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    changed_.WaitWithTimeout(&mu_, interval_);
    if (stopping_) break;
    const absl::Time now = absl::Now();
    std::vector<std::string> silent;
    // A rank is judged by the peer timeout once its heartbeat stream is
    // open. Before that (waiting in Join, where no beat comes, then
    // starting its session on a machine that may be starving it) the join
    // timeout bounds it, counted from rank 0's answer: a loaded machine
    // slows a job's start, and only a silent running rank fails it.
    const bool everyone_joined =
        std::count(joined_.begin(), joined_.end(), true) == options_.world_size;
    for (int32_t r = 1; r < options_.world_size && everyone_joined; ++r) {
      if (!joined_[r] || left_[r]) continue;
      const bool beating = watchers_[r] != nullptr;
      const absl::Duration limit =
          beating ? options_.peer_timeout : options_.join_timeout;
      if (now - last_heard_[r] <= limit) continue;
      silent.push_back(
          beating ? absl::StrCat("rank ", r,
                                 " stopped answering: no heartbeat for ",
                                 Secs(now - last_heard_[r]), " (peer timeout ",
                                 Secs(options_.peer_timeout), ")")
                  : absl::StrCat("rank ", r,
                                 " started no heartbeat within the join "
                                 "timeout (",
                                 Secs(options_.join_timeout),
                                 ") after every rank joined"));
    }
    Event event;
    event.set_failed_rank(failed_rank_);
    event.set_failure(std::string(failure_.message()));
    event.set_preempt(preempt_);
    if (cut_ >= 0) {
      event.set_cut_decided(true);
      event.set_cut(cut_);
    }
    event.set_describe(describing_);
    std::vector<std::shared_ptr<Watcher>> watchers = watchers_;
    mu_.Unlock();
    if (!silent.empty()) {
      Fail(-1, silent.front());
    }
    CheckProgress();
    // Writes happen outside mu_: a rank that stopped reading must not hold
    // up the others or the timeout checks.
    for (const auto& watcher : watchers) {
      if (watcher == nullptr) continue;
      MutexLock write(&watcher->write_mu);
      if (watcher->stream != nullptr) watcher->stream->Write(event);
    }
    mu_.Lock();
  }
}

void ControlService::CheckProgress() {
  if (options_.hang_timeout <= absl::ZeroDuration()) return;
  // Outside mu_: the hooks take the job's and the session's locks.
  const int64_t mine = hooks_.acts ? hooks_.acts() : 0;
  bool describe_here = false;
  std::string report;
  {
    MutexLock lock(&mu_);
    const int n = options_.world_size;
    if (std::count(joined_.begin(), joined_.end(), true) < n ||
        !failure_.ok() || stopping_) {
      return;
    }
    const absl::Time now = absl::Now();
    if (mine != acts_[0]) {
      acts_[0] = mine;
      last_progress_ = now;
    }
    if (now - last_progress_ < options_.hang_timeout) {
      describing_ = false;  // some rank acted: whatever was asked is moot
      return;
    }
    if (!describing_) {
      describing_ = true;
      describe_here = true;
      // Answers come with the next beats; a rank inside a kernel may take
      // a second to describe itself.
      describe_deadline_ = now + std::max(absl::Seconds(3), 4 * interval_);
      waits_.assign(n, "");
      changed_.SignalAll();
    } else {
      bool answered = true;
      for (int r = 0; r < n; ++r) answered &= left_[r] || !waits_[r].empty();
      if (answered || now >= describe_deadline_) report = HangReportLocked(now);
    }
  }
  if (describe_here) {
    std::string waits = hooks_.waits ? hooks_.waits() : "";
    MutexLock lock(&mu_);
    waits_[0] = waits.empty() ? " (nothing to say)" : waits;
  }
  if (!report.empty()) Fail(-1, report);
}

std::string ControlService::HangReportLocked(absl::Time now) const {
  std::string report = absl::StrCat(
      "the job is hung: no rank acted for ",
      Secs(absl::Trunc(now - last_progress_, absl::Milliseconds(100))),
      " (--hang-timeout ", Secs(options_.hang_timeout),
      "). What each rank waits for:");
  for (int32_t r = 0; r < options_.world_size; ++r) {
    absl::StrAppend(&report, "\n--- rank ", r, ":",
                    left_[r]            ? " finished"
                    : waits_[r].empty() ? " did not answer within seconds"
                                        : waits_[r]);
  }
  return report;
}

int64_t CommonCheckpoint(const std::vector<JoinRequest>& joins) {
  std::set<int64_t> common;
  bool first = true;
  for (const JoinRequest& join : joins) {
    if (!join.resume()) return -1;
    std::set<int64_t> mine(join.checkpoint().begin(), join.checkpoint().end());
    if (first) {
      common = std::move(mine);
      first = false;
      continue;
    }
    std::set<int64_t> both;
    std::set_intersection(common.begin(), common.end(), mine.begin(),
                          mine.end(), std::inserter(both, both.begin()));
    common = std::move(both);
  }
  return common.empty() ? -1 : *common.rbegin();
}

absl::StatusOr<JoinReply> ControlService::JoinRank(const JoinRequest& request) {
  const int32_t rank = request.rank();
  const int32_t n = options_.world_size;
  std::string refused;
  if (request.world_size() != n) {
    refused = absl::StrCat("rank ", rank, " has WORLD_SIZE ",
                           request.world_size(), ", rank 0 has ", n);
  } else if (rank < 1 && rank != 0) {
    refused = absl::StrCat("rank ", rank, " is outside 0..", n - 1);
  } else if (rank >= n) {
    refused = absl::StrCat("rank ", rank, " is outside 0..", n - 1,
                           " (WORLD_SIZE ", n, ")");
  }
  if (refused.empty()) {
    MutexLock lock(&mu_);
    if (joined_[rank]) {
      // The same request again is the same process, whose first call was
      // cut off (a starved connection's keepalive): it waits with the rest.
      if (joins_[rank].SerializeAsString() != request.SerializeAsString()) {
        refused =
            absl::StrCat("rank ", rank,
                         " joined twice (two processes with RANK=", rank, "?)");
      }
    } else {
      joined_[rank] = true;
      joins_[rank] = request;
      last_heard_[rank] = absl::Now();
      changed_.SignalAll();
    }
  }
  if (!refused.empty()) {
    Fail(-1, refused);
    return absl::FailedPreconditionError(refused);
  }
  std::string problem;
  {
    MutexLock lock(&mu_);
    auto all_joined = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return std::count(joined_.begin(), joined_.end(), true) == n;
    };
    while (!all_joined() && failure_.ok() && absl::Now() < join_deadline_) {
      changed_.WaitWithTimeout(&mu_, join_deadline_ - absl::Now());
    }
    if (!failure_.ok()) return failure_;
    // A rank waiting here for the others cannot beat: the wait for its
    // first beat counts from the answer on (Tick looks once everyone
    // joined).
    last_heard_[rank] = absl::Now();
    if (!all_joined()) {
      std::vector<int> missing;
      for (int r = 0; r < n; ++r) {
        if (!joined_[r]) missing.push_back(r);
      }
      problem =
          absl::StrCat(missing.size() == 1 ? "rank " : "ranks ",
                       absl::StrJoin(missing, ", "), " did not join within ",
                       Secs(options_.join_timeout), " (WORLD_SIZE ", n, ")");
    } else {
      std::vector<int> differ;
      for (int r = 1; r < n; ++r) {
        if (joins_[r].plan_hash() != joins_[0].plan_hash()) differ.push_back(r);
      }
      if (!differ.empty()) {
        std::vector<std::string> hashes;
        for (int r : differ) {
          hashes.push_back(
              absl::StrCat("rank ", r, ": ", joins_[r].plan_hash()));
        }
        problem = absl::StrCat(
            "plan mismatch: ", differ.size() == 1 ? "rank " : "ranks ",
            absl::StrJoin(differ, ", "),
            " loaded a different plan (or --pieces) than rank 0 (rank 0: ",
            joins_[0].plan_hash(), "; ", absl::StrJoin(hashes, "; "), ")");
      }
    }
  }
  if (!problem.empty()) {
    Fail(-1, problem);
    return absl::FailedPreconditionError(problem);
  }
  MutexLock lock(&mu_);
  JoinReply reply;
  for (const JoinRequest& join : joins_) {
    reply.add_address(join.address());
    reply.add_host_id(join.host_id());
  }
  reply.set_resume_piece(CommonCheckpoint(joins_));
  return reply;
}

absl::Status ControlService::BarrierRank(int32_t rank, const std::string& name,
                                         const std::vector<SinkReport>& sinks) {
  (void)rank;
  MutexLock lock(&mu_);
  sinks_.insert(sinks_.end(), sinks.begin(), sinks.end());
  int32_t& count = barrier_count_[name];
  ++count;
  changed_.SignalAll();
  while (count < options_.world_size && failure_.ok() && !stopping_) {
    changed_.Wait(&mu_);
  }
  if (!failure_.ok()) return failure_;
  if (count < options_.world_size) {
    return absl::CancelledError("rank 0 is shutting down");
  }
  return absl::OkStatus();
}

std::vector<SinkReport> ControlService::Sinks() const {
  MutexLock lock(&mu_);
  return sinks_;
}

void ControlService::WaitForRanksToLeave(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  MutexLock lock(&mu_);
  auto anyone_left = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (int32_t r = 1; r < options_.world_size; ++r) {
      if (watching_[r]) return true;
    }
    return false;
  };
  while (anyone_left() && absl::Now() < deadline) {
    changed_.WaitWithTimeout(&mu_, deadline - absl::Now());
  }
}

grpc::Status ControlService::Join(grpc::ServerContext* context,
                                  const JoinRequest* request,
                                  JoinReply* reply) {
  grpc::Status allowed = CheckJobToken(options_.token, *context, "Join");
  if (!allowed.ok()) return allowed;
  if (request->job_id() != options_.job_id) {
    // Another job's rank (same token): refused alone, this job goes on.
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("rank ", request->rank(), " belongs to job '",
                     request->job_id(), "', rank 0 runs job '", options_.job_id,
                     "' (ACTORFLOW_JOB_ID)"));
  }
  absl::StatusOr<JoinReply> joined = JoinRank(*request);
  if (!joined.ok()) return ToGrpc(joined.status());
  *reply = std::move(*joined);
  return grpc::Status::OK;
}

grpc::Status ControlService::Barrier(grpc::ServerContext* context,
                                     const BarrierRequest* request,
                                     BarrierReply* reply) {
  (void)reply;
  grpc::Status allowed = CheckJobToken(options_.token, *context, "Barrier");
  if (!allowed.ok()) return allowed;
  return ToGrpc(BarrierRank(request->rank(), request->name(),
                            std::vector<SinkReport>(request->sinks().begin(),
                                                    request->sinks().end())));
}

grpc::Status ControlService::Watch(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<Event, Beat>* stream) {
  grpc::Status allowed = CheckJobToken(options_.token, *context, "Watch");
  if (!allowed.ok()) return allowed;
  Beat beat;
  if (!stream->Read(&beat)) return grpc::Status::OK;
  const int32_t rank = beat.rank();
  if (rank < 1 || rank >= options_.world_size) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("no rank ", rank));
  }
  auto watcher = std::make_shared<Watcher>();
  watcher->context = context;
  {
    MutexLock write(&watcher->write_mu);
    watcher->stream = stream;
  }
  {
    MutexLock lock(&mu_);
    watchers_[rank] = watcher;
    watching_[rank] = true;
    last_heard_[rank] = absl::Now();
  }
  while (stream->Read(&beat)) {
    bool left = false;
    {
      MutexLock lock(&mu_);
      const absl::Time now = absl::Now();
      last_heard_[rank] = now;
      if (beat.done() && !left_[rank]) left_[rank] = left = true;
      if (beat.acts() != acts_[rank]) {
        acts_[rank] = beat.acts();
        last_progress_ = now;
      }
      if (describing_ && !beat.waits().empty()) waits_[rank] = beat.waits();
    }
    if (!beat.failure().empty()) {
      Fail(rank, absl::StrCat("rank ", rank, " failed: ", beat.failure()));
    }
    if (!beat.preempt().empty()) Preempt(beat.preempt());
    if (beat.held()) Held(rank, beat.held_at());
    if (left) MaybeDecideCut();
  }
  {
    MutexLock write(&watcher->write_mu);
    watcher->stream = nullptr;
  }
  bool died;
  absl::Duration silent;
  {
    MutexLock lock(&mu_);
    watching_[rank] = false;
    died = !left_[rank] && !stopping_;
    silent = absl::Now() - last_heard_[rank];
    changed_.SignalAll();
  }
  if (died && silent > 2 * interval_) {
    // Silent before the stream broke: a stopped or hung process, whose
    // connection keepalive then dropped (a process that exits closes its
    // connection at once, a heartbeat or so after its last beat).
    Fail(rank,
         absl::StrCat("rank ", rank, " stopped answering: no heartbeat for ",
                      Secs(absl::Trunc(silent, absl::Milliseconds(100))),
                      ", then its connection to rank 0 broke (peer "
                      "timeout ",
                      Secs(options_.peer_timeout), ")"));
  } else if (died) {
    Fail(rank, absl::StrCat("rank ", rank,
                            " exited or lost its connection to rank 0 before "
                            "the job ended"));
  }
  return grpc::Status::OK;
}

// ---------------------------------------------------------------- rank 0

namespace {

class Local final : public Coordinator {
 public:
  explicit Local(ControlService* service) : service_(service) {}
  absl::StatusOr<JoinReply> Join(const JoinRequest& request) override {
    return service_->JoinRank(request);
  }
  absl::Status Barrier(const std::string& name,
                       const std::vector<SinkReport>& sinks) override {
    return service_->BarrierRank(0, name, sinks);
  }
  void ReportFailure(const absl::Status& status) override {
    service_->Fail(0, absl::StrCat("rank 0 failed: ", status.message()));
  }
  void Leave() override {}
  void RequestPreempt(const std::string& why) override {
    service_->Preempt(why);
  }
  void ReportHeld(int64_t piece) override { service_->Held(0, piece); }

 private:
  ControlService* service_;
};

// ---------------------------------------------------------------- others

class Remote final : public Coordinator {
 public:
  Remote(std::string master, int32_t rank, ControlOptions options,
         FailureFn on_failure, RankHooks hooks)
      : master_(std::move(master)),
        rank_(rank),
        options_(options),
        interval_(HeartbeatInterval(options.peer_timeout)),
        on_failure_(std::move(on_failure)),
        hooks_(std::move(hooks)) {
    channel_ = grpc::CreateCustomChannel(
        master_,
        options.credentials != nullptr ? options.credentials
                                       : grpc::InsecureChannelCredentials(),
        NetChannelArguments(options.peer_timeout));
    stub_ = Control::NewStub(channel_);
  }

  ~Remote() override { Close(/*goodbye=*/false); }

  absl::StatusOr<JoinReply> Join(const JoinRequest& request) override {
    // Rank 0 answers once every rank joined or its own join timeout
    // passed; the extra time covers rank 0 starting later than this one.
    const absl::Time deadline = absl::Now() + 2 * options_.join_timeout;
    JoinReply reply;
    grpc::Status status;
    for (int cut_off = 0;; ++cut_off) {
      grpc::ClientContext context;
      AttachJobToken(options_.token, &context);
      // The first call waits for rank 0 to listen until the deadline; a
      // call again after a connection was cut waits for it to answer again
      // within the peer timeout, so a rank 0 that is gone fails this rank
      // soon.
      context.set_wait_for_ready(true);
      context.set_deadline(absl::ToChronoTime(
          cut_off == 0
              ? deadline
              : std::min(deadline, absl::Now() + options_.peer_timeout)));
      status = stub_->Join(&context, request, &reply);
      // A connection cut mid-call (rank 0 starved of CPU past a keepalive
      // ping, as 64 ranks starting on two cores can be) is asked again,
      // a few times: rank 0 takes the same request as the same rank.
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
          cut_off >= 4 || absl::Now() >= deadline) {
        break;
      }
    }
    if (!status.ok()) {
      if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
          status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        return absl::UnavailableError(absl::StrCat(
            "rank ", rank_, ": cannot reach rank 0 at ", master_,
            " (MASTER_ADDR:MASTER_PORT) within ",
            Secs(2 * options_.join_timeout), ": ", status.error_message()));
      }
      return FromGrpc(status);
    }
    StartWatch();
    return reply;
  }

  absl::Status Barrier(const std::string& name,
                       const std::vector<SinkReport>& sinks) override {
    grpc::ClientContext context;
    AttachJobToken(options_.token, &context);
    {
      MutexLock lock(&mu_);
      if (!failure_.ok()) return failure_;
      barrier_context_ = &context;
    }
    BarrierRequest request;
    request.set_rank(rank_);
    request.set_name(name);
    for (const SinkReport& sink : sinks) *request.add_sinks() = sink;
    BarrierReply reply;
    grpc::Status status = stub_->Barrier(&context, request, &reply);
    MutexLock lock(&mu_);
    barrier_context_ = nullptr;
    if (!failure_.ok()) return failure_;
    if (!status.ok()) {
      return absl::Status(
          static_cast<absl::StatusCode>(status.error_code()),
          absl::StrCat("barrier '", name, "': ", status.error_message()));
    }
    return absl::OkStatus();
  }

  void ReportFailure(const absl::Status& status) override {
    MutexLock lock(&mu_);
    if (!failure_.ok()) return;  // the job's failure came from elsewhere
    failure_ = status;
    report_ = std::string(status.message());
    changed_.SignalAll();
  }

  void Leave() override { Close(/*goodbye=*/true); }

  // Both go out with every beat from now on (rank 0 takes the first), and
  // the ticker sends one at once.
  void RequestPreempt(const std::string& why) override {
    MutexLock lock(&mu_);
    if (!preempt_.empty()) return;
    preempt_ = why;
    changed_.SignalAll();
  }

  void ReportHeld(int64_t piece) override {
    MutexLock lock(&mu_);
    held_ = true;
    held_at_ = piece;
    changed_.SignalAll();
  }

 private:
  // Stops the ticker and ends the Watch stream, either with a last beat
  // that says "done" or by cancelling it. The last beat carries this rank's
  // failure too: the ticker may have stopped before it could send it, and
  // rank 0 must not take a failed rank's goodbye for a clean exit.
  void Close(bool goodbye) {
    std::string report;
    {
      MutexLock lock(&mu_);
      if (closed_) return;
      closed_ = true;
      stopping_ = true;
      report = report_;
      changed_.SignalAll();
    }
    if (ticker_.joinable()) ticker_.join();
    if (stream_ == nullptr) return;
    if (goodbye) {
      {
        MutexLock write(&write_mu_);
        Beat beat;
        beat.set_rank(rank_);
        beat.set_failure(report);
        beat.set_done(true);
        stream_->Write(beat);
        stream_->WritesDone();
      }
      // Rank 0 ends the stream once it read the half-close; a rank 0 that
      // stopped answering is given the peer timeout.
      if (!done_reading_.WaitFor(options_.peer_timeout)) {
        watch_context_.TryCancel();
      }
    } else {
      watch_context_.TryCancel();
    }
    if (reader_.joinable()) reader_.join();  // has read everything
    (void)stream_->Finish();
  }

  void StartWatch() {
    AttachJobToken(options_.token, &watch_context_);
    watch_context_.set_wait_for_ready(true);
    stream_ = stub_->Watch(&watch_context_);
    {
      MutexLock write(&write_mu_);
      Beat beat;
      beat.set_rank(rank_);
      stream_->Write(beat);
    }
    {
      MutexLock lock(&mu_);
      last_heard_ = absl::Now();
    }
    reader_ = std::thread([this] { Read(); });
    ticker_ = std::thread([this] { Tick(); });
  }

  void Read() {
    Event event;
    while (stream_->Read(&event)) {
      {
        MutexLock lock(&mu_);
        last_heard_ = absl::Now();
        heard_ = true;
      }
      if (!event.failure().empty()) {
        Notify(absl::AbortedError(event.failure()));
      }
      if (!event.preempt().empty() && !told_hold_) {
        told_hold_ = true;  // this thread's own
        if (hooks_.hold) hooks_.hold(event.preempt());
      }
      if (event.cut_decided() && !told_cut_) {
        told_cut_ = true;
        if (hooks_.cut) hooks_.cut(event.cut());
      }
      if (event.describe() != described_) {
        // Asked anew (or no longer): the answer goes with every beat.
        described_ = event.describe();
        std::string waits;
        if (described_ && hooks_.waits) waits = hooks_.waits();
        if (described_ && waits.empty()) waits = " (nothing to say)";
        MutexLock lock(&mu_);
        waits_ = std::move(waits);
        changed_.SignalAll();
      }
    }
    bool stopping;
    {
      MutexLock lock(&mu_);
      stopping = stopping_;
    }
    if (!stopping) {
      Notify(absl::UnavailableError(
          absl::StrCat("lost the connection to rank 0 (", master_,
                       "): it exited or failed")));
    }
    done_reading_.Decrement();
  }

  void Tick() {
    MutexLock lock(&mu_);
    while (!stopping_) {
      changed_.WaitWithTimeout(&mu_, interval_);
      if (stopping_) break;
      Beat beat;
      beat.set_rank(rank_);
      beat.set_failure(report_);
      beat.set_preempt(preempt_);
      beat.set_held(held_);
      beat.set_held_at(held_at_);
      beat.set_waits(waits_);
      const absl::Duration silent = absl::Now() - last_heard_;
      // Until rank 0's first event, as rank 0 does for this rank's first
      // beat: the join timeout.
      const bool heard = heard_;
      const absl::Duration limit =
          heard ? options_.peer_timeout : options_.join_timeout;
      mu_.Unlock();
      if (hooks_.acts) beat.set_acts(hooks_.acts());  // takes the job's locks
      {
        MutexLock write(&write_mu_);
        stream_->Write(beat);
      }
      if (silent > limit) {
        Notify(absl::UnavailableError(absl::StrCat(
            "rank 0 (", master_, ") stopped answering: no heartbeat for ",
            Secs(silent), heard ? " (peer timeout " : " (join timeout ",
            Secs(limit), ")")));
        watch_context_.TryCancel();
      }
      mu_.Lock();
    }
  }

  // The job failed elsewhere (or rank 0 is gone): once, to this process.
  void Notify(const absl::Status& status) {
    {
      MutexLock lock(&mu_);
      if (notified_) return;
      notified_ = true;
      if (failure_.ok()) failure_ = status;
      if (barrier_context_ != nullptr) barrier_context_->TryCancel();
    }
    if (on_failure_) on_failure_(status);
  }

  const std::string master_;
  const int32_t rank_;
  const ControlOptions options_;
  const absl::Duration interval_;
  const FailureFn on_failure_;
  const RankHooks hooks_;
  // Read()'s own: each handler once.
  bool told_hold_ = false;
  bool told_cut_ = false;
  bool described_ = false;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Control::Stub> stub_;
  grpc::ClientContext watch_context_;
  std::unique_ptr<grpc::ClientReaderWriter<Beat, Event>> stream_;
  Mutex write_mu_;  // one writer on stream_ at a time
  std::thread reader_;
  std::thread ticker_;
  BlockingCounter done_reading_{1};

  Mutex mu_;
  CondVar changed_;
  absl::Time last_heard_ ABSL_GUARDED_BY(mu_);
  bool heard_ ABSL_GUARDED_BY(mu_) = false;  // an event came from rank 0
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::string report_ ABSL_GUARDED_BY(mu_);   // this rank's failure, to send
  std::string preempt_ ABSL_GUARDED_BY(mu_);  // why this rank was stopped
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int64_t held_at_ ABSL_GUARDED_BY(mu_) = 0;
  std::string waits_ ABSL_GUARDED_BY(mu_);  // asked by rank 0's describe
  grpc::ClientContext* barrier_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

std::unique_ptr<Coordinator> LocalCoordinator(ControlService* service) {
  return std::make_unique<Local>(service);
}

absl::StatusOr<std::unique_ptr<Coordinator>> ConnectToMaster(
    const std::string& master, int32_t rank, ControlOptions options,
    FailureFn on_failure, RankHooks hooks) {
  return std::make_unique<Remote>(master, rank, options, std::move(on_failure),
                                  std::move(hooks));
}

}  // namespace actorflow::internal::net
