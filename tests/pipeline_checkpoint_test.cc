// Pipeline checkpoints: the batches after a restore are exactly those the
// pipeline would have handed out next (its prefetched batches, the reader's
// place, shuffle and augmentation, samples held over after skipped files),
// at any cut, in the live pipeline and in a new one; also after the process
// is killed with SIGKILL at random moments. Refusals are named.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/checkpoint.h"
#include "actorflow/pipeline.h"
#include "examples/pipeline/image_pipeline_lib.h"
#include "pipeline/fixtures.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

constexpr int kEpochs = 2;
constexpr int kDepth = 2;

struct Setup {
  std::string dir;
  OnError on_error = OnError::kFail;
  uint64_t seed = 0;
  int threads = 2;
};

std::unique_ptr<Pipeline> Make(const Setup& setup,
                               const std::string& restore_from = "") {
  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = setup.threads;
  options.prefetch_depth = kDepth;
  options.seed = setup.seed;
  options.on_error = setup.on_error;
  options.restore_from = restore_from;
  examples::ImagePipelineConfig config{setup.dir, /*resize=*/20, /*crop=*/16,
                                       /*shuffle_window=*/8};
  return examples::MakeImagePipeline(config, options);
}

// Hands out batches as a training loop would: `depth` Run()s ahead, the
// next epoch after the end of one. Calls `each(index, hash)` per batch;
// stops early when it returns false. Position: batches handed out so far.
class Reader {
 public:
  explicit Reader(Pipeline* pipe, int64_t position = 0)
      : pipe_(pipe), position_(position) {}
  // Returns the number of batches handed out by the time it stopped.
  int64_t Read(int64_t count,
               const std::function<void(int64_t, uint64_t)>& each = {}) {
    for (int64_t i = 0; i < count;) {
      if (!primed_) {
        for (int d = 0; d < kDepth; ++d) REQUIRE_OK(pipe_->Run());
        primed_ = true;
      }
      auto out = pipe_->Outputs();
      if (absl::IsOutOfRange(out.status())) {
        if (pipe_->epoch() + 1 >= kEpochs) break;
        REQUIRE_OK(pipe_->Reset());
        primed_ = false;
        continue;
      }
      REQUIRE_OK(out.status());
      const uint64_t hash = examples::HashBatch(*out, examples::kHashSeed);
      if (each) each(position_, hash);
      ++position_;
      ++i;
      REQUIRE_OK(pipe_->Run());
    }
    return position_;
  }
  int64_t position() const { return position_; }

 private:
  Pipeline* pipe_;
  int64_t position_;
  bool primed_ = false;
};

std::vector<uint64_t> Reference(const Setup& setup) {
  auto pipe = Make(setup);
  REQUIRE_OK(pipe->Build());
  std::vector<uint64_t> hashes;
  Reader(pipe.get()).Read(1 << 20, [&](int64_t, uint64_t h) {
    hashes.push_back(h);
  });
  REQUIRE_OK(pipe->Finish());
  return hashes;
}

// A new pipeline restored from `root` hands out the reference's batches
// after the first `cut`.
void CheckResumes(const Setup& setup, const std::string& root,
                  const std::vector<uint64_t>& reference, int64_t cut) {
  auto restored = Make(setup, root);
  REQUIRE_OK(restored->Build());
  std::vector<uint64_t> resumed;
  Reader(restored.get(), cut).Read(1 << 20, [&](int64_t, uint64_t h) {
    resumed.push_back(h);
  });
  CHECK(resumed ==
        std::vector<uint64_t>(reference.begin() + cut, reference.end()));
  REQUIRE_OK(restored->Finish());
}

void CheckCutsResume(const Setup& setup, const char* name) {
  const std::vector<uint64_t> reference = Reference(setup);
  REQUIRE(reference.size() > 10);
  const uint64_t seed = testing::TestSeed(name);
  std::mt19937_64 random(seed);
  const int64_t n = static_cast<int64_t>(reference.size());
  // Cuts at the start, at random, and at an epoch's end.
  for (int64_t cut : {int64_t{0}, static_cast<int64_t>(random() % n),
                      static_cast<int64_t>(random() % n), n / kEpochs}) {
    INFO("cut after " << cut << " of " << n << " batches");
    const std::string root = testing::TestTempDir(absl::StrCat(name, cut));
    auto live = Make(setup);
    REQUIRE_OK(live->Build());
    Reader reader(live.get());
    reader.Read(cut);
    auto info = live->Checkpoint(root);
    REQUIRE_OK(info.status());
    // The live pipeline goes on as if nothing happened...
    std::vector<uint64_t> after;
    reader.Read(1 << 20, [&](int64_t, uint64_t h) { after.push_back(h); });
    CHECK(after ==
          std::vector<uint64_t>(reference.begin() + cut, reference.end()));
    REQUIRE_OK(live->Finish());
    // ... and so does a new one restored from the checkpoint.
    CheckResumes(setup, root, reference, cut);
  }
}

TEST_CASE("a restored pipeline hands out the batches it would have next",
          "[checkpoint]") {
  Setup setup;
  setup.dir = testing::TestTempDir("pipeline_ckpt_images");
  REQUIRE_OK(WriteFashionImages(setup.dir, 45, 24, 0));
  setup.seed = 7;
  CheckCutsResume(setup, "pipeline checkpoints");
}

TEST_CASE("samples held over after skipped files survive a restore",
          "[checkpoint]") {
  Setup setup;
  setup.dir = testing::TestTempDir("pipeline_ckpt_skips");
  REQUIRE_OK(WriteFashionImages(setup.dir, 30, 24, 3));
  setup.seed = 11;
  setup.on_error = OnError::kSkipSample;
  CheckCutsResume(setup, "pipeline checkpoints with skips");
  auto pipe = Make(setup);
  REQUIRE_OK(pipe->Build());
  Reader(pipe.get()).Read(5);
  const std::string root = testing::TestTempDir("pipeline_ckpt_skips_log");
  REQUIRE_OK(pipe->Checkpoint(root).status());
  auto restored = Make(setup, root);
  REQUIRE_OK(restored->Build());
  CHECK(restored->skipped().size() == pipe->skipped().size());
}

TEST_CASE("a checkpoint resumes at another num_threads", "[checkpoint]") {
  // Skipped files (samples held over in the batch stage), shuffling and
  // random crops: the batches depend on none of the worker threads, so a
  // checkpoint taken at 2 resumes at 1 and at 3 exactly where it was.
  Setup setup;
  setup.dir = testing::TestTempDir("pipeline_ckpt_threads");
  REQUIRE_OK(WriteFashionImages(setup.dir, 30, 24, 3));
  setup.seed = 5;
  setup.on_error = OnError::kSkipSample;
  const std::vector<uint64_t> reference = Reference(setup);
  const uint64_t seed = testing::TestSeed("pipeline checkpoint threads");
  std::mt19937_64 random(seed);
  const int64_t cut =
      1 + static_cast<int64_t>(random() % (reference.size() - 2));
  INFO("cut after " << cut << " of " << reference.size() << " batches");
  const std::string root = testing::TestTempDir("pipeline_ckpt_threads_out");
  auto live = Make(setup);
  REQUIRE_OK(live->Build());
  Reader reader(live.get());
  reader.Read(cut);
  REQUIRE_OK(live->Checkpoint(root).status());
  REQUIRE_OK(live->Finish());
  for (int threads : {1, 3}) {
    INFO(threads << " threads");
    Setup other = setup;
    other.threads = threads;
    CheckResumes(other, root, reference, cut);
  }
}

TEST_CASE("pipeline checkpoints refuse what they cannot keep, by name",
          "[checkpoint]") {
  Setup setup;
  setup.dir = testing::TestTempDir("pipeline_ckpt_refusals");
  REQUIRE_OK(WriteFashionImages(setup.dir, 12, 24, 0));
  const std::string root = testing::TestTempDir("pipeline_ckpt_refusals_out");
  auto pipe = Make(setup);
  REQUIRE_OK(pipe->Build());
  Reader(pipe.get()).Read(1);
  auto info = pipe->Checkpoint(root);
  REQUIRE_OK(info.status());
  // Another seed is another pipeline.
  Setup other = setup;
  other.seed = 99;
  auto foreign = Make(other);
  REQUIRE_OK(foreign->Build());
  absl::Status refused = foreign->Restore(root).status();
  CHECK_THAT(std::string(refused.message()),
             Catch::StartsWith("checkpoint '" + info->path +
                               "' is of another plan: task '"));
  CHECK_THAT(std::string(refused.message()),
             Catch::Contains("attr 'seed' is {i: 0} in the checkpoint, "
                             "{i: 99} in this plan"));
  // Restoring is for a fresh pipeline.
  CHECK_THAT(std::string(pipe->Restore(root).status().message()),
             Catch::Equals("Restore: after Build, before the first Run or "
                           "FeedInput"));
  // Holding every prefetched batch leaves the plan no register to finish in.
  auto held = Make(setup);
  REQUIRE_OK(held->Build());
  for (int d = 0; d < kDepth + 1; ++d) REQUIRE_OK(held->Run());
  for (int d = 0; d < kDepth; ++d) REQUIRE_OK(held->ShareOutputs().status());
  CHECK_THAT(std::string(held->Checkpoint(root).status().message()),
             Catch::Equals("Checkpoint: the caller holds all 2 prefetched "
                           "batches; ReleaseOutputs first"));
  REQUIRE_OK(held->ReleaseOutputs());
  REQUIRE_OK(held->Checkpoint(root).status());
}

// The child: reads both epochs from where the newest checkpoint left off,
// checkpointing every `every` batches and logging "index hash" per batch.
[[noreturn]] void Child(const Setup& setup, const std::string& root,
                        const std::string& log, int every) {
  int64_t start = 0;
  std::string restore;
  if (ResolveCheckpoint(root).ok()) restore = root;
  auto pipe = Make(setup, restore);
  if (!pipe->Build().ok()) _exit(3);
  if (!restore.empty()) {
    // The caller saved its place beside the pipeline's.
    auto data = ReadCheckpoint(*ResolveCheckpoint(root));
    if (!data.ok()) _exit(4);
    auto position = data->user.Scalar<int64_t>("position");
    if (!position.ok()) _exit(5);
    start = *position;
  }
  std::ofstream out(log, std::ios::app);
  if (!restore.empty()) out << "restored " << start << "\n" << std::flush;
  Reader reader(pipe.get(), start);
  while (true) {
    const int64_t before = reader.position();
    const int64_t after = reader.Read(every, [&](int64_t i, uint64_t h) {
      out << i << " " << h << "\n" << std::flush;
    });
    if (after == before) break;
    CheckpointOptions options;
    options.keep_last = 2;
    options.user.AddScalar<int64_t>("position", after);
    if (!pipe->Checkpoint(root, options).ok()) _exit(6);
  }
  out << "done\n" << std::flush;
  _exit(pipe->Finish().ok() ? 0 : 7);
}

TEST_CASE("a pipeline killed at random moments resumes bit for bit",
          "[checkpoint]") {
  Setup setup;
  setup.dir = testing::TestTempDir("pipeline_ckpt_kill");
  REQUIRE_OK(WriteFashionImages(setup.dir, 60, 40, 0));
  setup.seed = 3;
  const std::vector<uint64_t> reference = Reference(setup);
  const uint64_t seed = testing::TestSeed("pipeline SIGKILL");
  std::mt19937_64 random(seed);
  const std::string root = testing::TestTempDir("pipeline_ckpt_kill_out");
  const std::string log = root + ".log";
  std::remove(log.c_str());
  // The first try measures how long a whole run takes.
  const auto t0 = std::chrono::steady_clock::now();
  bool done = false;
  bool killed = false;  // some run was killed: the later ones resumed
  int64_t total_us = 0, first_us = 0, last_us = 0, window_us = 1000;
  auto newest = [&] {
    auto list = ListCheckpoints(root);
    return list.ok() && !list->empty() ? list->back().first : -1;
  };
  for (int attempt = 0; attempt <= 20 && !done; ++attempt) {
    const int64_t before = newest();
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) Child(setup, root, log, /*every=*/3);
    int status = 0;
    bool exited = false;
    if (attempt == 0) {
      // Times the run from its first checkpoint to its last: the window
      // the crashes fall in.
      int64_t seen = -1;
      while (!exited) {
        exited = waitpid(pid, &status, WNOHANG) == pid;
        if (newest() != seen) {
          seen = newest();
          const int64_t now =
              std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - t0)
                  .count();
          if (first_us == 0) first_us = now;
          last_us = now;
        }
        if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (attempt > 0 && attempt < 20) {
      // The crash comes once this run has written a checkpoint (so every
      // run gets somewhere), at a random moment within the time a whole run
      // takes from its first checkpoint to its last. Polling the
      // directory only picks the moment: the child waits for nothing.
      while (newest() <= before && !exited) {
        exited = waitpid(pid, &status, WNOHANG) == pid;
        if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!exited) {
        std::this_thread::sleep_for(
            std::chrono::microseconds(random() % window_us));
        kill(pid, SIGKILL);
      }
    }
    if (!exited) REQUIRE(waitpid(pid, &status, 0) == pid);
    if (attempt == 0) {
      // The first run went to the end: start again, from nothing.
      total_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
      REQUIRE(WIFEXITED(status));
      REQUIRE(WEXITSTATUS(status) == 0);
      window_us = std::max<int64_t>(last_us - first_us, 1000);
      std::filesystem::remove_all(root);
      std::remove(log.c_str());
      continue;
    }
    if (WIFEXITED(status) && !killed) {
      // This run was quicker than the first and ended before its crash:
      // nothing was resumed yet. Start again from nothing, crashing
      // sooner.
      CHECK(WEXITSTATUS(status) == 0);
      window_us = std::max<int64_t>(window_us / 2, 1000);
      std::filesystem::remove_all(root);
      std::remove(log.c_str());
      continue;
    }
    killed = killed || WIFSIGNALED(status);
    done = WIFEXITED(status);
    if (done) CHECK(WEXITSTATUS(status) == 0);
  }
  REQUIRE(done);
  // Every batch was logged at least once; a batch logged again after a
  // restore is the same batch.
  std::map<int64_t, uint64_t> seen;
  std::ifstream in(log);
  std::string word;
  int64_t index = 0;
  uint64_t hash = 0;
  int restores = 0;
  while (in >> word) {
    if (word == "done") continue;  // a run killed after it was done
    if (word == "restored") {
      in >> index;
      ++restores;
      continue;
    }
    index = std::stoll(word);
    in >> hash;
    auto [it, fresh] = seen.emplace(index, hash);
    INFO("batch " << index);
    CHECK(it->second == hash);
  }
  std::printf("pipeline SIGKILL: a whole run %lld us; restored %d times\n",
              static_cast<long long>(total_us), restores);
  CHECK(restores > 0);
  REQUIRE(seen.size() == reference.size());
  for (const auto& [i, h] : seen) {
    INFO("batch " << i);
    CHECK(h == reference[i]);
  }
}

}  // namespace
}  // namespace actorflow::internal::pipeline
