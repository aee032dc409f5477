#include "net/job.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/plan_validator.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "net/freed_memory.h"
#include "net/net_kernels.h"
#include "net/shared_segment.h"

namespace actorflow::internal::net {

std::string PlanFingerprint(const Plan& plan, int64_t pieces) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  absl::StrAppend(&bytes, "|pieces=", pieces);
  uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

namespace {

// Marks the edges `local` sends on whose producer `names` lists ("all":
// every one) for compression. A name must be a task that sends a register
// to another rank on some rank; otherwise InvalidArgument lists those that
// do.
absl::Status MarkCompressed(const Plan& plan, int world_size,
                            const std::vector<std::string>& names,
                            LocalPlan* local) {
  if (names.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<NetEdge>> edges = FindNetEdges(plan, world_size);
  if (!edges.ok()) return edges.status();
  std::map<int64_t, std::string> producer;  // regst_desc_id -> task name
  for (const TaskProto& task : plan.task()) {
    for (const auto& [name, desc] : task.produced_regst_desc()) {
      producer[desc.regst_desc_id()] = task.name();
    }
  }
  std::set<std::string> crossing;
  for (const NetEdge& edge : *edges)
    crossing.insert(producer[edge.regst_desc_id]);
  const bool all = absl::c_linear_search(names, "all");
  for (const std::string& name : names) {
    if (name != "all" && crossing.count(name) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--net-compress: task '", name,
          "' sends no register to another rank; the tasks that do: ",
          crossing.empty() ? "none" : absl::StrJoin(crossing, ", ")));
    }
  }
  for (NetEdge& edge : local->sends) {
    edge.compress =
        all || absl::c_linear_search(names, producer[edge.regst_desc_id]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Job>> Job::Create(const Plan& plan,
                                                 int64_t pieces,
                                                 JobConfig config,
                                                 SessionOptions options) {
  std::unique_ptr<Job> job(new Job(std::move(config)));
  absl::Status started = job->Start(plan, pieces, std::move(options));
  if (!started.ok()) return started;
  return job;
}

absl::Status Job::Start(const Plan& plan, int64_t pieces,
                        SessionOptions options) {
  const int32_t rank = config_.rank;
  absl::Status kept = KeepFreedMemory();
  if (!kept.ok()) return kept;
  CompileOptions compile;
  compile.multi_machine = true;
  compile.probe = options.probe;
  compile.bindings = &options.kernels;
  compile.max_register_bytes = options.max_register_bytes;
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(plan, compile);
  if (!compiled.ok()) return compiled.status();
  absl::StatusOr<LocalPlan> local =
      PartitionPlan((*compiled)->plan, rank, config_.world_size);
  if (!local.ok()) return local.status();
  absl::Status marked = MarkCompressed((*compiled)->plan, config_.world_size,
                                       config_.net_compress, &*local);
  if (!marked.ok()) return marked;
  local_ = std::move(*local);
  plan_pieces_ = plan.total_piece_num();
  const std::string fingerprint = PlanFingerprint((*compiled)->plan, pieces);
  compiled->reset();

  absl::StatusOr<JobCredentials> credentials = MakeJobCredentials(config_.tls);
  if (!credentials.ok()) return credentials.status();
  transport_ = std::make_unique<Transport>(rank, local_.sends, local_.recvs,
                                           config_.peer_timeout, config_.token,
                                           credentials->channel);
  ControlOptions control_options{config_.world_size,   config_.join_timeout,
                                 config_.peer_timeout, config_.token,
                                 config_.job_id,       credentials->channel,
                                 config_.hang_timeout};
  RankHooks hooks{[this](const std::string& why) { OnHold(why); },
                  [this](int64_t cut) { OnCut(cut); },
                  [this] { return Acts(); }, [this] { return Waits(); }};
  if (rank == 0) {
    control_ = std::make_unique<ControlService>(
        control_options,
        [this](const absl::Status& status) { OnFailure(status, false); },
        hooks);
  }
  // Every rank listens where it is reached, never on every interface.
  std::string host = config_.host;
  if (host.empty()) {
    if (rank == 0) {
      host = config_.master_addr;  // where the others reach it already
    } else if (IsLoopback(config_.master_addr)) {
      host = "127.0.0.1";
    } else {
      absl::StatusOr<std::string> route = RouteAddressTo(config_.master_addr);
      if (!route.ok()) {
        return absl::UnavailableError(absl::StrCat(
            "rank ", rank, ": ", route.status().message(),
            " (MASTER_ADDR; --host=ADDR says where this rank is reached)"));
      }
      host = *route;
    }
  }
  // A master named by a host name that this machine maps to a loopback
  // address (Debian's 127.0.1.1) is reached by other hosts at another
  // address: only there rank 0 listens on every interface.
  const std::string listen =
      rank != 0 ? absl::StrCat(host, ":0")
      : ResolvesOnlyToLoopback(config_.master_addr) &&
              !IsLoopback(config_.master_addr)
          ? absl::StrCat("0.0.0.0:", config_.master_port)
          : absl::StrCat(config_.master_addr, ":", config_.master_port);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, credentials->server, &port);
  transport_->AddTo(&builder);
  if (control_ != nullptr) builder.RegisterService(control_.get());
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  AddKeepalive(config_.peer_timeout, &builder);
  // Without this a second job's rank 0 could share MASTER_PORT silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    absl::Status resolves = Resolves(config_.master_addr);
    if (rank == 0 && !resolves.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "rank 0: ", resolves.message(),
          " (MASTER_ADDR): rank 0 listens there, and every rank must "
          "resolve it"));
    }
    return absl::UnavailableError(absl::StrCat(
        "rank ", rank, ": cannot listen on ", listen,
        rank == 0 ? " (MASTER_ADDR:MASTER_PORT): is the port taken, or the "
                    "address not this machine's?"
                  : ""));
  }
  transport_->Start();
  const std::string address = absl::StrCat(host, ":", port);

  if (rank == 0) {
    coordinator_ = LocalCoordinator(control_.get());
  } else {
    absl::StatusOr<std::unique_ptr<Coordinator>> remote = ConnectToMaster(
        absl::StrCat(config_.master_addr, ":", config_.master_port), rank,
        control_options,
        [this](const absl::Status& status) { OnFailure(status, false); },
        hooks);
    if (!remote.ok()) return remote.status();
    coordinator_ = std::move(*remote);
  }
  preempter_ = std::thread([this] { HoldAndEndAtCut(); });
  JoinRequest join;
  join.set_rank(rank);
  join.set_world_size(config_.world_size);
  join.set_address(address);
  join.set_plan_hash(fingerprint);
  join.set_job_id(config_.job_id);
  const std::string host_id = config_.net_shm ? SharedMemoryHostId() : "";
  join.set_host_id(host_id);
  if (config_.resume) {
    if (config_.checkpoint_dir.empty()) {
      return absl::InvalidArgumentError(
          "resume: give the checkpoint directory (--checkpoint-dir)");
    }
    absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> mine =
        ListCheckpoints(checkpoint_root());
    if (!mine.ok()) return mine.status();
    join.set_resume(true);
    for (const auto& [piece, path] : *mine) join.add_checkpoint(piece);
  }
  absl::Time since = absl::Now();
  absl::StatusOr<JoinReply> joined = coordinator_->Join(join);
  control_times_.join_ms = absl::ToDoubleMilliseconds(absl::Now() - since);
  if (!joined.ok()) return joined.status();
  const std::vector<std::string> addresses(joined->address().begin(),
                                           joined->address().end());

  BindNetKernels(transport_.get(), &options.kernels);
  // Idle actor threads sleep at once unless the caller chose otherwise:
  // the transfer tasks and gRPC's threads block on the network and need
  // the cores that spinning would hold (3x slower round trips on 2 cores).
  if (options.channel.spin_ns == ChannelOptions{}.spin_ns) {
    options.channel.spin_ns = 0;
  }
  FailureFn user = std::move(options.on_failure);
  options.on_failure = [this, user](const absl::Status& status) {
    OnFailure(status, true);
    if (user) user(status);
  };
  if (local_.plan.task_size() > 0) {
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(local_.plan, std::move(options));
    if (!session.ok()) {
      absl::Status failed = absl::Status(
          session.status().code(),
          absl::StrCat("rank ", rank, ": ", session.status().message()));
      OnFailure(failed, true);
      return failed;
    }
    session_ = std::move(*session);
    MutexLock lock(&mu_);
    live_session_ = session_.get();
    if (!failure_.ok()) session_->Abort(failure_);
  }
  if (config_.resume) {
    resumed_from_ = std::max<int64_t>(joined->resume_piece(), 0);
    if (joined->resume_piece() >= 0) {
      const std::string path =
          CheckpointPath(checkpoint_root(), joined->resume_piece());
      absl::Status restored = session_ != nullptr
                                  ? session_->Restore(path).status()
                                  : ReadCheckpoint(path).status();
      if (!restored.ok()) {
        restored = absl::Status(
            restored.code(),
            absl::StrCat("rank ", rank, ": --resume: ", restored.message()));
        OnFailure(restored, true);
        return restored;
      }
    }
    MutexLock lock(&preempt_mu_);
    next_piece_ = resumed_from_;
  }
  std::vector<bool> same_host(addresses.size(), false);
  for (int r = 0; r < joined->host_id_size() && r < std::ssize(same_host);
       ++r) {
    same_host[r] = !host_id.empty() && joined->host_id(r) == host_id;
  }
  absl::Status connected =
      transport_->Connect(addresses, config_.join_timeout, same_host);
  if (!connected.ok()) {
    OnFailure(connected, true);
    return connected;
  }
  since = absl::Now();
  absl::Status ready = coordinator_->Barrier("ready", {});
  control_times_.ready_ms = absl::ToDoubleMilliseconds(absl::Now() - since);
  return ready;
}

void Job::OnFailure(const absl::Status& status, bool local) {
  Session* session;
  {
    MutexLock lock(&mu_);
    if (!failure_.ok()) return;
    failure_ = status;
    session = live_session_;
  }
  {
    MutexLock lock(&preempt_mu_);
    failed_ = true;
    preempt_changed_.SignalAll();
  }
  if (local && coordinator_ != nullptr) coordinator_->ReportFailure(status);
  // The session first: the transfer kernels that Fail wakes then fail
  // second, and the run reports the job's failure rather than theirs.
  if (!local && session != nullptr) session->Abort(status);
  if (transport_ != nullptr) transport_->Fail(status);
}

void Job::Abort(const absl::Status& status) {
  OnFailure(status, /*local=*/true);
  // OnFailure leaves the session of a local failure alone: the session
  // reported it itself, and must not be called back from its on_failure.
  // An abort comes from outside the session (a deadline, a caller), so it
  // stops the session here. Failing the transport alone ends the run only
  // through a transfer task that a wake-up reaches; under load, rank 0 of a
  // preempted job past its grace ran on after every other rank had ended.
  Session* session;
  absl::Status failure;
  {
    MutexLock lock(&mu_);
    session = live_session_;
    failure = failure_;
  }
  if (session != nullptr) session->Abort(failure);
}

void Job::Preempt(const std::string& why) {
  coordinator_->RequestPreempt(absl::StrCat(why, " to rank ", config_.rank));
}

void Job::OnHold(const std::string& why) {
  MutexLock lock(&preempt_mu_);
  if (!preempt_why_.empty()) return;
  preempt_why_ = why;
  preempt_changed_.SignalAll();
}

void Job::OnCut(int64_t cut) {
  MutexLock lock(&preempt_mu_);
  if (cut_ >= 0) return;
  cut_ = cut;
  preempt_changed_.SignalAll();
}

// The preempter thread: at most one hold and one cut per job.
void Job::HoldAndEndAtCut() {
  bool running = false;
  int64_t frontier = 0;
  {
    MutexLock lock(&preempt_mu_);
    while ((preempt_why_.empty() || starting_) && !stopping_ && !failed_) {
      preempt_changed_.Wait(&preempt_mu_);
    }
    if (stopping_ || failed_) return;
    running = run_in_progress_;
    frontier = next_piece_;
  }
  if (running) {
    // A source inside a long act answers when it returns; a peer timeout
    // is as long as the job waits for any rank.
    absl::StatusOr<int64_t> held = session_->HoldSources(config_.peer_timeout);
    if (!held.ok()) {
      OnFailure(absl::Status(held.status().code(),
                             absl::StrCat("rank ", config_.rank,
                                          ": preempted (", preempt_reason(),
                                          "), but ", held.status().message())),
                true);
      return;
    }
    frontier = *held;
  }
  coordinator_->ReportHeld(frontier);
  int64_t cut = 0;
  {
    MutexLock lock(&preempt_mu_);
    while (cut_ < 0 && !stopping_ && !failed_) {
      preempt_changed_.Wait(&preempt_mu_);
    }
    if (stopping_ || failed_) return;
    cut = cut_;
  }
  if (running) {
    absl::Status ended = session_->EndRunAt(cut);
    if (!ended.ok()) OnFailure(ended, true);
  }
}

bool Job::starting() const {
  MutexLock lock(&preempt_mu_);
  return starting_;
}

int64_t Job::Acts() const {
  bool running;
  int64_t acts;
  {
    MutexLock lock(&preempt_mu_);
    running = run_in_progress_;
    acts = acts_done_;
  }
  if (running) acts += session_->Progress().acts;
  return acts;
}

std::string Job::Waits() const {
  std::string waits = session_ != nullptr
                          ? absl::StrCat("\n", session_->DescribeWaits(""))
                          : std::string(" this rank has no tasks");
  absl::StrAppend(&waits, transport_->Describe());
  return waits;
}

std::vector<Transport::EdgeBytes> Job::SentBytes() const {
  return transport_->SentBytes();
}

std::vector<SinkReport> Job::JobSinks() const {
  return control_ != nullptr ? control_->Sinks() : std::vector<SinkReport>{};
}

int64_t Job::next_piece() const {
  MutexLock lock(&preempt_mu_);
  return next_piece_;
}

int64_t Job::preempted_at() const {
  MutexLock lock(&preempt_mu_);
  return ran_to_cut_ ? cut_ : -1;
}

std::string Job::preempt_reason() const {
  MutexLock lock(&preempt_mu_);
  return preempt_why_;
}

absl::StatusOr<RunStats> Job::Run(int64_t pieces) {
  if (pieces < 0) pieces = plan_pieces_;
  {
    MutexLock lock(&preempt_mu_);
    // A cut is being agreed: this rank may not pass where it said it was.
    while (!preempt_why_.empty() && cut_ < 0 && !failed_) {
      preempt_changed_.Wait(&preempt_mu_);
    }
    if (!failed_) {
      if (cut_ >= 0 && cut_ < next_piece_ + pieces) {
        pieces = std::max<int64_t>(cut_ - next_piece_, 0);
        ran_to_cut_ = true;
      }
      if (session_ == nullptr || pieces == 0) {
        RunStats stats;
        stats.first_piece = next_piece_;
        stats.pieces = pieces;
        next_piece_ += pieces;
        return stats;
      }
      starting_ = true;
    }
  }
  if (!starting()) {
    MutexLock lock(&mu_);
    return failure_;
  }
  absl::Status started = session_->Start(pieces);
  {
    MutexLock lock(&preempt_mu_);
    starting_ = false;
    run_in_progress_ = started.ok();
    preempt_changed_.SignalAll();
  }
  if (!started.ok()) return started;
  absl::StatusOr<RunStats> ran = session_->Wait();
  MutexLock lock(&preempt_mu_);
  run_in_progress_ = false;
  if (!ran.ok()) return ran;
  if (ran->pieces < pieces) ran_to_cut_ = true;
  next_piece_ += ran->pieces;
  acts_done_ += ran->acts;
  return ran;
}

std::string Job::checkpoint_root() const {
  return absl::StrCat(config_.checkpoint_dir, "/rank-", config_.rank);
}

absl::StatusOr<WrittenCheckpoint> Job::Checkpoint(int keep_last) {
  if (config_.checkpoint_dir.empty()) {
    return absl::FailedPreconditionError(
        "Job::Checkpoint: no checkpoint directory (JobConfig::checkpoint_dir)");
  }
  CheckpointData data;
  if (session_ != nullptr) {
    absl::StatusOr<CheckpointData> snapshot = session_->Snapshot();
    if (!snapshot.ok()) return snapshot.status();
    data = std::move(*snapshot);
  } else {
    data.piece = next_piece();
  }
  data.rank = config_.rank;
  data.world_size = config_.world_size;
  absl::StatusOr<WrittenCheckpoint> written =
      WriteCheckpoint(checkpoint_root(), data);
  if (!written.ok()) {
    absl::Status failed(
        written.status().code(),
        absl::StrCat("rank ", config_.rank, ": ", written.status().message()));
    OnFailure(failed, true);
    return failed;
  }
  // Only once every rank has this piece may older checkpoints go.
  absl::Status agreed =
      coordinator_->Barrier(absl::StrCat("checkpoint ", data.piece), {});
  if (!agreed.ok()) return agreed;
  absl::Status pruned = PruneCheckpoints(checkpoint_root(), keep_last);
  if (!pruned.ok()) return pruned;
  return written;
}

absl::Status Job::Barrier() {
  return coordinator_->Barrier(absl::StrCat("barrier ", ++barriers_), {});
}

absl::Status Job::Finish() {
  // Receives first, without blocking: closing a send waits for the peer's
  // handler, which ends once the peer closed its receives.
  transport_->CloseReceives();
  absl::Status closed = transport_->CloseSends();
  if (!closed.ok()) return closed;
  std::vector<SinkReport> sinks;
  if (session_ != nullptr) {
    for (const auto& [task, sink] : session_->Sinks()) {
      SinkReport& report = sinks.emplace_back();
      report.set_task(task);
      report.set_pieces(sink.pieces);
      report.set_checksum(sink.checksum);
      report.set_in_order(sink.in_order);
    }
  }
  const absl::Time since = absl::Now();
  absl::Status ended = coordinator_->Barrier("end", sinks);
  control_times_.end_ms = absl::ToDoubleMilliseconds(absl::Now() - since);
  if (!ended.ok()) return ended;
  coordinator_->Leave();
  finished_ = true;
  return absl::OkStatus();
}

Job::~Job() {
  {
    MutexLock lock(&preempt_mu_);
    stopping_ = true;
    preempt_changed_.SignalAll();
  }
  if (preempter_.joinable()) preempter_.join();
  // Rank 0 serves until the others are gone (they may still need to hear
  // of a failure); the others say goodbye, so that rank 0 does not take
  // their exit for a crash.
  if (coordinator_ != nullptr && !finished_) coordinator_->Leave();
  if (control_ != nullptr) control_->WaitForRanksToLeave(config_.peer_timeout);
  coordinator_.reset();
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
  if (control_ != nullptr) control_->Stop();
  {
    MutexLock lock(&mu_);
    live_session_ = nullptr;
  }
  // The transport's poller may still deliver a credit or a piece: it must
  // not wake an actor that is gone.
  if (transport_ != nullptr) {
    transport_->DropWakers();
    // A piece queued or being written holds its register (held_inputs.h):
    // cancelled first, so that a run still under way can end.
    transport_->Fail(absl::CancelledError("the job ended"));
  }
  session_.reset();
  if (transport_ != nullptr) {
    transport_->ReleaseQueue();
    // Drained before the server goes: gRPC's requests on it refer to it.
    transport_->Stop();
  }
  server_.reset();
  transport_.reset();
  control_.reset();
}

}  // namespace actorflow::internal::net
