#ifndef ACTORFLOW_MEMORY_CUDA_EMULATION_H_
#define ACTORFLOW_MEMORY_CUDA_EMULATION_H_

#include <cstdint>
#include <functional>

#include "actorflow/cuda_api.h"

// The emulated CUDA device (--config=emulated_gpu; cuda_api_emulated.cc):
// how emulated kernels (kernels/gpu/launch_emulated.cc) join a stream.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace cuda::emulated {

// Runs `work` on `stream`'s worker thread after everything queued before
// it; a null stream (the legacy stream) runs it here and now.
void Enqueue(StreamHandle stream, std::function<void()> work);

// Bytes moved by MemcpyAsync since the process started: tests check that
// copies of dynamic blobs move only the valid bytes.
int64_t AsyncBytesCopied();

}  // namespace cuda::emulated
ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_MEMORY_CUDA_EMULATION_H_
