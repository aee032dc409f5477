#ifndef ACTORFLOW_THREAD_CUDA_STREAM_H_
#define ACTORFLOW_THREAD_CUDA_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/cuda_api.h"
#include "thread/async_stream.h"
#include "thread/spin_mutex.h"

namespace actorflow::internal {

// A CUDA stream on one device, as an AsyncStream. Kernels launch from the
// actor's thread (Submit runs the work inline); events come from a pool,
// so recording one per act creates nothing once the pool has grown to the
// number of acts in flight. On a build without CUDA, or a machine without
// a usable device, Create says which.
class CudaStream final : public AsyncStream {
 public:
  static absl::StatusOr<std::unique_ptr<CudaStream>> Create(int device_index,
                                                            std::string name);
  // Waits for the stream's work, then destroys its events and the stream.
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  void Submit(std::function<absl::Status()> work) override;
  absl::StatusOr<EventToken> RecordEvent() override;
  absl::Status WaitEvent(EventToken event) override;
  void ReleaseEvent(EventToken event) override;
  const char* name() const override { return name_.c_str(); }
  void* native_handle() const override { return stream_; }

  int device_index() const { return device_index_; }
  // Events ever created (the pool's size): tests check it stays bounded.
  int64_t events_created() const;

 private:
  CudaStream(int device_index, std::string name, cuda::StreamHandle stream)
      : device_index_(device_index), name_(std::move(name)), stream_(stream) {}

  const int device_index_;
  const std::string name_;
  cuda::StreamHandle const stream_;
  // Recorded on the actor's thread, released on the poller's.
  mutable SpinMutex pool_mu_;
  std::vector<cuda::EventHandle> free_events_ ABSL_GUARDED_BY(pool_mu_);
  std::vector<cuda::EventHandle> all_events_ ABSL_GUARDED_BY(pool_mu_);
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_CUDA_STREAM_H_
