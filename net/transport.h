#ifndef ACTORFLOW_NET_TRANSPORT_H_
#define ACTORFLOW_NET_TRANSPORT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "actor/kernel.h"
#include "net/plan_partition.h"
#include "proto/net.grpc.pb.h"
#include "thread/mutex.h"

namespace actorflow::net {

// Moves registers between the processes of a job over gRPC, one stream per
// NetEdge (the sender's client streaming to the receiver's server). Credit
// keeps the register protocol across machines: the sender may have at most
// register_num pieces of an edge that the receiver has not credited back.
// The receiver credits the pieces its net_recv took in batches of half the
// register_num (at least 1), as its next receive starts: one credit message
// per batch, not per piece. That cannot stall an edge: a sender out of
// credit has register_num uncredited pieces, so either some are still in
// transit, and net_recv reads them as its registers come back, or all were
// taken, and those are a whole batch to grant. So at most register_num
// pieces are in transit or taken uncredited, and a slow reader stops the
// producer as in one process.
//
// Thread-safety: Send for an edge runs on its net_send task's thread only,
// Receive on its net_recv's; Fail from any thread; the rest from the job's
// thread.
class Transport final : public RegstTransfer::Service {
 public:
  // `recvs`: the edges this process receives on (their inboxes exist from
  // the start, so a sender may connect before the plan runs).
  // `explain_within`: how long a broken stream waits for the job's failure
  // to explain it (the control service reports a dead or silent peer
  // within the peer timeout), before it fails on its own account.
  Transport(int32_t rank, const std::vector<NetEdge>& recvs,
            absl::Duration explain_within);
  ~Transport() override;

  // Opens a stream per edge in `sends` to the receiver at
  // addresses[dst_rank], waiting up to `timeout` for each to connect.
  absl::Status Connect(const std::vector<NetEdge>& sends,
                       const std::vector<std::string>& addresses,
                       absl::Duration timeout);
  // Sends the register's blobs (valid bytes and shapes) on edge
  // (regst, dst), after waiting for a credit. Gives up with the job's
  // failure, or when `ctx` is cancelled.
  absl::Status Send(int64_t regst_desc_id, int32_t dst_rank,
                    const KernelContext& ctx);
  // Waits for the edge's next piece and copies it into the task's "out".
  absl::Status Receive(int64_t regst_desc_id, const KernelContext& ctx);
  // Half-closes every outgoing stream and waits for the receivers to take
  // note: after the last run, before the job's final barrier.
  absl::Status CloseSends();
  // After the last run, before CloseSends: lets every incoming stream's
  // handler read to the sender's half-close (and so end the call). Does
  // not block.
  void CloseReceives();
  // The job failed: wakes every Send and Receive with `status` (they return
  // it), now and from then on. The first status wins.
  void Fail(absl::Status status);
  absl::Status failure() const;

  // RegstTransfer: the receiving end of one edge.
  grpc::Status Push(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<Credit, RegstPiece>* stream) override;

 private:
  // The receiving end of one edge. The sender's Push call lends its stream
  // to the edge's net_recv, which reads pieces straight off it (no hand-off
  // between threads on the way in) and grants credits on it; the handler
  // only waits, and reads the stream's end once the job closes receives.
  struct Inbox {
    int32_t src_rank = 0;
    Mutex mu;
    CondVar changed;
    grpc::ServerReaderWriter<Credit, RegstPiece>* stream ABSL_GUARDED_BY(mu) =
        nullptr;
    grpc::ServerContext* context ABSL_GUARDED_BY(mu) = nullptr;
    bool connected ABSL_GUARDED_BY(mu) = false;
    // net_recv is reading or writing `stream`: its handler must not return.
    bool busy ABSL_GUARDED_BY(mu) = false;
    bool draining ABSL_GUARDED_BY(mu) = false;  // CloseReceives was called
    // The handler waits for !busy: only then does Receive signal, so that
    // a piece does not wake the idle handler's thread.
    bool handler_waits ABSL_GUARDED_BY(mu) = false;
    // net_recv's alone: pieces taken but not yet credited (granted as the
    // next Receive starts, off the path of the piece just taken, once there
    // are credit_batch of them), and the piece read (reused, so its buffers
    // keep their capacity).
    int32_t owed = 0;
    int32_t credit_batch = 1;
    RegstPiece piece;
  };
  struct Outgoing {
    NetEdge edge;
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<RegstPiece, Credit>> stream;
    int32_t credits = 0;
    RegstPiece message;  // reused: its buffers keep their capacity
    bool closed = false;
  };

  // A broken stream usually means its peer died or failed; the job's
  // failure, which names the cause, normally follows within moments, so it
  // is waited for briefly and preferred over the bare transport error.
  absl::Status StreamLost(const std::string& what);

  const int32_t rank_;
  const absl::Duration explain_within_;
  std::map<int64_t, std::unique_ptr<Inbox>> inboxes_;  // by regst_desc_id
  std::map<std::pair<int64_t, int32_t>, std::unique_ptr<Outgoing>> outgoing_;

  mutable Mutex mu_;
  CondVar failed_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

// Channel arguments every connection of a job uses: no limit on message
// size (a register may hold gigabytes).
grpc::ChannelArguments NetChannelArguments();

}  // namespace actorflow::net

#endif  // ACTORFLOW_NET_TRANSPORT_H_
