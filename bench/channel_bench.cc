// Cross-thread message costs of actorflow's Channel and Thread, each beside a
// std::mutex + std::condition_variable + std::queue channel measured in the
// same run. Prints medians and ratios. Run:
//
//   tools/bazel run //bench:channel_bench
//   tools/bazel run //bench:channel_bench -- --samples=21
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/mutex_channel.h"
#include "thread/blocking_counter.h"
#include "thread/channel.h"
#include "thread/thread.h"

namespace actorflow::internal::bench {
namespace {

struct Config {
  int64_t samples = 11;
  int64_t round_trips = 20'000;          // per sample, actorflow
  int64_t baseline_round_trips = 2'000;  // per sample, mutex/condvar
  int64_t senders = 3;
  int64_t per_sender = 300'000;
  int64_t idle_ms = 300;
};

// --- ping-pong: one message in flight, ns per round trip -----------------

double ChannelRoundTripNs(int64_t n) {
  Channel<int64_t> ping, pong;
  std::thread echo([&] {
    int64_t v;
    while (ping.Receive(&v) == ChannelStatus::kOk) pong.Send(v);
  });
  int64_t v = 0;
  // Untimed first: lets the scheduler spread the two threads over cores
  // (a new thread often starts on its creator's core).
  for (int64_t i = 0; i < n; ++i) {
    ping.Send(i);
    pong.Receive(&v);
  }
  int64_t start = NowNs();
  for (int64_t i = 0; i < n; ++i) {
    ping.Send(i);
    pong.Receive(&v);
  }
  int64_t elapsed = NowNs() - start;
  ping.Close();
  echo.join();
  return static_cast<double>(elapsed) / n;
}

double MutexRoundTripNs(int64_t n) {
  MutexChannel<int64_t> ping, pong;
  std::thread echo([&] {
    while (true) {
      int64_t v = ping.Receive();
      if (v < 0) return;
      pong.Send(v);
    }
  });
  for (int64_t i = 0; i < n; ++i) {  // untimed, as for the Channel
    ping.Send(i);
    pong.Receive();
  }
  int64_t start = NowNs();
  for (int64_t i = 0; i < n; ++i) {
    ping.Send(i);
    pong.Receive();
  }
  int64_t elapsed = NowNs() - start;
  ping.Send(-1);
  echo.join();
  return static_cast<double>(elapsed) / n;
}

// Two Threads (the actor runtime's polling loops) bounce a message: the
// handler of each forwards to the other.
struct Bounce {
  int64_t left = 0;
};

class BounceHandler : public MsgHandler<Bounce> {
 public:
  explicit BounceHandler(BlockingCounter* done) : done(done) {}
  void Handle(const Bounce& msg) override {
    if (msg.left == 0) {
      done->Decrement();
    } else {
      (void)peer->Send(Bounce{msg.left - 1});
    }
  }

  Thread<Bounce>* peer = nullptr;
  BlockingCounter* done;
};

double ThreadRoundTripNs(int64_t n) {
  BlockingCounter warm(1), done(1);
  BounceHandler ha(&warm), hb(&warm);
  CpuThread<Bounce> a(StreamKey{.stream_index = 0}, &ha);
  CpuThread<Bounce> b(StreamKey{.stream_index = 1}, &hb);
  ha.peer = &b;
  hb.peer = &a;
  a.Start();
  b.Start();
  // Untimed first ball, as in ChannelRoundTripNs. The handlers read `done`
  // only when a ball arrives, after the send that follows each switch.
  (void)a.Send(Bounce{2 * n});
  warm.Wait();
  ha.done = hb.done = &done;
  int64_t start = NowNs();
  (void)a.Send(Bounce{2 * n});  // 2n hops = n round trips
  done.Wait();
  int64_t elapsed = NowNs() - start;
  a.Stop();
  b.Stop();
  return static_cast<double>(elapsed) / n;
}

// --- many-to-one throughput, million messages per second -----------------

// Starts `senders` threads that each send 0..per_sender-1 into `channel`
// once released, then runs `receive_all` (which must take senders *
// per_sender messages) and returns million messages per second.
template <typename ChannelT, typename ReceiveAll>
double ManyToOneMps(ChannelT& channel, int senders, int64_t per_sender,
                    ReceiveAll receive_all) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([&] {
      while (!go) std::this_thread::yield();
      for (int64_t i = 0; i < per_sender; ++i) channel.Send(i);
    });
  }
  int64_t total = senders * per_sender;
  int64_t start = NowNs();
  go = true;
  receive_all(total);
  int64_t elapsed = NowNs() - start;
  for (auto& t : threads) t.join();
  return total * 1e3 / elapsed;
}

double ChannelThroughputMps(int senders, int64_t per_sender) {
  Channel<int64_t> channel;
  std::vector<int64_t> batch;
  return ManyToOneMps(channel, senders, per_sender, [&](int64_t total) {
    for (int64_t received = 0; received < total;) {
      batch.clear();
      channel.ReceiveMany(&batch);
      received += static_cast<int64_t>(batch.size());
    }
  });
}

double MutexThroughputMps(int senders, int64_t per_sender) {
  MutexChannel<int64_t> channel;
  return ManyToOneMps(channel, senders, per_sender, [&](int64_t total) {
    for (int64_t i = 0; i < total; ++i) channel.Receive();
  });
}

// --- idle: CPU used by a receiver parked on an empty channel --------------

double ThreadCpuSeconds(pthread_t thread) {
  clockid_t clock;
  if (pthread_getcpuclockid(thread, &clock) != 0) return -1;
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Percent of one core the receiver used over `idle_ms`, measured after its
// spin window has passed.
double IdleReceiverCpuPercent(int idle_ms) {
  Channel<int> channel;
  std::thread receiver([&] {
    int v;
    while (channel.Receive(&v) == ChannelStatus::kOk) {
    }
  });
  while (!channel.receiver_parked()) std::this_thread::yield();
  pthread_t handle = receiver.native_handle();
  double cpu0 = ThreadCpuSeconds(handle);
  int64_t wall0 = NowNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  double cpu1 = ThreadCpuSeconds(handle);
  int64_t wall1 = NowNs();
  channel.Close();
  receiver.join();
  return 100.0 * (cpu1 - cpu0) / ((wall1 - wall0) * 1e-9);
}

constexpr char kHelp[] =
    "channel_bench: cross-thread message costs of actorflow's Channel and\n"
    "Thread beside a mutex/condvar/std::queue channel, in one run.";

int Main(int argc, char** argv) {
  Config config;
  ParseFlags(
      "channel_bench", argc, argv,
      {{"samples", &config.samples,
        "samples per measurement; the median is shown"},
       {"round-trips", &config.round_trips, "round trips per actorflow sample"},
       {"baseline-round-trips", &config.baseline_round_trips,
        "round trips per mutex/condvar sample"},
       {"senders", &config.senders, "senders in the many-to-one test"},
       {"per-sender", &config.per_sender, "messages per sender"},
       {"idle-ms", &config.idle_ms,
        "how long to watch a parked receiver, in ms"}},
      kHelp);
  std::printf(
      "channel_bench: %u hardware threads, %lld samples per figure "
      "(medians, taken alternately with a mutex/condvar channel)\n\n",
      std::thread::hardware_concurrency(),
      static_cast<long long>(config.samples));

  Paired channel_rt = PairedMedians(
      config.samples, [&] { return ChannelRoundTripNs(config.round_trips); },
      [&] { return MutexRoundTripNs(config.baseline_round_trips); });
  Paired thread_rt = PairedMedians(
      config.samples, [&] { return ThreadRoundTripNs(config.round_trips); },
      [&] { return MutexRoundTripNs(config.baseline_round_trips); });
  std::printf("ping-pong round trip (one message in flight)\n");
  std::printf("  %-24s %7.0f ns   baseline %7.0f ns   %6.1fx faster%s\n",
              "Channel", channel_rt.subject, channel_rt.baseline,
              channel_rt.ratio, "   (target >= 30x)");
  std::printf("  %-24s %7.0f ns   baseline %7.0f ns   %6.1fx faster\n\n",
              "Thread (polling loops)", thread_rt.subject, thread_rt.baseline,
              thread_rt.ratio);

  // Paired on seconds per million messages, so the ratio is again
  // baseline / Channel.
  Paired us_per_m = PairedMedians(
      config.samples,
      [&] {
        return 1.0 / ChannelThroughputMps(config.senders, config.per_sender);
      },
      [&] {
        return 1.0 / MutexThroughputMps(config.senders, config.per_sender);
      });
  std::printf("many-to-one throughput (%lld senders x %lld messages)\n",
              static_cast<long long>(config.senders),
              static_cast<long long>(config.per_sender));
  std::printf("  %-24s %7.2f M msg/s   baseline %6.2f M msg/s   %5.1fx\n\n",
              "Channel (ReceiveMany)", 1.0 / us_per_m.subject,
              1.0 / us_per_m.baseline, us_per_m.ratio);

  double idle =
      MedianOf(3, 0, [&] { return IdleReceiverCpuPercent(config.idle_ms); });
  std::printf(
      "parked idle receiver: %.2f%% of a core over %lld ms (target ~0%%)\n",
      idle, static_cast<long long>(config.idle_ms));
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
