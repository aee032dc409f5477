// Registers between two processes (net/) against plain gRPC streaming
// between the same two processes, on one host (registers through shared
// memory, order and credit on 127.0.0.1; --shm=0: all on gRPC) or
// (--link=1) with rank 1 in a network namespace of its own joined by a
// veth pair, which --link=2 caps at 1 Gbit/s each way (tc tbf), where
// they take gRPC:
//
//   throughput  a two-rank job: fill (rank 0) -> take (rank 1), blobs of
//               4 KiB, 64 KiB, 1 MiB and 16 MiB, register_num 16 (at 4 KiB,
//               as many bytes in flight as HTTP/2's initial 64 KiB window
//               lets the baseline have). A sample is one Run of --mib MiB
//               (at least --min-pieces pieces) on both ranks and a
//               Job::Barrier, so it ends once rank 1 has taken every piece.
//               Baselines, each moving the same bytes in pieces of the same
//               size: messages on one client stream (PingPong.Drain), answered
//               once after the last; a plain blocking send loop on a TCP socket
//               to rank 1, which recv()s them into one buffer and answers one
//               byte after the last (the socket's own speed); memcpy in
//               this process between two rings of 16 buffers (the
//               memory's speed).
//   latency     a two-rank job with a cycle: ping (rank 0, an initial
//               register) -> relay (rank 1) -> back to ping, so one 64-byte
//               piece is in flight at a time and a Run of R pieces is R
//               round trips. Baseline: R round trips of a 64-byte message
//               on one stream (PingPong.Echo).
//   MLP job     one epoch of examples/jobs/mlp_two_machines.pbtxt (the
//               perceptron, data parallel over the two ranks) against one
//               epoch of mlp_two_devices.pbtxt (the same plan on two devices
//               of this process, while rank 1 waits), in samples/s. Not
//               under --tls=1.
//
// This process is rank 0 and the gRPC client; it starts this binary again
// as rank 1 and the gRPC server. Both use gRPC's "poll" engine, as
// `actorflow` does (net::UseOwnPollers; GRPC_POLL_STRATEGY overrides it). Every
// sample alternates with its baseline's, so both see the same machine; the
// table shows medians and the median per-pair ratio (how many times better
// plain gRPC did).
//
// --tls=1 measures what mutual TLS between ranks costs instead: the same
// jobs with --tls-cert/--tls-key/--tls-ca (a CA and a certificate for
// 127.0.0.1 made here with openssl) against the same jobs in plaintext,
// alternated; the ratio is how many times better plaintext did. Run:
//
//   tools/bazel run //bench:net_bench
//   tools/bazel run //bench:net_bench -- --samples=21 --mib=64
//   tools/bazel run //bench:net_bench -- --tls=1
//   tools/bazel run //bench:net_bench -- --link=2   (as root)
//   tools/bazel run //bench:net_bench -- --reduce=1 (as root; net_reduction.h)
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actorflow/session.h"
#include "bench/bench_util.h"
#include "bench/net_reduction.h"
#include "bench/ping_pong.grpc.pb.h"
#include "bench/spawn.h"
#include "compiler/plan_or_job.h"
#include "net/job.h"
#include "net/launch.h"
#include "plan/plan_builder.h"
#include "plan/plan_writer.h"

namespace actorflow::internal::bench {
namespace {

constexpr int64_t kBlobBytes[] = {4 << 10, 64 << 10, 1 << 20, 16 << 20};
constexpr int64_t kPingBytes = 64;
constexpr int kRegisterNum = 16;
// One port for the baseline's server, then one MASTER_PORT per job in
// plaintext and one per job under TLS, then the raw TCP baseline's.
// The throughput jobs, the masks job, the latency job and (without --tls)
// the MLP job.
constexpr int kJobs = std::size(kBlobBytes) + 3;
constexpr size_t kLatencyJob = std::size(kBlobBytes) + 1;
// The masks job's blobs: byte masks, one byte in ten set, which zstd
// shrinks about 8x (--net-compress on their producer).
constexpr int64_t kMaskBytes = 1 << 20;
// The perceptron over two ranks, and over two devices of one process.
constexpr char kMlpTwoRanks[] = "examples/jobs/mlp_two_machines.pbtxt";
constexpr char kMlpOneProcess[] = "examples/jobs/mlp_two_devices.pbtxt";
constexpr int kPorts = 1 + 2 * kJobs + 1;
constexpr int kRawTcpPort = kPorts - 1;
// Where --tls=1 keeps its certificates, for rank 1 too.
constexpr char kTlsDirVar[] = "ACTORFLOW_NET_BENCH_TLS_DIR";

struct Config {
  int64_t samples = 11;
  int64_t mib = 32;         // per throughput sample
  int64_t min_pieces = 32;  // per throughput sample, whatever --mib gives
  int64_t round_trips = 2000;
  int64_t tls = 0;     // 1: TLS against plaintext
  int64_t link = 0;    // 0: loopback; 1: a veth pair; 2: one capped at 1 Gbit/s
  int64_t subnet = 0;  // the veth pair's 10.214.<subnet>.0/30 (rank 1's flag)
  int64_t shm = 1;     // JobConfig::net_shm (used on one host only)

  // Where each rank listens: 127.0.0.1, or the two ends of the veth pair.
  std::string rank0() const {
    return link == 0 ? "127.0.0.1" : absl::StrCat("10.214.", subnet, ".1");
  }
  std::string rank1() const {
    return link == 0 ? "127.0.0.1" : absl::StrCat("10.214.", subnet, ".2");
  }
};

// The cap of --link=2, in bytes per second.
constexpr double kCapBytesPerSecond = 1e9 / 8;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "net_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Die(absl::StrCat(what, ": ", status.ToString()));
}

// ------------------------------------------------------------ the plans

StreamKeyProto On(int machine, int stream_index) {
  StreamKeyProto stream = CpuStream(stream_index);
  stream.set_machine_id(machine);
  return stream;
}

BlobDescProto Floats(const char* name, int64_t bytes) {
  return BlobProto(name, DT_FLOAT32, {bytes / 4});
}

Plan ThroughputPlan(int64_t blob_bytes, const char* fill_kernel) {
  PlanWriter w;
  TaskProto* fill = w.AddTask("fill", fill_kernel, On(0, 0));
  const int64_t data =
      w.AddOutput(fill, "out", kRegisterNum, false, {Floats("x", blob_bytes)});
  TaskProto* take = w.AddTask("take", "bench_take", On(1, 0));
  w.Consume(take, "in", data);
  return w.plan();
}

// tick and ping feed fwd; fwd -> relay (rank 1) -> ping. ping's register is
// initial, so piece p + 1 leaves only once piece p came back.
Plan LatencyPlan() {
  PlanWriter w;
  TaskProto* tick = w.AddTask("tick", "bench_fill", On(0, 0));
  const int64_t ticks = w.AddOutput(tick, "out", 2, false, {Floats("t", 4)});
  TaskProto* ping = w.AddTask("ping", "bench_ping", On(0, 0));
  const int64_t pinged =
      w.AddOutput(ping, "out", 1, false, {Floats("p", kPingBytes)});
  w.Desc(pinged).set_initial_register(true);
  TaskProto* fwd = w.AddTask("fwd", "bench_relay", On(0, 0));
  w.Consume(fwd, "in", pinged);
  w.Consume(fwd, "tick", ticks);
  const int64_t out =
      w.AddOutput(fwd, "out", 2, false, {Floats("f", kPingBytes)});
  TaskProto* relay = w.AddTask("relay", "bench_relay", On(1, 0));
  w.Consume(relay, "in", out);
  const int64_t back =
      w.AddOutput(relay, "out", 2, false, {Floats("b", kPingBytes)});
  w.Consume(ping, "in", back);
  return w.plan();
}

absl::Status CopyFirstInput(KernelContext* ctx) {
  ConstTensorView in = ctx->input(0).blob(0);
  TensorView out = ctx->output(0).blob(0);
  std::memcpy(out.mutable_raw_data(), in.raw_data(), out.byte_size());
  return absl::OkStatus();
}

class Ping final : public Kernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    return CopyFirstInput(ctx);
  }
  absl::Status InitialOutput(KernelContext* ctx) override {
    TensorView out = ctx->output(0).blob(0);
    std::memset(out.mutable_raw_data(), 0, out.byte_size());
    return absl::OkStatus();
  }
};

// kMaskBytes of byte masks, the same every piece (zstd compresses each
// piece on its own, so that costs it nothing).
const std::vector<char>& Masks() {
  static const std::vector<char> masks = [] {
    std::vector<char> bytes(kMaskBytes, 0);
    uint64_t z = 0x9e3779b97f4a7c15ull;
    for (char& byte : bytes) {
      z = z * 6364136223846793005ull + 1442695040888963407ull;  // an LCG
      if ((z >> 33) % 10 == 0) byte = static_cast<char>(1 + (z >> 56) % 255);
    }
    return bytes;
  }();
  return masks;
}

// The kernels do no work of their own but copying the masks: what is
// measured is the moving.
SessionOptions BenchKernels() {
  SessionOptions options;
  auto nothing = [](KernelContext*) { return absl::OkStatus(); };
  auto no_init = [](const KernelInitContext&) { return absl::OkStatus(); };
  options.kernels.BindFunction("bench_fill", nothing, no_init);
  options.kernels.BindFunction("bench_take", nothing, no_init);
  options.kernels.BindFunction(
      "bench_fill_mask",
      [](KernelContext* ctx) {
        TensorView out = ctx->output(0).blob(0);
        std::memcpy(out.mutable_raw_data(), Masks().data(), out.byte_size());
        return absl::OkStatus();
      },
      no_init);
  options.kernels.BindFunction("bench_relay", CopyFirstInput, no_init);
  options.kernels.Bind("bench_ping", [] { return std::make_unique<Ping>(); });
  return options;
}

// "64 KiB", "16 MiB".
std::string BlobSize(int64_t bytes) {
  return bytes >= (1 << 20) ? absl::StrCat(bytes >> 20, " MiB")
                            : absl::StrCat(bytes >> 10, " KiB");
}

struct JobSpec {
  Plan plan;
  int64_t pieces;
  int64_t bytes = 0;   // a throughput job's blob size
  bool masks = false;  // the masks job: --net-compress=fill

  std::string label() const {
    return masks ? absl::StrCat("zstd, ", BlobSize(bytes), " byte masks")
                 : absl::StrCat("throughput, ", BlobSize(bytes), " blobs");
  }
};

Plan CompiledJob(const std::string& path) {
  absl::StatusOr<LoadedPlan> loaded = LoadPlanOrJob(path);
  if (!loaded.ok()) Die(std::string(loaded.status().message()));
  return std::move(loaded->plan);
}

// Samples per piece of the MLP jobs: their reader's `batch`.
int64_t MlpBatch() {
  absl::StatusOr<Job> job = LoadJob(kMlpTwoRanks);
  if (!job.ok()) Die(std::string(job.status().message()));
  for (const OpConf& op : job->op()) {
    auto batch = op.attr().find("batch");
    if (batch != op.attr().end()) return batch->second.i();
  }
  Die(absl::StrCat(kMlpTwoRanks, ": no operator with a batch attr"));
}

std::vector<JobSpec> Jobs(const Config& config) {
  std::vector<JobSpec> jobs;
  auto pieces = [&](int64_t bytes) {
    return std::max((config.mib << 20) / bytes, config.min_pieces);
  };
  for (int64_t bytes : kBlobBytes) {
    jobs.push_back({ThroughputPlan(bytes, "bench_fill"), pieces(bytes), bytes});
  }
  jobs.push_back({ThroughputPlan(kMaskBytes, "bench_fill_mask"),
                  pieces(kMaskBytes), kMaskBytes, true});
  jobs.push_back({LatencyPlan(), config.round_trips});
  // One epoch of Fashion-MNIST per sample.
  if (!config.tls) jobs.push_back({CompiledJob(kMlpTwoRanks), 600});
  return jobs;
}

// The certificates of --tls=1 (empty: plaintext).
net::TlsFiles TlsFilesIn(const std::string& dir) {
  if (dir.empty()) return {};
  return {dir + "/rank.pem", dir + "/rank.key", dir + "/ca.pem"};
}

// A CA and one certificate for 127.0.0.1 signed by it, as
// docs/multi_process.md makes them; returns the directory.
std::string MakeCertificates() {
  char dir[] = "/tmp/net_bench_tls.XXXXXX";
  if (mkdtemp(dir) == nullptr) Die("mkdtemp failed");
  const std::string d = dir;
  const std::string script = absl::StrCat(
      "cd '", d, "' && (",
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
      "-subj /CN=bench-ca -days 1 && ",
      "openssl req -newkey rsa:2048 -nodes -keyout rank.key -out rank.csr "
      "-subj /CN=localhost && ",
      "echo subjectAltName=IP:127.0.0.1,DNS:localhost > ext.cnf && ",
      "openssl x509 -req -in rank.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out rank.pem -days 1 -extfile ext.cnf",
      ") > openssl.log 2>&1");
  if (std::system(script.c_str()) != 0) {
    Die(
        absl::StrCat("--tls=1 needs openssl (Debian's openssl package): "
                     "making certificates in ",
                     d, " failed, see ", d, "/openssl.log"));
  }
  return d;
}

std::unique_ptr<net::Job> JoinJob(const Config& config, const JobSpec& spec,
                                  int rank, int port,
                                  const std::string& tls_dir = "") {
  net::JobConfig job;
  job.rank = rank;
  job.world_size = 2;
  job.master_addr = config.rank0();
  job.host = rank == 0 ? config.rank0() : config.rank1();
  job.master_port = port;
  job.tls = TlsFilesIn(tls_dir);
  job.join_timeout = absl::Seconds(60);
  job.peer_timeout = absl::Seconds(60);
  job.net_shm = config.shm != 0;
  if (spec.masks) job.net_compress = {"fill"};
  auto created = net::Job::Create(spec.plan, spec.pieces, job, BenchKernels());
  Check(created.status(), absl::StrCat("rank ", rank, ": joining the job"));
  return std::move(*created);
}

// One run on this rank, then the barrier that marks it done on both.
void RunJob(net::Job* job, int64_t pieces) {
  auto stats = job->Run(pieces);
  Check(stats.status(), "run");
  Check(job->Barrier(), "barrier after the run");
}

// ------------------------------------------------------------ rank 1

class PingPongServer final : public PingPong::Service {
  grpc::Status Echo(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<Payload, Payload>* stream) override {
    Payload message;
    while (stream->Read(&message)) stream->Write(message);
    return grpc::Status::OK;
  }
  grpc::Status Drain(grpc::ServerContext*, grpc::ServerReader<Payload>* reader,
                     Payload* reply) override {
    Payload message;
    int64_t bytes = 0;
    while (reader->Read(&message)) bytes += message.data().size();
    reply->set_data(absl::StrCat(bytes));
    return grpc::Status::OK;
  }
};

// ip:port (IPv4), for the raw TCP baseline's two ends.
sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (inet_pton(AF_INET, ip.c_str(), &address.sin_addr) != 1) {
    Die(absl::StrCat("not an IPv4 address: ", ip));
  }
  return address;
}

// Whole reads and writes on a blocking socket; false once it fails or ends.
bool ReadAll(int fd, void* data, int64_t bytes) {
  auto* at = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t got = recv(fd, at, bytes, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    at += got;
    bytes -= got;
  }
  return true;
}

bool WriteAll(int fd, const void* data, int64_t bytes) {
  const auto* at = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t sent = send(fd, at, bytes, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    at += sent;
    bytes -= sent;
  }
  return true;
}

// The raw TCP baseline's receiving end, listening on ip:port once this
// returns. Each sample: rank 0 sends {piece bytes, pieces}, then
// the pieces; this reads each into one buffer (the register a receiver
// would fill) and answers one byte after the last.
class RawTcpSink {
 public:
  RawTcpSink(const std::string& ip, int port) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address = Address(ip, port);
    if (listener_ < 0 ||
        bind(listener_, reinterpret_cast<sockaddr*>(&address),
             sizeof(address)) != 0 ||
        listen(listener_, 1) != 0) {
      Die(absl::StrCat("rank 1: cannot listen on ", ip, ":", port));
    }
    thread_ = std::thread([this] { Serve(); });
  }
  // Returns once rank 0 has closed its connection (or never made one and
  // the listener is shut).
  ~RawTcpSink() {
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
  }

 private:
  void Serve() {
    const int fd = accept(listener_, nullptr, nullptr);
    if (fd < 0) return;  // shut before rank 0 connected
    std::vector<char> buffer;
    int64_t header[2];
    while (ReadAll(fd, header, sizeof(header))) {
      buffer.resize(header[0]);
      bool ok = true;
      for (int64_t i = 0; i < header[1] && ok; ++i) {
        ok = ReadAll(fd, buffer.data(), header[0]);
      }
      const char done = 1;
      if (!ok || !WriteAll(fd, &done, 1)) break;
    }
    close(fd);
  }

  int listener_ = -1;
  std::thread thread_;
};

// Serves the baselines and runs rank 1 of every job, as many runs as rank 0
// (a warm-up and the samples).
int Child(const Config& config, const std::vector<int>& ports) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Listening before the gRPC server answers: once rank 0 reaches that,
  // it may connect here.
  RawTcpSink raw_tcp(config.rank1(), ports[kRawTcpPort]);
  PingPongServer service;
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(-1);  // 16 MiB pieces
  builder.AddListeningPort(absl::StrCat(config.rank1(), ":", ports[0]),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) Die("rank 1: cannot serve the baseline");
  std::vector<JobSpec> jobs = Jobs(config);
  auto serve = [&](size_t j, int port, const std::string& tls_dir) {
    std::unique_ptr<net::Job> job = JoinJob(config, jobs[j], 1, port, tls_dir);
    for (int64_t i = 0; i < 1 + config.samples; ++i) {
      RunJob(job.get(), jobs[j].pieces);
    }
    Check(job->Finish(), "rank 1: finishing");
  };
  const char* tls_dir = std::getenv(kTlsDirVar);
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!config.tls) {
      serve(j, ports[1 + j], "");
      continue;
    }
    // Rank 0 alternates the two jobs' runs: each needs its own thread here.
    std::thread plain(serve, j, ports[1 + j], "");
    serve(j, ports[1 + kJobs + j], tls_dir == nullptr ? "" : tls_dir);
    plain.join();
  }
  server->Shutdown();
  return 0;
}

// ------------------------------------------------------------ rank 0

double Seconds(int64_t start_ns) { return (NowNs() - start_ns) * 1e-9; }

// Bytes per second through PingPong.Drain.
double DrainRate(PingPong::Stub* stub, int64_t bytes, int64_t messages) {
  const std::string buffer(bytes, 'x');
  const int64_t start = NowNs();
  grpc::ClientContext context;
  Payload reply;
  std::unique_ptr<grpc::ClientWriter<Payload>> writer =
      stub->Drain(&context, &reply);
  Payload message;
  for (int64_t i = 0; i < messages; ++i) {
    message.set_data(buffer.data(), buffer.size());
    if (!writer->Write(message)) Die("baseline: the Drain stream broke");
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) Die("baseline: Drain: " + status.error_message());
  if (reply.data() != absl::StrCat(bytes * messages)) {
    Die("baseline: Drain answered " + reply.data());
  }
  return bytes * messages / Seconds(start);
}

// Round trips per second through PingPong.Echo.
double EchoRate(PingPong::Stub* stub, int64_t round_trips) {
  const std::string buffer(kPingBytes, 'x');
  const int64_t start = NowNs();
  grpc::ClientContext context;
  auto stream = stub->Echo(&context);
  Payload message, reply;
  for (int64_t i = 0; i < round_trips; ++i) {
    message.set_data(buffer.data(), buffer.size());
    if (!stream->Write(message) || !stream->Read(&reply)) {
      Die("baseline: the Echo stream broke");
    }
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!status.ok()) Die("baseline: Echo: " + status.error_message());
  return round_trips / Seconds(start);
}

// Bytes per second through a plain blocking send loop to RawTcpSink.
double RawTcpRate(int fd, int64_t bytes, int64_t messages) {
  static std::string buffer;
  buffer.assign(bytes, 'x');
  const int64_t start = NowNs();
  const int64_t header[2] = {bytes, messages};
  bool ok = WriteAll(fd, header, sizeof(header));
  for (int64_t i = 0; i < messages && ok; ++i) {
    ok = WriteAll(fd, buffer.data(), bytes);
  }
  char done = 0;
  if (!ok || !ReadAll(fd, &done, 1)) Die("baseline: the raw TCP socket broke");
  return bytes * messages / Seconds(start);
}

int ConnectRawTcp(const std::string& ip, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = Address(ip, port);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address),
                        sizeof(address)) != 0) {
    Die(absl::StrCat("baseline: cannot connect to ", ip, ":", port));
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Bytes per second of memcpy from a ring of kRegisterNum buffers of
// `bytes` to another: what moving the pieces costs with no network at all.
double MemcpyRate(int64_t bytes, int64_t messages) {
  static std::vector<std::vector<char>> from, to;
  if (from.empty() || static_cast<int64_t>(from[0].size()) != bytes) {
    from.assign(kRegisterNum, std::vector<char>(bytes, 'x'));
    to.assign(kRegisterNum, std::vector<char>(bytes, 0));
  }
  const int64_t start = NowNs();
  for (int64_t i = 0; i < messages; ++i) {
    char* into = to[i % kRegisterNum].data();
    std::memcpy(into, from[i % kRegisterNum].data(), bytes);
    asm volatile("" : : "r"(into) : "memory");  // the copy is used
  }
  return bytes * messages / Seconds(start);
}

// The network namespace rank 1 runs in with --link above 0 (empty: none).
std::string& Namespace() {
  static std::string name;
  return name;
}

void RemoveNamespace() {
  if (Namespace().empty()) return;
  // Deleting the namespace deletes the veth pair with it.
  const std::string command =
      absl::StrCat("ip netns del ", Namespace(), " 2>/dev/null");
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "net_bench: could not delete namespace %s\n",
                 Namespace().c_str());
  }
  Namespace().clear();
}

// --link=1 or 2: a namespace for rank 1 joined to this one by a veth pair
// (config.rank0() here, config.rank1() there), capped at 1 Gbit/s each way
// by tc tbf with --link=2. Removed when this process exits.
void MakeLink(const Config& config) {
  const std::string tag = absl::StrCat("nb", getpid());
  const std::string a = tag + "a", b = tag + "b";
  std::string script = absl::StrCat(
      "set -e; ip netns add ", tag, "; ip link add ", a,
      " type veth peer name ", b, "; ip link set ", b, " netns ", tag,
      "; ip addr add ", config.rank0(), "/30 dev ", a, "; ip link set ", a,
      " up; ip -n ", tag, " addr add ", config.rank1(), "/30 dev ", b,
      "; ip -n ", tag, " link set ", b, " up; ip -n ", tag, " link set lo up");
  if (config.link == 2) {
    // 1 Gbit/s with a burst of 256 KiB and at most 50 ms queued, both ways.
    const std::string tbf = " root tbf rate 1gbit burst 256kb latency 50ms";
    absl::StrAppend(&script, "; tc qdisc add dev ", a, tbf, "; ip netns exec ",
                    tag, " tc qdisc add dev ", b, tbf);
  }
  Namespace() = tag;
  std::atexit(RemoveNamespace);
  const std::string command = absl::StrCat("(", script, ") 2>&1");
  if (std::system(command.c_str()) != 0) {
    Die(absl::StrCat("--link=", config.link,
                     " needs root, iproute2 and (for 2) tc: making namespace ",
                     tag, " and its veth pair failed"));
  }
}

pid_t StartChild(const Config& config, const std::vector<int>& ports) {
  const std::string self = SelfPath();
  if (self.empty()) Die("cannot read /proc/self/exe");
  std::vector<std::string> args;
  if (config.link != 0) args = {"ip", "netns", "exec", Namespace()};
  args.push_back(self);
  args.insert(args.end(), {"--child", absl::StrJoin(ports, ","),
                           absl::StrCat("--samples=", config.samples),
                           absl::StrCat("--mib=", config.mib),
                           absl::StrCat("--min-pieces=", config.min_pieces),
                           absl::StrCat("--round-trips=", config.round_trips),
                           absl::StrCat("--tls=", config.tls),
                           absl::StrCat("--link=", config.link),
                           absl::StrCat("--subnet=", config.subnet),
                           absl::StrCat("--shm=", config.shm)});
  const pid_t pid = Spawn(std::move(args));
  if (pid < 0) Die("fork failed");
  return pid;
}

// --tls=1: every job under mutual TLS against the same in plaintext.
int CompareTls(const Config& config, const std::vector<int>& ports,
               pid_t child) {
  std::printf(
      "net_bench --tls=1: two processes on 127.0.0.1, %lld samples (medians; "
      "ratio = plaintext / TLS, per pair)\n\n",
      static_cast<long long>(config.samples));
  std::printf("%-26s %14s %14s %8s\n", "", "mutual TLS", "plaintext", "ratio");
  const std::string tls_dir = std::getenv(kTlsDirVar);
  std::vector<JobSpec> jobs = Jobs(config);
  for (size_t j = 0; j < jobs.size(); ++j) {
    std::unique_ptr<net::Job> plain = JoinJob(config, jobs[j], 0, ports[1 + j]);
    std::unique_ptr<net::Job> tls =
        JoinJob(config, jobs[j], 0, ports[1 + kJobs + j], tls_dir);
    const int64_t pieces = jobs[j].pieces;
    const bool throughput = jobs[j].bytes > 0;
    auto rate = [&](net::Job* job) {
      const int64_t start = NowNs();
      RunJob(job, pieces);
      const double per_second = pieces / Seconds(start);
      return throughput ? per_second * jobs[j].bytes : per_second;
    };
    Paired p = PairedMedians(
        config.samples, [&] { return rate(tls.get()); },
        [&] { return rate(plain.get()); });
    if (throughput) {
      std::printf("%-26s %9.0f MB/s %9.0f MB/s %7.2fx\n",
                  jobs[j].label().c_str(), p.subject / 1e6, p.baseline / 1e6,
                  p.ratio);
    } else {
      std::printf("%-26s %11.1f us %11.1f us %7.2fx\n",
                  absl::StrCat("round trip, ", kPingBytes, " B").c_str(),
                  1e6 / p.subject, 1e6 / p.baseline, p.ratio);
    }
    std::fflush(stdout);
    Check(plain->Finish(), "rank 0: finishing");
    Check(tls->Finish(), "rank 0: finishing");
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    Die("rank 1 failed");
  }
  std::printf("\nratio: how many times plaintext's figure is better\n");
  std::error_code ignored;  // a temporary directory left behind is harmless
  std::filesystem::remove_all(tls_dir, ignored);
  return 0;
}

int Parent(Config config) {
  // TLS guards the network path: the registers must take it.
  if (config.tls) config.shm = 0;
  if (config.link != 0) {
    if (config.tls) Die("--tls=1 runs on loopback only (its certificate)");
    config.subnet = getpid() % 250;
    MakeLink(config);
  }
  std::vector<int> ports;
  for (int i = 0; i < kPorts; ++i) {
    int port = 0;
    // Distinct, though each is free only when picked.
    for (int tries = 0; tries < 100 && port == 0; ++tries) {
      port = net::FreePort(config.rank0());
      for (int taken : ports) port = port == taken ? 0 : port;
    }
    if (port == 0) Die(absl::StrCat("no free port on ", config.rank0()));
    ports.push_back(port);
  }
  if (config.tls) setenv(kTlsDirVar, MakeCertificates().c_str(), 1);
  const pid_t child = StartChild(config, ports);
  if (config.tls) return CompareTls(config, ports, child);
  auto channel =
      grpc::CreateChannel(absl::StrCat(config.rank1(), ":", ports[0]),
                          grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + absl::Seconds(60)))) {
    Die("rank 1 did not serve the baseline within 60 s");
  }
  std::unique_ptr<PingPong::Stub> stub = PingPong::NewStub(channel);
  const int raw_tcp = ConnectRawTcp(config.rank1(), ports[kRawTcpPort]);

  const bool shared = config.link == 0 && config.shm != 0;
  const char* where =
      config.link == 0   ? (shared ? "on one host (registers through shared "
                                     "memory, order and credit on 127.0.0.1)"
                                   : "on 127.0.0.1 (--shm=0: registers over "
                                     "gRPC)")
      : config.link == 1 ? "in two network namespaces joined by a veth pair"
                         : "in two network namespaces joined by a veth pair "
                           "capped at 1 Gbit/s (tc tbf)";
  std::printf(
      "net_bench: two processes %s, %lld samples (medians; ratios per "
      "round)\n\n",
      where, static_cast<long long>(config.samples));
  std::printf("%-26s %14s %14s %14s %14s %8s %8s %8s%s\n", "", "actorflow",
              "plain gRPC", "raw TCP", "memcpy", "gRPC/af", "af/TCP", "af/copy",
              config.link == 2 ? "   af/cap" : "");
  std::vector<JobSpec> jobs = Jobs(config);
  std::string mlp;  // printed after the table
  for (size_t j = 0; j < jobs.size(); ++j) {
    std::unique_ptr<net::Job> job = JoinJob(config, jobs[j], 0, ports[1 + j]);
    const int64_t pieces = jobs[j].pieces;
    if (jobs[j].bytes > 0) {
      const int64_t bytes = jobs[j].bytes;
      const std::vector<std::vector<double>> rates = AlternatedSamples(
          config.samples, {[&] {
                             const int64_t start = NowNs();
                             RunJob(job.get(), pieces);
                             return bytes * pieces / Seconds(start);
                           },
                           [&] { return DrainRate(stub.get(), bytes, pieces); },
                           [&] { return RawTcpRate(raw_tcp, bytes, pieces); },
                           [&] { return MemcpyRate(bytes, pieces); }});
      // The path the table says: every piece through shared memory, or none.
      for (const net::Transport::EdgeBytes& edge : job->SentBytes()) {
        if (edge.shared_pieces != (shared ? edge.pieces : 0)) {
          Die(absl::StrCat(edge.shared_pieces, " of ", edge.pieces,
                           " pieces went through shared memory, expected ",
                           shared ? "all" : "none"));
        }
      }
      std::printf(
          "%-26s %9.0f MB/s %9.0f MB/s %9.0f MB/s %9.0f MB/s %7.2fx %7.2f "
          "%7.3f",
          jobs[j].label().c_str(), Median(rates[0]) / 1e6,
          Median(rates[1]) / 1e6, Median(rates[2]) / 1e6,
          Median(rates[3]) / 1e6, MedianRatio(rates[1], rates[0]),
          MedianRatio(rates[0], rates[2]), MedianRatio(rates[0], rates[3]));
      if (config.link == 2) {
        std::printf("  %7.2f", Median(rates[0]) / kCapBytesPerSecond);
      }
      std::printf("\n");
    } else if (j == kLatencyJob) {
      Paired p = PairedMedians(
          config.samples,
          [&] {
            const int64_t start = NowNs();
            RunJob(job.get(), pieces);
            return pieces / Seconds(start);
          },
          [&] { return EchoRate(stub.get(), pieces); });
      std::printf("%-26s %11.1f us %11.1f us %14s %14s %7.2fx\n",
                  absl::StrCat("round trip, ", kPingBytes, " B").c_str(),
                  1e6 / p.subject, 1e6 / p.baseline, "-", "-", p.ratio);
    } else {
      // Rank 1 waits for the next run while the one process trains, so
      // both use the same two CPUs.
      auto one = Session::Create(CompiledJob(kMlpOneProcess));
      Check(one.status(), kMlpOneProcess);
      const double samples = pieces * MlpBatch();
      Paired p = PairedMedians(
          config.samples,
          [&] {
            const int64_t start = NowNs();
            RunJob(job.get(), pieces);
            return samples / Seconds(start);
          },
          [&] {
            const int64_t start = NowNs();
            Check((*one)->Run(pieces).status(), kMlpOneProcess);
            return samples / Seconds(start);
          });
      mlp = absl::StrFormat(
          "\nMLP job, one epoch (%lld batches of %lld): 2 ranks %.0f "
          "samples/s, 1 process (2 devices) %.0f samples/s, 2 ranks / 1 "
          "process %.2fx\n",
          static_cast<long long>(pieces),
          static_cast<long long>(samples / pieces), p.subject, p.baseline,
          1 / p.ratio);
    }
    std::fflush(stdout);
    Check(job->Finish(), "rank 0: finishing");
  }
  close(raw_tcp);  // rank 1's sink ends with it
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    Die("rank 1 failed");
  }
  std::printf("%s", mlp.c_str());
  std::printf(
      "\ngRPC/af: how many times plain gRPC's figure is better (target: at "
      "most 1.5x);\naf/TCP, af/copy: actorflow's throughput as a fraction "
      "of raw TCP's and of memcpy's%s\n",
      config.link == 2 ? ";\naf/cap: as a fraction of the 1 Gbit/s cap" : "");
  return 0;
}

constexpr char kHelp[] =
    "net_bench: registers between two processes (actorflow's net_send and\n"
    "net_recv, through shared memory on one host) against plain gRPC\n"
    "streaming, a raw TCP socket and memcpy, on 127.0.0.1 (or, with --link,\n"
    "over gRPC on a veth pair between two network namespaces). Throughput in "
    "MB/s at 4 KiB, 64 KiB, 1 MiB\n"
    "and 16 MiB blobs, and the round trip of a 64-byte piece; medians,\n"
    "alternated with the baselines. Then the MLP job over the two ranks\n"
    "against the same job on two devices of one process, in samples/s.";

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  using namespace actorflow::internal::bench;
  // Both sides of every comparison: this process and rank 1 (its child).
  actorflow::internal::net::UseOwnPollers();
  std::vector<int> ports;
  bool child = argc > 2 && std::strcmp(argv[1], "--child") == 0;
  std::string reduce_rank;  // a rank of --reduce=1: its place
  if (argc > 2 && std::strcmp(argv[1], kReductionRankFlag) == 0) {
    reduce_rank = argv[2];
    argv[2] = argv[0];
    argc -= 2;
    argv += 2;
  }
  if (child) {
    for (absl::string_view part : absl::StrSplit(argv[2], ',')) {
      int port = 0;
      if (!absl::SimpleAtoi(part, &port)) Die("bad --child ports");
      ports.push_back(port);
    }
    if (ports.size() != kPorts) Die("bad --child ports");
    argv[2] = argv[0];
    argc -= 2;
    argv += 2;
  }
  Config config;
  ReductionConfig reduction;
  int64_t reduce = 0;
  ParseFlags(
      "net_bench", argc, argv,
      {{"samples", &config.samples, "samples per figure"},
       {"mib", &config.mib, "MiB per throughput sample"},
       {"min-pieces", &config.min_pieces,
        "pieces per throughput sample at least, whatever --mib gives"},
       {"round-trips", &config.round_trips, "round trips per latency sample"},
       {"tls", &config.tls,
        "1: mutual TLS between the ranks against plaintext (needs openssl)", 0},
       {"link", &config.link,
        "0: 127.0.0.1; 1: rank 1 in a network namespace of its own, joined "
        "by a veth pair (needs root and iproute2); 2: that pair capped at "
        "1 Gbit/s each way by tc tbf",
        0},
       {"subnet", &config.subnet,
        "(set by rank 0 for rank 1) the veth pair's 10.214.N.0/30", 0},
       {"shm", &config.shm,
        "1: ranks on one host move registers through shared memory "
        "(actorflow's default; --link puts them on two hosts); 0: over gRPC "
        "on 127.0.0.1",
        0},
       {"reduce", &reduce,
        "1: instead of the two-rank table, a partial sum over 2, 4, ... "
        "ranks in network namespaces on one bridge, links capped at 1 Gbit/s "
        "(needs root, iproute2 and tc): the job compiler's reduction against "
        "a gather on rank 0",
        0},
       {"reduce-mib", &reduction.mib, "--reduce=1: the partial sum's MiB"},
       {"reduce-pieces", &reduction.pieces,
        "--reduce=1: reductions per sample"},
       {"reduce-ranks", &reduction.max_ranks,
        "--reduce=1: rows at 2, 4, ... ranks up to this", 2},
       {"reduce-everywhere", &reduction.everywhere,
        "--reduce=1: 1: every rank reads the whole sum, as each rank's "
        "optimizer reads its gradient's; 0: rank 0 alone",
        0}},
      kHelp);
  if (config.link > 2 || config.subnet > 249 || config.shm > 1 || reduce > 1 ||
      reduction.everywhere > 1) {
    Die("--link must be 0, 1 or 2, --subnet at most 249, --shm, --reduce "
        "and --reduce-everywhere 0 or 1");
  }
  reduction.samples = config.samples;
  if (!reduce_rank.empty()) return ReductionRank(reduction, reduce_rank);
  if (reduce) return CompareReductions(reduction);
  return child ? Child(config, ports) : Parent(config);
}
