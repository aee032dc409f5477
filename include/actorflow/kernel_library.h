#ifndef ACTORFLOW_KERNEL_LIBRARY_H_
#define ACTORFLOW_KERNEL_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Kernels built outside actorflow, as a shared library whose .cc files
// register them with ACTORFLOW_REGISTER_KERNEL (docs/plans.md, "Kernel
// libraries"). The library is built against actorflow's kernel headers and
// left with undefined references to actorflow: the process that loads it
// (the actorflow command, a program linked with libactorflow.so, the Python
// package) provides them.
//
// Loads the library at `path` (dlopen; a bare name is searched as dlopen
// searches) and keeps it loaded for the life of the process. Errors, and
// nothing of the library stays registered:
//  - it cannot be loaded (dlerror's reason: not found, an undefined
//    symbol, a wrong architecture);
//  - it registers an op_type already registered for that device (built in,
//    or by a library loaded earlier), naming every such op_type;
//  - it registers no kernel at all.
// Loading a library already loaded is a no-op. Thread-safe.
absl::Status LoadKernelLibrary(const std::string& path);

// The libraries loaded so far, as given to LoadKernelLibrary, each with the
// kernels it registered ("op_type (cpu)").
struct LoadedKernelLibrary {
  std::string path;
  std::vector<std::string> kernels;
};
std::vector<LoadedKernelLibrary> LoadedKernelLibraries();

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_KERNEL_LIBRARY_H_
