#include "actorflow/kernel_state.h"

#include <utility>

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

void KernelState::Add(std::string name, DataType type,
                      std::vector<int64_t> shape, const void* data) {
  StateEntry entry;
  entry.name = std::move(name);
  entry.data_type = type;
  entry.shape = std::move(shape);
  const size_t bytes =
      static_cast<size_t>(entry.elem_cnt()) * DataTypeSize(type);
  entry.bytes.assign(static_cast<const char*>(data), bytes);
  for (StateEntry& existing : entries_) {
    if (existing.name == entry.name) {
      existing = std::move(entry);
      return;
    }
  }
  entries_.push_back(std::move(entry));
}

absl::Status KernelState::AddEntry(StateEntry entry) {
  const int64_t want =
      entry.elem_cnt() * static_cast<int64_t>(DataTypeSize(entry.data_type));
  if (static_cast<int64_t>(entry.bytes.size()) != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("state '", entry.name, "': ", entry.bytes.size(),
                     " bytes for ", DataTypeName(entry.data_type), " ",
                     ShapeString(entry.shape), ", which needs ", want));
  }
  if (Find(entry.name) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("state '", entry.name, "' appears twice"));
  }
  entries_.push_back(std::move(entry));
  return absl::OkStatus();
}

const StateEntry* KernelState::Find(absl::string_view name) const {
  for (const StateEntry& entry : entries_) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

absl::StatusOr<const StateEntry*> KernelState::Get(absl::string_view name,
                                                   DataType type,
                                                   int64_t elem_cnt) const {
  const StateEntry* entry = Find(name);
  if (entry == nullptr) {
    std::string names;
    for (const StateEntry& e : entries_) {
      absl::StrAppend(&names, names.empty() ? "" : ", ", "'", e.name, "'");
    }
    return absl::NotFoundError(
        absl::StrCat("state '", name, "' is missing (the checkpoint holds ",
                     names.empty() ? "none" : names, ")"));
  }
  if (entry->data_type != type || entry->elem_cnt() != elem_cnt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state '", name, "': ", DataTypeName(entry->data_type), " ",
        ShapeString(entry->shape), " in the checkpoint, the kernel holds ",
        DataTypeName(type), " of ", elem_cnt, " elements"));
  }
  return entry;
}

int64_t KernelState::byte_size() const {
  int64_t bytes = 0;
  for (const StateEntry& entry : entries_) {
    bytes += static_cast<int64_t>(entry.bytes.size());
  }
  return bytes;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
