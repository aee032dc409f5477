#ifndef ACTORFLOW_NET_TRANSPORT_H_
#define ACTORFLOW_NET_TRANSPORT_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "actor/held_inputs.h"
#include "actorflow/kernel.h"
#include "base/mutex.h"
#include "net/blob_codec.h"
#include "net/piece_codec.h"
#include "net/piece_ring.h"
#include "net/plan_partition.h"
#include "net/shared_segment.h"
#include "proto/net.grpc.pb.h"

namespace actorflow::internal::net {

// Moves registers between the processes of a job over gRPC, one stream per
// NetEdge (the sender's client streaming to the receiver's server), driven
// by gRPC's asynchronous API on one completion queue. The streams are
// RegisterTransfer.Push (proto/net.proto) served and called through gRPC's
// generic API, which hands over messages as slices: a piece's blobs are
// copied once into the message and once out of it (net/piece_codec.h). Nothing
// here blocks an actor's thread: net_send and net_recv act only when their gate
// is open (a credit to send with; a piece that arrived), so they share the
// threads of the tasks next to them.
//
// Who polls the queue: until the plan runs, a poller thread. Then the first
// actor thread that runs a transfer task parks in the queue instead of on
// its channel (a ChannelParker; a message to it sets off a grpc::Alarm), so
// the thread that the network wakes is the one that runs the receiving
// task and its readers, with no hand-off between threads. With gRPC's
// "poll" engine (UseOwnPollers) that thread reads the socket itself. The
// cost: while that thread runs a long kernel, transfers wait for it. So
// where a register of kBulkBytes or more crosses (NoteRegisterBytes), the
// poller thread keeps the queue: the socket is then read and written while
// the actor thread copies, and a hand-off per piece is nothing beside it.
//
// Credit keeps the register protocol across machines: the sender may have
// at most register_num pieces of an edge that the receiver has not
// credited back, and net_send takes a piece only with a credit for it. The
// receiver reads pieces as they come (at most register_num are buffered)
// and credits the ones its net_recv took in batches of half the
// register_num (at least 1): one credit message per batch. That cannot
// stall an edge: a sender out of credit has register_num uncredited pieces,
// so either some are buffered or in transit, and net_recv takes them as its
// registers come back, or all were taken, and those are a whole batch. So a
// slow reader stops the producer as in one process.
//
// Thread-safety: every method may be called from any thread; Send and
// SendGateOpen for an edge from one thread at a time (its net_send's), the
// same for Receive and ReceiveGateOpen (its net_recv's).
class Transport final {
 public:
  // `sends`, `recvs`: the edges this process sends and receives on.
  // `explain_within`: how
  // long a broken stream waits for the job's failure to explain it (the
  // control service reports a dead or silent peer within the peer timeout)
  // before it fails on its own account. `token`: the job's secret, sent on
  // every stream and required of every stream received (empty: none).
  // `credentials`: how streams are opened (null: plaintext).
  Transport(int32_t rank, const std::vector<NetEdge>& sends,
            const std::vector<NetEdge>& recvs, absl::Duration explain_within,
            std::string token = "",
            std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);
  ~Transport();

  // Before the job's server starts: registers the service and the
  // completion queue with it. Start once it runs.
  void AddTo(grpc::ServerBuilder* builder);
  void Start();

  // After Start: opens a stream per edge it sends on to the receiver at
  // addresses[dst_rank], waiting up to `timeout` for each to connect. An
  // edge to a rank r with same_host[r] (shorter: none) moves its blobs
  // through shared memory: slots of one SharedSegment each, the message
  // on the stream says which slot and where each blob is, and still
  // carries credit, order and the end of the stream. Bulk pieces
  // (kRingFromBytes) put that message in a piece ring instead, after the
  // first, and the stream carries a doorbell only where the receiver waits.
  // Send writes into the lowest slot the receiver has released, so a receiver
  // that keeps up has the same one or two reused while they are in cache (a
  // copy through memory that is in cache costs about what one copy does); it
  // makes a new slot only when all are busy, and register_num are always
  // enough: a credit in hand means at most register_num - 1 pieces are not yet
  // taken, and the receiver releases a slot before it credits the piece.
  // An edge whose registers can live in their slots (kBindFromBytes) gives
  // each register a slot of its own instead, for good.
  // A segment that cannot be made (a full /dev/shm) turns the edge back to
  // messages for good.
  absl::Status Connect(const std::vector<std::string>& addresses,
                       absl::Duration timeout,
                       const std::vector<bool>& same_host = {});

  // net_send's gate: a credit is free (or the edge broke, for Send to say
  // so). Send copies the register's blobs (valid bytes and shapes) into its
  // shared memory slot, or else into a message, each compressed where the
  // edge says so and it shrinks (BlobPacker), and queues the message on
  // the edge; it never waits.
  bool SendGateOpen(int64_t regst_desc_id, int32_t dst_rank);
  absl::Status Send(int64_t regst_desc_id, int32_t dst_rank,
                    const KernelContext& ctx);
  // net_recv's gate: a piece arrived (or the edge broke). Receive copies
  // (or decompresses) the oldest into the task's "out", from the message or
  // the shared memory slot it names.
  bool ReceiveGateOpen(int64_t regst_desc_id);
  absl::Status Receive(int64_t regst_desc_id, const KernelContext& ctx);
  // Whom to wake when the edge's gate may have opened; an empty function
  // unbinds (the kernel is going away).
  void SetSendWaker(int64_t regst_desc_id, int32_t dst_rank,
                    std::function<void()> wake);
  void SetReceiveWaker(int64_t regst_desc_id, std::function<void()> wake);
  // Unbinds every waker: the session is going away.
  void DropWakers();

  // After the last run: lets every incoming stream end once its sender
  // half-closes (a piece left unread is an error for the sender). Does not
  // block.
  void CloseReceives();
  // After CloseReceives: writes what is queued, half-closes every outgoing
  // stream and waits for the receivers to end them.
  absl::Status CloseSends();
  // The job failed: cancels every stream and opens every gate, so that the
  // transfer tasks return `status` from then on. The first status wins.
  void Fail(absl::Status status);
  absl::Status failure() const;
  // Every edge's state, a line each: pieces sent or received, credits, what
  // it waits for (the job's hang report).
  std::string Describe();
  // What each edge this process sends on has moved: the registers' bytes
  // and the bytes that went into messages for them (fewer where
  // compressed).
  struct EdgeBytes {
    int64_t regst_desc_id = 0;
    int32_t dst_rank = 0;
    int64_t pieces = 0;
    int64_t register_bytes = 0;
    int64_t wire_bytes = 0;
    // Pieces whose blobs went through shared memory (no wire bytes).
    int64_t shared_pieces = 0;
    // Of those, pieces whose header went through the piece ring (no
    // message of their own on the stream).
    int64_t ring_pieces = 0;
    // Pieces whose large blobs gRPC sent from the register itself, not
    // from a copy (kReferFromBytes).
    int64_t referred_pieces = 0;
    // Of the shared pieces, those whose register lives in its slot: the
    // sender copied nothing (kBindFromBytes).
    int64_t bound_pieces = 0;
  };
  std::vector<EdgeBytes> SentBytes();
  // After the job's server shut down and before it is destroyed: fails
  // what is left, shuts the completion queue down and drains it (gRPC's
  // own requests pending on the queue refer to the server). Idempotent;
  // the destructor calls it.
  void Stop();

 private:
  // A completion queue tag: what to do when the operation completes.
  struct Op {
    std::function<void(bool ok)> done;
  };
  class CqParker;
  // On an actor thread: the first one to run a transfer task takes over
  // the completion queue (see the class comment).
  void MaybeOwnQueue();
  // The queue's owner parks in it, so the poller thread stands aside.
  std::atomic<bool> owned_{false};
  // Set before the plan runs: no actor thread takes the queue.
  std::atomic<bool> bulk_{false};
  CondVar owner_changed_;
  std::unique_ptr<CqParker> parker_;  // the owner's

 public:
  // After the session's threads are gone: the poller thread polls again.
  void ReleaseQueue();
  // net_send and net_recv, at Init: a register of `bytes` bytes crosses
  // here. Measured with net_bench on 2 CPUs, the poller thread polling
  // against an actor thread: registers through shared memory moved 1.4x
  // as fast at 1 MiB and 1.7x at 16 MiB; over a veth pair, 1.05x at 1 MiB
  // and 1.5x at 16 MiB; but 64 KiB and 4 KiB pieces moved 15-40 % slower,
  // and 64-byte round trips took 1.5x as long.
  static constexpr int64_t kBulkBytes = 1 << 20;
  void NoteRegisterBytes(int64_t bytes);
  // An edge through shared memory whose first piece has this many bytes
  // or more sends its later pieces' headers through a piece ring
  // (piece_ring.h) rather than as messages. Measured with net_bench on 2
  // CPUs (--mib=256), alternated with messages: 1 MiB pieces moved at
  // 0.64-0.69 of memcpy's speed against 0.45-0.54; but with the ring on
  // every edge, the two-rank MLP job (pieces of 8 B to 400 KB) ran 97-108
  // thousand samples/s against 115-138 with messages.
  static constexpr int64_t kRingFromBytes = kBulkBytes;
  // Blobs this large or larger cross the network from the register itself
  // (Send): a copy of one costs more than holding the register until gRPC
  // has written it.
  static constexpr int64_t kReferFromBytes = 64 << 10;
  // Through shared memory, registers this large or larger move into their
  // slots (BindSlot) on an edge that is their only reader: the producer
  // writes straight into the segment, and only the receiver copies. Each
  // such register is held from its Send until the receiver frees its slot.
  // Measured with net_bench on 2 CPUs, alternated with copies into slots:
  // 1 MiB registers at 0.57-0.66 of memcpy's speed against 0.48-0.52.
  static constexpr int64_t kBindFromBytes = kBulkBytes;

 private:
  struct Call;
  // A transfer task's actor, to wake when its gate may have opened: only
  // if it found the gate shut (so a busy stream does not flood it).
  struct GateWaker {
    bool shut = false;
    std::function<void()> wake;  // empty once the kernel is gone

    void WakeIfShut() {
      if (shut && wake) {
        shut = false;
        wake();
      }
    }
  };
  // The pieces whose registers gRPC may still read (HeldPiece): a failure
  // gives their registers back at once, since a cancelled stream's
  // connection can keep a written message's slices until it closes.
  // Shared with the pieces, which gRPC may let go of after the transport.
  struct HeldPiece;
  struct HeldPieces {
    Mutex mu;
    absl::flat_hash_set<HeldPiece*> live ABSL_GUARDED_BY(mu);
  };
  // One piece's hold on its input register, shared by the piece's slices
  // over it: the last slice that gRPC lets go of releases the register.
  struct HeldPiece {
    HeldPiece(std::unique_ptr<HeldInputs> held, int referred,
              std::shared_ptr<HeldPieces> all);
    static void Unref(void* self);
    std::unique_ptr<HeldInputs> inputs;
    std::atomic<int> slices;
    const std::shared_ptr<HeldPieces> all;
  };

  // The sending end of one edge: a client stream. Pieces queue here once
  // net_send has a credit for them; one is written at a time (gRPC allows no
  // more), and credits are read as they come.
  struct Outgoing {
    enum class Phase { kConnecting, kOpen, kClosing, kDone };
    NetEdge edge;
    std::shared_ptr<grpc::Channel> channel;
    grpc::ClientContext context;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> stream;
    Op started, wrote, read, closed, finished;
    grpc::ByteBuffer header;  // the stream's first message
    grpc::ByteBuffer credit;  // read into
    grpc::Status status;      // Finish's
    Mutex mu;
    CondVar changed;
    Phase phase ABSL_GUARDED_BY(mu) = Phase::kConnecting;
    bool broken ABSL_GUARDED_BY(mu) = false;  // the stream ended early
    bool failed ABSL_GUARDED_BY(mu) = false;  // the job failed
    int32_t credits ABSL_GUARDED_BY(mu) = 0;
    int64_t sent ABSL_GUARDED_BY(mu) = 0;  // pieces taken with a credit
    // Taken with a credit, not yet written; the front is being written
    // while `writing`.
    std::deque<grpc::ByteBuffer> queue ABSL_GUARDED_BY(mu);
    bool writing ABSL_GUARDED_BY(mu) = false;
    bool writes_done ABSL_GUARDED_BY(mu) = false;
    GateWaker gate ABSL_GUARDED_BY(mu);  // net_send's
    // Used by Send alone (one caller at a time); its totals are copied
    // under mu for SentBytes.
    std::unique_ptr<BlobPacker> packer;
    RegisterPiece piece;  // the header Send fills, piece after piece
    int64_t register_bytes ABSL_GUARDED_BY(mu) = 0;
    int64_t wire_bytes ABSL_GUARDED_BY(mu) = 0;
    // Shared memory (see Connect): set before the first Send, then Send's
    // alone, as are the slots.
    bool shm = false;
    // Shared: a register bound to its slot (BindSlot) keeps the segment
    // mapped as long as the register lives.
    std::vector<std::shared_ptr<SharedSegment>> slots;
    // Whether this edge's registers live in their slots, decided at its
    // first piece through shared memory, and each bound register's slot.
    enum class Binding { kUndecided, kBound, kCopied };
    Binding binding = Binding::kUndecided;
    absl::flat_hash_map<const Register*, int32_t> bound_slot;
    // The bound registers whose pieces are out, each held until the
    // receiver frees its slot (looked at when a credit comes, which the
    // receiver sends after it frees the slot).
    struct BoundHold {
      SharedSegment* slot = nullptr;
      std::unique_ptr<HeldInputs> hold;
    };
    std::vector<BoundHold> bound_holds ABSL_GUARDED_BY(mu);
    int64_t bound_pieces ABSL_GUARDED_BY(mu) = 0;
    // The headers' ring (piece_ring.h), made with the first piece through
    // shared memory and named in it; off for good where that piece was
    // smaller than kRingFromBytes, the ring could not be made, or a header
    // outgrew its entries (the pieces after go as messages, which the
    // receiver takes after the ring's). Send's alone.
    std::unique_ptr<PieceRing> ring;
    bool ring_off = false;
    std::string ring_header;  // serialized, piece after piece
    int64_t shared_pieces ABSL_GUARDED_BY(mu) = 0;
    int64_t ring_pieces ABSL_GUARDED_BY(mu) = 0;
    int64_t referred_pieces ABSL_GUARDED_BY(mu) = 0;
    std::string shm_off ABSL_GUARDED_BY(mu);  // why it was turned off
  };

  // The receiving end of one edge. Pieces are read as they come, into
  // `arrived`; net_recv takes them from there.
  struct Inbox {
    int64_t regst_desc_id = 0;
    int32_t src_rank = 0;
    int32_t credit_batch = 1;
    Mutex mu;
    // The sender holds bound registers until their slots are free: every
    // piece is credited as soon as it is taken (RegisterPiece.credit_each).
    bool credit_each ABSL_GUARDED_BY(mu) = false;
    Call* call ABSL_GUARDED_BY(mu) = nullptr;  // the sender's, once it came
    grpc::ByteBuffer reading ABSL_GUARDED_BY(mu);
    // Messages as they came; Receive decodes them.
    std::deque<grpc::ByteBuffer> arrived ABSL_GUARDED_BY(mu);
    // Pieces taken but not yet credited.
    int32_t owed ABSL_GUARDED_BY(mu) = 0;
    // Messages that were pieces, and pieces taken from the ring.
    int64_t received ABSL_GUARDED_BY(mu) = 0;
    bool credit_writing ABSL_GUARDED_BY(mu) = false;
    grpc::ByteBuffer credit ABSL_GUARDED_BY(mu);  // being written
    bool ended ABSL_GUARDED_BY(mu) = false;   // no more reads: closed or broken
    bool failed ABSL_GUARDED_BY(mu) = false;  // the job failed
    bool draining ABSL_GUARDED_BY(mu) = false;  // CloseReceives was called
    bool finish_sent ABSL_GUARDED_BY(mu) = false;
    GateWaker gate ABSL_GUARDED_BY(mu);  // net_recv's
    // The sender's piece ring, once a piece named it: its pieces come
    // before any in `arrived` (doorbells never go there). Set and popped by
    // Receive under mu; net_recv's gate looks at it too.
    std::unique_ptr<PieceRing> ring ABSL_GUARDED_BY(mu);
    // Receive's alone (one caller at a time).
    BlobUnpacker unpacker;
    DecodedPiece piece;
    RegisterPiece ring_piece;  // the header of a piece from the ring

    int64_t RingUnpopped() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return ring != nullptr ? ring->Unpopped() : 0;
    }
    // Pieces here and not yet taken: messages and the ring's.
    int64_t Untaken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return std::ssize(arrived) + RingUnpopped();
    }
    // The sender's shared memory slots (register_num), as its messages
    // named them; Receive's alone.
    std::vector<std::unique_ptr<SharedSegment>> slots;
    // Slot `index`, or null: out of range or never named.
    SharedSegment* Slot(int32_t index) const {
      return index >= 0 && index < std::ssize(slots) ? slots[index].get()
                                                     : nullptr;
    }
  };

  // One incoming call (Push, or a method this server does not have): bound
  // to its inbox once its header is read.
  struct Call {
    grpc::GenericServerContext context;
    grpc::GenericServerAsyncReaderWriter stream{&context};
    grpc::ByteBuffer header;
    Op accepted, read, wrote, finished;
    Inbox* inbox = nullptr;  // set once, on the poller thread
  };

  // A broken stream usually means its peer died or failed; the job's
  // failure, which names the cause, normally follows within moments, so it
  // is waited for briefly and preferred over the bare transport error.
  // None coming means `peer` is still in the job (rank 0 hears from it):
  // the link between it and this rank was lost, and the error says so.
  absl::Status StreamLost(const std::string& what, int32_t peer);
  void Poll();
  void RequestCall();
  void OnCallRead(Call* call, bool ok);
  void StartWrite(Outgoing* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(out->mu);
  // Drops every queued piece but one being written.
  void DropQueued(Outgoing* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(out->mu);
  void OnSendCredit(Outgoing* out, bool ok);
  void OnSendWritten(Outgoing* out, bool ok);
  void GrantCredit(Inbox* inbox) ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox->mu);
  void OnCreditWritten(Inbox* inbox, bool ok);
  void FinishCall(Inbox* inbox) ABSL_EXCLUSIVE_LOCKS_REQUIRED(inbox->mu);
  // Receive's: maps the segment `piece` names into its slot; copies a SHM
  // blob of `bytes` from its slot.
  static absl::Status OpenSlot(const RegisterPiece& piece, Inbox* inbox);
  // Send's: the lowest free slot, claimed, made anew (`fresh`, to be named
  // to the receiver) where it is too small for `bytes`; or a new one while
  // fewer than register_num exist. Internal: none free nor allowed;
  // another error: no segment could be made (nothing stays claimed).
  static absl::StatusOr<int32_t> ClaimSlot(Outgoing* out, int64_t bytes,
                                           bool* fresh);
  // Send's, on an edge whose binding is kBound: the slot `reg` lives in,
  // claimed; on the register's first piece a new segment (`fresh`) that
  // the register's bytes move into for good. Internal: its slot is not
  // free; another error: no segment could be made.
  static absl::StatusOr<int32_t> BindSlot(Outgoing* out, Register* reg,
                                          bool* fresh);
  // Whether every register of `reg`'s descriptor can live in a slot: big
  // enough, read by this edge alone, in plain host memory of its own.
  static bool Bindable(const Register& reg);
  // The holds of bound registers whose slots the receiver has freed, taken
  // out of `out` (all of them with `all`), to be returned after `out->mu`.
  static std::vector<std::unique_ptr<HeldInputs>> FreedHolds(Outgoing* out,
                                                             bool all)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(out->mu);
  static absl::Status CopyFromSlot(const RegisterPiece& piece,
                                   const BlobPiece& data, void* out,
                                   int64_t bytes, Inbox* inbox);
  Outgoing* FindOutgoing(int64_t regst_desc_id, int32_t dst_rank);
  Inbox* FindInbox(int64_t regst_desc_id);

  const int32_t rank_;
  const std::string token_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const absl::Duration explain_within_;
  grpc::AsyncGenericService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::thread poller_;
  const std::shared_ptr<HeldPieces> held_ = std::make_shared<HeldPieces>();
  // Both fixed at construction: other threads only look things up.
  std::map<int64_t, std::unique_ptr<Inbox>> inboxes_;  // by regst_desc_id
  std::map<std::pair<int64_t, int32_t>, std::unique_ptr<Outgoing>> outgoing_;

  mutable Mutex mu_;
  CondVar failed_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  // No operation may start once set: the queue is shutting down.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The parker's alarms: set off only before Stop shuts the queue down.
  Mutex alarm_mu_;
  bool alarms_off_ ABSL_GUARDED_BY(alarm_mu_) = false;
  // Every call accepted or requested; freed once the queue is drained.
  std::vector<std::unique_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
};

// Picks gRPC's "poll" polling engine unless GRPC_POLL_STRATEGY is set: a
// thread waiting on a completion queue then polls that queue's connections
// itself, where the default engine ("epoll1") lets one thread poll for the
// whole process and wakes the others, a hand-off per message. Takes effect
// only before gRPC is first used in the process: call it first thing in
// main. (A round trip on 2 cores: 230 us with epoll1, 65 us with poll.)
void UseOwnPollers();

// Channel arguments every connection of a job uses: no limit on message
// size (a register may hold gigabytes), and keepalive pings a quarter of
// `peer_timeout` apart (1 s at least), each answered within the peer
// timeout, so that a link that silently stops carrying anything breaks
// within about 1.25 peer timeouts.
grpc::ChannelArguments NetChannelArguments(absl::Duration peer_timeout);
// The same keepalive on a job's server, and leave for its peers' pings.
void AddKeepalive(absl::Duration peer_timeout, grpc::ServerBuilder* builder);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_TRANSPORT_H_
