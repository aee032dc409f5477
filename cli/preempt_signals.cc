#include "cli/preempt_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "absl/time/clock.h"

namespace actorflow::internal::cli {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGUSR1};
constexpr unsigned char kStop = 0;  // no signal has number 0

std::atomic<int> g_write_fd{-1};

void OnSignal(int signal) {
  const int saved = errno;  // a handler must leave errno as it found it
  const unsigned char byte = static_cast<unsigned char>(signal);
  const int fd = g_write_fd.load();
  if (fd >= 0) (void)!write(fd, &byte, 1);
  errno = saved;
}

}  // namespace

PreemptSignals::PreemptSignals() {
  if (pipe2(pipe_, O_CLOEXEC) != 0) return;  // signals keep their defaults
  g_write_fd.store(pipe_[1]);
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : kSignals) sigaction(signal, &action, nullptr);
}

PreemptSignals::~PreemptSignals() {
  Stop();
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  for (int signal : kSignals) sigaction(signal, &action, nullptr);
  g_write_fd.store(-1);
  for (int fd : pipe_) {
    if (fd >= 0) close(fd);
  }
}

void PreemptSignals::Watch(std::function<void(const std::string&)> preempt,
                           absl::Duration grace, std::function<void()> late) {
  if (pipe_[0] < 0 || watcher_.joinable()) return;
  watcher_ =
      std::thread([this, preempt = std::move(preempt), grace,
                   late = std::move(late)] { Loop(preempt, grace, late); });
}

void PreemptSignals::Stop() {
  if (!watcher_.joinable()) return;
  (void)!write(pipe_[1], &kStop, 1);
  watcher_.join();
}

void PreemptSignals::Loop(
    const std::function<void(const std::string&)>& preempt,
    absl::Duration grace, const std::function<void()>& late) {
  absl::Time deadline = absl::InfiniteFuture();
  bool signalled = false;
  for (;;) {
    int wait_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      wait_ms = static_cast<int>(std::max<int64_t>(
          absl::ToInt64Milliseconds(deadline - absl::Now()), 0));
    }
    struct pollfd ready {
      pipe_[0], POLLIN, 0
    };
    const int n = poll(&ready, 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // the grace passed
      deadline = absl::InfiniteFuture();
      late();
      continue;
    }
    unsigned char byte = kStop;
    if (read(pipe_[0], &byte, 1) != 1 || byte == kStop) return;
    if (signalled) continue;
    signalled = true;
    deadline = absl::Now() + grace;
    preempt(byte == SIGUSR1 ? "SIGUSR1" : "SIGTERM");
  }
}

}  // namespace actorflow::internal::cli
