#include "plan/plan_signature.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actor/blob_desc_proto.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "plan/plan_util.h"

namespace actorflow::internal {
namespace {

std::string AttrText(const AttrValue* value) {
  if (value == nullptr) return "absent";
  std::string text = value->ShortDebugString();
  return text.empty() ? "empty" : absl::StrCat("{", text, "}");
}

std::string BlobText(const BlobSignature& blob) {
  return absl::StrCat(
      blob.name(), ": ", DataTypeName(ToDataType(blob.data_type())), " ",
      ShapeString(blob.shape()), blob.is_dynamic() ? " dynamic" : "");
}

std::string ListText(
    const google::protobuf::RepeatedPtrField<std::string>& list) {
  return absl::StrCat("[", absl::StrJoin(list, ", "), "]");
}

// The first difference between two signatures of task `name`.
std::string DiffTask(const TaskSignature& was, const TaskSignature& is) {
  const std::string where = absl::StrCat("task '", is.name(), "': ");
  if (was.op_type() != is.op_type()) {
    return absl::StrCat(where, "op_type '", was.op_type(),
                        "' in the checkpoint, '", is.op_type(),
                        "' in this plan");
  }
  std::set<std::string> keys;
  for (const auto& [key, value] : was.attr()) keys.insert(key);
  for (const auto& [key, value] : is.attr()) keys.insert(key);
  for (const std::string& key : keys) {
    auto a = was.attr().find(key);
    auto b = is.attr().find(key);
    const AttrValue* va = a == was.attr().end() ? nullptr : &a->second;
    const AttrValue* vb = b == is.attr().end() ? nullptr : &b->second;
    if (va != nullptr && vb != nullptr &&
        google::protobuf::util::MessageDifferencer::Equals(*va, *vb)) {
      continue;
    }
    return absl::StrCat(where, "attr '", key, "' is ", AttrText(va),
                        " in the checkpoint, ", AttrText(vb), " in this plan");
  }
  if (was.input_size() != is.input_size() ||
      !std::equal(was.input().begin(), was.input().end(), is.input().begin())) {
    return absl::StrCat(where, "inputs ", ListText(was.input()),
                        " in the checkpoint, ", ListText(is.input()),
                        " in this plan");
  }
  std::map<std::string, const OutputSignature*> outputs;
  for (const OutputSignature& out : was.output()) outputs[out.name()] = &out;
  for (const OutputSignature& out : is.output()) {
    auto found = outputs.find(out.name());
    if (found == outputs.end()) {
      return absl::StrCat(where, "output '", out.name(),
                          "' is not in the checkpoint");
    }
    const OutputSignature& old = *found->second;
    outputs.erase(found);
    const std::string at = absl::StrCat(where, "output '", out.name(), "' ");
    for (int b = 0; b < std::max(old.blob_size(), out.blob_size()); ++b) {
      if (b >= old.blob_size()) {
        return absl::StrCat(at, "blob '", out.blob(b).name(),
                            "' is not in the checkpoint");
      }
      if (b >= out.blob_size()) {
        return absl::StrCat(at, "blob '", old.blob(b).name(),
                            "' is in the checkpoint but not in this plan");
      }
      const BlobSignature& x = old.blob(b);
      const BlobSignature& y = out.blob(b);
      if (google::protobuf::util::MessageDifferencer::Equals(x, y)) continue;
      if (x.name() == y.name() && x.data_type() == y.data_type() &&
          x.is_dynamic() == y.is_dynamic()) {
        return absl::StrCat(at, "blob '", x.name(), "' has shape ",
                            ShapeString(x.shape()), " in the checkpoint, ",
                            ShapeString(y.shape()), " in this plan");
      }
      return absl::StrCat(at, "blob ", BlobText(x), " in the checkpoint, ",
                          BlobText(y), " in this plan");
    }
  }
  if (!outputs.empty()) {
    return absl::StrCat(where, "output '", outputs.begin()->first,
                        "' is in the checkpoint but not in this plan");
  }
  return "";
}

}  // namespace

std::vector<TaskSignature> SignPlan(const Plan& plan) {
  absl::flat_hash_map<int64_t, std::string> source;  // regst id -> "task.out"
  for (const TaskProto& task : plan.task()) {
    for (const auto& [name, desc] : task.produced_regst_desc()) {
      source[desc.regst_desc_id()] = absl::StrCat(task.name(), ".", name);
    }
  }
  std::vector<TaskSignature> signature;
  signature.reserve(plan.task_size());
  for (const TaskProto& task : plan.task()) {
    TaskSignature& sig = signature.emplace_back();
    sig.set_name(task.name());
    sig.set_op_type(task.kernel().op_type());
    *sig.mutable_attr() = task.kernel().attr();
    for (const auto& [name, ids] : SortedInputs(task)) {
      for (int64_t id : ids) {
        auto found = source.find(id);
        sig.add_input(absl::StrCat(name, " <- ",
                                   found == source.end()
                                       ? absl::StrCat("regst ", id)
                                       : found->second));
      }
    }
    for (const auto& [name, desc] : SortedOutputs(task)) {
      OutputSignature* out = sig.add_output();
      out->set_name(name);
      for (const BlobDescProto& blob : desc->blob()) {
        BlobSignature* b = out->add_blob();
        b->set_name(blob.name());
        b->set_data_type(blob.data_type());
        *b->mutable_shape() = blob.shape();
        b->set_is_dynamic(blob.is_dynamic());
      }
    }
  }
  return signature;
}

namespace {
// Over the tasks in name order: the order a plan lists them in changes no
// result.
template <typename Range>
std::string Fingerprint(const Range& signature) {
  std::vector<const TaskSignature*> tasks;
  for (const TaskSignature& task : signature) tasks.push_back(&task);
  std::sort(tasks.begin(), tasks.end(),
            [](const TaskSignature* a, const TaskSignature* b) {
              return a->name() < b->name();
            });
  uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bits
  for (const TaskSignature* task_ptr : tasks) {
    const TaskSignature& task = *task_ptr;
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream out(&bytes);
      google::protobuf::io::CodedOutputStream coded(&out);
      coded.SetSerializationDeterministic(true);
      task.SerializeToCodedStream(&coded);
    }
    absl::StrAppend(&bytes, "|");
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 1099511628211ull;
    }
  }
  return absl::StrFormat("%016x", hash);
}
}  // namespace

std::string SignatureFingerprint(
    const google::protobuf::RepeatedPtrField<TaskSignature>& signature) {
  return Fingerprint(signature);
}

std::string SignatureFingerprint(const std::vector<TaskSignature>& signature) {
  return Fingerprint(signature);
}

std::string DiffSignatures(
    const google::protobuf::RepeatedPtrField<TaskSignature>& checkpoint,
    const std::vector<TaskSignature>& plan) {
  absl::flat_hash_map<std::string, const TaskSignature*> was, is;
  for (const TaskSignature& task : checkpoint) was[task.name()] = &task;
  for (const TaskSignature& task : plan) is[task.name()] = &task;
  for (const TaskSignature& task : checkpoint) {
    if (!is.contains(task.name())) {
      return absl::StrCat("task '", task.name(),
                          "' is in the checkpoint but not in this plan");
    }
  }
  for (const TaskSignature& task : plan) {
    auto found = was.find(task.name());
    if (found == was.end()) {
      return absl::StrCat("task '", task.name(),
                          "' is in this plan but not in the checkpoint");
    }
    std::string diff = DiffTask(*found->second, task);
    if (!diff.empty()) return diff;
  }
  return "";
}

}  // namespace actorflow::internal
