#include "net/transport.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow::net {
namespace {

// How often a blocked Receive looks at its task's cancellation.
constexpr absl::Duration kPoll = absl::Milliseconds(20);

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

grpc::ChannelArguments NetChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Each edge gets its own connection, so one edge's bulk data does not
  // queue behind another's.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

Transport::Transport(int32_t rank, const std::vector<NetEdge>& recvs,
                     absl::Duration explain_within)
    : rank_(rank), explain_within_(explain_within) {
  for (const NetEdge& edge : recvs) {
    auto inbox = std::make_unique<Inbox>();
    inbox->src_rank = edge.src_rank;
    inbox->credit_batch = std::max(1, edge.register_num / 2);
    inboxes_[edge.regst_desc_id] = std::move(inbox);
  }
}

Transport::~Transport() {
  Fail(absl::CancelledError("the job ended"));
  MutexLock lock(&mu_);
  for (auto& [key, out] : outgoing_) {
    if (out->stream == nullptr || out->closed) continue;
    Credit credit;
    while (out->stream->Read(&credit)) {
    }
    (void)out->stream->Finish();
  }
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
    for (auto& [key, out] : outgoing_) out->context.TryCancel();
  }
  for (auto& [id, inbox] : inboxes_) {
    MutexLock lock(&inbox->mu);
    if (inbox->context != nullptr) inbox->context->TryCancel();
    inbox->changed.SignalAll();
  }
}

void Transport::CloseReceives() {
  for (auto& [id, inbox] : inboxes_) {
    MutexLock lock(&inbox->mu);
    inbox->draining = true;
    inbox->changed.SignalAll();
  }
}

absl::Status Transport::StreamLost(const std::string& what) {
  MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + explain_within_;
  while (failure_.ok() && absl::Now() < deadline) {
    failed_.WaitWithTimeout(&mu_, deadline - absl::Now());
  }
  if (!failure_.ok()) return failure_;
  return absl::UnavailableError(what);
}

absl::Status Transport::Connect(const std::vector<NetEdge>& sends,
                                const std::vector<std::string>& addresses,
                                absl::Duration timeout) {
  for (const NetEdge& edge : sends) {
    const std::string& address = addresses.at(edge.dst_rank);
    auto out = std::make_unique<Outgoing>();
    out->edge = edge;
    out->credits = edge.register_num;
    out->context.set_wait_for_ready(true);
    out->context.set_deadline(absl::ToChronoTime(absl::InfiniteFuture()));
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), NetChannelArguments());
    if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
      return absl::UnavailableError(absl::StrCat(
          "rank ", rank_, ": cannot connect to rank ", edge.dst_rank, " at ",
          address, " within ", absl::FormatDuration(timeout),
          " (to send regst ", edge.regst_desc_id, ")"));
    }
    auto stub = RegstTransfer::NewStub(channel);
    Outgoing* raw = out.get();
    {
      MutexLock lock(&mu_);
      if (!failure_.ok()) return failure_;
      outgoing_[{edge.regst_desc_id, edge.dst_rank}] = std::move(out);
    }
    raw->stream = stub->Push(&raw->context);
    RegstPiece header;
    header.set_regst_desc_id(edge.regst_desc_id);
    header.set_piece_id(-1);
    header.set_src_rank(rank_);
    if (!raw->stream->Write(header)) {
      return StreamLost(absl::StrCat(
          "rank ", rank_, ": the stream to rank ", edge.dst_rank, " for regst ",
          edge.regst_desc_id, " broke as it opened"));
    }
  }
  return absl::OkStatus();
}

absl::Status Transport::Send(int64_t regst_desc_id, int32_t dst_rank,
                             const KernelContext& ctx) {
  Outgoing* out;
  {
    MutexLock lock(&mu_);
    if (!failure_.ok()) return failure_;
    auto it = outgoing_.find({regst_desc_id, dst_rank});
    if (it == outgoing_.end()) {
      return absl::InternalError(absl::StrCat(
          "no connection to rank ", dst_rank, " for regst ", regst_desc_id));
    }
    out = it->second.get();
  }
  // Messages are built only on failure: this is once per piece.
  auto lost = [&] {
    return StreamLost(absl::StrCat("lost the connection to rank ", dst_rank,
                                   " (regst ", regst_desc_id, ", piece ",
                                   ctx.piece_id(), ")"));
  };
  // Read blocks until a credit comes; Fail cancels the stream to end it.
  while (out->credits == 0) {
    Credit credit;
    if (!out->stream->Read(&credit)) return lost();
    out->credits += credit.count();
  }
  ConstRegstView in = ctx.input(0);
  RegstPiece& message = out->message;
  message.set_regst_desc_id(regst_desc_id);
  message.set_piece_id(ctx.piece_id());
  message.set_src_rank(rank_);
  while (message.blob_size() < in.num_blobs()) message.add_blob();
  for (int b = 0; b < in.num_blobs(); ++b) {
    ConstTensorView blob = in.blob(b);
    BlobPiece* piece = message.mutable_blob(b);
    piece->mutable_data()->assign(static_cast<const char*>(blob.raw_data()),
                                  blob.byte_size());
    piece->clear_shape();
    for (int64_t dim : blob.shape()) piece->add_shape(dim);
  }
  if (!out->stream->Write(message)) return lost();
  --out->credits;
  return absl::OkStatus();
}

absl::Status Transport::Receive(int64_t regst_desc_id,
                                const KernelContext& ctx) {
  auto it = inboxes_.find(regst_desc_id);
  if (it == inboxes_.end()) {
    return absl::InternalError(
        absl::StrCat("no inbox for regst ", regst_desc_id));
  }
  Inbox& inbox = *it->second;
  grpc::ServerReaderWriter<Credit, RegstPiece>* stream;
  {
    MutexLock lock(&inbox.mu);
    while (!inbox.connected) {
      absl::Status failed = failure();
      if (!failed.ok()) return failed;
      if (ctx.cancelled()) {
        return absl::CancelledError("the run was cancelled");
      }
      inbox.changed.WaitWithTimeout(&inbox.mu, kPoll);
    }
    stream = inbox.stream;
    if (stream != nullptr) inbox.busy = true;
  }
  bool read = false;
  if (stream != nullptr) {
    if (inbox.owed >= inbox.credit_batch) {
      Credit credit;
      credit.set_count(inbox.owed);
      inbox.owed = 0;
      stream->Write(credit);  // a broken stream shows in the Read
    }
    read = stream->Read(&inbox.piece);
    MutexLock lock(&inbox.mu);
    inbox.busy = false;
    if (inbox.handler_waits) inbox.changed.SignalAll();
  }
  if (!read) {
    return StreamLost(absl::StrCat(
        "rank ", inbox.src_rank, " closed its stream of regst ", regst_desc_id,
        " before piece ", ctx.piece_id(), " (did it exit?)"));
  }
  ++inbox.owed;
  const RegstPiece& piece = inbox.piece;
  auto where = [&] {
    return absl::StrCat("regst ", regst_desc_id, " from rank ", inbox.src_rank,
                        ", piece ", ctx.piece_id());
  };
  if (piece.piece_id() != ctx.piece_id()) {
    return absl::InternalError(
        absl::StrCat(where(), ": got piece ", piece.piece_id(), " instead"));
  }
  RegstView out = ctx.output(0);
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
          where(), ": blob '", blob.name(), "' has shape ", ShapeString(shape),
          ", the register ", ShapeString(blob.shape())));
    }
    if (static_cast<int64_t>(data.data().size()) != blob.byte_size()) {
      return absl::InternalError(
          absl::StrCat(where(), ": blob '", blob.name(), "' has ",
                       data.data().size(), " bytes for shape ",
                       ShapeString(shape), ", which needs ", blob.byte_size()));
    }
    if (blob.byte_size() > 0) {
      std::memcpy(blob.mutable_raw_data(), data.data().data(),
                  blob.byte_size());
    }
  }
  return absl::OkStatus();
}

absl::Status Transport::CloseSends() {
  for (auto& [key, out] : outgoing_) {
    if (out->closed) continue;
    out->closed = true;
    out->stream->WritesDone();
    // Finish needs every incoming message read: the credits still coming.
    Credit credit;
    while (out->stream->Read(&credit)) {
    }
    grpc::Status status = out->stream->Finish();
    if (!status.ok()) {
      return StreamLost(absl::StrCat("closing the stream of regst ", key.first,
                                     " to rank ", key.second, ": ",
                                     status.error_message()));
    }
  }
  return absl::OkStatus();
}

grpc::Status Transport::Push(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<Credit, RegstPiece>* stream) {
  (void)context;
  RegstPiece header;
  if (!stream->Read(&header)) return grpc::Status::CANCELLED;
  auto it = inboxes_.find(header.regst_desc_id());
  if (it == inboxes_.end()) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("rank ", rank_, " receives no regst ",
                     header.regst_desc_id(), " (do the ranks run one plan?)"));
  }
  Inbox& inbox = *it->second;
  {
    MutexLock lock(&inbox.mu);
    if (inbox.connected) {
      return grpc::Status(
          grpc::StatusCode::ALREADY_EXISTS,
          absl::StrCat("regst ", header.regst_desc_id(),
                       " is already being sent to rank ", rank_));
    }
    inbox.connected = true;
    inbox.stream = stream;
    inbox.context = context;
    inbox.changed.SignalAll();
    // net_recv reads from here on; the call ends after the last run, or
    // when it is cancelled (a failure, or the server shutting down).
    while (!inbox.draining && !context->IsCancelled()) {
      inbox.changed.WaitWithTimeout(&inbox.mu, kPoll);
    }
    inbox.handler_waits = true;
    while (inbox.busy) inbox.changed.Wait(&inbox.mu);
  }
  int64_t extra = 0;
  RegstPiece piece;
  while (stream->Read(&piece)) ++extra;
  MutexLock lock(&inbox.mu);
  inbox.stream = nullptr;
  inbox.context = nullptr;
  if (extra > 0) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("rank ", rank_, " ran fewer pieces of regst ",
                     header.regst_desc_id(), " than rank ", inbox.src_rank,
                     " sent (", extra, " more)"));
  }
  return grpc::Status::OK;
}

}  // namespace actorflow::net
