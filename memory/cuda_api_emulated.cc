// An emulated CUDA device, for running the GPU code paths (CudaStream,
// GpuThread, device registers, GPU kernels, copies) on machines without a
// GPU: `--config=emulated_gpu`. It has kDevices devices whose memory is host
// memory; each stream is a worker thread that runs what is queued on it in
// order, later and elsewhere, as a device would; an event marks a point in
// its stream's queue and EventSynchronize waits until the worker has passed
// it. A missing wait in the runtime therefore shows as stale data or a
// ThreadSanitizer report, as it would on a GPU. What it cannot show: real
// device faults, and anything about the .cu code (kernels here are the host
// loops of launch_emulated.cc).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "actorflow/cuda_api.h"
#include "base/mutex.h"
#include "memory/cuda_emulation.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::CondVar;
using ::actorflow::internal::Mutex;
using ::actorflow::internal::MutexLock;
namespace cuda {
namespace {

constexpr int kDevices = 2;

class Stream {
 public:
  Stream() : worker_([this] { Loop(); }) {}
  ~Stream() {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    work_ready_.SignalAll();
    worker_.join();
  }

  void Enqueue(std::function<void()> work) {
    {
      MutexLock lock(&mu_);
      queue_.push_back(std::move(work));
      ++enqueued_;
    }
    work_ready_.Signal();
  }
  // The point after everything queued so far.
  uint64_t Mark() {
    MutexLock lock(&mu_);
    return enqueued_;
  }
  void WaitFor(uint64_t mark) {
    MutexLock lock(&mu_);
    while (completed_ < mark) progress_.Wait(&mu_);
  }

 private:
  void Loop() {
    while (true) {
      std::function<void()> work;
      {
        MutexLock lock(&mu_);
        while (!stopping_ && queue_.empty()) work_ready_.Wait(&mu_);
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      work();
      {
        MutexLock lock(&mu_);
        ++completed_;
      }
      progress_.SignalAll();
    }
  }

  Mutex mu_;
  CondVar work_ready_;
  CondVar progress_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

struct Event {
  Stream* stream = nullptr;  // null until recorded
  uint64_t mark = 0;
  // Timing events: the steady clock when the stream's worker passed the
  // event, written by that worker before the mark completes.
  bool timing = false;
  std::shared_ptr<std::atomic<int64_t>> reached_ns;
};

// Every live stream, for DeviceSynchronize.
Mutex streams_mu;
std::set<Stream*>& Streams() ABSL_EXCLUSIVE_LOCKS_REQUIRED(streams_mu) {
  static auto* streams = new std::set<Stream*>();
  return *streams;
}

Stream* AsStream(StreamHandle stream) { return static_cast<Stream*>(stream); }

void* AllocateHost(size_t bytes) {
  // 256-byte aligned, like cudaMalloc.
  return std::aligned_alloc(256, (bytes + 255) / 256 * 256);
}

}  // namespace

namespace emulated {
void Enqueue(StreamHandle stream, std::function<void()> work) {
  if (stream == nullptr) {
    work();
  } else {
    AsStream(stream)->Enqueue(std::move(work));
  }
}
}  // namespace emulated

bool BuiltWithCuda() { return true; }
bool EmulatedDevice() { return true; }

absl::StatusOr<int> DeviceCount() { return kDevices; }

absl::Status DeviceAvailable(int device_index) {
  if (device_index < 0 || device_index >= kDevices) {
    return absl::UnavailableError(absl::StrCat(
        "CUDA device ", device_index, " does not exist (this machine has ",
        kDevices, " emulated devices)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> DeviceMalloc(int device_index, size_t bytes) {
  absl::Status status = DeviceAvailable(device_index);
  if (!status.ok()) return status;
  void* ptr = AllocateHost(bytes);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaMalloc(", bytes, " bytes): out of memory"));
  }
  return ptr;
}

void DeviceFree(int, void* ptr) { std::free(ptr); }

absl::StatusOr<void*> PinnedMalloc(size_t bytes) {
  void* ptr = AllocateHost(bytes);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaMallocHost(", bytes, " bytes): out of memory"));
  }
  return ptr;
}

void PinnedFree(void* ptr) { std::free(ptr); }

absl::Status MemcpyHostToDevice(int device_index, void* dst, const void* src,
                                size_t bytes) {
  absl::Status status = DeviceAvailable(device_index);
  if (status.ok()) std::memcpy(dst, src, bytes);
  return status;
}

absl::Status MemcpyDeviceToHost(int device_index, void* dst, const void* src,
                                size_t bytes) {
  return MemcpyHostToDevice(device_index, dst, src, bytes);
}

absl::Status MemcpyHostToDeviceAsync(int device_index, void* dst,
                                     const void* src, size_t bytes,
                                     StreamHandle stream) {
  absl::Status status = DeviceAvailable(device_index);
  if (!status.ok()) return status;
  return MemcpyAsync(dst, src, bytes, stream);
}

namespace {
std::atomic<int64_t> async_bytes_copied{0};
}  // namespace

int64_t emulated::AsyncBytesCopied() {
  return async_bytes_copied.load(std::memory_order_relaxed);
}

absl::Status MemcpyAsync(void* dst, const void* src, size_t bytes,
                         StreamHandle stream) {
  async_bytes_copied.fetch_add(static_cast<int64_t>(bytes),
                               std::memory_order_relaxed);
  emulated::Enqueue(stream, [=] { std::memcpy(dst, src, bytes); });
  return absl::OkStatus();
}

absl::Status DeviceMemset(int device_index, void* ptr, int value,
                          size_t bytes) {
  absl::Status status = DeviceAvailable(device_index);
  if (status.ok()) std::memset(ptr, value, bytes);
  return status;
}

absl::Status DeviceSynchronize(int device_index) {
  absl::Status status = DeviceAvailable(device_index);
  if (!status.ok()) return status;
  MutexLock lock(&streams_mu);
  for (Stream* stream : Streams()) stream->WaitFor(stream->Mark());
  return absl::OkStatus();
}

absl::Status SetDevice(int device_index) {
  return DeviceAvailable(device_index);
}

absl::StatusOr<StreamHandle> StreamCreate(int device_index) {
  absl::Status status = DeviceAvailable(device_index);
  if (!status.ok()) return status;
  auto* stream = new Stream();
  MutexLock lock(&streams_mu);
  Streams().insert(stream);
  return static_cast<StreamHandle>(stream);
}

absl::Status StreamSynchronize(int, StreamHandle stream) {
  AsStream(stream)->WaitFor(AsStream(stream)->Mark());
  return absl::OkStatus();
}

void StreamDestroy(int, StreamHandle stream) {
  {
    MutexLock lock(&streams_mu);
    Streams().erase(AsStream(stream));
  }
  delete AsStream(stream);  // runs what is still queued first
}

absl::StatusOr<EventHandle> EventCreate(int device_index) {
  absl::Status status = DeviceAvailable(device_index);
  if (!status.ok()) return status;
  return static_cast<EventHandle>(new Event());
}

absl::Status EventRecord(EventHandle event, StreamHandle stream) {
  auto* e = static_cast<Event*>(event);
  if (e->timing) {
    // A fresh cell per record: a stale stamp from an earlier record must not
    // be read as this one's.
    e->reached_ns = std::make_shared<std::atomic<int64_t>>(0);
    AsStream(stream)->Enqueue([cell = e->reached_ns] {
      cell->store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count(),
                  std::memory_order_release);
    });
  }
  e->stream = AsStream(stream);
  e->mark = e->stream->Mark();
  return absl::OkStatus();
}

absl::Status EventSynchronize(EventHandle event) {
  auto* e = static_cast<Event*>(event);
  if (e->stream != nullptr) e->stream->WaitFor(e->mark);
  return absl::OkStatus();
}

void EventDestroy(EventHandle event) { delete static_cast<Event*>(event); }

absl::StatusOr<EventHandle> TimingEventCreate(int device_index) {
  absl::Status status = DeviceAvailable(device_index);
  if (!status.ok()) return status;
  auto* event = new Event();
  event->timing = true;
  return static_cast<EventHandle>(event);
}

absl::StatusOr<int64_t> EventElapsedNs(EventHandle start, EventHandle end) {
  auto* s = static_cast<Event*>(start);
  auto* e = static_cast<Event*>(end);
  if (!s->timing || !e->timing || s->stream == nullptr ||
      e->stream == nullptr) {
    return absl::FailedPreconditionError(
        "EventElapsedNs: both events must be timing events, recorded");
  }
  (void)EventSynchronize(start);
  (void)EventSynchronize(end);
  return e->reached_ns->load(std::memory_order_acquire) -
         s->reached_ns->load(std::memory_order_acquire);
}

absl::Status LastLaunchError(const char*) { return absl::OkStatus(); }

}  // namespace cuda
ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
