#include "actor/kernel.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace actorflow {
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

KernelInitContext::KernelInitContext(const TaskProto& task,
                                     std::vector<KernelIo> inputs,
                                     std::vector<KernelIo> outputs)
    : task_(task), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

const AttrValue* KernelInitContext::FindAttr(absl::string_view name) const {
  auto it = task_.kernel().attr().find(std::string(name));
  return it == task_.kernel().attr().end() ? nullptr : &it->second;
}

absl::StatusOr<const AttrValue*> KernelInitContext::TypedAttr(
    absl::string_view name, int value_case, bool required) const {
  auto wanted = static_cast<AttrValue::ValueCase>(value_case);
  const AttrValue* value = FindAttr(name);
  if (value == nullptr) {
    if (!required) return nullptr;
    return AttrError(name, absl::StrCat("missing; ", task_.kernel().op_type(),
                                        " needs ", AttrTypeName(wanted)));
  }
  if (value->value_case() != wanted) return WrongType(name, *value, wanted);
  return value;
}

absl::StatusOr<double> KernelInitContext::FloatAttr(
    absl::string_view name) const {
  absl::StatusOr<const AttrValue*> value = TypedAttr(name, AttrValue::kF, true);
  if (!value.ok()) return value.status();
  return (*value)->f();
}

absl::StatusOr<double> KernelInitContext::FloatAttrOr(absl::string_view name,
                                                      double fallback) const {
  absl::StatusOr<const AttrValue*> value =
      TypedAttr(name, AttrValue::kF, false);
  if (!value.ok()) return value.status();
  return *value == nullptr ? fallback : (*value)->f();
}

absl::StatusOr<int64_t> KernelInitContext::IntAttr(
    absl::string_view name) const {
  absl::StatusOr<const AttrValue*> value = TypedAttr(name, AttrValue::kI, true);
  if (!value.ok()) return value.status();
  return (*value)->i();
}

absl::StatusOr<int64_t> KernelInitContext::IntAttrOr(absl::string_view name,
                                                     int64_t fallback) const {
  absl::StatusOr<const AttrValue*> value =
      TypedAttr(name, AttrValue::kI, false);
  if (!value.ok()) return value.status();
  return *value == nullptr ? fallback : (*value)->i();
}

absl::Status KernelInitContext::ExpectInputs(int min, int max) const {
  for (const KernelIo& io : inputs_) {
    if (io.name != "in") {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['", io.name, "']: ", task_.kernel().op_type(),
          " consumes only \"in\""));
    }
  }
  int n = static_cast<int>(inputs_.size());
  if (n < min || n > max) {
    std::string wanted =
        min == max ? absl::StrCat(min)
                   : (max == INT32_MAX ? absl::StrCat("at least ", min)
                                       : absl::StrCat(min, " to ", max));
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed_regst_desc_id['in']: ", task_.kernel().op_type(), " takes ",
        wanted, " input", max == 1 || (min == 1 && max == INT32_MAX) ? "" : "s",
        ", got ", n));
  }
  return absl::OkStatus();
}

absl::Status KernelInitContext::ExpectOutput(bool required) const {
  for (const KernelIo& io : outputs_) {
    if (io.name != "out" || !required) {
      return absl::InvalidArgumentError(absl::StrCat(
          "produced_regst_desc['", io.name, "']: ", task_.kernel().op_type(),
          required ? " produces only \"out\"" : " produces nothing"));
    }
  }
  if (required && outputs_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("produced_regst_desc['out']: missing; ",
                     task_.kernel().op_type(), " produces \"out\""));
  }
  return absl::OkStatus();
}

absl::Status KernelInitContext::ExpectOptionalOutput() const {
  return outputs_.empty() ? absl::OkStatus() : ExpectOutput(true);
}

absl::Status KernelInitContext::ExpectSameElemCnt() const {
  const KernelIo* first = nullptr;
  for (const auto* list : {&inputs_, &outputs_}) {
    for (const KernelIo& io : *list) {
      if (first == nullptr) {
        first = &io;
      } else if (io.elem_cnt != first->elem_cnt) {
        return absl::InvalidArgumentError(absl::StrCat(
            "elem_cnt: ", task_.kernel().op_type(),
            " needs equal sizes, but regst_desc ", first->regst_desc_id,
            " has ", first->elem_cnt, " and regst_desc ", io.regst_desc_id,
            " has ", io.elem_cnt));
      }
    }
  }
  return absl::OkStatus();
}

absl::Span<Regst* const> KernelContext::inputs(absl::string_view name) const {
  for (const Group& group : input_groups_) {
    if (group.name == name) {
      return absl::MakeConstSpan(inputs_).subspan(group.begin,
                                                  group.end - group.begin);
    }
  }
  return {};
}

Regst* KernelContext::output(absl::string_view name) const {
  for (const Group& group : output_groups_) {
    if (group.name == name) return outputs_[group.begin];
  }
  return nullptr;
}

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
                              DeviceKind device) {
  if (Has(op_type, device)) {
    std::fprintf(stderr,
                 "actorflow: %s kernel op_type '%s' registered twice; keeping "
                 "the first\n",
                 DeviceKindName(device), op_type.c_str());
    return false;
  }
  factories_.push_back({op_type, device, std::move(factory)});
  return true;
}

absl::StatusOr<std::unique_ptr<Kernel>> KernelRegistry::Create(
    const std::string& op_type, DeviceKind device) const {
  if (const Entry* entry = Find(op_type, device)) return entry->factory();
  return absl::NotFoundError(
      absl::StrCat("kernel.op_type: no ", DeviceKindName(device),
                   " kernel for op_type '", op_type, "'"));
}

bool KernelRegistry::Has(const std::string& op_type, DeviceKind device) const {
  return Find(op_type, device) != nullptr;
}

std::vector<std::string> KernelRegistry::op_types(DeviceKind device) const {
  std::vector<std::string> names;
  for (const Entry& entry : factories_) {
    if (entry.device == device) names.push_back(entry.op_type);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace actorflow
