// CompilePlan: a plan checked, its shapes inferred and its kernels bound
// (validate_and_bind.h), its registers' bytes held to the limit, and every
// register's blobs written back into the plan.
#include "actorflow/compiled_plan.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actor/blob_desc_proto.h"
#include "actor/register_layout.h"
#include "plan/plan_util.h"
#include "plan/validate_and_bind.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::BlobDescToProto;
using ::actorflow::internal::LayOut;
using ::actorflow::internal::SortedOutputs;
using ::actorflow::internal::TaskLabel;

int64_t RegisterBufferBytes(const std::vector<BlobDesc>& blobs) {
  return std::max(LayOut(blobs).bytes, kRegisterOverheadBytes);
}
namespace {

std::string Bytes(int64_t bytes) {
  if (bytes < (int64_t{1} << 20)) return absl::StrCat(bytes, " bytes");
  const bool gib = bytes >= (int64_t{1} << 30);
  return absl::StrFormat("%d bytes (%.1f %s)", bytes,
                         static_cast<double>(bytes) / (gib ? 1 << 30 : 1 << 20),
                         gib ? "GiB" : "MiB");
}

// Saturating: a sum past INT64_MAX stays there, over any limit.
absl::Status CheckRegisterBytes(const CompiledPlan& compiled, int64_t limit) {
  int64_t total = 0;
  int64_t largest = -1;
  std::string largest_where;
  // Registers sharing memory count once per block, at the largest's size.
  std::map<int64_t, int64_t> blocks;
  for (const TaskProto& task : compiled.plan.task()) {
    for (const auto& [name, desc] : SortedOutputs(task)) {
      const int64_t each =
          RegisterBufferBytes(compiled.blobs.at(desc->regst_desc_id()));
      if (desc->mem_block_id() != 0) {
        int64_t& block = blocks[desc->mem_block_id()];
        block = std::max(block, each);
        continue;
      }
      int64_t bytes = 0;
      if (__builtin_mul_overflow(each, int64_t{desc->register_num()}, &bytes) ||
          __builtin_add_overflow(total, bytes, &total)) {
        total = INT64_MAX;
        bytes = INT64_MAX;
      }
      if (bytes > largest) {
        largest = bytes;
        largest_where =
            absl::StrCat(TaskLabel(task), " '", name, "' (regst_desc ",
                         desc->regst_desc_id(), "): register_num ",
                         desc->register_num(), " x ", each, " bytes");
      }
    }
  }
  for (const auto& [id, bytes] : blocks) {
    if (__builtin_add_overflow(total, bytes, &total)) total = INT64_MAX;
    if (bytes > largest) {
      largest = bytes;
      largest_where = absl::StrCat("mem_block_id ", id, ": ", bytes, " bytes");
    }
  }
  if (total <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "plan: its registers need ", total == INT64_MAX ? "more than" : "",
      total == INT64_MAX ? " 2^63 bytes" : Bytes(total), ", over the limit of ",
      Bytes(limit),
      " per plan (max_register_bytes; actorflow --max-register-bytes); the "
      "largest: ",
      largest_where));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledPlan>> CompilePlan(
    Plan plan, const CompileOptions& options) {
  auto compiled = std::make_unique<CompiledPlan>();
  compiled->plan = std::move(plan);
  std::vector<std::string> problems = ValidateAndBind(options, compiled.get());
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }
  absl::Status fits = CheckRegisterBytes(*compiled, options.max_register_bytes);
  if (!fits.ok()) return fits;
  for (TaskProto& task : *compiled->plan.mutable_task()) {
    for (auto& [name, desc] : *task.mutable_produced_regst_desc()) {
      desc.clear_blob();
      for (const BlobDesc& blob : compiled->blobs.at(desc.regst_desc_id())) {
        *desc.add_blob() = BlobDescToProto(blob);
      }
    }
  }
  return compiled;
}

std::string DescribeShapes(const CompiledPlan& compiled) {
  std::string text;
  for (const TaskProto& task : compiled.plan.task()) {
    for (const auto& [name, desc] : SortedOutputs(task)) {
      std::string head = absl::StrCat(
          TaskLabel(task), " ", name, " (regst_desc ", desc->regst_desc_id(),
          ", register_num ", desc->register_num(), "): ");
      const std::vector<BlobDesc>& blobs =
          compiled.blobs.at(desc->regst_desc_id());
      if (blobs.empty()) {
        absl::StrAppend(&text, head, "(no blobs: a control token)\n");
      }
      for (const BlobDesc& blob : blobs) {
        absl::StrAppend(&text, head, blob.ToString(), "\n");
      }
    }
  }
  return text;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
