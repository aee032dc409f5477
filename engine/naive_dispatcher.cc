#include "engine/dispatcher.h"

namespace actorflow::engine {

namespace {

// NaiveEngine: no workers. The engine runs each operation on the thread
// that pushes it and waits for its completion, which makes a failing
// operation easy to find in a debugger.
class NaiveDispatcher : public Dispatcher {
 public:
  void Dispatch(OprBlock*) override {}
  bool runs_on_caller() const override { return true; }
};

}  // namespace

std::unique_ptr<Dispatcher> MakeNaiveDispatcher() {
  return std::make_unique<NaiveDispatcher>();
}

}  // namespace actorflow::engine
