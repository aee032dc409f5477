#ifndef ACTORFLOW_PYTHON_SRC_INTERRUPTS_H_
#define ACTORFLOW_PYTHON_SRC_INTERRUPTS_H_

#include <functional>

// Ctrl-C for calls that block in C++ without the GIL. Python only notes a
// SIGINT in its C handler and raises KeyboardInterrupt once the main thread
// runs Python again, which a thread parked in a condition variable never
// does. So while such a call runs, SIGINT's handler is wrapped: the wrapper
// calls Python's, then wakes the interrupter thread (a semaphore, the one
// async-signal-safe hand-off), which runs the interrupt callback of every
// call in progress (aborting its session); the call returns, and the
// caller's PyErr_CheckSignals raises Python's KeyboardInterrupt.
//
// The wrapper is (re)installed at each scope, chaining whatever C handler is
// there (Python's; a handler set later with signal.signal replaces the
// wrapper until the next scope). With SIGINT ignored or at its default
// nothing is wrapped. The interrupter thread starts with the first scope
// and is joined at interpreter exit.
namespace actorflow::internal::python {

class InterruptScope {
 public:
  // `interrupt` must make the blocked call return soon; it runs on the
  // interrupter thread, not under any Python lock.
  explicit InterruptScope(std::function<void()> interrupt);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  int id_;
};

// Joins the interrupter thread (registered with Py_AtExit).
void StopInterrupter();

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_INTERRUPTS_H_
