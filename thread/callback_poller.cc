#include "thread/callback_poller.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

namespace {
// The poller mostly waits inside WaitEvent; between callbacks a short spin
// catches the next one of a busy stream without a futex round trip.
constexpr ChannelOptions kPollerChannel{.spin_ns = 5'000};
}  // namespace

CallbackPoller::CallbackPoller(std::string name)
    : name_(std::move(name)), items_(kPollerChannel) {
  thread_ = std::thread([this] { Loop(); });
}

absl::Status CallbackPoller::AddCallback(AsyncStream* stream, Callback fn) {
  absl::StatusOr<AsyncStream::EventToken> event = stream->RecordEvent();
  if (!event.ok()) {
    return absl::Status(
        event.status().code(),
        absl::StrCat("stream ", stream->name(),
                     ": recording an event: ", event.status().message()));
  }
  if (items_.Send(Item{stream, *event, std::move(fn)}) != ChannelStatus::kOk) {
    stream->ReleaseEvent(*event);
    return absl::FailedPreconditionError(
        absl::StrCat("callback poller ", name_, " is stopped"));
  }
  return absl::OkStatus();
}

void CallbackPoller::Stop() {
  items_.Close();
  if (thread_.joinable()) thread_.join();
}

void CallbackPoller::Loop() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  Item item;
  while (items_.Receive(&item) == ChannelStatus::kOk) {
    absl::Status status = item.stream->WaitEvent(item.event);
    item.stream->ReleaseEvent(item.event);
    item.fn(std::move(status));
    item.fn = nullptr;  // drop captures now, not at the next item
  }
}

}  // namespace actorflow::internal
