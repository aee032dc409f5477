// Reads a directory of JPEG/PNG images through the data pipeline: decode,
// resize, random crop, flip, normalize, batch. Prints images/s and ends with
// one JSON line (see --help).
#include <google/protobuf/text_format.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "examples/pipeline/cli_flags.h"
#include "examples/pipeline/image_pipeline_lib.h"
#include "runtime/chrome_trace.h"
#include "runtime/json.h"

namespace {

using namespace actorflow;  // NOLINT(build/namespaces)

constexpr char kUsage[] = R"(image_pipeline --dir=DIR [flags]

Reads every .jpg/.jpeg/.png under DIR (labels: first-level subdirectory),
decodes to RGB, resizes the shorter side to --resize, random-crops --crop
square, flips half of the images, normalizes to float32 CHW (ImageNet mean
and std) and batches them, for --epochs epochs.

Flags:
  --dir=DIR           the images (required)
  --threads=N         CPU worker threads per stage (default 1)
  --prefetch=N        batches the pipeline may run ahead (default 2)
  --seed=N            seed of the shuffle, crops and flips (default 0)
  --batch=N           samples per batch (default 32)
  --epochs=N          passes over the directory (default 1)
  --on_error=MODE     fail (default): a bad file stops the run;
                      skip_sample: drop it, count it, name it
  --resize=N          shorter side before cropping (default 256; 0: none)
  --crop=N            crop size (default 224)
  --shuffle_window=N  shuffle through a window of N files (default 0: none)
  --fuse_decode=B     true (default): decode, resize and crop run as one
                      step that decodes a JPEG at a reduced DCT scale and
                      only the region the crop keeps; false: each operator
                      as written (PipelineOptions::fuse_decode)
  --max_pixels=N      refuse images whose header claims more pixels
                      (default 67108864; 0: no limit)
  --checksum=B        true (default): hash every batch (the JSON's checksum);
                      false: take the batches and touch nothing (checksum
                      0), as a consumer that only hands them on would
  --write_plan=FILE   write the compiled plan (text format; `actorflow
                      validate FILE --shapes` checks it)
  --trace=FILE        write every act as a Chrome trace (chrome://tracing)

Prints images/s per epoch, each skipped file, and a last line
{"status":"ok","images":N,"batches":B,"skipped":K,"checksum":C,"images_per_s":R}
where C hashes every output batch in order (same seed: same C, whatever
--threads and --prefetch). On failure: {"status":"error","error":"..."} and
exit status 1.
)";

struct Totals {
  int64_t images = 0;
  int64_t batches = 0;
  int64_t skipped = 0;
  uint64_t hash = examples::kHashSeed;
  double seconds = 0;
};

absl::Status Main(int argc, char** argv, Totals* totals, bool* help) {
  examples::CliFlags flags({{"dir", ""},
                            {"threads", "1"},
                            {"prefetch", "2"},
                            {"seed", "0"},
                            {"batch", "32"},
                            {"epochs", "1"},
                            {"on_error", "fail"},
                            {"resize", "256"},
                            {"crop", "224"},
                            {"shuffle_window", "0"},
                            {"fuse_decode", "true"},
                            {"max_pixels", "67108864"},
                            {"checksum", "true"},
                            {"write_plan", ""},
                            {"trace", ""}});
  absl::Status ok = flags.Parse(argc, argv, help);
  if (!ok.ok() || *help) return ok;
  auto threads = flags.Int("threads", 1);
  auto prefetch = flags.Int("prefetch", 1);
  auto seed = flags.Int("seed", 0);
  auto batch = flags.Int("batch", 1);
  auto epochs = flags.Int("epochs", 1);
  auto resize = flags.Int("resize", 0);
  auto crop = flags.Int("crop", 1);
  auto window = flags.Int("shuffle_window", 0);
  auto max_pixels = flags.Int("max_pixels", 0);
  for (const auto& v : {threads, prefetch, seed, batch, epochs, resize, crop,
                        window, max_pixels}) {
    if (!v.ok()) return v.status();
  }
  if (flags.String("dir").empty()) {
    return absl::InvalidArgumentError("--dir is required (see --help)");
  }
  const std::string& fuse = flags.String("fuse_decode");
  if (fuse != "true" && fuse != "false") {
    return absl::InvalidArgumentError(
        absl::StrCat("--fuse_decode: true or false, got '", fuse, "'"));
  }
  const std::string& checksum = flags.String("checksum");
  if (checksum != "true" && checksum != "false") {
    return absl::InvalidArgumentError(
        absl::StrCat("--checksum: true or false, got '", checksum, "'"));
  }
  const std::string& mode = flags.String("on_error");
  if (mode != "fail" && mode != "skip_sample") {
    return absl::InvalidArgumentError(
        absl::StrCat("--on_error: fail or skip_sample, got '", mode, "'"));
  }
  pipeline::PipelineOptions options;
  options.batch_size = *batch;
  options.num_threads = static_cast<int>(*threads);
  options.prefetch_depth = static_cast<int>(*prefetch);
  options.seed = static_cast<uint64_t>(*seed);
  options.trace = !flags.String("trace").empty();
  options.fuse_decode = fuse == "true";
  options.on_error = mode == "skip_sample" ? pipeline::OnError::kSkipSample
                                           : pipeline::OnError::kFail;
  examples::ImagePipelineConfig config{flags.String("dir"), *resize, *crop,
                                       *window, *max_pixels};
  auto pipe = examples::MakeImagePipeline(config, options);
  ok = pipe->Build();
  if (!ok.ok()) return ok;
  if (!flags.String("write_plan").empty()) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(pipe->plan(), &text);
    std::ofstream out(flags.String("write_plan"));
    out << text;
    out.close();
    if (!out) {
      return absl::UnavailableError(absl::StrCat("--write_plan: cannot write ",
                                                 flags.String("write_plan")));
    }
  }
  size_t reported = 0;
  for (int64_t epoch = 0; epoch < *epochs; ++epoch) {
    if (epoch > 0) {
      ok = pipe->Reset();
      if (!ok.ok()) return ok;
    }
    const auto start = std::chrono::steady_clock::now();
    int64_t epoch_images = 0;
    for (int i = 0; i < *prefetch; ++i) {
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
      if (checksum == "true") {
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
    if (ok.ok()) ok = WriteChromeTrace(pipe->trace(), flags.String("trace"));
    if (!ok.ok()) return ok;
    std::cout << "trace: " << flags.String("trace") << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Totals totals;
  bool help = false;
  absl::Status status = Main(argc, argv, &totals, &help);
  if (help) {
    std::cout << kUsage;
    return 0;
  }
  if (!status.ok()) {
    std::cerr << "image_pipeline: " << status.message() << "\n";
    std::cout << "{\"status\":\"error\",\"error\":"
              << JsonString(status.message()) << "}" << std::endl;
    return 1;
  }
  const double rate = totals.seconds > 0 ? totals.images / totals.seconds : 0.0;
  std::cout << "{\"status\":\"ok\",\"images\":" << totals.images
            << ",\"batches\":" << totals.batches
            << ",\"skipped\":" << totals.skipped
            << ",\"checksum\":" << examples::JsonChecksum(totals.hash)
            << ",\"images_per_s\":" << JsonNumber(rate) << "}" << std::endl;
  return 0;
}
