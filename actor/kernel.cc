#include "actorflow/kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/act_context.h"
#include "base/mutex.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::Mutex;
using ::actorflow::internal::MutexLock;
namespace {

const char* AttrTypeName(AttrValue::ValueCase value_case) {
  switch (value_case) {
    case AttrValue::kI:
      return "an int (i)";
    case AttrValue::kF:
      return "a float (f)";
    case AttrValue::kS:
      return "a string (s)";
    case AttrValue::kB:
      return "a bool (b)";
    case AttrValue::kList:
      return "a list (list)";
    case AttrValue::VALUE_NOT_SET:
      break;
  }
  return "no value";
}

absl::Status AttrError(absl::string_view name, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("kernel.attr['", name, "']: ", problem));
}

absl::Status WrongType(absl::string_view name, const AttrValue& value,
                       AttrValue::ValueCase wanted) {
  return AttrError(name,
                   absl::StrCat("must be ", AttrTypeName(wanted), ", got ",
                                AttrTypeName(value.value_case())));
}

}  // namespace

KernelInitContext::KernelInitContext(std::unique_ptr<Rep> rep)
    : rep_(std::move(rep)) {}

KernelInitContext::~KernelInitContext() = default;

const std::string& KernelInitContext::task_name() const {
  return rep_->task.name();
}

const std::string& KernelInitContext::op_type() const {
  return rep_->task.kernel().op_type();
}

std::vector<std::string> KernelInitContext::attr_names() const {
  std::vector<std::string> names;
  for (const auto& entry : rep_->task.kernel().attr()) {
    names.push_back(entry.first);
  }
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<KernelIo>& KernelInitContext::inputs() const {
  return rep_->inputs;
}

const std::vector<KernelIo>& KernelInitContext::outputs() const {
  return rep_->outputs;
}

const KernelIo* KernelInitContext::input(absl::string_view name, int i) const {
  for (const KernelIo& io : rep_->inputs) {
    if (io.name == name && i-- == 0) return &io;
  }
  return nullptr;
}

const KernelIo* KernelInitContext::output(absl::string_view name) const {
  for (const KernelIo& io : rep_->outputs) {
    if (io.name == name) return &io;
  }
  return nullptr;
}

absl::Status KernelInitContext::SetOutputBlobs(
    absl::string_view name, std::vector<BlobDesc> blobs) const {
  for (size_t o = 0; o < rep_->outputs.size(); ++o) {
    if (rep_->outputs[o].name == name) {
      rep_->inferred[o] = std::move(blobs);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("produced_regst_desc['", name, "']: missing; ",
                   rep_->task.kernel().op_type(), " produces it"));
}

const std::vector<BlobDesc>* KernelInitContext::inferred(int i) const {
  const auto& entry = rep_->inferred[i];
  return entry.has_value() ? &*entry : nullptr;
}

namespace {

const AttrValue* FindAttr(const TaskProto& task, absl::string_view name) {
  auto it = task.kernel().attr().find(std::string(name));
  return it == task.kernel().attr().end() ? nullptr : &it->second;
}

// The attribute if it has type `wanted`; null if absent and not required;
// an error naming the attribute else.
absl::StatusOr<const AttrValue*> TypedAttr(const TaskProto& task,
                                           absl::string_view name,
                                           AttrValue::ValueCase wanted,
                                           bool required) {
  const AttrValue* value = FindAttr(task, name);
  if (value == nullptr) {
    if (!required) return nullptr;
    return AttrError(name, absl::StrCat("missing; ", task.kernel().op_type(),
                                        " needs ", AttrTypeName(wanted)));
  }
  if (value->value_case() != wanted) return WrongType(name, *value, wanted);
  return value;
}

// The list attribute, after checking that only the field `kind` ("i", "f"
// or "s") has elements; null if absent.
absl::StatusOr<const AttrList*> ListAttr(const TaskProto& task,
                                         absl::string_view name,
                                         const char* kind) {
  absl::StatusOr<const AttrValue*> value =
      TypedAttr(task, name, AttrValue::kList, false);
  if (!value.ok()) return value.status();
  if (*value == nullptr) return nullptr;
  const AttrList& list = (*value)->list();
  const std::pair<const char*, int> sizes[] = {
      {"i", list.i_size()}, {"f", list.f_size()}, {"s", list.s_size()}};
  for (const auto& [field, size] : sizes) {
    if (size > 0 && std::string(field) != kind) {
      return AttrError(name, absl::StrCat("must be a list of ", kind,
                                          ", got a list of ", field));
    }
  }
  return &list;
}

// An attribute's value from TypedAttr's answer: `fallback` when absent.
template <typename T, typename Get>
absl::StatusOr<T> ValueOr(absl::StatusOr<const AttrValue*> value, Get get,
                          T fallback) {
  if (!value.ok()) return value.status();
  return *value == nullptr ? fallback : T(get(**value));
}

double GetF(const AttrValue& v) { return v.f(); }
int64_t GetI(const AttrValue& v) { return v.i(); }
const std::string& GetS(const AttrValue& v) { return v.s(); }
bool GetB(const AttrValue& v) { return v.b(); }

}  // namespace

absl::StatusOr<double> KernelInitContext::FloatAttr(
    absl::string_view name) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kF, true), GetF, 0.0);
}

absl::StatusOr<double> KernelInitContext::FloatAttrOr(absl::string_view name,
                                                      double fallback) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kF, false), GetF,
                 fallback);
}

absl::StatusOr<int64_t> KernelInitContext::IntAttr(
    absl::string_view name) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kI, true), GetI,
                 int64_t{0});
}

absl::StatusOr<int64_t> KernelInitContext::IntAttrOr(absl::string_view name,
                                                     int64_t fallback) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kI, false), GetI,
                 fallback);
}

absl::StatusOr<std::string> KernelInitContext::StringAttr(
    absl::string_view name) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kS, true), GetS,
                 std::string());
}

absl::StatusOr<std::string> KernelInitContext::StringAttrOr(
    absl::string_view name, std::string fallback) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kS, false), GetS,
                 std::move(fallback));
}

absl::StatusOr<bool> KernelInitContext::BoolAttr(absl::string_view name) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kB, true), GetB, false);
}

absl::StatusOr<bool> KernelInitContext::BoolAttrOr(absl::string_view name,
                                                   bool fallback) const {
  return ValueOr(TypedAttr(rep_->task, name, AttrValue::kB, false), GetB,
                 fallback);
}

absl::StatusOr<std::vector<int64_t>> KernelInitContext::IntListAttr(
    absl::string_view name) const {
  absl::StatusOr<const AttrList*> list = ListAttr(rep_->task, name, "i");
  if (!list.ok()) return list.status();
  if (*list == nullptr) return std::vector<int64_t>();
  return std::vector<int64_t>((*list)->i().begin(), (*list)->i().end());
}

absl::StatusOr<std::vector<double>> KernelInitContext::FloatListAttr(
    absl::string_view name) const {
  absl::StatusOr<const AttrList*> list = ListAttr(rep_->task, name, "f");
  if (!list.ok()) return list.status();
  if (*list == nullptr) return std::vector<double>();
  return std::vector<double>((*list)->f().begin(), (*list)->f().end());
}

absl::StatusOr<std::vector<std::string>> KernelInitContext::StringListAttr(
    absl::string_view name) const {
  absl::StatusOr<const AttrList*> list = ListAttr(rep_->task, name, "s");
  if (!list.ok()) return list.status();
  if (*list == nullptr) return std::vector<std::string>();
  return std::vector<std::string>((*list)->s().begin(), (*list)->s().end());
}

absl::Status KernelInitContext::ExpectInputs(int min, int max) const {
  for (const KernelIo& io : rep_->inputs) {
    if (io.name != "in") {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['", io.name,
          "']: ", rep_->task.kernel().op_type(), " consumes only \"in\""));
    }
  }
  int n = static_cast<int>(rep_->inputs.size());
  if (n < min || n > max) {
    std::string wanted =
        min == max ? absl::StrCat(min)
                   : (max == INT32_MAX ? absl::StrCat("at least ", min)
                                       : absl::StrCat(min, " to ", max));
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed_regst_desc_id['in']: ", rep_->task.kernel().op_type(),
        " takes ", wanted, " input",
        max == 1 || (min == 1 && max == INT32_MAX) ? "" : "s", ", got ", n));
  }
  return absl::OkStatus();
}

absl::Status KernelInitContext::ExpectOutput(bool required) const {
  for (const KernelIo& io : rep_->outputs) {
    if (io.name != "out" || !required) {
      return absl::InvalidArgumentError(absl::StrCat(
          "produced_regst_desc['", io.name,
          "']: ", rep_->task.kernel().op_type(),
          required ? " produces only \"out\"" : " produces nothing"));
    }
  }
  if (required && rep_->outputs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("produced_regst_desc['out']: missing; ",
                     rep_->task.kernel().op_type(), " produces \"out\""));
  }
  return absl::OkStatus();
}

absl::Status KernelInitContext::ExpectOptionalOutput() const {
  return rep_->outputs.empty() ? absl::OkStatus() : ExpectOutput(true);
}

absl::Status KernelInitContext::ExpectSameBlobs() const {
  if (rep_->inputs.empty()) return absl::OkStatus();
  const KernelIo& first = rep_->inputs[0];
  for (size_t k = 1; k < rep_->inputs.size(); ++k) {
    const KernelIo& io = rep_->inputs[k];
    std::string pair = absl::StrCat(rep_->task.kernel().op_type(),
                                    " needs inputs with the same blobs, but ");
    if (io.blobs.size() != first.blobs.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed_regst_desc_id['", io.name, "']: ", pair,
                       "regst_desc ", first.regst_desc_id, " has ",
                       first.blobs.size(), " blobs and regst_desc ",
                       io.regst_desc_id, " has ", io.blobs.size()));
    }
    for (size_t b = 0; b < io.blobs.size(); ++b) {
      const BlobDesc& a = first.blobs[b];
      const BlobDesc& c = io.blobs[b];
      std::string where = absl::StrCat(
          "consumed_regst_desc_id['", io.name, "']: ", pair, "blob '", a.name,
          "' of regst_desc ", first.regst_desc_id, " and blob '", c.name,
          "' of regst_desc ", io.regst_desc_id);
      if (a.data_type != c.data_type) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " differ in data type: ", DataTypeName(a.data_type), " vs ",
            DataTypeName(c.data_type)));
      }
      if (a.shape.size() != c.shape.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " differ in rank: ", ShapeString(a.shape),
                         " vs ", ShapeString(c.shape)));
      }
      for (size_t d = 0; d < a.shape.size(); ++d) {
        if (a.shape[d] != c.shape[d]) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " differ in dimension ", d, ": ", a.shape[d],
                           " vs ", c.shape[d]));
        }
      }
      if (a.is_dynamic != c.is_dynamic) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " differ: one is dynamic, one is not"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status KernelInitContext::ExpectInputTypes(
    absl::Span<const DataType> types) const {
  for (const KernelIo& io : rep_->inputs) {
    for (const BlobDesc& blob : io.blobs) {
      if (std::find(types.begin(), types.end(), blob.data_type) !=
          types.end()) {
        continue;
      }
      std::vector<std::string> names;
      for (DataType type : types) names.push_back(DataTypeName(type));
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['", io.name, "']: blob '", blob.name,
          "' of regst_desc ", io.regst_desc_id, " is ",
          DataTypeName(blob.data_type), "; ", rep_->task.kernel().op_type(),
          " takes ", absl::StrJoin(names, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::Status KernelInitContext::InferOutputsLikeInput() const {
  if (rep_->inputs.empty()) return absl::OkStatus();
  for (const KernelIo& io : rep_->outputs) {
    absl::Status status = SetOutputBlobs(io.name, rep_->inputs[0].blobs);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

namespace {

using Group = KernelContext::Rep::Group;

const Group* FindGroup(const std::vector<Group>& groups,
                       absl::string_view name) {
  for (const Group& group : groups) {
    if (group.name == name) return &group;
  }
  return nullptr;
}

}  // namespace

const std::string& KernelContext::task_name() const {
  return rep_->task->name();
}

const std::string& KernelContext::op_type() const {
  return rep_->task->kernel().op_type();
}

void KernelContext::ReportHeldBytes(int64_t bytes) const {
  if (rep_->held_bytes != nullptr) {
    rep_->held_bytes->store(bytes, std::memory_order_relaxed);
  }
}

int KernelContext::num_inputs(absl::string_view name) const {
  const Group* group = FindGroup(rep_->input_groups, name);
  return group == nullptr ? 0 : group->end - group->begin;
}

ConstRegisterView KernelContext::input(absl::string_view name, int i) const {
  const Group* group = FindGroup(rep_->input_groups, name);
  if (group == nullptr || i < 0 || i >= group->end - group->begin) {
    return ConstRegisterView();
  }
  return ConstRegisterView(inputs_[group->begin + i]);
}

RegisterView KernelContext::output(absl::string_view name) const {
  const Group* group = FindGroup(rep_->output_groups, name);
  return group == nullptr ? RegisterView()
                          : RegisterView(outputs_[group->begin]);
}

namespace {

// Guards every KernelRegistry's tables: registrations come from static
// initializers (one thread) and from libraries loaded while sessions look
// kernels up.
Mutex& RegistryMutex() {
  static Mutex* mu = new Mutex();
  return *mu;
}

std::string EntryName(const std::string& op_type, DeviceKind device) {
  return absl::StrCat(op_type, " (", DeviceKindName(device), ")");
}

}  // namespace

KernelRegistry& KernelRegistry::Get() {
  static KernelRegistry* registry = new KernelRegistry();  // never destroyed:
  // registrations run from static initializers in any order.
  return *registry;
}

const KernelRegistry::Entry* KernelRegistry::Find(const std::string& op_type,
                                                  DeviceKind device) const {
  for (const Entry& entry : factories_) {
    if (entry.op_type == op_type && entry.device == device) return &entry;
  }
  return nullptr;
}

bool KernelRegistry::Register(const std::string& op_type, KernelFactory factory,
                              DeviceKind device, const char* abi_stamp) {
  MutexLock lock(&RegistryMutex());
  // A library loaded behind LoadKernelLibrary's back (a bare dlopen) may
  // have been built against other headers: its kernels' layout is not
  // this runtime's, so none of them is kept.
  if (abi_stamp == nullptr ||
      std::strcmp(abi_stamp, ACTORFLOW_KERNEL_ABI_STAMP) != 0) {
    if (!quiet_refusals_) {
      std::fprintf(stderr,
                   "actorflow: %s kernel op_type '%s' was built against "
                   "another kernel ABI ('%s'; this runtime: '%s'); not "
                   "registered\n",
                   DeviceKindName(device), op_type.c_str(),
                   abi_stamp == nullptr ? "none" : abi_stamp,
                   ACTORFLOW_KERNEL_ABI_STAMP);
    }
    return false;
  }
  if (Find(op_type, device) != nullptr) {
    refused_.push_back(EntryName(op_type, device));
    if (!quiet_refusals_) {
      std::fprintf(stderr,
                   "actorflow: %s kernel op_type '%s' registered twice; "
                   "keeping the first\n",
                   DeviceKindName(device), op_type.c_str());
    }
    return false;
  }
  factories_.push_back({op_type, device, std::move(factory)});
  return true;
}

absl::StatusOr<std::unique_ptr<Kernel>> KernelRegistry::Create(
    const std::string& op_type, DeviceKind device) const {
  KernelFactory factory;
  {
    MutexLock lock(&RegistryMutex());
    if (const Entry* entry = Find(op_type, device)) factory = entry->factory;
  }
  if (factory) return factory();
  return absl::NotFoundError(
      absl::StrCat("kernel.op_type: no ", DeviceKindName(device),
                   " kernel for op_type '", op_type, "'"));
}

bool KernelRegistry::Has(const std::string& op_type, DeviceKind device) const {
  MutexLock lock(&RegistryMutex());
  return Find(op_type, device) != nullptr;
}

std::vector<std::string> KernelRegistry::op_types(DeviceKind device) const {
  std::vector<std::string> names;
  {
    MutexLock lock(&RegistryMutex());
    for (const Entry& entry : factories_) {
      if (entry.device == device) names.push_back(entry.op_type);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

KernelRegistry::Mark KernelRegistry::mark() const {
  MutexLock lock(&RegistryMutex());
  return Mark{factories_.size(), refused_.size()};
}

std::vector<std::string> KernelRegistry::RegisteredSince(Mark mark) const {
  MutexLock lock(&RegistryMutex());
  std::vector<std::string> names;
  for (size_t i = mark.registered; i < factories_.size(); ++i) {
    names.push_back(EntryName(factories_[i].op_type, factories_[i].device));
  }
  return names;
}

std::vector<std::string> KernelRegistry::RefusedSince(Mark mark) const {
  MutexLock lock(&RegistryMutex());
  return std::vector<std::string>(
      refused_.begin() + std::min(mark.refused, refused_.size()),
      refused_.end());
}

void KernelRegistry::RollBackTo(Mark mark) {
  MutexLock lock(&RegistryMutex());
  if (factories_.size() > mark.registered) {
    factories_.erase(factories_.begin() + mark.registered, factories_.end());
  }
  if (refused_.size() > mark.refused) {
    refused_.erase(refused_.begin() + mark.refused, refused_.end());
  }
}

void KernelRegistry::set_quiet_refusals(bool quiet) {
  MutexLock lock(&RegistryMutex());
  quiet_refusals_ = quiet;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
