#ifndef ACTORFLOW_PYTHON_SRC_DLPACK_H_
#define ACTORFLOW_PYTHON_SRC_DLPACK_H_

#include <cstdint>

// The DLPack exchange structures (version 0.x ABI, as PyTorch 1.13 and
// numpy 1.24 read them), declared here from the published layout: a
// capsule named "dltensor" holds a DLManagedTensor*; whoever consumes it
// renames the capsule "used_dltensor" and calls `deleter` when done.
namespace actorflow::internal::python {

enum DLDeviceType : int32_t { kDLCPU = 1 };

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_DLPACK_H_
