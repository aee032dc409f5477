#include "thread/cuda_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

absl::StatusOr<std::unique_ptr<CudaStream>> CudaStream::Create(
    int device_index, std::string name) {
  absl::StatusOr<cuda::StreamHandle> stream = cuda::StreamCreate(device_index);
  if (!stream.ok()) {
    return absl::Status(
        stream.status().code(),
        absl::StrCat("stream ", name, ": CUDA device ", device_index, ": ",
                     stream.status().message()));
  }
  return std::unique_ptr<CudaStream>(
      new CudaStream(device_index, std::move(name), *stream));
}

CudaStream::~CudaStream() {
  // Nothing may still use an event or the stream when they are destroyed.
  (void)cuda::StreamSynchronize(device_index_, stream_);
  for (cuda::EventHandle event : all_events_) cuda::EventDestroy(event);
  cuda::StreamDestroy(device_index_, stream_);
}

void CudaStream::Submit(std::function<absl::Status()> work) {
  // The work reports its own launch errors to the act; device-side errors
  // surface when the act's event is waited for.
  (void)work();
}

absl::StatusOr<AsyncStream::EventToken> CudaStream::RecordEvent() {
  cuda::EventHandle event = nullptr;
  {
    SpinMutexLock lock(&pool_mu_);
    if (!free_events_.empty()) {
      event = free_events_.back();
      free_events_.pop_back();
    }
  }
  if (event == nullptr) {
    absl::StatusOr<cuda::EventHandle> created =
        cuda::EventCreate(device_index_);
    if (!created.ok()) return created.status();
    event = *created;
    SpinMutexLock lock(&pool_mu_);
    all_events_.push_back(event);
  }
  absl::Status recorded = cuda::EventRecord(event, stream_);
  if (!recorded.ok()) {
    ReleaseEvent(reinterpret_cast<EventToken>(event));
    return recorded;
  }
  return reinterpret_cast<EventToken>(event);
}

absl::Status CudaStream::WaitEvent(EventToken event) {
  absl::Status status =
      cuda::EventSynchronize(reinterpret_cast<cuda::EventHandle>(event));
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("stream ", name_, ": ", status.message()));
}

void CudaStream::ReleaseEvent(EventToken event) {
  SpinMutexLock lock(&pool_mu_);
  free_events_.push_back(reinterpret_cast<cuda::EventHandle>(event));
}

int64_t CudaStream::events_created() const {
  SpinMutexLock lock(&pool_mu_);
  return static_cast<int64_t>(all_events_.size());
}

}  // namespace actorflow::internal
