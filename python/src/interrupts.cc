#include "python/src/interrupts.h"

#include <Python.h>
#include <semaphore.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

namespace actorflow::internal::python {

namespace {

using Handler = void (*)(int);

sem_t wakeups;  // posted by the wrapper, taken by the interrupter thread
std::atomic<Handler> chained{nullptr};  // the handler the wrapper calls
std::atomic<bool> stopping{false};

std::mutex mu;  // guards what follows
std::map<int, std::function<void()>>* callbacks = nullptr;
int next_id = 0;
std::thread* interrupter = nullptr;

void Wrapper(int signal) {
  const int saved = errno;
  Handler next = chained.load(std::memory_order_acquire);
  if (next != nullptr) next(signal);
  sem_post(&wakeups);
  errno = saved;
}

void InterrupterLoop() {
  while (true) {
    while (sem_wait(&wakeups) != 0 && errno == EINTR) {
    }
    if (stopping.load()) return;
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [id, callback] : *callbacks) callback();
  }
}

// Wraps SIGINT's handler if it is a function and not the wrapper already.
void EnsureWrapped() {
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return;
  if (current.sa_flags & SA_SIGINFO) return;  // not Python's
  Handler handler = current.sa_handler;
  if (handler == SIG_DFL || handler == SIG_IGN || handler == Wrapper) return;
  chained.store(handler, std::memory_order_release);
  struct sigaction wrapped = current;
  wrapped.sa_handler = Wrapper;
  sigaction(SIGINT, &wrapped, nullptr);
}

}  // namespace

InterruptScope::InterruptScope(std::function<void()> interrupt) {
  std::lock_guard<std::mutex> lock(mu);
  if (interrupter == nullptr) {
    sem_init(&wakeups, 0, 0);
    callbacks = new std::map<int, std::function<void()>>();
    interrupter = new std::thread(InterrupterLoop);
    Py_AtExit(StopInterrupter);
  }
  id_ = next_id++;
  (*callbacks)[id_] = std::move(interrupt);
  EnsureWrapped();
}

InterruptScope::~InterruptScope() {
  std::lock_guard<std::mutex> lock(mu);
  callbacks->erase(id_);
}

void StopInterrupter() {
  std::thread* thread = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    thread = interrupter;
    interrupter = nullptr;
  }
  if (thread == nullptr) return;
  stopping.store(true);
  sem_post(&wakeups);
  thread->join();
  delete thread;
}

}  // namespace actorflow::internal::python
