#include "pipeline/sample_function.h"

#include <map>
#include <utility>

#include "base/mutex.h"

namespace actorflow::internal::pipeline {

namespace {

struct Registry {
  Mutex mu;
  int64_t next_id ABSL_GUARDED_BY(mu) = 1;
  std::map<int64_t, std::shared_ptr<const SampleFunction>> functions
      ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: no order
  return *registry;
}

}  // namespace

int64_t RegisterSampleFunction(std::shared_ptr<const SampleFunction> function) {
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  const int64_t id = registry.next_id++;
  registry.functions[id] = std::move(function);
  return id;
}

void UnregisterSampleFunction(int64_t id) {
  std::shared_ptr<const SampleFunction> dropped;  // freed outside the lock
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  auto it = registry.functions.find(id);
  if (it == registry.functions.end()) return;
  dropped = std::move(it->second);
  registry.functions.erase(it);
}

std::shared_ptr<const SampleFunction> FindSampleFunction(int64_t id) {
  Registry& registry = TheRegistry();
  MutexLock lock(&registry.mu);
  auto it = registry.functions.find(id);
  return it == registry.functions.end() ? nullptr : it->second;
}

}  // namespace actorflow::internal::pipeline
