#include "actor/kernel_library.h"

#include <dlfcn.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/kernel.h"
#include "base/mutex.h"

namespace actorflow {

namespace {

struct Loaded {
  void* handle;
  LoadedKernelLibrary library;
};

Mutex& LoaderMutex() {
  static Mutex* mu = new Mutex();
  return *mu;
}

// Never destroyed: the libraries stay loaded until the process exits.
std::vector<Loaded>& LoadedList() {
  static auto* loaded = new std::vector<Loaded>();
  return *loaded;
}

// A library's undefined references to actorflow resolve against objects in
// the global scope. The object holding this code is there when it is the
// executable or a library the executable links (libactorflow.so); the
// Python extension module is loaded privately (RTLD_LOCAL), so it is
// promoted to the global scope first. Where that is not possible (the
// executable has no name to reopen), nothing changes.
void ShareOwnSymbols() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ShareOwnSymbols), &info) == 0 ||
      info.dli_fname == nullptr) {
    return;
  }
  if (void* self =
          dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
    dlclose(self);  // the promotion stays; only the extra reference goes
  }
}

}  // namespace

absl::Status LoadKernelLibrary(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("kernel library: empty path");
  }
  MutexLock lock(&LoaderMutex());
  ShareOwnSymbols();
  KernelRegistry& registry = KernelRegistry::Get();
  const KernelRegistry::Mark mark = registry.mark();
  registry.set_quiet_refusals(true);
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  registry.set_quiet_refusals(false);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return absl::NotFoundError(
        absl::StrCat("kernel library '", path,
                     "' cannot be loaded: ", reason ? reason : "unknown"));
  }
  for (const Loaded& loaded : LoadedList()) {
    if (loaded.handle == handle) {
      dlclose(handle);  // the count dlopen just added
      return absl::OkStatus();
    }
  }
  const std::vector<std::string> refused = registry.RefusedSince(mark);
  std::vector<std::string> registered = registry.RegisteredSince(mark);
  absl::Status problem;
  if (!refused.empty()) {
    problem = absl::AlreadyExistsError(absl::StrCat(
        "kernel library '", path, "' registers op_type ",
        absl::StrJoin(refused, ", "),
        ", already registered (built in or by a library loaded earlier); "
        "nothing of the library was loaded"));
  } else if (registered.empty()) {
    problem = absl::InvalidArgumentError(absl::StrCat(
        "kernel library '", path,
        "' registers no kernel (is each kernel registered with "
        "ACTORFLOW_REGISTER_KERNEL in a .cc file linked into it?)"));
  }
  if (!problem.ok()) {
    // The factories point into the library: gone before it is unloaded.
    registry.RollBackTo(mark);
    dlclose(handle);
    return problem;
  }
  LoadedList().push_back({handle, {path, std::move(registered)}});
  return absl::OkStatus();
}

std::vector<LoadedKernelLibrary> LoadedKernelLibraries() {
  MutexLock lock(&LoaderMutex());
  std::vector<LoadedKernelLibrary> libraries;
  for (const Loaded& loaded : LoadedList()) {
    libraries.push_back(loaded.library);
  }
  return libraries;
}

}  // namespace actorflow
