// Images/s of the data pipeline where decoding dominates, against the same
// operator functions in a sequential loop and in oneTBB's parallel_pipeline,
// all measured in this run. Each configuration decodes every image of a
// directory of JPEG/PNG files (written from Fashion-MNIST, upscaled so the
// decode costs what a real photo's does), random-crops, flips and
// normalizes them and assembles batches. Prints medians, CPU time per image
// and the ratios the targets are stated in:
//   pipeline(2 threads) / sequential   >= 1.8 (on 2 cores)
//   pipeline(T threads) / oneTBB(T)    >= 1.0
//   with a Stalls() report after every batch / without  >= 0.99
//
//   tools/bazel run //bench:pipeline_bench -- [--images=240] [--size=512]
//       [--samples=5] [--batch=16]
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/pipeline.h"
#include "bench/bench_util.h"
#include "pipeline/dataset.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "plan/plan_builder.h"

namespace actorflow::internal::bench {
namespace {

using pipeline::CropWindow;
using pipeline::Sample;
using pipeline::SampleRng;

constexpr int64_t kCrop = 224;
const std::vector<float> kMean = {123.675f, 116.28f, 103.53f};
const std::vector<float> kStd = {58.395f, 57.12f, 57.375f};
constexpr uint64_t kSeed = 1;

double CpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

void Check(const absl::Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "pipeline_bench: %s: %s\n", what,
               std::string(status.message()).c_str());
  std::exit(1);
}

// One sample through the stages the pipeline runs, with the pipeline's
// per-sample seeds (operator indices 2 = crop, 3 = flip, 4 = normalize).
struct Worker {
  Sample encoded, decoded, cropped, flipped, normalized;

  void Process(const std::string& path, int64_t position) {
    Check(pipeline::ReadWholeFile(path, &encoded.storage), "read");
    // Decode and crop as the pipeline's fused step does (decoding only the
    // window's rows and columns), so every configuration does the same work.
    SampleRng crop_rng(kSeed, 2, 0, position);
    pipeline::DecodeCropSpec spec;
    spec.crop_h = spec.crop_w = kCrop;
    bool bad_data = false;
    Check(pipeline::DecodeResizeCrop(encoded.storage, spec, &crop_rng, &decoded,
                                     &cropped, &bad_data),
          "decode and crop");
    SampleRng flip_rng(kSeed, 3, 0, position);
    const bool h = flip_rng.Uniform() < 0.5;
    Check(pipeline::Flip(cropped.ref(), h, false, &flipped), "flip");
    Check(pipeline::CropMirrorNormalize(flipped.ref(), CropWindow{}, kCrop,
                                        kCrop, false, kMean, kStd, &normalized),
          "normalize");
  }
};

struct Result {
  double images_per_s = 0;
  double cpu_ms_per_image = 0;
};

// The batch the consumer receives, as every configuration assembles it.
struct BatchBuffer {
  std::vector<float> data;
  int64_t filled = 0;
  void Add(const Sample& s, int64_t batch) {
    const size_t n = s.storage.size() / sizeof(float);
    if (data.size() < n * batch) data.resize(n * batch);
    std::memcpy(data.data() + (filled % batch) * n, s.storage.data(),
                s.storage.size());
    ++filled;
  }
};

Result Measure(int64_t images, const std::function<void()>& run) {
  const double cpu0 = CpuSeconds();
  const int64_t t0 = NowNs();
  run();
  const double seconds = (NowNs() - t0) * 1e-9;
  return Result{images / seconds, (CpuSeconds() - cpu0) * 1e3 / images};
}

Result Sequential(const std::vector<std::string>& files, int64_t batch) {
  Worker worker;
  BatchBuffer out;
  return Measure(static_cast<int64_t>(files.size()), [&] {
    for (size_t i = 0; i < files.size(); ++i) {
      worker.Process(files[i], static_cast<int64_t>(i));
      out.Add(worker.normalized, batch);
    }
  });
}

// read (serial, in order) -> decode, crop, flip, normalize (parallel) ->
// batch (serial, in order), with `threads` workers and 2 * threads tokens.
// Each token carries one Worker from a pool, so buffers are reused as the
// actor pipeline reuses its registers (the serial stages hand them out and
// take them back; no lock needed).
Result Tbb(const std::vector<std::string>& files, int threads, int64_t batch) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            threads);
  const int tokens = 2 * threads;
  std::vector<std::unique_ptr<Worker>> pool;
  for (int i = 0; i < tokens; ++i) pool.push_back(std::make_unique<Worker>());
  std::vector<Worker*> free_workers;
  for (auto& w : pool) free_workers.push_back(w.get());
  BatchBuffer out;
  struct Item {
    Worker* worker;
    int64_t index;
  };
  return Measure(static_cast<int64_t>(files.size()), [&] {
    size_t next = 0;
    tbb::parallel_pipeline(
        tokens, tbb::make_filter<void, Item>(
                    tbb::filter_mode::serial_in_order,
                    [&](tbb::flow_control& fc) -> Item {
                      if (next == files.size()) {
                        fc.stop();
                        return Item{nullptr, 0};
                      }
                      Worker* worker = free_workers.back();
                      free_workers.pop_back();
                      return Item{worker, static_cast<int64_t>(next++)};
                    }) &
                    tbb::make_filter<Item, Item>(
                        tbb::filter_mode::parallel,
                        [&](Item item) {
                          item.worker->Process(files[item.index], item.index);
                          return item;
                        }) &
                    tbb::make_filter<Item, void>(
                        tbb::filter_mode::serial_in_order, [&](Item item) {
                          out.Add(item.worker->normalized, batch);
                          free_workers.push_back(item.worker);
                        }));
  });
}

std::unique_ptr<Pipeline> MakePipeline(const std::vector<std::string>& files,
                                       int threads, int64_t batch) {
  PipelineOptions options;
  options.batch_size = batch;
  options.num_threads = threads;
  options.prefetch_depth = 2;
  options.seed = kSeed;
  auto pipe = std::make_unique<Pipeline>(options);
  const AttrValue list = StringListAttr(files);
  const AttrValue crop = IntListAttr({kCrop, kCrop});
  const AttrValue yes = BoolAttr(true), half = FloatAttr(0.5),
                  rgb = StringAttr("rgb"),
                  mean = FloatListAttr({kMean.begin(), kMean.end()}),
                  stddev = FloatListAttr({kStd.begin(), kStd.end()});
  pipe->Add(OperatorDef{
      .op = "file_reader", .outputs = {"files"}, .attrs = {{"files", list}}});
  pipe->Add(OperatorDef{.op = "decode",
                        .inputs = {"files"},
                        .outputs = {"decoded"},
                        .attrs = {{"color", rgb}}});
  pipe->Add(OperatorDef{.op = "crop",
                        .inputs = {"decoded"},
                        .outputs = {"cropped"},
                        .attrs = {{"size", crop}, {"random", yes}}});
  pipe->Add(OperatorDef{.op = "flip",
                        .inputs = {"cropped"},
                        .outputs = {"flipped"},
                        .attrs = {{"horizontal", half}}});
  pipe->Add(OperatorDef{.op = "crop_mirror_normalize",
                        .inputs = {"flipped"},
                        .outputs = {"images"},
                        .attrs = {{"mean", mean}, {"std", stddev}}});
  pipe->SetOutputs({"images"});
  Check(pipe->Build(), "Build");
  return pipe;
}

// One epoch per sample; Reset between them (the threads stay up, as in a
// training job). With `stalls`, a Stalls() report after every batch.
Result Actors(Pipeline* pipe, int64_t images, bool stalls = false) {
  BatchBuffer out;
  Result r = Measure(images, [&] {
    for (int i = 0; i < 2; ++i) Check(pipe->Run(), "Run");
    while (true) {
      auto batch = pipe->Outputs();
      if (absl::IsOutOfRange(batch.status())) break;
      Check(batch.status(), "Outputs");
      out.filled += batch->outputs[0].num_samples();
      Check(pipe->Run(), "Run");
      if (stalls) Check(pipe->Stalls().status(), "Stalls");
    }
  });
  Check(pipe->Reset(), "Reset");
  return r;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  using namespace actorflow::internal::bench;  // NOLINT(build/namespaces)
  int64_t images = 240, size = 512, samples = 5, batch = 16;
  ParseFlags("pipeline_bench", argc, argv,
             {{"images", &images, "images made and decoded"},
              {"size", &size, "their side in pixels", 8},
              {"samples", &samples, "samples per figure (median shown)"},
              {"batch", &batch, "samples per batch"}},
             "Images/s and CPU ms/image: sequential loop, oneTBB "
             "parallel_pipeline and the actor pipeline at 1 and 2 threads, on "
             "--images files of --size px.");
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") +
                          "/actorflow_pipeline_bench_" +
                          std::to_string(getpid());
  Check(actorflow::internal::pipeline::WriteFashionImages(dir, images, size, 0),
        "writing images");
  auto listed = actorflow::internal::pipeline::ListImageDirectory(dir);
  Check(listed.status(), "listing");
  std::vector<std::string> files;
  for (const auto& f : *listed) files.push_back(f.path);
  std::printf(
      "pipeline_bench: %zu images of %lldx%lld (JPEG and PNG), batch "
      "%lld, crop %lld, median of %lld\n",
      files.size(), static_cast<long long>(size), static_cast<long long>(size),
      static_cast<long long>(batch), static_cast<long long>(kCrop),
      static_cast<long long>(samples));

  auto median = [&](const std::function<Result()>& one) {
    std::vector<double> rate, cpu;
    one();  // warm-up: page cache, allocations
    for (int64_t s = 0; s < samples; ++s) {
      Result r = one();
      rate.push_back(r.images_per_s);
      cpu.push_back(r.cpu_ms_per_image);
    }
    return Result{Median(rate), Median(cpu)};
  };
  auto print = [](const char* name, const Result& r) {
    std::printf("  %-24s %9.1f images/s  %7.3f CPU ms/image\n", name,
                r.images_per_s, r.cpu_ms_per_image);
  };
  Result seq = median([&] { return Sequential(files, batch); });
  print("sequential loop", seq);
  Result tbb1 = median([&] { return Tbb(files, 1, batch); });
  print("oneTBB, 1 thread", tbb1);
  Result tbb2 = median([&] { return Tbb(files, 2, batch); });
  print("oneTBB, 2 threads", tbb2);
  auto pipe1 = MakePipeline(files, 1, batch);
  Result act1 = median([&] { return Actors(pipe1.get(), files.size()); });
  print("actorflow, 1 thread", act1);
  auto pipe2 = MakePipeline(files, 2, batch);
  Result act2 = median([&] { return Actors(pipe2.get(), files.size()); });
  print("actorflow, 2 threads", act2);
  Result act2s =
      median([&] { return Actors(pipe2.get(), files.size(), true); });
  print("  + Stalls() every batch", act2s);
  std::printf("ratios (same run):\n");
  std::printf(
      "  actorflow 2 threads / sequential   %.2fx (target >= 1.8 on 2 "
      "cores)\n",
      act2.images_per_s / seq.images_per_s);
  std::printf("  actorflow 1 thread  / oneTBB 1     %.2fx (target >= 1.0)\n",
              act1.images_per_s / tbb1.images_per_s);
  std::printf("  actorflow 2 threads / oneTBB 2     %.2fx (target >= 1.0)\n",
              act2.images_per_s / tbb2.images_per_s);
  std::printf("  with Stalls() every batch / without %.3fx (target >= 0.99)\n",
              act2s.images_per_s / act2.images_per_s);
  std::filesystem::remove_all(dir);
  return 0;
}
