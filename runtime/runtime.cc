#include "runtime/runtime.h"

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/actor.h"
#include "actor/actor_msg_bus.h"
#include "actor/run_monitor.h"
#include "memory/cuda_api.h"
#include "memory/synced_memory.h"
#include "runtime/plan_util.h"
#include "runtime/plan_validator.h"
#include "thread/blocking_counter.h"
#include "thread/thread_mgr.h"

namespace actorflow {
namespace {

// One run of one plan. Also the threads' message handler: it builds each
// actor on that actor's own thread (kConstruct) and hands every other
// message to its destination actor.
class Runtime final : public MsgHandler<ActorMsg> {
 public:
  explicit Runtime(const Plan& plan) : plan_(plan) {}

  absl::StatusOr<RunResult> Run(const RunOptions& options) {
    std::vector<std::string> problems = ValidatePlan(plan_);
    if (!problems.empty()) {
      return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
    }
    int64_t pieces =
        options.pieces >= 0 ? options.pieces : plan_.total_piece_num();
    absl::Status status = Build();
    if (!status.ok()) return status;

    int n = static_cast<int>(specs_.size());
    std::vector<StreamKey> streams;
    for (const ActorSpec& spec : specs_) streams.push_back(spec.stream);
    auto mgr = ThreadMgr<ActorMsg>::Create(streams, this, options.channel);
    if (!mgr.ok()) return mgr.status();
    std::vector<Thread<ActorMsg>*> thread_of_actor;
    std::vector<bool> async_actor;
    for (ActorSpec& spec : specs_) {
      thread_of_actor.push_back(*(*mgr)->Find(spec.stream));
      spec.async_thread =
          dynamic_cast<AsyncThread<ActorMsg>*>(thread_of_actor.back());
      async_actor.push_back(spec.async_thread != nullptr);
    }
    // Actors send straight to their peers' threads; the bus keeps the same
    // routing for everything else (commands).
    for (const auto& desc : descs_) {
      desc->producer_thread = thread_of_actor[desc->producer];
      for (RegstConsumer& consumer : desc->consumers) {
        consumer.thread = thread_of_actor[consumer.actor];
      }
    }
    ActorMsgBus bus(std::move(thread_of_actor));
    RunMonitor monitor(n);
    env_ = ActorEnv{&monitor, pieces, options.trace};
    actors_.resize(n);

    BlockingCounter constructing(n);
    constructing_ = &constructing;
    for (int a = 0; a < n; ++a) {
      // A refused send would leave the count up forever; count it here.
      if (!Send(bus, ActorMsg::Cmd(a, ActorCmd::kConstruct), &monitor)) {
        constructing.Decrement();
      }
    }
    constructing.Wait();

    auto start = std::chrono::steady_clock::now();
    const int64_t start_ns = SteadyNowNs();
    for (int a = 0; a < n; ++a) {
      Send(bus, ActorMsg::Cmd(a, ActorCmd::kStart), &monitor);
    }
    monitor.running().Wait();
    auto end = std::chrono::steady_clock::now();
    mgr->reset();  // stops and joins every thread

    if (!monitor.status().ok()) return monitor.status();
    RunResult result;
    result.pieces = pieces;
    result.wall_ms =
        std::chrono::duration<double, std::milli>(end - start).count();
    for (const auto& actor : actors_) {
      result.acts += actor->act_count();
      if (auto summary = actor->kernel().sink_summary()) {
        result.sinks[actor->task().name()] = *summary;
      }
    }
    if (options.trace) {
      result.trace.origin_ns = start_ns;
      for (int a = 0; a < n; ++a) {
        result.trace.tasks.push_back({actors_[a]->task().name(),
                                      streams[a].ToString(), async_actor[a],
                                      actors_[a]->trace()});
      }
    }
    return result;
  }

  void Handle(const ActorMsg& msg) override {
    if (msg.kind == ActorMsgKind::kCmd && msg.cmd == ActorCmd::kConstruct) {
      std::vector<RegstDesc*> produced;
      std::vector<RegstDesc*> consumed;
      for (auto& [name, desc] : specs_[msg.dst].outputs)
        produced.push_back(desc);
      for (auto& [name, descs] : specs_[msg.dst].inputs) {
        consumed.insert(consumed.end(), descs.begin(), descs.end());
      }
      actors_[msg.dst] =
          std::make_unique<Actor>(std::move(specs_[msg.dst]), env_);
      Actor* actor = actors_[msg.dst].get();
      // Read only by peers on this same thread, after every actor is
      // constructed (the runtime waits for that before starting any).
      for (RegstDesc* desc : produced) desc->producer_actor = actor;
      for (RegstDesc* desc : consumed) {
        for (RegstConsumer& consumer : desc->consumers) {
          if (consumer.actor == msg.dst) consumer.actor_ptr = actor;
        }
      }
      constructing_->Decrement();
      return;
    }
    actors_[msg.dst]->ProcessMsg(msg);
  }

 private:
  // Threads run until the run ends, so a refused send is a runtime bug;
  // it is reported rather than lost.
  static bool Send(const ActorMsgBus& bus, const ActorMsg& msg,
                   RunMonitor* monitor) {
    absl::Status status = bus.Send(msg);
    if (status.ok()) return true;
    monitor->ReportFailure(
        absl::InternalError(absl::StrCat("runtime: message to actor ", msg.dst,
                                         " refused: ", status.message())));
    return false;
  }

  // Registers (allocated here, once) and actor specs; actor i runs task i.
  absl::Status Build() {
    absl::flat_hash_map<int64_t, RegstDesc*> desc_by_id;
    absl::flat_hash_set<int64_t> pinned = HostSidesOfCopies();
    std::set<int> devices_used;
    for (int t = 0; t < plan_.task_size(); ++t) {
      const TaskProto& task = plan_.task(t);
      ActorSpec spec;
      spec.id = t;
      spec.task = &task;
      spec.stream = ToStreamKey(task.stream());
      for (const auto& [name, proto] : SortedOutputs(task)) {
        auto desc = std::make_unique<RegstDesc>();
        desc->id = proto->regst_desc_id();
        desc->elem_cnt = proto->elem_cnt();
        desc->register_num = proto->register_num();
        desc->producer = t;
        desc->producer_out_slot = static_cast<int16_t>(spec.outputs.size());
        absl::Status status = AllocateRegsts(
            *proto, pinned.contains(proto->regst_desc_id()), desc.get());
        if (proto->mem_case().device_type() == GPU) {
          devices_used.insert(proto->mem_case().device_index());
        }
        if (!status.ok()) {
          return absl::Status(status.code(),
                              absl::StrCat(TaskLabel(task), ": regst_desc ",
                                           desc->id, ": ", status.message()));
        }
        desc_by_id[desc->id] = desc.get();
        spec.outputs.emplace_back(name, desc.get());
        descs_.push_back(std::move(desc));
      }
      specs_.push_back(std::move(spec));
    }
    for (int t = 0; t < plan_.task_size(); ++t) {
      const TaskProto& task = plan_.task(t);
      ActorSpec& spec = specs_[t];
      int16_t in_slot = 0;
      std::vector<KernelIo> inputs;
      for (const auto& [name, ids] : SortedInputs(task)) {
        std::vector<RegstDesc*> descs;
        for (int64_t id : ids) {
          RegstDesc* desc = desc_by_id.at(id);
          desc->consumers.push_back({t, in_slot++});
          descs.push_back(desc);
          inputs.push_back({name, id, desc->elem_cnt});
        }
        spec.inputs.emplace_back(name, std::move(descs));
      }
      std::vector<KernelIo> outputs;
      for (const auto& [name, desc] : spec.outputs) {
        outputs.push_back({name, desc->id, desc->elem_cnt});
      }
      auto kernel = KernelRegistry::Get().Create(task.kernel().op_type(),
                                                 spec.stream.device);
      if (!kernel.ok()) {
        return absl::Status(
            kernel.status().code(),
            absl::StrCat(TaskLabel(task), ": ", kernel.status().message()));
      }
      absl::Status status =
          (*kernel)->Init(KernelInitContext(task, inputs, outputs));
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(TaskLabel(task), ": ", status.message()));
      }
      spec.kernel = std::move(*kernel);
    }
    // Device buffers are zero-filled on the legacy stream; the actors' own
    // streams do not wait for it, so the fill must be done before they run.
    for (int device : devices_used) {
      absl::Status status = cuda::DeviceSynchronize(device);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // Host registers that h2d reads or d2h writes: they get pinned memory,
  // so those copies are asynchronous DMA rather than staged by the driver.
  absl::flat_hash_set<int64_t> HostSidesOfCopies() const {
    absl::flat_hash_set<int64_t> ids;
    for (const TaskProto& task : plan_.task()) {
      if (IsHostToDevice(task)) {
        for (const auto& [name, list] : SortedInputs(task)) {
          ids.insert(list.begin(), list.end());
        }
      } else if (IsDeviceToHost(task)) {
        for (const auto& [name, desc] : SortedOutputs(task)) {
          ids.insert(desc->regst_desc_id());
        }
      }
    }
    return ids;
  }

  // GPU memory cases get device buffers of that device; host ones pinned
  // memory when asked for (mem_case.pinned) or when a copy touches them.
  static absl::Status AllocateRegsts(const RegstDescProto& proto, bool pin,
                                     RegstDesc* desc) {
    const MemoryCase& mem = proto.mem_case();
    const bool on_device = mem.device_type() == GPU;
    SyncedMemoryOptions options;
    options.device_index = mem.device_index();
    options.host = mem.pinned() || pin ? SyncedMemoryOptions::Host::kPinned
                                       : SyncedMemoryOptions::Host::kPageable;
    size_t bytes = static_cast<size_t>(proto.elem_cnt()) * sizeof(float);
    for (int r = 0; r < proto.register_num(); ++r) {
      auto memory = std::make_unique<SyncedMemory>(bytes, options);
      float* data = nullptr;
      if (bytes > 0) {
        absl::StatusOr<void*> buffer =
            on_device ? memory->mutable_gpu_data() : memory->mutable_cpu_data();
        if (!buffer.ok()) return buffer.status();
        data = static_cast<float*>(*buffer);
      }
      desc->regsts.push_back(
          std::make_unique<Regst>(desc, std::move(memory), data));
    }
    return absl::OkStatus();
  }

  const Plan& plan_;
  std::vector<std::unique_ptr<RegstDesc>> descs_;
  std::vector<ActorSpec> specs_;
  // Slot a is written once, on actor a's thread, and read by the main
  // thread only after every thread has been joined.
  std::vector<std::unique_ptr<Actor>> actors_;
  ActorEnv env_;
  BlockingCounter* constructing_ = nullptr;
};

}  // namespace

absl::StatusOr<RunResult> RunPlan(const Plan& plan, const RunOptions& options) {
  return Runtime(plan).Run(options);
}

}  // namespace actorflow
