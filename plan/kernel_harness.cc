#include "actorflow/kernel_harness.h"

#include <algorithm>
#include <utility>

#include "actor/act_context.h"
#include "actor/register.h"
#include "actorflow/plan_loader.h"
#include "memory/synced_memory.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::ActContext;
using ::actorflow::internal::LayOut;
using ::actorflow::internal::MakeInitContext;
using ::actorflow::internal::Register;
using ::actorflow::internal::RegisterDesc;
using ::actorflow::internal::SyncedMemory;
using ::actorflow::internal::SyncedMemoryOptions;

struct KernelHarness::State {
  TaskProto task;
  std::vector<std::unique_ptr<RegisterDesc>> descs;
  std::vector<Register*> inputs;
  Register* output = nullptr;
  std::unique_ptr<Kernel> kernel;
  ActContext ctx;
};

namespace {

absl::StatusOr<std::unique_ptr<RegisterDesc>> HostDesc(
    int64_t id, std::vector<BlobDesc> blobs) {
  auto desc = std::make_unique<RegisterDesc>();
  desc->id = id;
  desc->blobs = std::move(blobs);
  desc->layout = LayOut(desc->blobs);
  auto memory = std::make_unique<SyncedMemory>(
      desc->layout.bytes,
      SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
  char* base = nullptr;
  if (desc->layout.bytes > 0) {
    absl::StatusOr<void*> host = memory->mutable_cpu_data();
    if (!host.ok()) return host.status();
    base = static_cast<char*>(*host);
  }
  desc->registers.push_back(
      std::make_unique<Register>(desc.get(), std::move(memory), base));
  return desc;
}

const float* FirstFloats(const Register* reg) {
  if (reg == nullptr || reg->num_blobs() == 0) return nullptr;
  const Blob& blob = reg->blob(0);
  if (blob.data_type != DT_FLOAT32) return nullptr;
  return reinterpret_cast<const float*>(blob.data);
}

}  // namespace

KernelHarness::KernelHarness() : state_(std::make_unique<State>()) {}
KernelHarness::~KernelHarness() = default;

absl::StatusOr<std::unique_ptr<KernelHarness>> KernelHarness::Create(
    absl::string_view task, std::vector<std::vector<BlobDesc>> inputs,
    bool has_output, std::vector<BlobDesc> output_blobs) {
  std::unique_ptr<KernelHarness> harness(new KernelHarness());
  State& state = *harness->state_;
  absl::Status parsed =
      ParseTextMessage(std::string(task), "task", &state.task);
  if (!parsed.ok()) return parsed;
  std::vector<KernelIo> input_ios, output_ios;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t id = static_cast<int64_t>(i) + 1;
    input_ios.push_back({"in", id, inputs[i], true});
    auto desc = HostDesc(id, std::move(inputs[i]));
    if (!desc.ok()) return desc.status();
    state.inputs.push_back((*desc)->registers[0].get());
    state.descs.push_back(std::move(*desc));
  }
  const int64_t out_id = static_cast<int64_t>(inputs.size()) + 1;
  if (has_output) {
    output_ios.push_back({"out", out_id, output_blobs, !output_blobs.empty()});
  }
  auto kernel = KernelRegistry::Get().Create(state.task.kernel().op_type());
  if (!kernel.ok()) return kernel.status();
  KernelInitContext init = MakeInitContext(state.task, input_ios, output_ios);
  absl::Status status = (*kernel)->Init(init);
  if (!status.ok()) return status;
  state.kernel = std::move(*kernel);
  if (has_output) {
    const std::vector<BlobDesc>* inferred = init.inferred(0);
    auto desc = HostDesc(out_id, inferred ? *inferred : output_blobs);
    if (!desc.ok()) return desc.status();
    state.output = (*desc)->registers[0].get();
    state.descs.push_back(std::move(*desc));
  }

  ActContext& ctx = state.ctx;
  ctx.set_task(&state.task);
  const int num_inputs = static_cast<int>(state.inputs.size());
  ctx.ResizeRegisters(num_inputs, has_output ? 1 : 0);
  std::copy(state.inputs.begin(), state.inputs.end(), ctx.inputs());
  if (num_inputs > 0)
    ctx.mutable_rep().input_groups.push_back({"in", 0, num_inputs});
  if (has_output) {
    ctx.outputs()[0] = state.output;
    ctx.mutable_rep().output_groups.push_back({"out", 0, 1});
  }
  return harness;
}

absl::StatusOr<std::unique_ptr<KernelHarness>> KernelHarness::Create(
    absl::string_view task, int num_inputs, bool has_output, int64_t elem_cnt) {
  return Create(
      task,
      std::vector<std::vector<BlobDesc>>(num_inputs, {LegacyBlob(elem_cnt)}),
      has_output, {LegacyBlob(elem_cnt)});
}

RegisterView KernelHarness::input(int i) const {
  return RegisterView(state_->inputs[i]);
}

ConstRegisterView KernelHarness::output() const {
  return ConstRegisterView(state_->output);
}

const Kernel& KernelHarness::kernel() const { return *state_->kernel; }

float* KernelHarness::input_floats(int i) const {
  return const_cast<float*>(FirstFloats(state_->inputs[i]));
}

const float* KernelHarness::output_floats() const {
  return FirstFloats(state_->output);
}

absl::Status KernelHarness::Run(int64_t piece_id) {
  for (Register* in : state_->inputs) in->set_piece_id(piece_id);
  if (state_->output != nullptr) {
    state_->output->set_piece_id(piece_id);
    state_->output->ResetShapes();
  }
  state_->ctx.set_piece_id(piece_id);
  return state_->kernel->Forward(&state_->ctx);
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
