#ifndef ACTORFLOW_REGISTER_LIMIT_H_
#define ACTORFLOW_REGISTER_LIMIT_H_

#include <cstdint>

#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// The default limit on a plan's register memory (SessionOptions and
// CompileOptions::max_register_bytes): every register of every descriptor,
// host and device alike, at its blobs' (maximum) size.
inline constexpr int64_t kDefaultMaxRegisterBytes = int64_t{16} << 30;

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_REGISTER_LIMIT_H_
