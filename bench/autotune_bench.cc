// The pipeline tuner against a grid search, in one run. For each of three
// jobs (photo JPEGs to a 224 crop; PNGs; photo JPEGs with heavy
// augmentation) it measures every worker count x prefetch depth of the grid
// (median images/s over --windows windows of --window batches, after a
// warm-up), then a pipeline with autotune that starts at 1 thread and depth
// 1 within the grid's thread budget: the batches it took to settle (target:
// within 200), then its images/s against a pipeline built at the grid's
// best configuration, measured in alternating windows (the grid's best is
// the largest of a dozen noisy medians: measured again beside the tuned
// one, both see the same machine), with the median of their per-window
// ratios (target: at least 0.95); the most resident memory it added over
// its trials against the budget given; and whether its batches equal an
// untuned pipeline's (a checksum of the first --check batches).
//
//   tools/bazel run //bench:autotune_bench -- [--images=96] [--batch=16]
//       [--window=12] [--windows=3] [--memory-mb=1024]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/pipeline.h"
#include "bench/bench_util.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "plan/plan_builder.h"

namespace actorflow::internal::bench {
namespace {

void Check(const absl::Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "autotune_bench: %s: %s\n", what,
               std::string(status.message()).c_str());
  std::exit(1);
}

struct Job {
  std::string name;
  std::string dir;
  // Adds the operators after the reader ("files") up to "images".
  std::function<void(Pipeline*)> augment;
};

std::unique_ptr<Pipeline> Make(const Job& job, int64_t batch, int threads,
                               int depth, bool tune, int64_t memory) {
  PipelineOptions options;
  options.batch_size = batch;
  options.num_threads = threads;
  options.prefetch_depth = depth;
  options.seed = 9;
  options.autotune = tune;
  options.autotune_cpus = 4;  // the grid's threads
  options.autotune_memory_bytes = memory;
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(OperatorDef{.op = "file_reader",
                        .outputs = {"files", "labels"},
                        .attrs = {{"dir", StringAttr(job.dir)},
                                  {"shuffle_window", IntAttr(64)}}});
  job.augment(pipe.get());
  pipe->SetOutputs({"images", "labels"});
  Check(pipe->Build(), "build");
  return pipe;
}

// Takes batches across epochs as a training loop does.
class Taker {
 public:
  // `prime`: the Run()s ahead, as a loop written for prefetch_depth keeps
  // them (a tuned pipeline keeps its tuned depth in the making itself).
  Taker(Pipeline* pipe, int prime) : pipe_(pipe), prime_(prime) {}
  // The next batch's samples, and with `hash` its bytes hashed (FNV-1a
  // over 8-byte words; the measured windows hash nothing: the caller's own
  // work would share the cores).
  std::pair<uint64_t, int64_t> Next(bool hash_bytes = false) {
    if (!primed_) {
      for (int i = 0; i < prime_; ++i) Check(pipe_->Run(), "run");
      primed_ = true;
    }
    while (true) {
      auto out = pipe_->Outputs();
      if (absl::IsOutOfRange(out.status())) {
        Check(pipe_->Reset(), "reset");
        for (int i = 0; i < prime_; ++i) Check(pipe_->Run(), "run");
        continue;
      }
      Check(out.status(), "outputs");
      uint64_t hash = 1469598103934665603ull;
      for (const OutputView& o : out->outputs) {
        if (!hash_bytes) break;
        const auto* bytes = static_cast<const uint8_t*>(o.data().raw_data());
        for (int64_t i = 0; i < o.data().byte_size(); i += 8) {
          uint64_t word = 0;
          std::memcpy(&word, bytes + i,
                      std::min<int64_t>(8, o.data().byte_size() - i));
          hash = (hash ^ word) * 1099511628211ull;
        }
      }
      const int64_t samples = out->outputs[0].num_samples();
      Check(pipe_->Run(), "run");
      return {hash, samples};
    }
  }
  // Images/s over `batches` batches.
  double Rate(int64_t batches) {
    const int64_t start = NowNs();
    int64_t samples = 0;
    for (int64_t i = 0; i < batches; ++i) samples += Next().second;
    return static_cast<double>(samples) * 1e9 /
           static_cast<double>(NowNs() - start);
  }

 private:
  Pipeline* pipe_;
  const int prime_;
  bool primed_ = false;
};

double MedianRate(Taker* taker, int64_t window, int64_t windows) {
  std::vector<double> rates;
  for (int64_t w = 0; w < windows; ++w) rates.push_back(taker->Rate(window));
  return Median(rates);
}

uint64_t Checksum(Taker* taker, int64_t batches) {
  uint64_t sum = 0;
  for (int64_t i = 0; i < batches; ++i) {
    sum = sum * 31 + taker->Next(/*hash_bytes=*/true).first;
  }
  return sum;
}

absl::Status WritePngPhotos(const std::string& dir, int64_t count) {
  std::filesystem::create_directories(dir + "/a");
  for (int64_t i = 0; i < count; ++i) {
    pipeline::Sample photo;
    pipeline::MakePhotoImage(static_cast<uint64_t>(i) + 7, 256, 256, &photo);
    auto png = pipeline::EncodePng(photo.ref());
    if (!png.ok()) return png.status();
    std::ofstream(absl::StrCat(dir, "/a/photo", i, ".png"), std::ios::binary)
        << *png;
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  using namespace actorflow;
  using namespace actorflow::internal::bench;
  using namespace actorflow::internal;
  int64_t images = 96, batch = 16, window = 12, windows = 3, check = 40;
  int64_t memory_mb = 1024, only = 7;
  ParseFlags("autotune_bench", argc, argv,
             {{"images", &images, "photos made per job"},
              {"batch", &batch, "samples per batch"},
              {"window", &window, "batches per measured window"},
              {"windows", &windows, "windows per figure (median shown)"},
              {"check", &check, "batches compared, tuned against untuned"},
              {"memory-mb", &memory_mb, "the tuner's memory budget, MiB"},
              {"only", &only,
               "which jobs, a bit each (1: JPEG, 2: PNG, 4: "
               "heavy augmentation)"}},
             "Images/s of the pipeline tuner against a grid search over "
             "threads 1-4 x prefetch depth 1, 2, 4, for three jobs.");
  const char* tmp = std::getenv("TMPDIR");
  const std::string root = std::string(tmp ? tmp : "/tmp") +
                           "/actorflow_autotune_bench_" +
                           std::to_string(getpid());
  Check(
      internal::pipeline::WritePhotoImages(root + "/jpeg", images, 375, 500, 4),
      "writing photos");
  Check(WritePngPhotos(root + "/png", images), "writing PNGs");
  const std::vector<Job> jobs = {
      {"photo JPEG -> 224 crop", root + "/jpeg",
       [](Pipeline* p) {
         p->Add(OperatorDef{.op = "decode_random_resized_crop",
                            .inputs = {"files"},
                            .outputs = {"crops"},
                            .attrs = {{"size", IntListAttr({224, 224})}}});
         p->Add(OperatorDef{
             .op = "flip", .inputs = {"crops"}, .outputs = {"images"}});
       }},
      {"PNG -> 224 crop", root + "/png",
       [](Pipeline* p) {
         p->Add(OperatorDef{
             .op = "decode", .inputs = {"files"}, .outputs = {"decoded"}});
         p->Add(OperatorDef{.op = "crop",
                            .inputs = {"decoded"},
                            .outputs = {"crops"},
                            .attrs = {{"size", IntListAttr({224, 224})},
                                      {"random", BoolAttr(true)}}});
         p->Add(OperatorDef{
             .op = "flip", .inputs = {"crops"}, .outputs = {"images"}});
       }},
      {"heavy augmentation", root + "/jpeg",
       [](Pipeline* p) {
         p->Add(OperatorDef{.op = "decode_random_resized_crop",
                            .inputs = {"files"},
                            .outputs = {"crops"},
                            .attrs = {{"size", IntListAttr({224, 224})}}});
         p->Add(OperatorDef{.op = "color_twist",
                            .inputs = {"crops"},
                            .outputs = {"twisted"},
                            .attrs = {{"hue", FloatAttr(20)},
                                      {"saturation", FloatAttr(1.3)}}});
         p->Add(OperatorDef{.op = "rotate",
                            .inputs = {"twisted"},
                            .outputs = {"rotated"},
                            .attrs = {{"angle", FloatAttr(12)}}});
         p->Add(OperatorDef{.op = "gaussian_blur",
                            .inputs = {"rotated"},
                            .outputs = {"blurred"},
                            .attrs = {{"sigma", FloatListAttr({1.2})}}});
         p->Add(OperatorDef{
             .op = "flip", .inputs = {"blurred"}, .outputs = {"images"}});
       }},
  };
  std::printf("%-24s %-22s %10s %10s %8s %8s %9s %11s %9s\n", "job",
              "grid best", "grid", "again", "tuned", "ratio", "settled",
              "memory MB", "batches");
  for (size_t j = 0; j < jobs.size(); ++j) {
    if ((only >> j & 1) == 0) continue;
    const Job& job = jobs[j];
    double best = 0;
    std::string best_at;
    int best_threads = 1, best_depth = 1;
    for (int threads : {1, 2, 3, 4}) {
      for (int depth : {1, 2, 4}) {
        auto pipe = Make(job, batch, threads, depth, false, 0);
        Taker taker(pipe.get(), depth);
        taker.Rate(4);  // warm-up
        const double rate = MedianRate(&taker, window, windows);
        std::fprintf(stderr, "  %s: %d threads, depth %d: %.0f images/s\n",
                     job.name.c_str(), threads, depth, rate);
        if (rate > best) {
          best = rate;
          best_at = absl::StrCat(threads, " threads, depth ", depth);
          best_threads = threads;
          best_depth = depth;
        }
        Check(pipe->Finish(), "finish");
      }
    }
    auto untuned = Make(job, batch, 1, 1, false, 0);
    Taker plain(untuned.get(), 1);
    const uint64_t want = Checksum(&plain, check);
    Check(untuned->Finish(), "finish");

    // Built first and left idle while the tuner runs: a session built
    // while another pipeline of the process computes counts its threads as
    // CPUs busy elsewhere and takes fewer threads.
    auto grid_best = Make(job, batch, best_threads, best_depth, false, 0);
    auto tuned = Make(job, batch, 1, 1, true, memory_mb << 20);
    Taker taker(tuned.get(), 1);
    const uint64_t got = Checksum(&taker, check);
    int64_t taken = check;
    while (!tuned->Autotune().settled && taken < 400) {
      taker.Next();
      ++taken;
    }
    const AutotuneReport report = tuned->Autotune();
    Taker best_taker(grid_best.get(), best_depth);
    const Paired paired = PairedMedians(
        static_cast<int>(windows) * 2, [&] { return best_taker.Rate(window); },
        [&] { return taker.Rate(window); });
    Check(grid_best->Finish(), "finish");
    int64_t most_memory = 0;
    for (const AutotuneTrial& t : report.trials) {
      most_memory = std::max(most_memory, t.memory_bytes);
    }
    std::printf(
        "%-24s %-22s %10.0f %10.0f %8.0f %8.2f %9s %5.0f/%-5lld %9s\n",
        job.name.c_str(), best_at.c_str(), best, paired.subject,
        paired.baseline, paired.ratio,
        report.settled ? absl::StrCat(report.batches_to_settle).c_str() : "no",
        static_cast<double>(most_memory) / (1 << 20),
        static_cast<long long>(memory_mb), got == want ? "same" : "DIFFER");
    std::fflush(stdout);
    std::fprintf(stderr, "  %s: tuned to %d threads, depth %d (%zu trials)\n",
                 job.name.c_str(), report.threads, report.depth,
                 report.trials.size());
    Check(tuned->Finish(), "finish");
  }
  std::filesystem::remove_all(root);
  return 0;
}
