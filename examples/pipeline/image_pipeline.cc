// Reads a directory of JPEG/PNG images through the data pipeline: decode,
// resize, random crop, flip, normalize, batch. Prints images/s and ends with
// one JSON line (see --help).
#include <google/protobuf/text_format.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "base/json.h"
#include "cli/flags.h"
#include "diagnosis/chrome_trace.h"
#include "examples/pipeline/image_pipeline_lib.h"

namespace {

using namespace actorflow;            // NOLINT(build/namespaces)
using namespace actorflow::internal;  // NOLINT(build/namespaces)

constexpr char kAbout[] =
    "Reads every .jpg/.jpeg/.png under DIR (labels: first-level "
    "subdirectory),\ndecodes to RGB, resizes the shorter side to --resize, "
    "random-crops --crop\nsquare, flips half of the images, normalizes to "
    "float32 CHW (ImageNet mean\nand std) and batches them, for --epochs "
    "epochs.";

constexpr char kEpilog[] =
    R"(Prints images/s per epoch, each skipped file, and a last line
{"status":"ok","images":N,"batches":B,"skipped":K,"checksum":C,"images_per_s":R}
where C hashes every output batch in order (same seed: same C, whatever
--threads and --prefetch). On failure: {"status":"error","error":"..."} and
exit status 1.)";

// The flags, with their defaults.
struct Flags {
  std::string dir;
  int64_t threads = 1;
  int64_t prefetch = 2;
  int64_t seed = 0;
  int64_t batch = 32;
  int64_t epochs = 1;
  std::string on_error = "fail";
  int64_t resize = 256;
  int64_t crop = 224;
  int64_t shuffle_window = 0;
  bool fuse_decode = true;
  int64_t max_pixels = 67108864;
  bool checksum = true;
  std::string write_plan;
  std::string trace;
};

void Declare(FlagSet* set, Flags* f) {
  set->String("dir", &f->dir, "DIR", "the images").Required();
  set->Int("threads", &f->threads, "CPU worker threads per stage", 1);
  set->Int("prefetch", &f->prefetch, "batches the pipeline may run ahead", 1);
  set->Int("seed", &f->seed, "seed of the shuffle, crops and flips", 0);
  set->Int("batch", &f->batch, "samples per batch", 1);
  set->Int("epochs", &f->epochs, "passes over the directory", 1);
  set->Choice("on-error", &f->on_error, {"fail", "skip_sample"},
              "fail: a bad file stops the run; skip_sample: drop it, count "
              "it, name it");
  set->Int("resize", &f->resize, "shorter side before cropping; 0: none", 0);
  set->Int("crop", &f->crop, "crop size", 1);
  set->Int("shuffle-window", &f->shuffle_window,
           "shuffle through a window of N files; 0: none", 0);
  set->Bool("fuse-decode", &f->fuse_decode,
            "true: decode, resize and crop run as one step that decodes a "
            "JPEG at a reduced DCT scale and only the region the crop keeps; "
            "false: each operator as written (PipelineOptions::fuse_decode)");
  set->Int("max-pixels", &f->max_pixels,
           "refuse images whose header claims more pixels; 0: no limit", 0);
  set->Bool("checksum", &f->checksum,
            "true: hash every batch (the JSON's checksum); false: take the "
            "batches and touch nothing (checksum 0), as a consumer that only "
            "hands them on would");
  set->String("write-plan", &f->write_plan, "FILE",
              "write the compiled plan (text format; `actorflow validate FILE "
              "--shapes` checks it)");
  set->String("trace", &f->trace, "FILE",
              "write every act as a Chrome trace (chrome://tracing)");
}

struct Totals {
  int64_t images = 0;
  int64_t batches = 0;
  int64_t skipped = 0;
  uint64_t hash = examples::kHashSeed;
  double seconds = 0;
};

absl::Status Main(const Flags& f, Totals* totals) {
  PipelineOptions options;
  options.batch_size = f.batch;
  options.num_threads = static_cast<int>(f.threads);
  options.prefetch_depth = static_cast<int>(f.prefetch);
  options.seed = static_cast<uint64_t>(f.seed);
  options.trace = !f.trace.empty();
  options.fuse_decode = f.fuse_decode;
  options.on_error =
      f.on_error == "skip_sample" ? OnError::kSkipSample : OnError::kFail;
  examples::ImagePipelineConfig config{f.dir, f.resize, f.crop,
                                       f.shuffle_window, f.max_pixels};
  auto pipe = examples::MakeImagePipeline(config, options);
  absl::Status ok = pipe->Build();
  if (!ok.ok()) return ok;
  if (!f.write_plan.empty()) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(pipe->plan(), &text);
    std::ofstream out(f.write_plan);
    out << text;
    out.close();
    if (!out) {
      return absl::UnavailableError(
          absl::StrCat("--write-plan: cannot write ", f.write_plan));
    }
  }
  size_t reported = 0;
  for (int64_t epoch = 0; epoch < f.epochs; ++epoch) {
    if (epoch > 0) {
      ok = pipe->Reset();
      if (!ok.ok()) return ok;
    }
    const auto start = std::chrono::steady_clock::now();
    int64_t epoch_images = 0;
    for (int i = 0; i < f.prefetch; ++i) {
      ok = pipe->Run();
      if (!ok.ok()) return ok;
    }
    while (true) {
      auto out = pipe->Outputs();
      if (absl::IsOutOfRange(out.status())) break;
      if (!out.ok()) return out.status();
      // Schedule the next batch before working on this one, so the
      // pipeline keeps --prefetch batches in the making meanwhile.
      ok = pipe->Run();
      if (!ok.ok()) return ok;
      if (f.checksum) {
        totals->hash = examples::HashBatch(*out, totals->hash);
      } else {
        totals->hash = 0;
      }
      epoch_images += out->outputs[0].num_samples();
      ++totals->batches;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    totals->images += epoch_images;
    totals->seconds += seconds;
    const auto skipped = pipe->skipped();
    for (; reported < skipped.size(); ++reported) {
      std::cout << "skipped " << skipped[reported].name << ": "
                << skipped[reported].error << "\n";
    }
    std::cout << "epoch " << epoch << ": " << epoch_images << " images in "
              << seconds << " s, " << epoch_images / seconds << " images/s\n";
  }
  totals->skipped = static_cast<int64_t>(reported);
  if (options.trace) {
    ok = pipe->Finish();
    if (ok.ok()) ok = WriteChromeTrace(pipe->trace(), f.trace);
    if (!ok.ok()) return ok;
    std::cout << "trace: " << f.trace << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  FlagSet set("image_pipeline --dir=DIR [flags]", kAbout, kEpilog);
  Declare(&set, &flags);
  // A bad flag is reported like any failure: the JSON line, exit status 1.
  absl::Status status = set.Parse(argc, argv);
  if (set.help_requested()) {
    std::cout << set.Help();
    return 0;
  }
  Totals totals;
  if (status.ok()) status = Main(flags, &totals);
  if (!status.ok()) {
    std::cerr << "image_pipeline: " << status.message() << "\n";
    PrintJsonLine(
        {{"status", "error"}, {"error", std::string(status.message())}});
    return 1;
  }
  const double rate = totals.seconds > 0 ? totals.images / totals.seconds : 0.0;
  PrintJsonLine({{"status", "ok"},
                 {"images", totals.images},
                 {"batches", totals.batches},
                 {"skipped", totals.skipped},
                 {"checksum", examples::JsonChecksum(totals.hash)},
                 {"images_per_s", JsonNumber(rate)}});
  return 0;
}
