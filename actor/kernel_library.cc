#include "actorflow/kernel_library.h"

#include <dlfcn.h>
#include <link.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "actorflow/kernel.h"
#include "actorflow/version.h"
#include "base/mutex.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::Mutex;
using ::actorflow::internal::MutexLock;

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

// The kernel ABI versions stamped into the library file at `file`
// (ACTORFLOW_KERNEL_ABI_STAMP: the prefix, decimal digits, ';'), each once;
// an error if it cannot be read or is no ELF file (dlopen then says why).
// Text after the prefix that is not digits and ';' (the macro's own
// definition in debug information) is no stamp.
absl::StatusOr<std::set<int64_t>> StampedAbiVersions(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot be read");
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (bytes.compare(0, 4,
                    "\x7f"
                    "ELF") != 0) {
    return absl::InvalidArgumentError("not a shared library");
  }
  const std::string prefix = ACTORFLOW_KERNEL_ABI_STAMP_PREFIX;
  std::set<int64_t> versions;
  for (size_t at = bytes.find(prefix); at != std::string::npos;
       at = bytes.find(prefix, at + 1)) {
    size_t end = at + prefix.size();
    while (end < bytes.size() && absl::ascii_isdigit(bytes[end])) ++end;
    int64_t version = 0;
    if (end < bytes.size() && bytes[end] == ';' &&
        absl::SimpleAtoi(absl::string_view(bytes).substr(
                             at + prefix.size(), end - at - prefix.size()),
                         &version)) {
      versions.insert(version);
    }
  }
  return versions;
}

// "this runtime has kernel ABI 2 (actorflow 0.1.0)": what every refusal
// for a version says of this side.
std::string ThisRuntime() {
  return absl::StrCat("this runtime has kernel ABI ", ACTORFLOW_ABI_VERSION,
                      " (actorflow ", ACTORFLOW_VERSION_STRING, ")");
}

// The error for a library built against kernel ABI `versions`.
absl::Status AbiMismatch(const std::string& path, absl::string_view versions) {
  return absl::InvalidArgumentError(absl::StrCat(
      "kernel library '", path, "' was built against actorflow kernel ABI ",
      versions, "; ", ThisRuntime(),
      ": rebuild it against this version's SDK; nothing of the library was "
      "loaded"));
}

// OK if the library at `file` was built against this runtime's kernel ABI.
// `path` is the name it was asked for by, for the message.
absl::Status CheckKernelAbi(const std::string& path, const std::string& file) {
  absl::StatusOr<std::set<int64_t>> versions = StampedAbiVersions(file);
  if (!versions.ok()) return absl::OkStatus();
  if (versions->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel library '", path,
        "' carries no actorflow kernel ABI stamp (it was not built against "
        "actorflow's kernel headers, or registers no kernel with "
        "ACTORFLOW_REGISTER_KERNEL); ",
        ThisRuntime(), "; nothing of the library was loaded"));
  }
  if (versions->size() == 1 && *versions->begin() == ACTORFLOW_ABI_VERSION) {
    return absl::OkStatus();
  }
  return AbiMismatch(path, absl::StrJoin(*versions, " and "));
}

// dlopen's reason for refusing a library (given by bare name, so not
// checked before) that names a symbol of another ABI version's namespace
// (mangled as "9actorflow6abi_v3": actorflow::abi_v3, each name after its
// length): the mismatch said as CheckKernelAbi says it. OK for any other
// reason.
absl::Status AbiMismatchIn(const std::string& path, absl::string_view reason) {
  const absl::string_view marker = "9actorflow";
  for (size_t at = reason.find(marker); at != absl::string_view::npos;
       at = reason.find(marker, at + 1)) {
    // The next name is mangled as its length, then its characters.
    const size_t begin = at + marker.size();
    size_t end = begin;
    while (end < reason.size() && absl::ascii_isdigit(reason[end])) ++end;
    size_t length = 0;
    if (!absl::SimpleAtoi(reason.substr(begin, end - begin), &length)) continue;
    absl::string_view name = reason.substr(end, length);
    int64_t version = 0;
    if (name.size() == length && absl::ConsumePrefix(&name, "abi_v") &&
        absl::SimpleAtoi(name, &version) && version != ACTORFLOW_ABI_VERSION) {
      return AbiMismatch(path, absl::StrCat(version));
    }
  }
  return absl::OkStatus();
}

// The file dlopen found for `handle` (a bare name is searched for).
std::string LoadedFile(void* handle) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr ||
      map->l_name == nullptr) {
    return "";
  }
  return map->l_name;
}

}  // namespace

absl::Status LoadKernelLibrary(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("kernel library: empty path");
  }
  // A path names the file: its stamp is checked before anything of it
  // runs (a library of another layout could crash in its initializers).
  const bool named_file = path.find('/') != std::string::npos;
  if (named_file) {
    if (absl::Status abi = CheckKernelAbi(path, path); !abi.ok()) return abi;
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
    if (reason != nullptr) {
      if (absl::Status abi = AbiMismatchIn(path, reason); !abi.ok()) return abi;
    }
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
  // A bare name is found only by dlopen: its file is checked now (Register
  // has already refused the kernels of another ABI).
  if (!named_file) problem = CheckKernelAbi(path, LoadedFile(handle));
  if (problem.ok() && !refused.empty()) {
    problem = absl::AlreadyExistsError(absl::StrCat(
        "kernel library '", path, "' registers op_type ",
        absl::StrJoin(refused, ", "),
        ", already registered (built in or by a library loaded earlier); "
        "nothing of the library was loaded"));
  } else if (problem.ok() && registered.empty()) {
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

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
