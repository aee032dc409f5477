#include "engine/context.h"

namespace actorflow::engine {

const char* FnPropertyName(FnProperty prop) {
  switch (prop) {
    case FnProperty::kNormal:
      return "kNormal";
    case FnProperty::kCopyFromGPU:
      return "kCopyFromGPU";
    case FnProperty::kCopyToGPU:
      return "kCopyToGPU";
    case FnProperty::kCPUPrioritized:
      return "kCPUPrioritized";
    case FnProperty::kAsync:
      return "kAsync";
    case FnProperty::kDeleteVar:
      return "kDeleteVar";
  }
  return "unknown";
}

}  // namespace actorflow::engine
