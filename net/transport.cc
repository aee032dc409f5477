#include "net/transport.h"

#include <grpcpp/alarm.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/act_context.h"
#include "actor/register.h"
#include "memory/allocator.h"
#include "memory/synced_memory.h"
#include "net/job_token.h"
#include "thread/thread.h"

namespace actorflow::internal::net {
namespace {

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// RegisterTransfer.Push as proto/net.proto names it: what a sender dials
// and the one method the generic service answers.
constexpr char kPushMethod[] = "/actorflow.internal.net.RegisterTransfer/Push";

// A protobuf message as a gRPC message, and back (false: it does not
// parse). Streams on the generic API carry bytes; the protobuf messages on
// them (the stream's first, credits) go through gRPC's own serializer.
using ProtoTraits = grpc::SerializationTraits<google::protobuf::MessageLite>;
grpc::ByteBuffer Serialized(const google::protobuf::MessageLite& message) {
  grpc::ByteBuffer buffer;
  bool own = false;
  ProtoTraits::Serialize(message, &buffer, &own);
  return buffer;
}
bool Parsed(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* message) {
  return ProtoTraits::Deserialize(buffer, message).ok();
}

}  // namespace

// Every gRPC operation starts under mu_ and only while the queue is not
// shutting down (starting one on a shut-down queue is fatal in gRPC).
#define ACTORFLOW_POST(op)     \
  do {                         \
    MutexLock post_lock(&mu_); \
    if (!stopping_) (op);      \
  } while (false)

namespace {

int KeepaliveMs(absl::Duration peer_timeout) {
  return static_cast<int>(
      std::max<int64_t>(1000, absl::ToInt64Milliseconds(peer_timeout / 4)));
}

// How long a keepalive ping may wait for its answer (gRPC also makes it the
// socket's TCP_USER_TIMEOUT): the whole peer timeout. A peer starved of CPU
// for seconds (64 ranks starting on two cores, a CPU quota) keeps its
// connections and the long calls on them (a join waiting for the slowest
// rank); a peer that is gone is found by the heartbeats within the peer
// timeout, and by this within a quarter more.
int KeepaliveTimeoutMs(absl::Duration peer_timeout) {
  return static_cast<int>(
      std::max<int64_t>(1000, absl::ToInt64Milliseconds(peer_timeout)));
}

}  // namespace

grpc::ChannelArguments NetChannelArguments(absl::Duration peer_timeout) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Each edge gets its own connection, so one edge's bulk data does not
  // queue behind another's.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  const int keepalive = KeepaliveMs(peer_timeout);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, KeepaliveTimeoutMs(peer_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A rank that starts before rank 0 listens retries soon, not after
  // gRPC's default second: a job's join waits for its slowest rank.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // gRPC also takes this as how long one connection attempt may wait for
  // the server's first frame. Kept at gRPC's 20 s: a short one fails every
  // attempt on a peer starved of CPU (64 ranks starting on two cores), and
  // each abandoned attempt costs that peer more CPU.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20000);
  return args;
}

void AddKeepalive(absl::Duration peer_timeout, grpc::ServerBuilder* builder) {
  const int keepalive = KeepaliveMs(peer_timeout);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                              KeepaliveTimeoutMs(peer_timeout));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Peers ping this often on purpose: not a reason to hang up on them.
  builder->AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, keepalive / 2);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
}

Transport::Transport(int32_t rank, const std::vector<NetEdge>& sends,
                     const std::vector<NetEdge>& recvs,
                     absl::Duration explain_within, std::string token,
                     std::shared_ptr<grpc::ChannelCredentials> credentials)
    : rank_(rank),
      token_(std::move(token)),
      credentials_(credentials != nullptr ? std::move(credentials)
                                          : grpc::InsecureChannelCredentials()),
      explain_within_(explain_within) {
  for (const NetEdge& edge : sends) {
    auto out = std::make_unique<Outgoing>();
    out->edge = edge;
    out->packer = std::make_unique<BlobPacker>(edge.compress);
    Outgoing* raw = out.get();
    {
      MutexLock lock(&raw->mu);
      raw->credits = edge.register_num;
    }
    raw->started.done = [this, raw](bool ok) {
      MutexLock lock(&raw->mu);
      if (!ok) {
        raw->broken = true;
        raw->changed.SignalAll();
        return;
      }
      ACTORFLOW_POST(raw->stream->Write(raw->header, &raw->wrote));
    };
    raw->wrote.done = [this, raw](bool ok) { OnSendWritten(raw, ok); };
    raw->read.done = [this, raw](bool ok) { OnSendCredit(raw, ok); };
    raw->closed.done = [](bool) {};
    raw->finished.done = [raw](bool) {
      MutexLock lock(&raw->mu);
      if (raw->phase != Outgoing::Phase::kClosing) raw->broken = true;
      raw->phase = Outgoing::Phase::kDone;
      raw->gate.WakeIfShut();
      raw->changed.SignalAll();
    };
    outgoing_[{edge.regst_desc_id, edge.dst_rank}] = std::move(out);
  }
  for (const NetEdge& edge : recvs) {
    auto inbox = std::make_unique<Inbox>();
    inbox->regst_desc_id = edge.regst_desc_id;
    inbox->src_rank = edge.src_rank;
    inbox->credit_batch = std::max(1, edge.register_num / 2);
    inbox->slots.resize(std::max(1, edge.register_num));
    inboxes_[edge.regst_desc_id] = std::move(inbox);
  }
}

Transport::~Transport() { Stop(); }

void Transport::Stop() {
  Fail(absl::CancelledError("the job ended"));
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    owner_changed_.SignalAll();
  }
  if (cq_ == nullptr) return;
  {
    MutexLock lock(&alarm_mu_);
    alarms_off_ = true;
  }
  // Every operation still under way was cancelled (the job's server was
  // shut down before): the queue drains, then the poller returns.
  cq_->Shutdown();
  if (poller_.joinable()) {
    poller_.join();
  } else {
    Poll();
  }
}

void Transport::AddTo(grpc::ServerBuilder* builder) {
  builder->RegisterAsyncGenericService(&service_);
  cq_ = builder->AddCompletionQueue();
}

void Transport::Start() {
  poller_ = std::thread([this] { Poll(); });
  for (size_t i = 0; i < std::max<size_t>(1, inboxes_.size()); ++i) {
    RequestCall();
  }
}

// Parks the queue's owner in the queue. Unpark sets off an alarm (at most
// one pending), which makes the owner's Next return.
class Transport::CqParker final : public ChannelParker {
 public:
  explicit CqParker(Transport* t) : t_(t) {
    alarm_op_.done = [this](bool) {
      pending_.store(false, std::memory_order_release);
      // The poller thread took it (it stands aside only within its wait):
      // the owner still sleeps, so wake it again.
      if (!parking && t_->owned_.load(std::memory_order_relaxed)) Unpark();
    };
  }
  bool Park() override {
    void* tag = nullptr;
    bool ok = false;
    parking = true;
    const bool got = t_->cq_->Next(&tag, &ok);
    if (got) static_cast<Op*>(tag)->done(ok);
    parking = false;
    return got && tag != &alarm_op_;
  }
  // Not under the transport's mu_: a sender may call this from inside a
  // gRPC call made under it (a piece's hold released as gRPC lets go of
  // the register, held_inputs.h).
  void Unpark() override {
    if (pending_.exchange(true, std::memory_order_acq_rel)) return;
    MutexLock lock(&t_->alarm_mu_);
    if (t_->alarms_off_) return;
    alarm_.Set(t_->cq_.get(), gpr_now(GPR_CLOCK_MONOTONIC), &alarm_op_);
  }

 private:
  static inline thread_local bool parking = false;  // in Park's Next
  Transport* const t_;
  grpc::Alarm alarm_;
  Op alarm_op_;
  std::atomic<bool> pending_{false};
};

void UseOwnPollers() { setenv("GRPC_POLL_STRATEGY", "poll", 0); }

void Transport::MaybeOwnQueue() {
  if (owned_.load(std::memory_order_relaxed)) return;
  if (bulk_.load(std::memory_order_relaxed)) return;
  std::atomic<ChannelParker*>* slot = thread_internal::current_parker_slot;
  if (slot == nullptr) return;
  MutexLock lock(&mu_);
  if (owned_.load(std::memory_order_relaxed) || stopping_ ||
      parker_ != nullptr) {
    return;
  }
  parker_ = std::make_unique<CqParker>(this);
  slot->store(parker_.get(), std::memory_order_release);
  owned_.store(true, std::memory_order_relaxed);
}

void Transport::NoteRegisterBytes(int64_t bytes) {
  if (bytes >= kBulkBytes) bulk_.store(true, std::memory_order_relaxed);
}

void Transport::ReleaseQueue() {
  MutexLock lock(&mu_);
  owned_.store(false, std::memory_order_relaxed);
  owner_changed_.SignalAll();
}

void Transport::Poll() {
  void* tag = nullptr;
  bool ok = false;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (owned_.load(std::memory_order_relaxed) && !stopping_) {
        owner_changed_.Wait(&mu_);
      }
    }
    // A bounded wait: once an owner appears, this thread stands aside
    // within it (until then both may take events, which is harmless).
    grpc::CompletionQueue::NextStatus got = cq_->AsyncNext(
        &tag, &ok,
        std::chrono::system_clock::now() + std::chrono::milliseconds(10));
    if (got == grpc::CompletionQueue::SHUTDOWN) return;
    if (got == grpc::CompletionQueue::GOT_EVENT) {
      static_cast<Op*>(tag)->done(ok);
    }
  }
}

std::string Transport::Describe() {
  std::string text;
  for (auto& [key, out] : outgoing_) {
    MutexLock lock(&out->mu);
    const NetEdge& edge = out->edge;
    absl::StrAppend(&text, "\n  edge regst ", edge.regst_desc_id, " to rank ",
                    edge.dst_rank, ": ", out->sent, " pieces sent, ",
                    out->queue.size(), " queued, ", out->credits, " of ",
                    edge.register_num, " credits left");
    if (out->shared_pieces > 0) {
      absl::StrAppend(&text, ", ", out->shared_pieces,
                      " through shared memory (", out->ring_pieces,
                      " with their header in the piece ring)");
    }
    if (!out->shm_off.empty()) {
      absl::StrAppend(&text, ", shared memory off: ", out->shm_off);
    }
    if (out->referred_pieces > 0) {
      absl::StrAppend(&text, ", ", out->referred_pieces,
                      " sent from the register itself");
    }
    if (edge.compress) {
      absl::StrAppend(&text, ", zstd: ", out->register_bytes, " bytes in ",
                      out->wire_bytes);
    }
    if (out->credits == 0) {
      absl::StrAppend(&text, " (waiting for rank ", edge.dst_rank,
                      " to take a piece)");
    }
    if (out->broken) absl::StrAppend(&text, "; the stream broke");
  }
  for (auto& [id, inbox] : inboxes_) {
    MutexLock lock(&inbox->mu);
    const int64_t untaken = inbox->Untaken();
    absl::StrAppend(&text, "\n  edge regst ", id, " from rank ",
                    inbox->src_rank, ": ",
                    inbox->received + inbox->RingUnpopped(),
                    " pieces received, ", untaken, " not yet taken");
    if (untaken == 0 && !inbox->ended) {
      absl::StrAppend(&text, " (waiting for rank ", inbox->src_rank,
                      " to send)");
    }
    if (inbox->ended) absl::StrAppend(&text, "; the stream ended");
  }
  return text;
}

std::vector<Transport::EdgeBytes> Transport::SentBytes() {
  std::vector<EdgeBytes> edges;
  for (auto& [key, out] : outgoing_) {
    MutexLock lock(&out->mu);
    edges.push_back({out->edge.regst_desc_id, out->edge.dst_rank, out->sent,
                     out->register_bytes, out->wire_bytes, out->shared_pieces,
                     out->ring_pieces, out->referred_pieces,
                     out->bound_pieces});
  }
  return edges;
}

absl::Status Transport::failure() const {
  MutexLock lock(&mu_);
  return failure_;
}

void Transport::Fail(absl::Status status) {
  {
    MutexLock lock(&mu_);
    if (failure_.ok()) failure_ = std::move(status);
    failed_.SignalAll();
  }
  // Returned outside each edge's lock.
  std::vector<std::vector<std::unique_ptr<HeldInputs>>> freed_holds;
  for (auto& [key, out] : outgoing_) {
    MutexLock lock(&out->mu);
    out->failed = true;
    // Nothing queued is written any more: its registers (held by pieces
    // sent from them) go back now, so that the run can end. The one being
    // written is gRPC's until its write completes, failed.
    DropQueued(out.get());
    // The receiver may still read a bound register's slot; it no longer
    // matters.
    freed_holds.push_back(FreedHolds(out.get(), /*all=*/true));
    out->context.TryCancel();
    out->gate.WakeIfShut();
    out->changed.SignalAll();
  }
  freed_holds.clear();
  for (auto& [id, inbox] : inboxes_) {
    MutexLock lock(&inbox->mu);
    inbox->failed = true;
    if (inbox->call != nullptr) inbox->call->context.TryCancel();
    inbox->gate.WakeIfShut();
  }
  // What gRPC still reads goes nowhere now: the registers go back, so
  // that the run can end; their memory stays until gRPC lets go.
  MutexLock lock(&held_->mu);
  for (HeldPiece* piece : held_->live) piece->inputs->Return();
}

absl::Status Transport::StreamLost(const std::string& what, int32_t peer) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + explain_within_;
  while (failure_.ok() && absl::Now() < deadline) {
    failed_.WaitWithTimeout(&mu_, deadline - absl::Now());
  }
  if (!failure_.ok()) return failure_;
  return absl::UnavailableError(absl::StrCat(
      "lost the link between rank ", rank_, " and rank ", peer, ": ", what,
      "; rank ", peer, " is still in the job (no failure reached rank ", rank_,
      " within ", absl::FormatDuration(explain_within_), ")"));
}

// ------------------------------------------------------------ sending

Transport::Outgoing* Transport::FindOutgoing(int64_t regst_desc_id,
                                             int32_t dst_rank) {
  auto it = outgoing_.find({regst_desc_id, dst_rank});
  return it == outgoing_.end() ? nullptr : it->second.get();
}

absl::Status Transport::Connect(const std::vector<std::string>& addresses,
                                absl::Duration timeout,
                                const std::vector<bool>& same_host) {
  for (auto& [key, out] : outgoing_) {
    const NetEdge& edge = out->edge;
    out->shm = edge.dst_rank < static_cast<int32_t>(same_host.size()) &&
               same_host[edge.dst_rank];
    const std::string& address = addresses.at(edge.dst_rank);
    const absl::Time deadline = absl::Now() + timeout;
    out->channel = grpc::CreateCustomChannel(
        address, credentials_, NetChannelArguments(explain_within_));
    const absl::Status cannot = absl::UnavailableError(
        absl::StrCat("rank ", rank_, ": cannot connect to rank ", edge.dst_rank,
                     " at ", address, " within ", absl::FormatDuration(timeout),
                     " (to send regst ", edge.regst_desc_id, ")"));
    // In slices: a job that failed meanwhile (the peer died) ends the wait.
    bool connected = false;
    while (!connected && absl::Now() < deadline) {
      absl::Status failed = failure();
      if (!failed.ok()) return failed;
      connected = out->channel->WaitForConnected(absl::ToChronoTime(
          std::min(deadline, absl::Now() + absl::Milliseconds(100))));
    }
    if (!connected) return cannot;
    AttachJobToken(token_, &out->context);
    RegisterPiece header;
    header.set_regst_desc_id(edge.regst_desc_id);
    header.set_piece_id(-1);
    header.set_src_rank(rank_);
    out->header = Serialized(header);
    grpc::GenericStub stub(out->channel);
    bool failed, broken, open;
    {
      MutexLock lock(&out->mu);
      if (!out->failed) {
        out->stream = stub.PrepareCall(&out->context, kPushMethod, cq_.get());
        ACTORFLOW_POST(out->stream->StartCall(&out->started));
      }
      const auto until = std::chrono::steady_clock::now() +
                         absl::ToChronoNanoseconds(deadline - absl::Now());
      while (out->phase == Outgoing::Phase::kConnecting && !out->broken &&
             !out->failed) {
        if (out->changed.WaitUntil(&out->mu, until)) break;
      }
      failed = out->failed;
      broken = out->broken;
      open = out->phase != Outgoing::Phase::kConnecting;
    }
    if (failed) return failure();
    if (broken) {
      return StreamLost(
          absl::StrCat("the stream to rank ", edge.dst_rank, " for regst ",
                       edge.regst_desc_id, " broke as it opened"),
          edge.dst_rank);
    }
    if (!open) return cannot;
  }
  return absl::OkStatus();
}

Transport::HeldPiece::HeldPiece(std::unique_ptr<HeldInputs> held, int referred,
                                std::shared_ptr<HeldPieces> all)
    : inputs(std::move(held)), slices(referred), all(std::move(all)) {
  MutexLock lock(&this->all->mu);
  this->all->live.insert(this);
}

void Transport::HeldPiece::Unref(void* self) {
  auto* piece = static_cast<HeldPiece*>(self);
  if (piece->slices.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  {
    MutexLock lock(&piece->all->mu);
    piece->all->live.erase(piece);
  }
  piece->inputs->Release();
  delete piece;
}

void Transport::DropQueued(Outgoing* out) {
  if (out->queue.empty()) return;
  if (out->writing) {
    out->queue.erase(out->queue.begin() + 1, out->queue.end());
  } else {
    out->queue.clear();
  }
}

void Transport::StartWrite(Outgoing* out) {
  if (out->writing || out->queue.empty() ||
      out->phase == Outgoing::Phase::kConnecting ||
      out->phase == Outgoing::Phase::kDone) {
    return;
  }
  out->writing = true;
  ACTORFLOW_POST(out->stream->Write(out->queue.front(), &out->wrote));
}

void Transport::OnSendWritten(Outgoing* out, bool ok) {
  MutexLock lock(&out->mu);
  if (out->phase == Outgoing::Phase::kConnecting) {
    // The header: the stream is open.
    if (!ok) {
      out->broken = true;
    } else {
      out->phase = Outgoing::Phase::kOpen;
      ACTORFLOW_POST(out->stream->Read(&out->credit, &out->read));
      StartWrite(out);
    }
    out->changed.SignalAll();
    return;
  }
  out->writing = false;
  if (!ok) {
    // The read side learns why (the call's status) and ends the stream.
    // Nothing more is written on it.
    out->queue.clear();
    out->changed.SignalAll();
    return;
  }
  out->queue.pop_front();
  StartWrite(out);
  if (out->queue.empty() && out->phase == Outgoing::Phase::kClosing &&
      !out->writes_done) {
    out->writes_done = true;
    ACTORFLOW_POST(out->stream->WritesDone(&out->closed));
  }
  out->changed.SignalAll();
}

void Transport::OnSendCredit(Outgoing* out, bool ok) {
  // Returned after the lock: a return is a message to the producer.
  std::vector<std::unique_ptr<HeldInputs>> freed;
  MutexLock lock(&out->mu);
  if (ok) {
    Credit credit;
    if (Parsed(&out->credit, &credit) && credit.count() >= 0) {
      out->credits += credit.count();
      freed = FreedHolds(out, /*all=*/false);
      out->gate.WakeIfShut();
    } else {
      // Not a receiver of this protocol: the read that follows fails, and
      // Finish says why.
      out->context.TryCancel();
    }
    ACTORFLOW_POST(out->stream->Read(&out->credit, &out->read));
    return;
  }
  // The receiver ended the call: after our half-close, or early (it
  // refused the stream, failed, or died). Its status says which.
  ACTORFLOW_POST(out->stream->Finish(&out->status, &out->finished));
}

bool Transport::SendGateOpen(int64_t regst_desc_id, int32_t dst_rank) {
  MaybeOwnQueue();
  Outgoing* out = FindOutgoing(regst_desc_id, dst_rank);
  if (out == nullptr) return true;  // Send says what is wrong
  MutexLock lock(&out->mu);
  if (out->credits > 0 || out->broken || out->failed ||
      out->phase == Outgoing::Phase::kDone) {
    return true;
  }
  out->gate.shut = true;
  return false;
}

absl::Status Transport::Send(int64_t regst_desc_id, int32_t dst_rank,
                             const KernelContext& ctx) {
  Outgoing* out = FindOutgoing(regst_desc_id, dst_rank);
  if (out == nullptr) {
    return absl::InternalError(absl::StrCat("no connection to rank ", dst_rank,
                                            " for regst ", regst_desc_id));
  }
  bool failed = false;
  std::string lost;
  {
    MutexLock lock(&out->mu);
    if (out->failed) {
      failed = true;
    } else if (out->broken || out->phase == Outgoing::Phase::kDone) {
      lost = absl::StrCat("the stream to rank ", dst_rank, " broke (regst ",
                          regst_desc_id, ", piece ", ctx.piece_id(), ")",
                          out->status.ok() ? "" : ": ",
                          out->status.error_message());
    } else if (out->credits <= 0) {
      return absl::InternalError(absl::StrCat(
          "net_send of regst ", regst_desc_id, " to rank ", dst_rank,
          " acted without a credit (piece ", ctx.piece_id(), ")"));
    } else {
      --out->credits;
      ++out->sent;
    }
  }
  if (failed) return failure();
  if (!lost.empty()) return StreamLost(lost, dst_rank);
  ConstRegisterView in = ctx.input(0);
  RegisterPiece* message = &out->piece;
  message->set_regst_desc_id(regst_desc_id);
  message->set_piece_id(ctx.piece_id());
  message->set_src_rank(rank_);
  while (message->blob_size() > in.num_blobs())
    message->mutable_blob()->RemoveLast();
  while (message->blob_size() < in.num_blobs()) message->add_blob();
  message->clear_shm_segment();
  // Blobs start at cache-line multiples in a shared memory slot.
  constexpr int64_t kAlign = 64;
  auto aligned = [](int64_t bytes) {
    return (bytes + kAlign - 1) / kAlign * kAlign;
  };
  int64_t slot_bytes = 0;
  for (int b = 0; b < in.num_blobs(); ++b) {
    slot_bytes += aligned(in.blob(b).byte_size());
  }
  SharedSegment* slot = nullptr;
  int32_t slot_index = 0;
  std::string shm_off;
  // A bound piece: the register lives in its slot, held until the
  // receiver frees it.
  std::unique_ptr<HeldInputs> bound_hold;
  // (A register without blobs has nothing to put there.)
  if (out->shm && in.num_blobs() > 0) {
    bool fresh = false;
    Register* reg = nullptr;
    if (out->binding != Outgoing::Binding::kCopied) {
      const ActContext& act = static_cast<const ActContext&>(ctx);
      reg = AsRegister(const_cast<ActContext&>(act).inputs()[0]);
      if (out->binding == Outgoing::Binding::kUndecided) {
        out->binding = act.rep().holder != nullptr && Bindable(*reg)
                           ? Outgoing::Binding::kBound
                           : Outgoing::Binding::kCopied;
      }
    }
    const bool bind = out->binding == Outgoing::Binding::kBound;
    absl::StatusOr<int32_t> claimed =
        bind ? BindSlot(out, reg, &fresh) : ClaimSlot(out, slot_bytes, &fresh);
    if (claimed.ok() && bind) {
      bound_hold = HoldInputs(ctx);
      if (bound_hold == nullptr) {
        out->slots[*claimed]->Release();
        return absl::InternalError(absl::StrCat(
            "net_send of regst ", regst_desc_id, " to rank ", dst_rank,
            ": cannot hold a register that lives in shared memory"));
      }
    }
    if (claimed.ok()) {
      slot_index = *claimed;
      slot = out->slots[slot_index].get();
      if (fresh) message->set_shm_segment(slot->name());
    } else {
      if (claimed.status().code() == absl::StatusCode::kInternal) {
        return claimed.status();
      }
      // Segments already named stay: pieces in flight may still name them
      // to a receiver that has not opened them yet.
      out->shm = false;
      shm_off = std::string(claimed.status().message());
    }
  }
  const int64_t wire_before = out->packer->wire_bytes();
  // Over the network, blobs of kReferFromBytes or more go as slices over
  // the register itself, not copied, the register held until gRPC is done
  // with them (nothing below can fail any more). Only on edges of two
  // registers or more: the producer fills the next one meanwhile, where
  // with one it would wait for every write.
  HeldPiece* held = nullptr;
  if (slot == nullptr && !out->packer->compresses() &&
      out->edge.register_num >= 2) {
    int referred = 0;
    for (int b = 0; b < in.num_blobs(); ++b) {
      referred += in.blob(b).byte_size() >= kReferFromBytes;
    }
    if (referred > 0) {
      if (std::unique_ptr<HeldInputs> inputs = HoldInputs(ctx)) {
        held = new HeldPiece(std::move(inputs), referred, held_);
      }
    }
  }
  int64_t register_bytes = 0;
  int64_t offset = 0;  // in the slot
  std::vector<grpc::Slice> data;
  for (int b = 0; b < in.num_blobs(); ++b) {
    ConstTensorView blob = in.blob(b);
    BlobPiece* piece = message->mutable_blob(b);
    if (slot != nullptr) {
      piece->set_wire_bytes(0);
      piece->set_codec(BlobPiece::SHM);
      if (bound_hold != nullptr) {
        // Already there: the register's memory is the slot's.
        piece->set_shm_offset(static_cast<const char*>(blob.raw_data()) -
                              slot->data());
      } else {
        piece->set_shm_offset(SharedSegment::kHeaderBytes + offset);
        std::memcpy(slot->data() + SharedSegment::kHeaderBytes + offset,
                    blob.raw_data(), blob.byte_size());
        offset += aligned(blob.byte_size());
      }
    } else if (held != nullptr && blob.byte_size() >= kReferFromBytes) {
      data.push_back(out->packer->Refer(blob.raw_data(), blob.byte_size(),
                                        piece, &HeldPiece::Unref, held));
    } else {
      data.push_back(
          out->packer->Pack(blob.raw_data(), blob.byte_size(), piece));
    }
    register_bytes += blob.byte_size();
    piece->clear_shape();
    for (int64_t dim : blob.shape()) piece->add_shape(dim);
  }
  message->set_shm_slot(slot_index);
  message->set_credit_each(bound_hold != nullptr);
  message->clear_shm_ring();
  if (bound_hold != nullptr) {
    // Before the piece can reach the receiver: the credit that follows
    // its slot's release must find the hold.
    MutexLock lock(&out->mu);
    ++out->bound_pieces;
    // A failed job returned every hold already; this one goes back when
    // it goes out of scope.
    if (!out->failed) {
      out->bound_holds.push_back({slot, std::move(bound_hold)});
    }
  }
  // Through shared memory, the header too goes into the ring once the
  // receiver knows it: the piece that names it is still a message. Only
  // for bulk pieces (kRingFromBytes).
  bool ringed = false, doorbell = false;
  if (slot != nullptr && !out->ring_off) {
    if (out->ring != nullptr) {
      message->SerializeToString(&out->ring_header);
      if (static_cast<int64_t>(out->ring_header.size()) <=
          out->ring->max_header_bytes()) {
        doorbell = out->ring->Publish(out->ring_header);
        ringed = true;
      } else {
        out->ring_off = true;
      }
    } else if (slot_bytes >= kRingFromBytes) {
      // Room for twice this header: later ones differ only in their
      // shapes' values and a new slot's name.
      absl::StatusOr<std::unique_ptr<PieceRing>> ring = PieceRing::Create(
          std::max(1, out->edge.register_num),
          2 * static_cast<int64_t>(message->ByteSizeLong()) + 128);
      if (ring.ok()) {
        out->ring = *std::move(ring);
        message->set_shm_ring(out->ring->name());
      } else {
        out->ring_off = true;
      }
    } else {
      out->ring_off = true;  // smaller pieces keep their messages
    }
  }
  if (ringed) {
    MutexLock lock(&out->mu);
    out->register_bytes += register_bytes;
    ++out->shared_pieces;
    ++out->ring_pieces;
    if (doorbell) {
      grpc::Slice nothing;
      out->queue.emplace_back(&nothing, 1);
      StartWrite(out);
    }
    return absl::OkStatus();
  }
  grpc::ByteBuffer encoded = EncodePiece(*message, &data);
  MutexLock lock(&out->mu);
  out->register_bytes += register_bytes;
  out->wire_bytes += out->packer->wire_bytes() - wire_before;
  if (slot != nullptr) ++out->shared_pieces;
  if (held != nullptr) ++out->referred_pieces;
  if (!shm_off.empty()) out->shm_off = shm_off;
  if (out->failed || out->phase == Outgoing::Phase::kDone) {
    // Failed or ended since the check above: nothing would write the
    // piece, and a piece left in the queue would hold its register for
    // good. `encoded` goes here, and with it any hold; the failure, or the
    // stream's end, surfaces as it does for every other piece.
    return absl::OkStatus();
  }
  out->queue.emplace_back();
  out->queue.back().Swap(&encoded);
  StartWrite(out);
  return absl::OkStatus();
}

namespace {

// The memory of a register that lives in a shared memory slot (BindSlot):
// the segment's one buffer, after its header; the segment stays mapped as
// long as this allocator does.
class SlotAllocator final : public Allocator {
 public:
  explicit SlotAllocator(std::shared_ptr<SharedSegment> segment)
      : segment_(std::move(segment)) {}
  MemoryKind kind() const override { return MemoryKind::kHost; }
  std::string name() const override { return "shared memory slot"; }

 protected:
  absl::StatusOr<void*> DoAllocate(size_t bytes) override {
    if (static_cast<int64_t>(bytes) >
        segment_->size() - SharedSegment::kHeaderBytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("a shared memory slot of ", segment_->size(),
                       " bytes cannot hold ", bytes));
    }
    return segment_->data() + SharedSegment::kHeaderBytes;
  }
  void DoDeallocate(void*, size_t) override {}

 private:
  const std::shared_ptr<SharedSegment> segment_;
};

}  // namespace

bool Transport::Bindable(const Register& reg) {
  const RegisterDesc& desc = reg.desc();
  // One register would wait for every receive; a second reader would read
  // it while the producer writes the next piece into it.
  if (desc.registers.size() < 2 || desc.consumers.size() != 1) return false;
  // Only what no act changes: the producer may be writing another of them
  // on another thread. BindSlot checks the rest of each when it binds it.
  for (const std::unique_ptr<Register>& each : desc.registers) {
    const std::shared_ptr<SyncedMemory>& memory = each->memory_ptr();
    // Memory of its own (not a SharedBlock's), plain pageable host memory.
    if (memory == nullptr || memory.use_count() != 1 ||
        static_cast<int64_t>(memory->size()) < kBindFromBytes ||
        memory->options().host != SyncedMemoryOptions::Host::kPageable ||
        memory->options().host_allocator != nullptr) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<int32_t> Transport::BindSlot(Outgoing* out, Register* reg,
                                            bool* fresh) {
  const NetEdge& edge = out->edge;
  if (auto it = out->bound_slot.find(reg); it != out->bound_slot.end()) {
    // Its hold went back only once the receiver had freed the slot.
    if (!out->slots[it->second]->TryClaim()) {
      return absl::InternalError(absl::StrCat(
          "net_send of regst ", edge.regst_desc_id, " to rank ", edge.dst_rank,
          ": the shared memory slot of a register sent again is still the "
          "receiver's"));
    }
    return it->second;
  }
  const int32_t index = static_cast<int32_t>(out->slots.size());
  SyncedMemory& memory = reg->memory();
  absl::StatusOr<const void*> bytes = memory.cpu_data();
  if (index >= edge.register_num || !bytes.ok() || *bytes != reg->base() ||
      memory.head() != SyncedMemory::HEAD_AT_CPU || !memory.owns_cpu_data()) {
    return absl::FailedPreconditionError(
        absl::StrCat("a register of regst ", edge.regst_desc_id,
                     " cannot move into shared memory"));
  }
  absl::StatusOr<std::unique_ptr<SharedSegment>> made =
      SharedSegment::Create(static_cast<int64_t>(memory.size()));
  if (!made.ok()) return made.status();
  std::shared_ptr<SharedSegment> segment = *std::move(made);
  // The segment stays mapped as long as the register's memory lives,
  // whichever of it and this transport goes first.
  auto allocator = std::make_shared<SlotAllocator>(segment);
  std::shared_ptr<SyncedMemory> moved(
      new SyncedMemory(memory.size(),
                       {.host = SyncedMemoryOptions::Host::kPageable,
                        .host_allocator = allocator.get()}),
      [allocator](SyncedMemory* gone) { delete gone; });
  absl::StatusOr<void*> base = moved->mutable_cpu_data();
  if (!base.ok()) return base.status();
  std::memcpy(*base, reg->base(), memory.size());
  // No one else touches the register now: this edge is its only reader,
  // and it is in this act.
  reg->SwapMemory(std::move(moved), static_cast<char*>(*base));
  segment->TryClaim();
  out->slots.push_back(std::move(segment));
  out->bound_slot[reg] = index;
  *fresh = true;
  return index;
}

std::vector<std::unique_ptr<HeldInputs>> Transport::FreedHolds(Outgoing* out,
                                                               bool all) {
  std::vector<std::unique_ptr<HeldInputs>> freed;
  auto& holds = out->bound_holds;
  for (auto it = holds.begin(); it != holds.end();) {
    if (all || it->slot->IsFree()) {
      freed.push_back(std::move(it->hold));
      it = holds.erase(it);
    } else {
      ++it;
    }
  }
  return freed;
}

absl::StatusOr<int32_t> Transport::ClaimSlot(Outgoing* out, int64_t bytes,
                                             bool* fresh) {
  size_t i = 0;
  while (i < out->slots.size() && !out->slots[i]->TryClaim()) ++i;
  const NetEdge& edge = out->edge;
  if (i == out->slots.size()) {
    if (static_cast<int32_t>(i) >= edge.register_num) {
      return absl::InternalError(absl::StrCat(
          "net_send of regst ", edge.regst_desc_id, " to rank ", edge.dst_rank,
          ": all ", i,
          " shared memory slots still wait for the receiver, with a credit "
          "in hand"));
    }
    out->slots.emplace_back();
  } else if (out->slots[i]->size() - SharedSegment::kHeaderBytes >= bytes) {
    return static_cast<int32_t>(i);
  }
  // A new slot, or one to grow: a free one was released, so the receiver
  // has opened it and its name is gone.
  absl::StatusOr<std::unique_ptr<SharedSegment>> made =
      SharedSegment::Create(bytes);
  if (!made.ok()) {
    if (out->slots[i] == nullptr) {
      out->slots.pop_back();
    } else {
      out->slots[i]->Release();
    }
    return made.status();
  }
  out->slots[i] = std::move(*made);
  out->slots[i]->TryClaim();
  *fresh = true;
  return static_cast<int32_t>(i);
}

void Transport::SetSendWaker(int64_t regst_desc_id, int32_t dst_rank,
                             std::function<void()> wake) {
  Outgoing* out = FindOutgoing(regst_desc_id, dst_rank);
  if (out == nullptr) return;
  MutexLock lock(&out->mu);
  out->gate.wake = std::move(wake);
}

absl::Status Transport::CloseSends() {
  for (auto& [key, out] : outgoing_) {
    std::string lost;
    bool failed = false;
    {
      MutexLock lock(&out->mu);
      if (out->phase == Outgoing::Phase::kOpen) {
        out->phase = Outgoing::Phase::kClosing;
        if (!out->writing && out->queue.empty() && !out->writes_done) {
          out->writes_done = true;
          ACTORFLOW_POST(out->stream->WritesDone(&out->closed));
        }
      }
      // Ends once the receiver ends the call (after reading everything), or
      // the job fails (a dead or silent peer included).
      while (out->phase != Outgoing::Phase::kDone && !out->failed &&
             out->stream != nullptr) {
        out->changed.Wait(&out->mu);
      }
      failed = out->failed;
      if (!failed && (out->broken || !out->status.ok())) {
        lost =
            absl::StrCat("closing the stream of regst ", key.first, " to rank ",
                         key.second, ": ", out->status.error_message());
      }
    }
    if (failed) return failure();
    if (!lost.empty()) return StreamLost(lost, key.second);
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ receiving

Transport::Inbox* Transport::FindInbox(int64_t regst_desc_id) {
  auto it = inboxes_.find(regst_desc_id);
  return it == inboxes_.end() ? nullptr : it->second.get();
}

void Transport::RequestCall() {
  auto owned = std::make_unique<Call>();
  Call* call = owned.get();
  call->accepted.done = [this, call](bool ok) {
    if (!ok) return;  // the server is shutting down
    RequestCall();
    if (call->context.method() == kPushMethod) {
      ACTORFLOW_POST(call->stream.Read(&call->header, &call->read));
      return;
    }
    // Any other method reaches the generic service too.
    grpc::Status refused =
        CheckJobToken(token_, call->context, call->context.method().c_str());
    if (refused.ok()) {
      refused = grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                             absl::StrCat("rank ", rank_, " serves no method ",
                                          call->context.method()));
    }
    ACTORFLOW_POST(call->stream.Finish(refused, &call->finished));
  };
  call->read.done = [this, call](bool ok) { OnCallRead(call, ok); };
  call->wrote.done = [this, call](bool ok) {
    if (call->inbox != nullptr) OnCreditWritten(call->inbox, ok);
  };
  call->finished.done = [](bool) {};
  MutexLock lock(&mu_);
  if (stopping_) return;
  calls_.push_back(std::move(owned));
  service_.RequestCall(&call->context, &call->stream, cq_.get(), cq_.get(),
                       &call->accepted);
}

void Transport::OnCallRead(Call* call, bool ok) {
  if (call->inbox == nullptr) {  // the header
    grpc::Status refused = grpc::Status::CANCELLED;
    if (ok) refused = CheckJobToken(token_, call->context, "Push");
    RegisterPiece header;
    if (ok && refused.ok() && !Parsed(&call->header, &header)) {
      refused = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             absl::StrCat("rank ", rank_,
                                          ": a Push stream's first message is "
                                          "not a RegisterPiece"));
    }
    Inbox* inbox =
        ok && refused.ok() ? FindInbox(header.regst_desc_id()) : nullptr;
    if (ok && refused.ok() && inbox == nullptr) {
      refused = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             absl::StrCat("rank ", rank_, " receives no regst ",
                                          header.regst_desc_id(),
                                          " (do the ranks run one plan?)"));
    }
    if (inbox != nullptr && header.src_rank() != inbox->src_rank) {
      // Only the rank the plan says sends this register may open it.
      refused = grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("rank ", rank_, " receives regst ", inbox->regst_desc_id,
                       " from rank ", inbox->src_rank, ", not from rank ",
                       header.src_rank()));
      inbox = nullptr;
    }
    if (refused.ok()) refused = grpc::Status::CANCELLED;
    if (inbox != nullptr) {
      MutexLock lock(&inbox->mu);
      if (inbox->call == nullptr) {
        inbox->call = call;
        call->inbox = inbox;
        ACTORFLOW_POST(call->stream.Read(&inbox->reading, &call->read));
        if (inbox->failed) call->context.TryCancel();
        return;
      }
      refused =
          grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                       absl::StrCat("regst ", header.regst_desc_id(),
                                    " is already being sent to rank ", rank_));
    }
    ACTORFLOW_POST(call->stream.Finish(refused, &call->finished));
    return;
  }
  Inbox* inbox = call->inbox;
  MutexLock lock(&inbox->mu);
  if (ok) {
    // An empty message is a doorbell: a piece is in the ring.
    if (inbox->reading.Length() > 0) {
      inbox->arrived.emplace_back();
      inbox->arrived.back().Swap(&inbox->reading);
      ++inbox->received;
    }
    ACTORFLOW_POST(call->stream.Read(&inbox->reading, &call->read));
    inbox->gate.WakeIfShut();
    return;
  }
  // The sender half-closed, or the stream broke: nothing more comes.
  inbox->ended = true;
  inbox->gate.WakeIfShut();
  FinishCall(inbox);
}

void Transport::GrantCredit(Inbox* inbox) {
  const int32_t batch = inbox->credit_each ? 1 : inbox->credit_batch;
  if (inbox->owed < batch || inbox->credit_writing || inbox->call == nullptr ||
      inbox->ended || inbox->finish_sent) {
    return;
  }
  Credit credit;
  credit.set_count(inbox->owed);
  inbox->credit = Serialized(credit);
  inbox->owed = 0;
  inbox->credit_writing = true;
  ACTORFLOW_POST(inbox->call->stream.Write(inbox->credit, &inbox->call->wrote));
}

void Transport::OnCreditWritten(Inbox* inbox, bool ok) {
  MutexLock lock(&inbox->mu);
  inbox->credit_writing = false;
  // A failed write means a broken stream, which the read side reports.
  if (ok) GrantCredit(inbox);
  FinishCall(inbox);
}

void Transport::FinishCall(Inbox* inbox) {
  // Finish is a write: only once no credit is being written, and once the
  // sender half-closed, so that a piece it sent beyond this rank's runs is
  // seen (and reported to it).
  if (!inbox->draining || !inbox->ended || inbox->finish_sent ||
      inbox->credit_writing || inbox->call == nullptr) {
    return;
  }
  inbox->finish_sent = true;
  grpc::Status status = grpc::Status::OK;
  const int64_t untaken = inbox->Untaken();
  if (untaken > 0) {
    status = grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("rank ", rank_, " ran fewer pieces of regst ",
                     inbox->regst_desc_id, " than rank ", inbox->src_rank,
                     " sent (", untaken, " more)"));
  }
  ACTORFLOW_POST(inbox->call->stream.Finish(status, &inbox->call->finished));
}

void Transport::CloseReceives() {
  for (auto& [id, inbox] : inboxes_) {
    MutexLock lock(&inbox->mu);
    inbox->draining = true;
    FinishCall(inbox.get());
  }
}

bool Transport::ReceiveGateOpen(int64_t regst_desc_id) {
  MaybeOwnQueue();
  Inbox* inbox = FindInbox(regst_desc_id);
  if (inbox == nullptr) return true;  // Receive says what is wrong
  MutexLock lock(&inbox->mu);
  // Credit for what was taken goes back here, once the piece taken has
  // gone on to its readers.
  GrantCredit(inbox);
  if (!inbox->arrived.empty() || inbox->ended || inbox->failed) return true;
  // The doorbell for a piece published after this look finds the gate
  // shut: it takes mu, which this holds until the gate is.
  if (inbox->ring != nullptr &&
      (inbox->ring->HasPiece() || inbox->ring->WaitUnlessPiece())) {
    return true;
  }
  inbox->gate.shut = true;
  return false;
}

void Transport::SetReceiveWaker(int64_t regst_desc_id,
                                std::function<void()> wake) {
  Inbox* inbox = FindInbox(regst_desc_id);
  if (inbox == nullptr) return;
  MutexLock lock(&inbox->mu);
  inbox->gate.wake = std::move(wake);
}

void Transport::DropWakers() {
  for (auto& [key, out] : outgoing_) {
    MutexLock lock(&out->mu);
    out->gate.wake = nullptr;
  }
  for (auto& [id, inbox] : inboxes_) {
    MutexLock lock(&inbox->mu);
    inbox->gate.wake = nullptr;
  }
}

absl::Status Transport::OpenSlot(const RegisterPiece& piece, Inbox* inbox) {
  const int32_t slot = piece.shm_slot();
  if (slot < 0 || slot >= std::ssize(inbox->slots)) {
    return absl::DataLossError(
        absl::StrCat("shared memory slot ", slot, " of ", inbox->slots.size()));
  }
  absl::StatusOr<std::unique_ptr<SharedSegment>> opened =
      SharedSegment::Open(piece.shm_segment());
  if (!opened.ok()) {
    return absl::Status(
        opened.status().code(),
        absl::StrCat(opened.status().message(),
                     " (can this rank not see the sender's /dev/shm? "
                     "--net-shm=0 turns shared memory off)"));
  }
  inbox->slots[slot] = std::move(*opened);
  return absl::OkStatus();
}

absl::Status Transport::CopyFromSlot(const RegisterPiece& piece,
                                     const BlobPiece& data, void* out,
                                     int64_t bytes, Inbox* inbox) {
  const int32_t slot = piece.shm_slot();
  const SharedSegment* segment = inbox->Slot(slot);
  if (segment == nullptr) {
    return absl::DataLossError(
        absl::StrCat("no shared memory segment for slot ", slot));
  }
  const int64_t offset = data.shm_offset();
  if (offset < SharedSegment::kHeaderBytes ||
      bytes > segment->size() - offset) {
    return absl::DataLossError(absl::StrCat(
        bytes, " bytes at offset ", offset, " overrun shared memory slot ",
        slot, " (", segment->size(), " bytes)"));
  }
  std::memcpy(out, segment->data() + offset, bytes);
  return absl::OkStatus();
}

absl::Status Transport::Receive(int64_t regst_desc_id,
                                const KernelContext& ctx) {
  Inbox* inbox = FindInbox(regst_desc_id);
  if (inbox == nullptr) {
    return absl::InternalError(
        absl::StrCat("no inbox for regst ", regst_desc_id));
  }
  grpc::ByteBuffer taken;
  bool failed = false, have = false;
  // The ring's pieces all came before any message that is a piece.
  bool from_ring = false;
  absl::StatusOr<absl::string_view> ringed;
  {
    MutexLock lock(&inbox->mu);
    failed = inbox->failed;
    if (!failed && inbox->ring != nullptr && inbox->ring->HasPiece()) {
      ringed = inbox->ring->Front();
      from_ring = have = true;
    } else if (!failed && !inbox->arrived.empty()) {
      taken.Swap(&inbox->arrived.front());
      inbox->arrived.pop_front();
      have = true;
    }
  }
  if (failed) return failure();
  if (!have) {
    return StreamLost(
        absl::StrCat("rank ", inbox->src_rank, "'s stream of regst ",
                     regst_desc_id, " ended before piece ", ctx.piece_id()),
        inbox->src_rank);
  }
  absl::Status decoded;
  if (!from_ring) {
    decoded = inbox->piece.Decode(taken);
  } else if (!ringed.ok()) {
    decoded = ringed.status();
  } else if (!inbox->ring_piece.ParseFromArray(
                 ringed->data(), static_cast<int>(ringed->size()))) {
    decoded = absl::DataLossError("a header in the piece ring does not parse");
  }
  const RegisterPiece& piece =
      from_ring ? inbox->ring_piece : inbox->piece.header();
  auto where = [&] {
    return absl::StrCat("regst ", regst_desc_id, " from rank ", inbox->src_rank,
                        ", piece ", ctx.piece_id());
  };
  absl::Status copied = [&]() -> absl::Status {
    if (!decoded.ok()) {
      return absl::Status(decoded.code(),
                          absl::StrCat(where(), ": ", decoded.message()));
    }
    if (piece.piece_id() != ctx.piece_id()) {
      return absl::InternalError(
          absl::StrCat(where(), ": got piece ", piece.piece_id(), " instead"));
    }
    RegisterView out = ctx.output(0);
    if (!piece.shm_ring().empty()) {
      absl::StatusOr<std::unique_ptr<PieceRing>> ring =
          PieceRing::Open(piece.shm_ring());
      if (!ring.ok()) {
        return absl::Status(ring.status().code(),
                            absl::StrCat(where(), ": ", ring.status().message(),
                                         " (can this rank not see the "
                                         "sender's /dev/shm? --net-shm=0 "
                                         "turns shared memory off)"));
      }
      MutexLock lock(&inbox->mu);
      inbox->ring = *std::move(ring);
    }
    if (!piece.shm_segment().empty()) {
      absl::Status opened = OpenSlot(piece, inbox);
      if (!opened.ok()) {
        return absl::Status(opened.code(),
                            absl::StrCat(where(), ": ", opened.message()));
      }
    }
    if (piece.blob_size() != out.num_blobs()) {
      return absl::InternalError(absl::StrCat(where(), ": ", piece.blob_size(),
                                              " blobs, the register has ",
                                              out.num_blobs()));
    }
    for (int b = 0; b < out.num_blobs(); ++b) {
      TensorView blob = out.blob(b);
      const BlobPiece& data = piece.blob(b);
      absl::Span<const int64_t> shape(data.shape().data(), data.shape_size());
      if (blob.is_dynamic()) {
        absl::Status shaped = blob.set_shape(shape);
        if (!shaped.ok()) {
          return absl::InternalError(absl::StrCat(
              where(), ": blob '", blob.name(), "': ", shaped.message()));
        }
      } else if (shape != blob.shape()) {
        return absl::InternalError(absl::StrCat(
            where(), ": blob '", blob.name(), "' has shape ",
            ShapeString(shape), ", the register ", ShapeString(blob.shape())));
      }
      absl::Status unpacked =
          data.codec() == BlobPiece::SHM
              ? CopyFromSlot(piece, data, blob.mutable_raw_data(),
                             blob.byte_size(), inbox)
              : inbox->unpacker.Unpack(data, inbox->piece.blob_bytes(b),
                                       blob.mutable_raw_data(),
                                       blob.byte_size());
      if (!unpacked.ok()) {
        return absl::Status(
            unpacked.code(),
            absl::StrCat(where(), ": blob '", blob.name(), "' of shape ",
                         ShapeString(shape), ": ", unpacked.message()));
      }
    }
    return absl::OkStatus();
  }();
  // The sender may write the slot again. Not where the header did not
  // parse: a slot it names may not be this piece's (the job fails anyway).
  if (decoded.ok() && piece.blob_size() > 0 &&
      piece.blob(0).codec() == BlobPiece::SHM) {
    if (SharedSegment* slot = inbox->Slot(piece.shm_slot())) {
      slot->Release();
    }
  }
  MutexLock lock(&inbox->mu);
  if (from_ring && ringed.ok()) {
    inbox->ring->Pop();
    ++inbox->received;
  }
  ++inbox->owed;
  if (decoded.ok() && piece.credit_each()) inbox->credit_each = true;
  // The sender's register waits for this credit (its slot is free now).
  if (inbox->credit_each) GrantCredit(inbox);
  return copied;
}

#undef ACTORFLOW_POST

}  // namespace actorflow::internal::net
