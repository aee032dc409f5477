#ifndef ACTORFLOW_THREAD_GPU_THREAD_H_
#define ACTORFLOW_THREAD_GPU_THREAD_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "actorflow/cuda_api.h"
#include "thread/async_thread.h"
#include "thread/cuda_stream.h"

namespace actorflow::internal {

// The GPU kind: an AsyncThread over a CUDA stream of the key's device. Its
// loop thread makes that device current before handling any message, so
// kernels launched from there land on it; the poller waits on the stream's
// events and runs the actors' sends.
template <typename Msg>
class GpuThread final : public AsyncThread<Msg> {
 public:
  // Fails (naming the stream and why) when the build has no CUDA or the
  // device cannot be used; nothing is started then.
  static absl::StatusOr<std::unique_ptr<GpuThread>> Create(
      StreamKey key, MsgHandler<Msg>* handler, ChannelOptions options = {}) {
    auto stream = CudaStream::Create(key.device_index, key.ToString());
    if (!stream.ok()) return stream.status();
    return std::unique_ptr<GpuThread>(
        new GpuThread(key, handler, options, std::move(*stream)));
  }

  // Stops the loop here, while OnLoopEnd is still this class's.
  ~GpuThread() override { this->Stop(); }

 protected:
  void OnLoopStart() override {
    absl::Status status = cuda::SetDevice(this->key().device_index);
    // The stream was created on this device moments ago; failing now means
    // the device was lost, which the first launch will report by name.
    (void)status;
  }

 private:
  GpuThread(StreamKey key, MsgHandler<Msg>* handler, ChannelOptions options,
            std::unique_ptr<CudaStream> stream)
      : AsyncThread<Msg>(key, handler, options, std::move(stream)) {}
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_GPU_THREAD_H_
