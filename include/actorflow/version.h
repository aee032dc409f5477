#ifndef ACTORFLOW_VERSION_H_
#define ACTORFLOW_VERSION_H_

// Which actorflow these headers belong to.
//
// ACTORFLOW_VERSION_* name the release. ACTORFLOW_ABI_VERSION names the
// binary interface between the runtime and a kernel library built outside
// it: the layout and signatures of everything a kernel reaches through the
// kernel headers. It goes up whenever any of that changes, and only then.
//
// ACTORFLOW_REGISTER_KERNEL stamps each library with the ABI version of the
// headers it was compiled against (ACTORFLOW_KERNEL_ABI_STAMP). Loading a
// library (`actorflow run --load`, SessionOptions::kernel_libraries,
// actorflow.load_kernels in Python) reads the stamp first and refuses a
// library whose version differs from the runtime's, or that has none,
// naming both versions; nothing of the library runs then.

#define ACTORFLOW_VERSION_MAJOR 0
#define ACTORFLOW_VERSION_MINOR 1
#define ACTORFLOW_VERSION_PATCH 0
#define ACTORFLOW_VERSION_STRING "0.1.0"

#define ACTORFLOW_ABI_VERSION 2

// Everything declared by the public headers lives in an inline namespace
// named after the ABI version (actorflow::abi_v2 while ACTORFLOW_ABI_VERSION
// is 2): code names it as actorflow::Session as before, but the symbols
// carry the version, so a library built against other headers cannot bind
// to this runtime's by accident. A public header opens it right after
// `namespace actorflow {` and closes it before that namespace ends:
//   namespace actorflow {
//   ACTORFLOW_NAMESPACE_BEGIN
//   ...
//   ACTORFLOW_NAMESPACE_END
//   }  // namespace actorflow
#define ACTORFLOW_ABI_NAMESPACE_INNER(v) abi_v##v
#define ACTORFLOW_ABI_NAMESPACE_OF(v) ACTORFLOW_ABI_NAMESPACE_INNER(v)
#define ACTORFLOW_ABI_NAMESPACE \
  ACTORFLOW_ABI_NAMESPACE_OF(ACTORFLOW_ABI_VERSION)
#define ACTORFLOW_NAMESPACE_BEGIN inline namespace ACTORFLOW_ABI_NAMESPACE {
#define ACTORFLOW_NAMESPACE_END }

#define ACTORFLOW_VERSION_STRINGIZE_INNER(x) #x
#define ACTORFLOW_VERSION_STRINGIZE(x) ACTORFLOW_VERSION_STRINGIZE_INNER(x)

// The text a kernel library carries: the prefix, the decimal ABI version,
// a terminating ';'. The loader looks for the prefix in the library's file.
#define ACTORFLOW_KERNEL_ABI_STAMP_PREFIX "actorflow-kernel-abi="
#define ACTORFLOW_KERNEL_ABI_STAMP  \
  ACTORFLOW_KERNEL_ABI_STAMP_PREFIX \
  ACTORFLOW_VERSION_STRINGIZE(ACTORFLOW_ABI_VERSION) ";"

#endif  // ACTORFLOW_VERSION_H_
