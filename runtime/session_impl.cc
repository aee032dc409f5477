#include "runtime/session_impl.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <utility>

#include "absl/base/config.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actor/blob_desc_proto.h"
#include "actor/make_actor.h"
#include "actor/register_layout.h"
#include "actorflow/cuda_api.h"
#include "actorflow/kernel_library.h"
#include "memory/synced_memory.h"
#include "plan/plan_util.h"
#include "runtime/piece_cost.h"

#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
#include <sanitizer/lsan_interface.h>
#endif

namespace actorflow::internal {

// A feed or fetch task and the port where it meets the caller.
struct SessionImpl::Port {
  std::string name;  // the task's
  int32_t actor = 0;
  bool is_feed = false;
  const BlobDesc* blob = nullptr;  // the one blob it moves
  int32_t register_num = 0;
  FeedPort feed;
  FetchPort fetch;
};

namespace {

// GPU memory cases get device buffers of that device; host ones pinned
// memory when asked for (mem_case.pinned) or when a copy touches them.
// Registers that share memory (mem_block_id): one host allocation each, as
// large as the largest member.
struct MemBlock {
  int64_t bytes = 0;
  std::shared_ptr<SyncedMemory> memory;
  char* base = nullptr;
};

absl::Status AllocateShared(const RegisterDescProto& proto, MemBlock* block,
                            RegisterDesc* desc) {
  if (block->memory == nullptr) {
    block->memory = std::make_shared<SyncedMemory>(
        static_cast<size_t>(block->bytes),
        SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
    if (block->bytes > 0) {
      absl::StatusOr<void*> buffer = block->memory->mutable_cpu_data();
      if (!buffer.ok()) return buffer.status();
      block->base = static_cast<char*>(*buffer);
    }
  }
  // Validation allows only registers of one buffer here.
  desc->registers.push_back(std::make_unique<Register>(
      desc, block->memory, desc->layout.bytes > 0 ? block->base : nullptr));
  return absl::OkStatus();
}

absl::Status AllocateDescriptorRegisters(const RegisterDescProto& proto,
                                         bool pin, RegisterDesc* desc) {
  const MemoryCase& mem = proto.mem_case();
  const bool on_device = mem.device_type() == DeviceKinds::GPU;
  SyncedMemoryOptions options;
  options.device_index = mem.device_index();
  options.host = mem.pinned() || pin ? SyncedMemoryOptions::Host::kPinned
                                     : SyncedMemoryOptions::Host::kPageable;
  const size_t bytes = static_cast<size_t>(desc->layout.bytes);
  for (int r = 0; r < proto.register_num(); ++r) {
    auto memory = std::make_unique<SyncedMemory>(bytes, options);
    char* base = nullptr;
    if (bytes > 0) {
      absl::StatusOr<void*> buffer =
          on_device ? memory->mutable_gpu_data() : memory->mutable_cpu_data();
      if (!buffer.ok()) return buffer.status();
      base = static_cast<char*>(*buffer);
    }
    desc->registers.push_back(
        std::make_unique<Register>(desc, std::move(memory), base));
  }
  return absl::OkStatus();
}

// Host registers that h2d reads or d2h writes: they get pinned memory, so
// those copies are asynchronous DMA rather than staged by the driver.
absl::flat_hash_set<int64_t> HostSidesOfCopies(const Plan& plan) {
  absl::flat_hash_set<int64_t> ids;
  for (const TaskProto& task : plan.task()) {
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

// Keeps what an abandoned thread may still touch (see ~SessionImpl), and tells
// LeakSanitizer that it is kept on purpose.
template <typename T>
void Keep(std::unique_ptr<T>& owner) {
  T* kept = owner.release();
#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
  if (kept != nullptr) __lsan_ignore_object(kept);
#else
  (void)kept;
#endif
}

std::string Seconds(absl::Duration duration) {
  return absl::StrFormat("%.2f s", absl::ToDoubleSeconds(duration));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SessionImpl>> SessionImpl::Create(
    Plan plan, SessionOptions options) {
  for (const std::string& library : options.kernel_libraries) {
    absl::Status loaded = LoadKernelLibrary(library);
    if (!loaded.ok()) return loaded;
  }
  CompileOptions compile;
  compile.probe = options.probe;
  compile.bindings = &options.kernels;
  compile.max_register_bytes = options.max_register_bytes;
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(std::move(plan), compile);
  if (!compiled.ok()) return compiled.status();
  // CPUs busy elsewhere are looked for only when the plan has CPU streams
  // that could share threads (ThreadKeys).
  absl::StatusOr<UsableCpus> cpus =
      ResolveUsableCpus(options.usable_cpus, /*look_for_busy=*/false);
  if (!cpus.ok()) return cpus.status();
  std::unique_ptr<SessionImpl> session(
      new SessionImpl(std::move(*compiled), std::move(options), *cpus));
  absl::Status status = session->Build();
  if (!status.ok()) return status;  // the destructor joins what started
  if (!session->options_.restore_from.empty()) {
    absl::StatusOr<CheckpointInfo> restored =
        session->Restore(session->options_.restore_from, RestoreOptions());
    if (!restored.ok()) return restored.status();
  }
  return session;
}

SessionImpl::SessionImpl(std::unique_ptr<CompiledPlan> compiled,
                         SessionOptions options, UsableCpus cpus)
    : compiled_(std::move(compiled)), options_(std::move(options)) {
  placement_.cpus = std::move(cpus);
}

absl::Status SessionImpl::Build() {
  absl::Status status = CheckSources();
  std::set<int> devices;
  if (status.ok()) status = AllocateRegisters(&devices);
  if (!status.ok()) return status;
  ConnectTasks();
  // Device buffers are zero-filled on the legacy stream; the actors' own
  // streams do not wait for it, so the fill must be done before they run.
  for (int device : devices) {
    status = cuda::DeviceSynchronize(device);
    if (!status.ok()) return status;
  }
  status = StartThreads();
  if (!status.ok()) return status;
  return ConstructActors();
}

absl::Status SessionImpl::CheckSources() const {
  const Plan& plan = compiled_->plan;
  // A plan with feeds runs as long as the caller feeds it; a plain source
  // would need a piece count nobody gives.
  std::vector<std::string> feeds, plain_sources;
  for (const TaskProto& task : plan.task()) {
    if (IsFeed(task)) {
      feeds.push_back(TaskLabel(task));
    } else if (task.consumed_regst_desc_id().empty()) {
      plain_sources.push_back(TaskLabel(task));
    }
  }
  if (!feeds.empty() && !plain_sources.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan: has feeds (", absl::StrJoin(feeds, ", "),
        ") and other sources (", absl::StrJoin(plain_sources, ", "),
        "); a plan with feeds takes every piece from its feeds"));
  }
  return absl::OkStatus();
}

absl::Status SessionImpl::AllocateRegisters(std::set<int>* devices) {
  const Plan& plan = compiled_->plan;
  const int n = plan.task_size();
  absl::flat_hash_set<int64_t> pinned = HostSidesOfCopies(plan);
  absl::flat_hash_map<int64_t, MemBlock> mem_blocks;
  for (const TaskProto& task : plan.task()) {
    for (const auto& [name, proto] : task.produced_regst_desc()) {
      if (proto.mem_block_id() == 0) continue;
      MemBlock& block = mem_blocks[proto.mem_block_id()];
      block.bytes =
          std::max(block.bytes,
                   LayOut(compiled_->blobs.at(proto.regst_desc_id())).bytes);
    }
  }
  for (int t = 0; t < n; ++t) {
    const TaskProto& task = plan.task(t);
    ActorSpec spec;
    spec.id = t;
    spec.task = &task;
    spec.stream = ToStreamKey(task.stream());
    spec.kernel = std::move(compiled_->kernels[t]);
    for (const auto& [name, proto] : SortedOutputs(task)) {
      auto desc = std::make_unique<RegisterDesc>();
      desc->id = proto->regst_desc_id();
      desc->blobs = compiled_->blobs.at(desc->id);
      desc->layout = LayOut(desc->blobs);
      for (const BlobDesc& blob : desc->blobs) {
        desc->has_dynamic_blob |= blob.is_dynamic;
      }
      desc->register_num = proto->register_num();
      desc->initial_register = proto->initial_register();
      desc->producer = t;
      desc->producer_out_slot = static_cast<int16_t>(spec.outputs.size());
      if (proto->mem_case().device_type() == DeviceKinds::GPU) {
        devices->insert(proto->mem_case().device_index());
      }
      absl::Status status;
      if (proto->mem_block_id() != 0) {
        status = AllocateShared(*proto, &mem_blocks[proto->mem_block_id()],
                                desc.get());
        if (options_.check_memory_sharing) {
          std::unique_ptr<SharedBlock>& block =
              shared_blocks_[proto->mem_block_id()];
          if (block == nullptr) {
            block = std::make_unique<SharedBlock>(proto->mem_block_id());
          }
          desc->checked_block = block.get();
        }
      } else {
        status = AllocateDescriptorRegisters(
            *proto, pinned.contains(proto->regst_desc_id()), desc.get());
      }
      if (!status.ok()) {
        return absl::Status(status.code(),
                            absl::StrCat(TaskLabel(task), ": regst_desc ",
                                         desc->id, ": ", status.message()));
      }
      spec.outputs.emplace_back(name, desc.get());
      descs_.push_back(std::move(desc));
    }
    specs_.push_back(std::move(spec));
  }
  return absl::OkStatus();
}

void SessionImpl::ConnectTasks() {
  const Plan& plan = compiled_->plan;
  const int n = plan.task_size();
  absl::flat_hash_map<int64_t, RegisterDesc*> desc_by_id;
  for (const auto& desc : descs_) desc_by_id[desc->id] = desc.get();
  for (int t = 0; t < n; ++t) {
    const TaskProto& task = plan.task(t);
    ActorSpec& spec = specs_[t];
    int16_t in_slot = 0;
    for (const auto& [name, ids] : SortedInputs(task)) {
      std::vector<RegisterDesc*> descs;
      for (int64_t id : ids) {
        RegisterDesc* desc = desc_by_id.at(id);
        desc->consumers.push_back({t, in_slot++});
        descs.push_back(desc);
      }
      spec.inputs.emplace_back(name, std::move(descs));
    }
    if (IsFeed(task) || IsFetch(task)) {
      auto port = std::make_unique<Port>();
      port->feed.set_wait(options_.channel.spin_ns, placement_.cpus.count);
      port->fetch.set_wait(options_.channel.spin_ns, placement_.cpus.count);
      port->name = task.name();
      port->actor = t;
      port->is_feed = IsFeed(task);
      port->blob = port->is_feed ? &spec.outputs[0].second->blobs[0]
                                 : &spec.inputs[0].second[0]->blobs[0];
      port->register_num = port->is_feed
                               ? spec.outputs[0].second->register_num
                               : spec.inputs[0].second[0]->register_num;
      if (port->is_feed) {
        spec.feed_port = &port->feed;
        has_feeds_ = true;
      } else {
        spec.fetch_port = &port->fetch;
        has_fetches_ = true;
      }
      ports_.push_back(std::move(port));
    }
    if (spec.kernel != nullptr && spec.kernel->gate() != nullptr) {
      // Only called while the kernel lives, which the bus outlives. A wake
      // that finds the threads stopped is moot: the run is over.
      spec.kernel->gate()->SetWaker(
          [this, t] { (void)bus_->Send(ActorMsg::Cmd(t, ActorCmd::kWake)); });
    }
  }
}

std::optional<PieceCost> SessionImpl::EstimatePieceCost(
    const absl::flat_hash_map<StreamKey, int>& cpu_stream_index) const {
  PieceCost cost;
  cost.stream_ns.assign(cpu_stream_index.size(), 0);
  for (const ActorSpec& spec : specs_) {
    auto stream = cpu_stream_index.find(spec.stream);
    if (stream == cpu_stream_index.end()) continue;
    const std::string& op_type = spec.task->kernel().op_type();
    // A kernel bound for this session is the user's, whatever its name.
    if (options_.kernels.Binds(op_type, DeviceKind::kCpu)) return std::nullopt;
    int64_t bytes = 0;
    for (const auto& [name, descs] : spec.inputs) {
      for (const RegisterDesc* desc : descs) {
        bytes += desc->layout.bytes;
        auto producer = cpu_stream_index.find(specs_[desc->producer].stream);
        if (producer != cpu_stream_index.end() &&
            producer->second != stream->second) {
          ++cost.hand_offs;
        }
      }
    }
    for (const auto& [name, desc] : spec.outputs) bytes += desc->layout.bytes;
    std::optional<int64_t> ns = EstimatedActNs(op_type, bytes);
    if (!ns.has_value()) return std::nullopt;
    cost.stream_ns[stream->second] += *ns;
  }
  return cost;
}

std::vector<StreamKey> SessionImpl::ThreadKeys() {
  // Plain CPU streams in order of first appearance, with their task counts.
  std::vector<StreamKey> cpu_streams;
  std::vector<int64_t> tasks;
  absl::flat_hash_map<StreamKey, int> order;
  for (const StreamKey& stream : streams_) {
    if (stream.device != DeviceKind::kCpu || stream.host_async) continue;
    auto [it, added] =
        order.try_emplace(stream, static_cast<int>(cpu_streams.size()));
    if (added) {
      cpu_streams.push_back(stream);
      tasks.push_back(0);
    }
    ++tasks[it->second];
  }
  const int n = static_cast<int>(cpu_streams.size());
  if (!options_.share_cpu_threads || n <= 1) return streams_;
  // Streams that outnumber the CPUs free now share threads: the usable
  // CPUs, less those that other threads kept busy while it looked (a
  // process burning a core, a trainer beside the pipeline). A thread per
  // stream on a CPU that another process holds stalls every stream behind
  // it for a time slice at each hand-off; on fewer threads the streams
  // lose their overlap but never wait for a CPU.
  LookForBusy(&placement_.cpus);
  int threads = placement_.cpus.SharedThreads();
  if (n <= threads) return streams_;
  // Acts too short to pay for moving pieces between cores share one
  // thread: spread, the hand-offs would cost more than the overlap saves
  // (runtime/piece_cost.h; the quick start ran 2.1x slower on two threads
  // than on one). Fixed placements, asked for, are kept.
  if (threads > 1 && options_.stream_sharing == StreamSharing::kAuto) {
    if (std::optional<PieceCost> cost = EstimatePieceCost(order);
        cost.has_value() && CheaperOnOneThread(*cost, threads)) {
      threads = 1;
      placement_.estimated_piece_ns = cost->total_ns();
    }
  }
  // Consecutive streams together (plans number a line's stages in order,
  // so a line crosses threads no more often than one cut into as many
  // streams as threads), in blocks whose largest task count is the least
  // possible: the smallest bound that a greedy fill meets with at most
  // `threads` blocks. A thread is named after the first stream of its
  // block.
  auto blocks_within = [&](int64_t bound, std::vector<int>* block_of) {
    int blocks = 0;
    int64_t filled = bound;  // starts a block at the first stream
    for (int k = 0; k < n; ++k) {
      if (filled + tasks[k] > bound) {
        ++blocks;
        filled = 0;
      }
      filled += tasks[k];
      if (block_of != nullptr) block_of->push_back(blocks - 1);
    }
    return blocks;
  };
  const int64_t total = std::accumulate(tasks.begin(), tasks.end(), int64_t{0});
  int64_t low = *std::max_element(tasks.begin(), tasks.end());
  int64_t high = total;
  while (low < high) {
    const int64_t mid = low + (high - low) / 2;
    if (blocks_within(mid, nullptr) <= threads) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  // Blocks more uneven than 1.2x the mean leave the other threads idle
  // part of every piece: then any thread runs any stream. Below that, the
  // queue crossings that costs (a stream's messages to another always go
  // through a queue then, and a parked stream must be picked up) outweigh
  // the balance: the quick start's 3 tasks against 2, on zero-work tasks,
  // took 1.9x as long on the pool.
  const bool uneven = low * threads * 5 > total * 6;
  if (threads > 1 &&
      (options_.stream_sharing == StreamSharing::kAnyThread ||
       (options_.stream_sharing == StreamSharing::kAuto && uneven))) {
    stream_pool_.workers = threads;
    stream_pool_.streams = cpu_streams;
    stream_pool_.usable_cpus = placement_.cpus.count;
    return streams_;
  }
  std::vector<int> block_of;
  blocks_within(low, &block_of);
  std::vector<StreamKey> first_of_block;
  for (int k = 0; k < n; ++k) {
    if (block_of[k] == static_cast<int>(first_of_block.size())) {
      first_of_block.push_back(cpu_streams[k]);
    }
  }
  std::vector<StreamKey> keys;
  for (const StreamKey& stream : streams_) {
    auto it = order.find(stream);
    keys.push_back(it == order.end() ? stream
                                     : first_of_block[block_of[it->second]]);
  }
  return keys;
}

absl::Status SessionImpl::StartThreads() {
  const int n = static_cast<int>(specs_.size());
  for (const ActorSpec& spec : specs_) streams_.push_back(spec.stream);
  thread_keys_ = ThreadKeys();
  {
    absl::flat_hash_map<StreamKey, int> actors_on_thread;
    for (const StreamKey& key : thread_keys_) ++actors_on_thread[key];
    for (int a = 0; a < n; ++a) {
      specs_[a].batches_deliveries =
          actors_on_thread[thread_keys_[a]] >= options_.batch_deliveries_from;
    }
    for (const auto& [key, actors] : actors_on_thread) {
      placement_.batching_threads +=
          actors >= options_.batch_deliveries_from ? 1 : 0;
    }
  }
  {
    absl::flat_hash_set<StreamKey> streams, threads, cpu_streams, cpu_threads;
    for (int a = 0; a < n; ++a) {
      streams.insert(streams_[a]);
      threads.insert(thread_keys_[a]);
      placement_.thread_of_stream[streams_[a].ToString()] =
          thread_keys_[a].ToString();
      if (streams_[a].device == DeviceKind::kCpu && !streams_[a].host_async) {
        cpu_streams.insert(streams_[a]);
        cpu_threads.insert(thread_keys_[a]);
      }
    }
    placement_.streams = static_cast<int>(streams.size());
    placement_.threads = static_cast<int>(threads.size());
    placement_.cpu_streams = static_cast<int>(cpu_streams.size());
    placement_.cpu_threads = static_cast<int>(cpu_threads.size());
    if (stream_pool_.workers > 0) {
      placement_.cpu_threads = stream_pool_.workers;
      placement_.threads +=
          stream_pool_.workers - static_cast<int>(stream_pool_.streams.size());
      placement_.sharing = "any_thread";
      for (const StreamKey& stream : stream_pool_.streams) {
        placement_.thread_of_stream[stream.ToString()] = "any";
      }
    } else if (placement_.cpu_threads < placement_.cpu_streams) {
      placement_.sharing = "consecutive";
    }
  }
  // Every message in flight is a register on its way to a consumer or back,
  // an end-of-data per input, or a command (at most a few per actor at once:
  // a reset or a start, a feed's wake-up, an asynchronous failure). Queues
  // sized for all of them at once never grow during a run.
  int64_t in_flight = 4 * static_cast<int64_t>(n);
  for (const auto& desc : descs_) {
    in_flight += (desc->register_num + 1) *
                 static_cast<int64_t>(desc->consumers.size() + 1);
  }
  ChannelOptions channel = options_.channel;
  channel.usable_cpus = placement_.cpus.count;
  channel.reserve = std::max<uint32_t>(
      channel.reserve,
      static_cast<uint32_t>(std::min<int64_t>(in_flight, 1 << 20)));
  // One actor table per thread, made before the threads start.
  absl::flat_hash_map<StreamKey, ThreadActors*> table_of_stream;
  for (const StreamKey& key : thread_keys_) {
    auto [it, added] = table_of_stream.try_emplace(key, nullptr);
    if (!added) continue;
    thread_actors_.push_back(std::make_unique<ThreadActors>(n, this));
    it->second = thread_actors_.back().get();
  }
  for (const StreamKey& key : thread_keys_) {
    table_of_actor_.push_back(table_of_stream[key]);
  }
  auto threads = ThreadMgr<ActorMsg>::Create(
      thread_keys_,
      [&table_of_stream](const StreamKey& key) -> MsgHandler<ActorMsg>* {
        return table_of_stream[key];
      },
      channel, stream_pool_);
  if (!threads.ok()) return threads.status();
  threads_ = std::move(*threads);
  std::vector<Thread<ActorMsg>*> thread_of_actor;
  for (int a = 0; a < n; ++a) {
    ActorSpec& spec = specs_[a];
    thread_of_actor.push_back(*threads_->Find(thread_keys_[a]));
    spec.async_thread =
        dynamic_cast<AsyncThread<ActorMsg>*>(thread_of_actor.back());
    async_actor_.push_back(spec.async_thread != nullptr);
  }
  // Actors send straight to their peers' threads; the bus keeps the same
  // routing for commands.
  for (const auto& desc : descs_) {
    desc->producer_thread = thread_of_actor[desc->producer];
    for (RegisterConsumer& consumer : desc->consumers) {
      consumer.thread = thread_of_actor[consumer.actor];
    }
  }
  bus_ = std::make_unique<ActorMsgBus>(std::move(thread_of_actor));
  return absl::OkStatus();
}

absl::Status SessionImpl::ConstructActors() {
  const int n = static_cast<int>(specs_.size());
  monitor_ = std::make_unique<RunMonitor>(
      0, [this](const absl::Status& status) { OnFailure(status); });
  // Limits need the running kernel's start; progress and stats the acts.
  const bool timed = options_.stats ||
                     options_.timeout > absl::ZeroDuration() ||
                     options_.stall > absl::ZeroDuration();
  env_ = ActorEnv{monitor_.get(), &pieces_,       &run_cuts_, this,
                  &resetting_,    options_.trace, timed};
  env_.returns = std::make_shared<ReturnRoute>();
  actors_.resize(n);
  {
    MutexLock lock(&mu_);
    acts_before_.resize(n);
  }
  snapshots_.resize(n);
  snapshot_taken_ = std::make_unique<std::atomic<bool>[]>(n);
  state_slots_.resize(n);
  std::vector<bool> read(n, false);
  for (const auto& desc : descs_) {
    if (!desc->consumers.empty()) read[desc->producer] = true;
  }
  for (int t = 0; t < n; ++t) {
    if (!read[t]) last_tasks_.push_back(t);
  }

  constructing_.Reset(n);
  for (int a = 0; a < n; ++a) {
    // A refused send would leave the count up forever; count it here.
    if (!SendCmd(a, ActorCmd::kConstruct).ok()) constructing_.Decrement();
  }
  constructing_.Wait();
  return monitor_->status();
}

SessionImpl::~SessionImpl() {
  bool running;
  {
    MutexLock lock(&mu_);
    running = running_;
  }
  if (running) {
    monitor_->ReportFailure(absl::CancelledError(
        "the session was destroyed while a run was in progress"));
    std::string abandoned = CancelRun();
    if (!abandoned.empty()) {
      std::fprintf(stderr, "actorflow: session destroyed: %s\n",
                   abandoned.c_str());
    }
  }
  if (threads_ == nullptr) return;  // Build failed before the threads
  // A kernel's hold released from now on finds its threads gone.
  if (env_.returns != nullptr) env_.returns->Close();
  if (abandoned_) {
    // The abandoned thread may come back from its kernel and finish that
    // act: what it can reach stays allocated. The other threads are joined.
    threads_->StopAll();
    Keep(threads_);
    for (auto& table : thread_actors_) Keep(table);
    for (auto& desc : descs_) Keep(desc);
    for (auto& [id, block] : shared_blocks_) Keep(block);
    for (auto& port : ports_) Keep(port);
    Keep(monitor_);
    Keep(compiled_);
    return;
  }
  threads_.reset();  // stops and joins every thread
  actors_.clear();
  thread_actors_.clear();
  descs_.clear();
}

std::string SessionImpl::CancelRun() {
  for (const auto& port : ports_) {
    if (!port->is_feed) continue;
    port->feed.Close();
    (void)SendCmd(port->actor, ActorCmd::kFed);
  }
  // Actors that wait for something that will never come learn here that
  // the run is aborting.
  for (int32_t a = 0; a < static_cast<int32_t>(actors_.size()); ++a) {
    (void)SendCmd(a, ActorCmd::kWake);
  }
  while (!monitor_->running().WaitFor(options_.cancel_grace)) {
    // Still draining: a kernel that has run through the whole grace period
    // is taken not to return.
    std::vector<std::string> stuck;
    const int64_t now = SteadyNowNs();
    const int64_t grace_ns = absl::ToInt64Nanoseconds(options_.cancel_grace);
    for (size_t a = 0; a < actors_.size(); ++a) {
      int64_t since = actors_[a]->kernel_since_ns();
      if (since == 0 || (since > 1 && now - since < grace_ns)) continue;
      int index = *threads_->IndexOf(thread_keys_[a]);
      if (threads_->thread(index)->abandoned()) continue;
      threads_->Abandon(index);
      abandoned_ = true;
      stuck.push_back(absl::StrCat(
          "the kernel of ", TaskLabel(actors_[a]->task()), " did not return ",
          Seconds(options_.cancel_grace),
          " after the run was cancelled; its thread (stream ",
          streams_[a].ToString(), ") is left running and is not joined"));
    }
    if (abandoned_) return absl::StrJoin(stuck, "; ");
  }
  return "";
}

int64_t SessionImpl::TotalActs() const {
  int64_t acts = 0;
  for (const auto& actor : actors_) acts += actor->act_count();
  return acts;
}

RunProgress SessionImpl::Progress() const {
  MutexLock lock(&mu_);
  RunProgress progress;
  progress.running = running_;
  if (!started_once_) return progress;
  progress.pieces_total = has_feeds_ ? -1 : pieces_;
  progress.elapsed_ms =
      static_cast<double>(SteadyNowNs() - run_start_ns_) / 1e6;
  int64_t done = INT64_MAX;
  for (size_t a = 0; a < actors_.size(); ++a) {
    const int64_t acts = actors_[a]->act_count() - acts_before_[a];
    progress.acts += acts;
    if (options_.stats) {
      TaskStats task = actors_[a]->stats();
      task.acts = acts;
      progress.tasks[actors_[a]->task().name()] = task;
    }
  }
  for (int32_t t : last_tasks_) {
    done = std::min(done, actors_[t]->act_count() - acts_before_[t]);
  }
  progress.pieces_done = done == INT64_MAX ? 0 : done;
  return progress;
}

absl::Status SessionImpl::WaitWithinLimits(int64_t run_start_ns) {
  const absl::Duration timeout = options_.timeout;
  const absl::Duration stall = options_.stall;
  const absl::Duration zero = absl::ZeroDuration();
  if (timeout <= zero && stall <= zero) {
    // A failure (or Abort) cancels the run: a kernel that does not return
    // within cancel_grace then is left behind rather than waited for.
    while (!monitor_->running().WaitFor(absl::Milliseconds(100))) {
      if (monitor_->aborting()) {
        (void)CancelRun();
        break;
      }
    }
    return absl::OkStatus();
  }
  // Progress is sampled: the watchdog looks at the act counts a few times
  // per stall period (and at least every 100 ms).
  absl::Duration poll = absl::Milliseconds(100);
  if (stall > zero) poll = std::min(poll, stall / 4);
  const absl::Time start =
      absl::Now() - absl::Nanoseconds(SteadyNowNs() - run_start_ns);
  int64_t acts = TotalActs();
  absl::Time last_act = absl::Now();
  while (true) {
    absl::Duration wait = poll;
    if (timeout > zero) wait = std::min(wait, start + timeout - absl::Now());
    if (monitor_->running().WaitFor(std::max(wait, zero))) {
      return absl::OkStatus();
    }
    if (monitor_->aborting()) {
      (void)CancelRun();
      return absl::OkStatus();
    }
    const absl::Time now = absl::Now();
    const int64_t now_acts = TotalActs();
    if (now_acts != acts) {
      acts = now_acts;
      last_act = now;
    }
    if (timeout > zero && now - start >= timeout) {
      return StopHungRun(
          absl::StrCat("the run did not end within its timeout of ",
                       Seconds(timeout), " (", acts, " acts so far)"));
    }
    if (stall > zero && now - last_act >= stall) {
      return StopHungRun(absl::StrCat("no task acted for ",
                                      Seconds(now - last_act), " (stall limit ",
                                      Seconds(stall), ")"));
    }
  }
}

std::string SessionImpl::DescribeWaits(const std::string& reason) {
  return HangReport(compiled_->plan, CollectHangFacts(reason));
}

HangFacts SessionImpl::CollectHangFacts(const std::string& reason) {
  MutexLock describing(&describe_mu_);
  const int n = static_cast<int>(actors_.size());
  HangFacts facts;
  facts.reason = reason;
  describing_.Reset(n);
  for (int a = 0; a < n; ++a) {
    if (!SendCmd(a, ActorCmd::kDescribe).ok()) describing_.Decrement();
  }
  // A thread inside a kernel cannot answer; the others answer at once (or
  // within a second on a loaded machine).
  for (int tries = 0; tries < 20; ++tries) {
    if (describing_.WaitFor(absl::Milliseconds(50))) break;
    const absl::flat_hash_set<StreamKey> in_kernels = ThreadsInKernels();
    bool all_in = true;
    for (int a = 0; a < n && all_in; ++a) {
      all_in = snapshot_taken_[a].load(std::memory_order_acquire) ||
               in_kernels.contains(thread_keys_[a]);
    }
    if (all_in) break;
  }
  const int64_t now = SteadyNowNs();
  for (int a = 0; a < n; ++a) {
    facts.snapshots.push_back(snapshot_taken_[a].load(std::memory_order_acquire)
                                  ? snapshots_[a]
                                  : std::nullopt);
    int64_t since = actors_[a]->kernel_since_ns();
    facts.kernel_running_ns.push_back(since == 0   ? -1
                                      : since == 1 ? 0
                                                   : now - since);
    facts.streams.push_back(streams_[a].ToString());
  }
  return facts;
}

absl::flat_hash_set<StreamKey> SessionImpl::ThreadsInKernels() const {
  absl::flat_hash_set<StreamKey> threads;
  for (size_t a = 0; a < actors_.size(); ++a) {
    if (actors_[a]->kernel_since_ns() != 0) threads.insert(thread_keys_[a]);
  }
  return threads;
}

absl::Status SessionImpl::StopHungRun(const std::string& reason) {
  std::string report = HangReport(compiled_->plan, CollectHangFacts(reason));
  monitor_->ReportFailure(absl::DeadlineExceededError(report));
  std::string abandoned = CancelRun();
  if (!abandoned.empty())
    absl::StrAppend(&report, "\n  left running: ", abandoned);
  return absl::DeadlineExceededError(report);
}

// Only IsSessionCmd commands arrive here (ThreadActors routes them).
void SessionImpl::Handle(const ActorMsg& msg) {
  switch (msg.cmd) {
    case ActorCmd::kDescribe:
      snapshots_[msg.dst] = actors_[msg.dst]->Snapshot();
      snapshot_taken_[msg.dst].store(true, std::memory_order_release);
      describing_.Decrement();
      return;
    case ActorCmd::kSaveState:
    case ActorCmd::kRestoreState:
      HandleState(msg.dst, msg.cmd == ActorCmd::kSaveState);
      return;
    case ActorCmd::kHoldSupply:
      held_at_[msg.dst] = actors_[msg.dst]->HoldSupply();
      holding_.Decrement();
      return;
    case ActorCmd::kConstruct:
      Construct(msg.dst);
      return;
    default:
      monitor_->ReportFailure(absl::InternalError(absl::StrCat(
          "runtime: a message for actor ", msg.dst, " reached the session")));
  }
}

// Builds actor `a` on its own thread and wires its registers to it.
void SessionImpl::Construct(int32_t a) {
  std::vector<RegisterDesc*> produced;
  std::vector<RegisterDesc*> consumed;
  for (auto& [name, desc] : specs_[a].outputs) produced.push_back(desc);
  for (auto& [name, descs] : specs_[a].inputs) {
    consumed.insert(consumed.end(), descs.begin(), descs.end());
  }
  Actor* actor =
      table_of_actor_[a]->Adopt(a, MakeActor(std::move(specs_[a]), env_));
  actors_[a] = actor;
  // Read only by peers on this same thread, after every actor is
  // constructed (Create waits for that before any run).
  for (RegisterDesc* desc : produced) desc->producer_actor = actor;
  for (RegisterDesc* desc : consumed) {
    for (RegisterConsumer& consumer : desc->consumers) {
      if (consumer.actor == a) consumer.actor_ptr = actor;
    }
  }
  constructing_.Decrement();
}

// Threads run as long as the session, so a refused send is a runtime bug;
// it is reported rather than lost.
absl::Status SessionImpl::SendCmd(int32_t actor, ActorCmd cmd) {
  absl::Status status = bus_->Send(ActorMsg::Cmd(actor, cmd));
  if (status.ok()) return status;
  status = absl::InternalError(absl::StrCat("runtime: message to actor ", actor,
                                            " refused: ", status.message()));
  monitor_->ReportFailure(status);
  return status;
}

absl::Status SessionImpl::StartLocked(int64_t pieces,
                                      std::vector<int64_t> cuts) {
  absl::Status failed = monitor_->status();
  if (!failed.ok()) return failed;
  if (running_) {
    return absl::FailedPreconditionError(
        "a run is in progress; Wait() for it to end first");
  }
  const int n = static_cast<int>(actors_.size());
  const int64_t run_pieces =
      pieces >= 0 ? pieces : compiled_->plan.total_piece_num();
  for (size_t c = 0; c < cuts.size(); ++c) {
    if (has_feeds_ || cuts[c] <= next_piece_ ||
        cuts[c] >= next_piece_ + run_pieces ||
        (c > 0 && cuts[c] <= cuts[c - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("Start: snapshots at pieces strictly inside the run (",
                       next_piece_, ", ", next_piece_ + run_pieces,
                       "), ascending, in a plan without feeds; got ", cuts[c]));
    }
  }
  int stateful = 0;
  for (const auto& actor : actors_) stateful += actor->kernel().has_state();
  // The last run has ended: no actor writes the old cuts any more.
  cuts_.clear();
  for (int64_t piece : cuts) {
    auto cut = std::make_unique<Cut>();
    cut->piece = piece;
    cut->slots.resize(n);
    cut->pending.Reset(stateful);
    cuts_.push_back(std::move(cut));
  }
  run_cuts_ = std::move(cuts);
  pieces_ = run_pieces;
  for (const auto& port : ports_) {
    port->is_feed ? port->feed.Reopen() : port->fetch.Reopen();
  }
  for (int a = 0; a < n; ++a) acts_before_[a] = actors_[a]->act_count();
  monitor_->StartRun(n);
  monitor_->SetHolding(false);  // a hold never ended belongs to the last run
  // Every actor is reset before any source starts, so no register can reach
  // an actor still finished from the last run.
  resetting_.Reset(n);
  for (int a = 0; a < n; ++a) {
    if (!SendCmd(a, ActorCmd::kReset).ok()) resetting_.Decrement();
  }
  resetting_.Wait();
  run_start_ns_ = SteadyNowNs();
  running_ = true;
  started_once_ = true;
  for (int a = 0; a < n; ++a) (void)SendCmd(a, ActorCmd::kStart);
  return absl::OkStatus();
}

absl::Status SessionImpl::Start(int64_t pieces) {
  MutexLock lock(&mu_);
  return StartLocked(pieces);
}

absl::Status SessionImpl::Start(int64_t pieces, std::vector<int64_t> cuts) {
  MutexLock lock(&mu_);
  return StartLocked(pieces, std::move(cuts));
}

absl::StatusOr<RunStats> SessionImpl::Wait() {
  int64_t run_start_ns;
  {
    MutexLock lock(&mu_);
    if (!running_) {
      absl::Status failed = monitor_->status();
      if (!failed.ok()) return failed;
      return absl::FailedPreconditionError("no run in progress");
    }
    run_start_ns = run_start_ns_;
  }
  // Not under mu_: a feed's caller may need it to close the feed.
  absl::Status hung = WaitWithinLimits(run_start_ns);
  const int64_t end_ns = SteadyNowNs();
  MutexLock lock(&mu_);
  running_ = false;
  if (!hung.ok()) return hung;
  RunStats stats;
  stats.first_piece = next_piece_;
  stats.wall_ms = static_cast<double>(end_ns - run_start_ns_) / 1e6;
  stats.pieces = has_feeds_ ? 0 : pieces_;
  for (size_t a = 0; a < actors_.size(); ++a) {
    int64_t acts = actors_[a]->act_count() - acts_before_[a];
    stats.acts += acts;
    if (IsFeed(actors_[a]->task())) stats.pieces = std::max(stats.pieces, acts);
    if (options_.stats) {
      TaskStats task = actors_[a]->stats();
      task.acts = acts;
      stats.tasks[actors_[a]->task().name()] = task;
    }
  }
  next_piece_ += stats.pieces;
  if (options_.trace) {
    trace_.origin_ns = run_start_ns_;
    trace_.tasks.clear();
    for (size_t a = 0; a < actors_.size(); ++a) {
      trace_.tasks.push_back({actors_[a]->task().name(), streams_[a].ToString(),
                              async_actor_[a], actors_[a]->trace()});
    }
  }
  absl::Status failed = monitor_->status();
  if (!failed.ok()) return failed;
  return stats;
}

absl::StatusOr<RunStats> SessionImpl::Run(int64_t pieces) {
  if (has_feeds_ || has_fetches_) {
    std::vector<std::string> names;
    for (const auto& port : ports_) names.push_back(port->name);
    return absl::FailedPreconditionError(absl::StrCat(
        "Run: the plan has feed or fetch tasks (", absl::StrJoin(names, ", "),
        "); drive it with Feed/CloseFeeds or Start, Fetch and Wait"));
  }
  {
    MutexLock lock(&mu_);
    absl::Status started = StartLocked(pieces);
    if (!started.ok()) return started;
  }
  return Wait();
}

bool SessionImpl::running() const {
  MutexLock lock(&mu_);
  return running_;
}

absl::Status SessionImpl::status() const { return monitor_->status(); }

absl::StatusOr<SessionImpl::Port*> SessionImpl::FindPort(absl::string_view name,
                                                         bool feed) {
  std::vector<std::string> names;
  for (const auto& port : ports_) {
    if (port->is_feed != feed) continue;
    if (port->name == name) return port.get();
    names.push_back(absl::StrCat("'", port->name, "'"));
  }
  const char* kind = feed ? "feed" : "fetch";
  return absl::NotFoundError(absl::StrCat(
      "no ", kind, " task named '", name, "' (", kind,
      " tasks: ", names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
}

// The same data type and rank as the feed's blob, and its shape (a dynamic
// blob: no dimension above its maximum).
absl::Status SessionImpl::TensorFits(const Port& port, const Tensor& tensor) {
  const BlobDesc& blob = *port.blob;
  std::string where =
      absl::StrCat("feed '", port.name, "': blob '", blob.name, "': ");
  if (tensor.data_type() != blob.data_type) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "the tensor is ", DataTypeName(tensor.data_type()),
                     ", the blob ", DataTypeName(blob.data_type)));
  }
  if (tensor.shape().size() != blob.shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "the tensor has shape ", ShapeString(tensor.shape()), ", rank ",
        tensor.shape().size(), "; the blob has rank ", blob.shape.size(), " ",
        ShapeString(blob.shape)));
  }
  for (size_t d = 0; d < blob.shape.size(); ++d) {
    int64_t have = tensor.shape()[d];
    if (blob.is_dynamic ? have > blob.shape[d] : have != blob.shape[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "dimension ", d, " of the tensor is ", have,
                       blob.is_dynamic ? ", above the blob's maximum "
                                       : ", but the blob's is ",
                       blob.shape[d], " (", ShapeString(blob.shape), ")"));
    }
  }
  return absl::OkStatus();
}

// A feed plan's first Feed (or CloseFeed) starts its run.
absl::Status SessionImpl::EnsureRunning() {
  MutexLock lock(&mu_);
  absl::Status failed = monitor_->status();
  if (!failed.ok()) return failed;
  return running_ ? absl::OkStatus() : StartLocked(-1);
}

absl::Status SessionImpl::Feed(absl::string_view name, const Tensor& tensor) {
  return FeedImpl(name, tensor, /*block=*/true);
}

absl::Status SessionImpl::TryFeed(absl::string_view name,
                                  const Tensor& tensor) {
  return FeedImpl(name, tensor, /*block=*/false);
}

absl::Status SessionImpl::FeedImpl(absl::string_view name, const Tensor& tensor,
                                   bool block) {
  absl::StatusOr<Port*> found = FindPort(name, /*feed=*/true);
  if (!found.ok()) return found.status();
  Port& port = **found;
  absl::Status fits = TensorFits(port, tensor);
  if (!fits.ok()) return fits;
  absl::Status running = EnsureRunning();
  if (!running.ok()) return running;
  absl::StatusOr<Register*> reg =
      block ? port.feed.Acquire() : port.feed.TryAcquire();
  if (!reg.ok()) {
    if (absl::IsUnavailable(reg.status())) {
      return absl::UnavailableError(absl::StrCat(
          "feed '", port.name, "': every register is in use (register_num ",
          port.register_num, ")"));
    }
    if (!absl::IsFailedPrecondition(reg.status())) return reg.status();
    return absl::FailedPreconditionError(absl::StrCat(
        "feed '", port.name,
        "' is closed for this run; Wait() for the run to end, then Feed "
        "starts the next"));
  }
  TensorView view(&(*reg)->blob(0));
  absl::Status shaped = view.set_shape(tensor.shape());
  if (!shaped.ok()) {
    port.feed.Unacquire(*reg);
    return shaped;
  }
  if (tensor.byte_size() > 0) {
    std::memcpy(view.mutable_raw_data(), tensor.raw_data(), tensor.byte_size());
  }
  port.feed.Submit(*reg);
  return SendCmd(port.actor, ActorCmd::kFed);
}

absl::Status SessionImpl::CloseFeed(absl::string_view name) {
  absl::StatusOr<Port*> found = FindPort(name, /*feed=*/true);
  if (!found.ok()) return found.status();
  // Closing before feeding anything is a run of no pieces.
  absl::Status running = EnsureRunning();
  if (!running.ok()) return running;
  if (!(*found)->feed.Close()) return absl::OkStatus();
  return SendCmd((*found)->actor, ActorCmd::kFed);
}

absl::Status SessionImpl::CloseFeeds() {
  for (const auto& port : ports_) {
    if (!port->is_feed) continue;
    absl::Status status = CloseFeed(port->name);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<FetchedTensor> SessionImpl::FetchBorrowed(
    absl::string_view name) {
  absl::StatusOr<Port*> found = FindPort(name, /*feed=*/false);
  if (!found.ok()) return found.status();
  {
    MutexLock lock(&mu_);
    absl::Status failed = monitor_->status();
    if (!failed.ok()) return failed;
    // Without feeds only Start begins a run: waiting before the first one
    // could only hang.
    if (!running_ && !has_feeds_ && !started_once_) {
      return absl::FailedPreconditionError(
          absl::StrCat("fetch '", name, "': no run has started (Start first)"));
    }
  }
  absl::StatusOr<Register*> reg = (*found)->fetch.Next();
  if (absl::IsOutOfRange(reg.status())) {
    // A failing run winds down as soon as the failure is recorded, which is
    // before the ports are failed: the fetch actor may end this port first.
    // The run's end is then the failure's, not the data's.
    absl::Status failed = monitor_->status();
    if (!failed.ok()) return failed;
    return absl::OutOfRangeError(
        absl::StrCat("fetch '", name, "': ", reg.status().message()));
  }
  if (!reg.ok()) return reg.status();  // the session's failure
  return FetchedTensor(this, *reg);
}

absl::StatusOr<Tensor> SessionImpl::Fetch(absl::string_view name) {
  absl::StatusOr<FetchedTensor> borrowed = FetchBorrowed(name);
  if (!borrowed.ok()) return borrowed.status();
  ConstTensorView view = borrowed->view();
  Tensor tensor(view.data_type(),
                std::vector<int64_t>(view.shape().begin(), view.shape().end()));
  if (view.byte_size() > 0) {
    std::memcpy(tensor.mutable_raw_data(), view.raw_data(), view.byte_size());
  }
  return tensor;
}

absl::StatusOr<TakenTensor> SessionImpl::TakeOver(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  const std::shared_ptr<SyncedMemory>& memory = reg->memory_ptr();
  // The memory leaves with the caller: no other reader may be looking at
  // it, no other register may share it, and the recycled memory that
  // replaces it is plain pageable host memory, as it must be too.
  const char* why = nullptr;
  if (memory == nullptr || desc.layout.bytes == 0 || reg->num_blobs() != 1) {
    why = "it is not one blob with bytes";
  } else if (desc.consumers.size() != 1) {
    why = "other tasks read it too";
  } else if (desc.checked_block != nullptr || memory.use_count() != 1) {
    why = "its memory is shared";
  } else if (memory->options().host != SyncedMemoryOptions::Host::kPageable ||
             memory->options().host_allocator != nullptr ||
             !memory->owns_cpu_data() ||
             memory->head() != SyncedMemory::HEAD_AT_CPU) {
    why = "its memory is not plain host memory";
  }
  if (why != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("TakeOver: register ", desc.id, " cannot hand its ",
                     "memory over: ", why, "; copy it instead"));
  }
  absl::StatusOr<std::shared_ptr<SyncedMemory>> fresh =
      recycler_->Get(memory->size());
  if (!fresh.ok()) return fresh.status();
  absl::StatusOr<void*> base = (*fresh)->mutable_cpu_data();
  if (!base.ok()) return base.status();
  ConstTensorView view(&reg->blob(0));
  TakenTensor taken;
  taken.data = view.raw_data();
  taken.data_type = view.data_type();
  taken.shape.assign(view.shape().begin(), view.shape().end());
  taken.owner = recycler_->Lend(
      reg->SwapMemory(*std::move(fresh), static_cast<char*>(*base)));
  return taken;
}

void SessionImpl::Release(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  // Fails only once the threads have stopped, when nothing waits for it.
  (void)desc.producer_thread->TrySend(
      ActorMsg::Return(desc.producer, desc.producer_out_slot, reg));
}

void SessionImpl::Abort(absl::Status status) {
  monitor_->ReportFailure(std::move(status));
  // Actors idle on their queues learn of it here; Wait then drains the run.
  for (int32_t a = 0; a < static_cast<int32_t>(actors_.size()); ++a) {
    (void)SendCmd(a, ActorCmd::kWake);
  }
}

void SessionImpl::OnFailure(const absl::Status& status) {
  if (options_.on_failure) options_.on_failure(status);
  for (const auto& port : ports_) {
    if (port->is_feed) {
      port->feed.Fail(status);
    } else {
      for (Register* reg : port->fetch.Fail(status)) Release(reg);
    }
  }
}

std::map<std::string, SinkSummary> SessionImpl::Sinks() const {
  std::map<std::string, SinkSummary> sinks;
  for (const auto& actor : actors_) {
    if (auto summary = actor->kernel().sink_summary()) {
      sinks[actor->task().name()] = *summary;
    }
  }
  return sinks;
}

}  // namespace actorflow::internal
