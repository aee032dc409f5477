#include "actor/kernel_harness.h"

#include <utility>

#include "memory/synced_memory.h"

namespace actorflow {
namespace {

std::unique_ptr<RegstDesc> HostDesc(int64_t id, int64_t elem_cnt,
                                    absl::Status* status) {
  auto desc = std::make_unique<RegstDesc>();
  desc->id = id;
  desc->elem_cnt = elem_cnt;
  auto memory = std::make_unique<SyncedMemory>(
      elem_cnt * sizeof(float),
      SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
  float* data = nullptr;
  if (elem_cnt > 0) {
    absl::StatusOr<void*> host = memory->mutable_cpu_data();
    if (!host.ok()) {
      *status = host.status();
    } else {
      data = static_cast<float*>(*host);
    }
  }
  desc->regsts.push_back(
      std::make_unique<Regst>(desc.get(), std::move(memory), data));
  return desc;
}

}  // namespace

absl::StatusOr<std::unique_ptr<KernelHarness>> KernelHarness::Create(
    const TaskProto& task, int num_inputs, bool has_output, int64_t elem_cnt) {
  std::unique_ptr<KernelHarness> harness(new KernelHarness());
  harness->task_ = task;
  absl::Status status;
  std::vector<KernelIo> inputs, outputs;
  for (int i = 0; i < num_inputs; ++i) {
    harness->descs_.push_back(HostDesc(i + 1, elem_cnt, &status));
    harness->inputs_.push_back(harness->descs_.back()->regsts[0].get());
    inputs.push_back({"in", i + 1, elem_cnt});
  }
  if (has_output) {
    harness->descs_.push_back(HostDesc(num_inputs + 1, elem_cnt, &status));
    harness->output_ = harness->descs_.back()->regsts[0].get();
    outputs.push_back({"out", num_inputs + 1, elem_cnt});
  }
  if (!status.ok()) return status;
  auto kernel = KernelRegistry::Get().Create(task.kernel().op_type());
  if (!kernel.ok()) return kernel.status();
  status = (*kernel)->Init(KernelInitContext(harness->task_, inputs, outputs));
  if (!status.ok()) return status;
  harness->kernel_ = std::move(*kernel);

  KernelContext& ctx = harness->ctx_;
  ctx.task_ = &harness->task_;
  ctx.inputs_ = harness->inputs_;
  if (num_inputs > 0) ctx.input_groups_.push_back({"in", 0, num_inputs});
  if (has_output) {
    ctx.outputs_.push_back(harness->output_);
    ctx.output_groups_.push_back({"out", 0, 1});
  }
  return harness;
}

absl::Status KernelHarness::Run(int64_t piece_id) {
  for (Regst* in : inputs_) in->set_piece_id(piece_id);
  if (output_ != nullptr) output_->set_piece_id(piece_id);
  ctx_.piece_id_ = piece_id;
  return kernel_->Forward(&ctx_);
}

}  // namespace actorflow
