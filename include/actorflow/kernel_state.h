#ifndef ACTORFLOW_KERNEL_STATE_H_
#define ACTORFLOW_KERNEL_STATE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "actorflow/stream_key.h"
#include "actorflow/version.h"

// What a kernel keeps from one piece to the next (weights, optimizer
// moments, counters) as named host arrays: what a checkpoint saves and a
// restore gives back (docs/checkpoints.md). Entries keep the order they
// were added in; names are unique.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

struct StateEntry {
  std::string name;
  DataType data_type = DT_FLOAT32;
  std::vector<int64_t> shape;  // {} for a scalar
  std::string bytes;           // the elements, dense, row-major

  int64_t elem_cnt() const { return ShapeElemCnt(shape); }
};

class KernelState {
 public:
  // Adds a copy of `data` (elem_cnt(shape) elements of `type`). An entry of
  // the same name is replaced.
  void Add(std::string name, DataType type, std::vector<int64_t> shape,
           const void* data);
  template <typename T>
  void AddValues(std::string name, absl::Span<const T> values,
                 std::vector<int64_t> shape) {
    Add(std::move(name), DataTypeOf<T>::value, std::move(shape), values.data());
  }
  template <typename T>
  void AddValues(std::string name, absl::Span<const T> values) {
    AddValues(std::move(name), values, {static_cast<int64_t>(values.size())});
  }
  template <typename T>
  void AddScalar(std::string name, T value) {
    Add(std::move(name), DataTypeOf<T>::value, {}, &value);
  }
  // An entry made elsewhere (a checkpoint being read).
  absl::Status AddEntry(StateEntry entry);

  // Null if absent.
  const StateEntry* Find(absl::string_view name) const;
  // The entry, which must exist with this type and element count; errors
  // name the entry and both sides ("state 'velocity': float32 [100] in the
  // checkpoint, the kernel holds float32 [200]").
  absl::StatusOr<const StateEntry*> Get(absl::string_view name, DataType type,
                                        int64_t elem_cnt) const;
  // Copies entry `name` into `to` (exactly to.size() elements of T).
  template <typename T>
  absl::Status Read(absl::string_view name, absl::Span<T> to) const {
    auto entry =
        Get(name, DataTypeOf<T>::value, static_cast<int64_t>(to.size()));
    if (!entry.ok()) return entry.status();
    if (!to.empty())
      std::memcpy(to.data(), (*entry)->bytes.data(), to.size() * sizeof(T));
    return absl::OkStatus();
  }
  template <typename T>
  absl::StatusOr<T> Scalar(absl::string_view name) const {
    T value{};
    absl::Status read = Read(name, absl::Span<T>(&value, 1));
    if (!read.ok()) return read;
    return value;
  }

  const std::vector<StateEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  int64_t byte_size() const;

 private:
  std::vector<StateEntry> entries_;
};

// Where a kernel's state is saved or restored: on its task's thread,
// between pieces, never during Forward. On an asynchronous (GPU) stream the
// stream has drained its queued work before either call; a GPU kernel uses
// `cuda_stream` and `stream.device_index` for its copies and waits for them
// before it returns.
struct KernelStateContext {
  std::string task_name;
  StreamKey stream;
  void* cuda_stream = nullptr;
  // The first piece after the cut: the next piece the task would act on.
  int64_t piece = 0;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_KERNEL_STATE_H_
