#include "actorflow/session.h"

#include <utility>

#include "actor/register.h"
#include "actorflow/compiled_plan.h"
#include "runtime/session_impl.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::SessionImpl;

absl::StatusOr<std::unique_ptr<Session>> Session::Create(
    Plan plan, SessionOptions options) {
  absl::StatusOr<std::unique_ptr<SessionImpl>> impl =
      SessionImpl::Create(std::move(plan), std::move(options));
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Session>(new Session(std::move(*impl)));
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

absl::StatusOr<RunStats> Session::Run(int64_t pieces) {
  return impl_->Run(pieces);
}
absl::Status Session::Start(int64_t pieces) { return impl_->Start(pieces); }
absl::Status Session::Start(int64_t pieces, std::vector<int64_t> cuts) {
  return impl_->Start(pieces, std::move(cuts));
}
absl::StatusOr<CheckpointData> Session::TakeSnapshot(int64_t cut,
                                                     absl::Duration timeout) {
  return impl_->TakeSnapshot(cut, timeout);
}
absl::StatusOr<RunStats> Session::Wait() { return impl_->Wait(); }
bool Session::running() const { return impl_->running(); }
RunProgress Session::Progress() const { return impl_->Progress(); }

std::string Session::DescribeWaits(const std::string& reason) {
  return impl_->DescribeWaits(reason);
}

absl::StatusOr<int64_t> Session::HoldSources(absl::Duration timeout) {
  return impl_->HoldSources(timeout);
}

absl::Status Session::EndRunAt(int64_t piece) { return impl_->EndRunAt(piece); }

absl::Status Session::Feed(absl::string_view name, const Tensor& tensor) {
  return impl_->Feed(name, tensor);
}
absl::Status Session::TryFeed(absl::string_view name, const Tensor& tensor) {
  return impl_->TryFeed(name, tensor);
}
absl::Status Session::CloseFeed(absl::string_view name) {
  return impl_->CloseFeed(name);
}
absl::Status Session::CloseFeeds() { return impl_->CloseFeeds(); }
absl::StatusOr<Tensor> Session::Fetch(absl::string_view name) {
  return impl_->Fetch(name);
}
absl::StatusOr<FetchedTensor> Session::FetchBorrowed(absl::string_view name) {
  return impl_->FetchBorrowed(name);
}

absl::StatusOr<CheckpointData> Session::Snapshot(absl::Duration timeout) {
  return impl_->Snapshot(timeout);
}
absl::StatusOr<CheckpointInfo> Session::Checkpoint(
    const std::string& root, const CheckpointOptions& options) {
  return impl_->Checkpoint(root, options);
}
absl::StatusOr<CheckpointInfo> Session::Restore(const std::string& dir,
                                                const RestoreOptions& options) {
  return impl_->Restore(dir, options);
}
absl::Status Session::RestoreFrom(const CheckpointData& data,
                                  const std::string& path,
                                  const RestoreOptions& options) {
  return impl_->RestoreFrom(data, path, options);
}
const std::optional<CheckpointInfo>& Session::restored() const {
  return impl_->restored();
}
int64_t Session::next_piece() const { return impl_->next_piece(); }

std::map<std::string, SinkSummary> Session::Sinks() const {
  return impl_->Sinks();
}
const RunTrace& Session::trace() const { return impl_->trace(); }
const CompiledPlan& Session::compiled() const { return impl_->compiled(); }
const ThreadPlacement& Session::threads() const { return impl_->threads(); }
void Session::Abort(absl::Status status) { impl_->Abort(std::move(status)); }
absl::Status Session::status() const { return impl_->status(); }
bool Session::left_threads_running() const {
  return impl_->left_threads_running();
}

FetchedTensor::FetchedTensor(FetchedTensor&& other) noexcept
    : session_(other.session_), register_(other.register_) {
  other.register_ = nullptr;
}

FetchedTensor& FetchedTensor::operator=(FetchedTensor&& other) noexcept {
  if (this != &other) {
    Release();
    session_ = other.session_;
    register_ = other.register_;
    other.register_ = nullptr;
  }
  return *this;
}

int64_t FetchedTensor::piece_id() const {
  return register_ == nullptr ? -1 : register_->piece_id();
}

ConstTensorView FetchedTensor::view() const {
  return ConstTensorView(register_ == nullptr ? nullptr : &register_->blob(0));
}

absl::StatusOr<TakenTensor> FetchedTensor::TakeOver() {
  if (register_ == nullptr) {
    return absl::FailedPreconditionError("TakeOver: nothing is held");
  }
  absl::StatusOr<TakenTensor> taken = session_->TakeOver(register_);
  if (taken.ok()) Release();
  return taken;
}

void FetchedTensor::Release() {
  if (register_ == nullptr) return;
  session_->Release(register_);
  register_ = nullptr;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
