// Elastic pipelines (docs/pipelines.md, "At scale"): 10,000 small JPEGs in
// tar shards, 1 % of them corrupt. Two ranks of two threads each run in
// processes of their own, checkpoint every few batches and die by SIGKILL
// at a random batch (seeded, printed). Four ranks of three threads, and one
// rank of one, resume from their checkpoints: the global batch stream (the
// ranks' batches joined in rank order) equals an uninterrupted run's bit for
// bit; every good sample comes once per epoch, every rank makes as many
// batches, the skip logs are the same. Refusals are named.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "actorflow/pipeline.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

using testing::TestSeed;
using testing::TestTempDir;

constexpr int64_t kSamples = 10000;
constexpr int64_t kShards = 20;
constexpr int64_t kGlobalBatch = 24;
constexpr int64_t kEpochs = 2;
constexpr int64_t kCheckpointEvery = 10;  // batches
constexpr int kDepth = 2;

// One row of a global batch: the sample's id (its .cls) and a hash of its
// pixels after the random crop.
struct Row {
  int64_t id = 0;
  uint64_t pixels = 0;
  bool operator==(const Row& o) const {
    return id == o.id && pixels == o.pixels;
  }
};
// (epoch, batch) -> the batch's rows, ranks joined in rank order.
using Stream = std::map<std::pair<int64_t, int64_t>, std::vector<Row>>;
using SkipSet = std::set<std::tuple<int64_t, int64_t, std::string>>;

bool Corrupt(int64_t id) { return id % 100 == 37; }  // 1 %

// The shards, written once per test binary: sample id i is a 10 x 10 JPEG
// whose pixels follow from i, or (1 %) bytes that are no JPEG; its .cls is
// i as int64. The tar files are GNU tar's, members in key order.
const std::vector<std::string>& Shards() {
  static const std::vector<std::string> shards = [] {
    const std::string root = TestTempDir("elastic_shards");
    std::vector<std::string> paths;
    for (int64_t s = 0; s < kShards; ++s) {
      const std::string dir = absl::StrCat(root, "/s", s);
      std::filesystem::create_directories(dir);
      std::ofstream list(dir + ".list");
      for (int64_t j = 0; j < kSamples / kShards; ++j) {
        const int64_t id = s * (kSamples / kShards) + j;
        const std::string key = absl::StrFormat("%06d", id);
        std::string jpg;
        if (Corrupt(id)) {
          jpg = absl::StrCat("no jpeg, sample ", id);
        } else {
          Sample image;
          image.Reshape(DT_UINT8, {10, 10, 3});
          for (int64_t p = 0; p < image.bytes(); ++p) {
            image.storage[p] = static_cast<uint8_t>((id * 37 + p * 11) & 255);
          }
          auto encoded = EncodeJpeg(image.ref(), 95);
          REQUIRE_OK(encoded.status());
          jpg = *encoded;
        }
        std::ofstream(dir + "/" + key + ".jpg", std::ios::binary) << jpg;
        std::ofstream(dir + "/" + key + ".cls", std::ios::binary)
            .write(reinterpret_cast<const char*>(&id), sizeof(id));
        list << key << ".cls\n" << key << ".jpg\n";
      }
      list.close();
      const std::string tar = absl::StrCat(root, "/shard-", s, ".tar");
      const std::string command =
          absl::StrCat("tar -cf '", tar, "' -C '", dir, "' -T '", dir,
                       ".list' && rm -r '", dir, "'");
      REQUIRE(std::system(command.c_str()) == 0);
      paths.push_back(tar);
    }
    return paths;
  }();
  return shards;
}

std::unique_ptr<Pipeline> Make(int64_t rank, int64_t ranks, int threads,
                               std::vector<std::string> restore = {},
                               int64_t global_batch = kGlobalBatch) {
  PipelineOptions options;
  options.batch_size = global_batch / ranks;
  options.num_threads = threads;
  options.prefetch_depth = kDepth;
  options.seed = 11;
  options.on_error = OnError::kSkipSample;
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(
      OperatorDef{.op = "webdataset_reader",
                  .outputs = {"jpg", "cls"},
                  .attrs = {{"paths", StringListAttr(Shards())},
                            {"ext", StringListAttr({"jpg", "cls"})},
                            {"dtypes", StringListAttr({"uint8", "int64"})},
                            {"shuffle_window", IntAttr(64)},
                            {"shard_id", IntAttr(rank)},
                            {"num_shards", IntAttr(ranks)},
                            {"elastic", BoolAttr(true)}}});
  pipe->Add(OperatorDef{.op = "decode", .inputs = {"jpg"}, .outputs = {"rgb"}});
  pipe->Add(OperatorDef{
      .op = "crop",
      .inputs = {"rgb"},
      .outputs = {"image"},
      .attrs = {{"size", IntListAttr({6, 6})}, {"random", BoolAttr(true)}}});
  pipe->SetOutputs({"image", "cls"});
  REQUIRE_OK(pipe->Build());
  if (!restore.empty()) REQUIRE_OK(pipe->Restore(restore).status());
  return pipe;
}

std::vector<Row> RowsOf(const BatchView& batch) {
  std::vector<Row> rows;
  const OutputView& image = batch.outputs[0];
  const OutputView& cls = batch.outputs[1];
  const int64_t box =
      image.data().byte_size() / std::max<int64_t>(image.num_samples(), 1);
  for (int64_t i = 0; i < image.num_samples(); ++i) {
    const auto* bytes =
        static_cast<const uint8_t*>(image.data().raw_data()) + i * box;
    uint64_t hash = 1469598103934665603ull;
    for (int64_t b = 0; b < box; ++b)
      hash = (hash ^ bytes[b]) * 1099511628211ull;
    int64_t id = 0;
    std::memcpy(&id, static_cast<const char*>(cls.data().raw_data()) + i * 8,
                8);
    rows.push_back(Row{id, hash});
  }
  return rows;
}

// Takes batches as a training loop does (kDepth Run()s ahead) to the end of
// epoch kEpochs - 1; `each(batch)` may return false to stop. Returns the
// batches per epoch.
std::map<int64_t, int64_t> Drive(
    Pipeline* pipe, const std::function<bool(const BatchView&)>& each) {
  std::map<int64_t, int64_t> per_epoch;
  bool primed = false;
  while (true) {
    if (!primed) {
      for (int d = 0; d < kDepth; ++d) REQUIRE_OK(pipe->Run());
      primed = true;
    }
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) {
      if (pipe->epoch() + 1 >= kEpochs) break;
      REQUIRE_OK(pipe->Reset());
      primed = false;
      continue;
    }
    REQUIRE_OK(out.status());
    ++per_epoch[out->epoch];
    if (!each(*out)) return per_epoch;
    REQUIRE_OK(pipe->Run());
  }
  return per_epoch;
}

// "" when equal, else the first batch that differs, and how.
std::string FirstDifference(const Stream& got, const Stream& want) {
  for (const auto& [at, rows] : want) {
    auto it = got.find(at);
    const std::string where =
        absl::StrCat("epoch ", at.first, " batch ", at.second, ": ");
    if (it == got.end()) return where + "missing";
    if (it->second.size() != rows.size()) {
      return absl::StrCat(where, it->second.size(), " rows, want ",
                          rows.size());
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!(it->second[i] == rows[i])) {
        return absl::StrCat(where, "row ", i, " is sample ", it->second[i].id,
                            " (pixels ", it->second[i].pixels, "), want ",
                            rows[i].id, " (pixels ", rows[i].pixels, ")");
      }
    }
  }
  if (got.size() != want.size()) {
    return absl::StrCat(got.size(), " batches, want ", want.size());
  }
  return "";
}

// Adds rank's rows of each batch to `stream` (ranks must come in order).
void Join(Stream* stream, const BatchView& batch) {
  auto& rows = (*stream)[{batch.epoch, batch.index}];
  for (const Row& row : RowsOf(batch)) rows.push_back(row);
}

void AddSkips(SkipSet* skips, const Pipeline& pipe) {
  for (const SkippedSample& s : pipe.skipped()) {
    skips->insert({s.epoch, s.position, s.name});
  }
}

struct Run {
  Stream stream;
  SkipSet skips;
  std::vector<std::map<int64_t, int64_t>> batches_per_rank;
};

Run Uninterrupted(int64_t ranks, int threads) {
  Run run;
  for (int64_t r = 0; r < ranks; ++r) {
    auto pipe = Make(r, ranks, threads);
    run.batches_per_rank.push_back(Drive(pipe.get(), [&](const BatchView& b) {
      Join(&run.stream, b);
      return true;
    }));
    AddSkips(&run.skips, *pipe);
    REQUIRE_OK(pipe->Finish());
  }
  return run;
}

// A rank of the killed run: records each batch's rows (epoch, index, id,
// hash) before checkpointing past it; SIGKILLs itself on reaching batch
// `die_at` (counted over both epochs).
[[noreturn]] void KilledRank(int64_t rank, int64_t ranks,
                             const std::string& root, int64_t die_at) {
  auto pipe = Make(rank, ranks, /*threads=*/2);
  std::ofstream records(absl::StrCat(root, "/records-", rank),
                        std::ios::binary);
  int64_t taken = 0;
  Drive(pipe.get(), [&](const BatchView& batch) {
    // A batch of zero rows (the end of an epoch after skips) is a batch
    // too: a marker before the rows.
    const int64_t marker[] = {batch.epoch, batch.index, -1, 0};
    records.write(reinterpret_cast<const char*>(marker), sizeof(marker));
    for (const Row& row : RowsOf(batch)) {
      const int64_t record[] = {batch.epoch, batch.index, row.id,
                                static_cast<int64_t>(row.pixels)};
      records.write(reinterpret_cast<const char*>(record), sizeof(record));
    }
    records.flush();
    if ((batch.index + 1) % kCheckpointEvery == 0) {
      auto info = pipe->Checkpoint(absl::StrCat(root, "/ckpt-rank", rank),
                                   {.keep_last = 3});
      if (!info.ok()) _exit(3);
    }
    if (++taken == die_at) raise(SIGKILL);
    return true;
  });
  _exit(4);  // ran out of batches before die_at
}

// The killed run's rows of rank `rank`, by (epoch, batch).
std::map<std::pair<int64_t, int64_t>, std::vector<Row>> Recorded(
    const std::string& root, int64_t rank) {
  std::map<std::pair<int64_t, int64_t>, std::vector<Row>> rows;
  std::ifstream in(absl::StrCat(root, "/records-", rank), std::ios::binary);
  int64_t record[4];
  while (in.read(reinterpret_cast<char*>(record), sizeof(record))) {
    auto& batch = rows[{record[0], record[1]}];
    if (record[2] < 0) continue;  // the batch's marker
    batch.push_back(Row{record[2], static_cast<uint64_t>(record[3])});
  }
  return rows;
}

// Resumes at `ranks` x `threads` from the killed run's checkpoints and
// joins, before the batch they resume at, the killed run's recorded rows.
Run Resumed(const std::string& root, int64_t old_ranks, int64_t ranks,
            int threads) {
  std::vector<std::string> dirs;
  for (int64_t r = 0; r < old_ranks; ++r) {
    dirs.push_back(absl::StrCat(root, "/ckpt-rank", r));
  }
  Run run;
  std::pair<int64_t, int64_t> first{-1, -1};
  for (int64_t r = 0; r < ranks; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto pipe = Make(r, ranks, threads, dirs);
    const double restore_ms = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - start)
                                  .count();
    if (r == 0) {
      std::printf("resume at %lld x %d: rank 0 built and restored in %.0f ms\n",
                  static_cast<long long>(ranks), threads, restore_ms);
    }
    bool first_batch = true;
    run.batches_per_rank.push_back(Drive(pipe.get(), [&](const BatchView& b) {
      if (first_batch) {
        if (r == 0) first = {b.epoch, b.index};
        CHECK(std::make_pair(b.epoch, b.index) == first);
        first_batch = false;
      }
      Join(&run.stream, b);
      return true;
    }));
    AddSkips(&run.skips, *pipe);
    REQUIRE_OK(pipe->Finish());
  }
  std::printf("resumed at epoch %lld batch %lld\n",
              static_cast<long long>(first.first),
              static_cast<long long>(first.second));
  for (int64_t r = old_ranks - 1; r >= 0; --r) {
    for (auto& [at, rows] : Recorded(root, r)) {
      if (at >= first) continue;
      auto& joined = run.stream[at];
      joined.insert(joined.begin(), rows.begin(), rows.end());
    }
  }
  return run;
}

TEST_CASE(
    "elastic: killed at 2 x 2, resumed at 4 x 3 and 1 x 1, the "
    "global batches are an uninterrupted run's") {
  const uint64_t seed = TestSeed("elastic_resume_test");
  std::mt19937_64 rng(seed);
  const int64_t batches = (kSamples + kGlobalBatch - 1) / kGlobalBatch;
  const std::string root = TestTempDir("elastic_killed");
  // Each rank dies on its own batch, within a checkpoint's reach of the
  // other (keep_last 3 keeps one both have).
  const int64_t die_at =
      25 + static_cast<int64_t>(rng() % (kEpochs * batches - 50));
  const int64_t die_at_1 = die_at + static_cast<int64_t>(rng() % 15);
  std::printf("ranks die at batches %lld and %lld (of %lld per epoch)\n",
              static_cast<long long>(die_at), static_cast<long long>(die_at_1),
              static_cast<long long>(batches));
  (void)Shards();  // written before the fork
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int64_t r = 0; r < 2; ++r) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) KilledRank(r, 2, root, r == 0 ? die_at : die_at_1);
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    INFO("rank status " << status);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  }

  const Run reference = Uninterrupted(2, 2);
  // Every good sample once per epoch; as many batches on every rank.
  for (int64_t e = 0; e < kEpochs; ++e) {
    std::multiset<int64_t> ids;
    for (const auto& [at, rows] : reference.stream) {
      if (at.first != e) continue;
      for (const Row& row : rows) ids.insert(row.id);
    }
    CHECK(ids.size() == static_cast<size_t>(kSamples - kSamples / 100));
    CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() == ids.size());
    for (int64_t id : ids) CHECK_FALSE(Corrupt(id));
    for (const auto& per_epoch : reference.batches_per_rank) {
      CHECK(per_epoch.at(e) == batches);
    }
  }
  CHECK(reference.skips.size() ==
        static_cast<size_t>(kEpochs * kSamples / 100));

  for (auto [ranks, threads] : {std::pair<int64_t, int>{4, 3}, {1, 1}}) {
    INFO("resumed at " << ranks << " x " << threads);
    const Run resumed = Resumed(root, 2, ranks, threads);
    CHECK(FirstDifference(resumed.stream, reference.stream) == "");
    CHECK(resumed.skips == reference.skips);
    for (const auto& per_epoch : resumed.batches_per_rank) {
      CHECK(per_epoch == resumed.batches_per_rank[0]);
    }
  }
}

TEST_CASE("elastic: a checkpoint holds no sample data") {
  const std::string root = TestTempDir("elastic_small");
  auto pipe = Make(0, 2, 1);
  int64_t taken = 0;
  Drive(pipe.get(), [&](const BatchView&) { return ++taken < 200; });
  auto info = pipe->Checkpoint(root);
  REQUIRE_OK(info.status());
  // Place, plan signature and 2 skips a few hundred bytes each; the batches
  // prefetched (24 x 6 x 6 x 3 bytes each) are not in it.
  std::printf("checkpoint after 200 batches: %lld bytes\n",
              static_cast<long long>(info->bytes));
  CHECK(info->bytes < 64 * 1024);
  REQUIRE_OK(pipe->Finish());
}

TEST_CASE("elastic: restores that cannot work are refused, naming why") {
  const std::string root = TestTempDir("elastic_refusals");
  for (int64_t r = 0; r < 2; ++r) {
    auto pipe = Make(r, 2, 1);
    int64_t taken = 0;
    Drive(pipe.get(), [&](const BatchView&) { return ++taken < 12; });
    REQUIRE_OK(pipe->Checkpoint(absl::StrCat(root, "/rank", r)).status());
    if (r == 0) {
      // Rank 0 goes on to a batch rank 1 never checkpointed.
      Drive(pipe.get(), [&](const BatchView&) { return ++taken < 20; });
      REQUIRE_OK(pipe->Checkpoint(absl::StrCat(root, "/rank", r)).status());
    }
    REQUIRE_OK(pipe->Finish());
  }
  const std::vector<std::string> both = {root + "/rank0", root + "/rank1"};

  SECTION("one rank's checkpoints are missing") {
    auto made = Make(0, 1, 1);
    auto restored = made->Restore(std::vector<std::string>{root + "/rank0"});
    REQUIRE_FALSE(restored.ok());
    INFO(restored.status().message());
    CHECK(absl::StrContains(restored.status().message(),
                            "cover lanes [0, 12) of the global batch's 24"));
  }
  SECTION("the same rank twice") {
    auto made = Make(0, 1, 1);
    auto restored = made->Restore(
        std::vector<std::string>{root + "/rank0", root + "/rank0"});
    REQUIRE_FALSE(restored.ok());
    CHECK(absl::StrContains(restored.status().message(), "again from 0"));
  }
  SECTION("another global batch") {
    auto made = Make(0, 2, 1, {}, /*global_batch=*/16);
    auto restored = made->Restore(both);
    REQUIRE_FALSE(restored.ok());
    INFO(restored.status().message());
    CHECK(absl::StrContains(restored.status().message(),
                            "has a global batch of 24 over 10000 samples an "
                            "epoch; this pipeline's is 16"));
  }
  SECTION("three ranks of 8 make the same global batch") {
    auto made = Make(2, 3, 1);
    REQUIRE_OK(made->Restore(both).status());
    REQUIRE_OK(made->Finish());
  }
  SECTION("the newest batch both ranks have is taken") {
    auto made = Make(1, 2, 1);
    REQUIRE_OK(made->Restore(both).status());
    bool first = true;
    Drive(made.get(), [&](const BatchView& b) {
      CHECK(b.index == 12);  // rank 0's batch 20 has no rank 1 checkpoint
      first = false;
      return false;
    });
    CHECK_FALSE(first);
    REQUIRE_OK(made->Finish());
  }
  SECTION("a directory with no checkpoint") {
    auto made = Make(0, 1, 1);
    auto restored = made->Restore(
        std::vector<std::string>{root + "/rank0", root + "/nothing"});
    REQUIRE_FALSE(restored.ok());
    CHECK(absl::StrContains(restored.status().message(), "/nothing'"));
  }
}

TEST_CASE("elastic: a sample that does not fit the batch is named") {
  // Seven 8 x 8 photos and, last in file order, one of 12 x 12 where the
  // batch holds 8 x 8: the error names its file, as without elastic.
  const std::string dir = TestTempDir("elastic_too_large");
  const std::string large = TestTempDir("elastic_too_large_src");
  REQUIRE_OK(WritePhotoImages(dir, 7, 8, 8, 1));
  REQUIRE_OK(WritePhotoImages(large, 1, 12, 12, 1));
  std::filesystem::path source;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(large)) {
    if (entry.is_regular_file()) source = entry.path();
  }
  std::filesystem::path class_dir;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory()) class_dir = entry.path();
  }
  REQUIRE_FALSE(source.empty());
  REQUIRE_FALSE(class_dir.empty());
  const std::string big = (class_dir / "zz_large.jpg").string();
  std::filesystem::copy_file(source, big);

  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = 1;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{
      .op = "file_reader",
      .outputs = {"files", "labels"},
      .attrs = {{"dir", StringAttr(dir)}, {"elastic", BoolAttr(true)}}});
  pipe.Add(
      OperatorDef{.op = "decode", .inputs = {"files"}, .outputs = {"images"}});
  pipe.Add(OperatorDef{.op = "batch",
                       .inputs = {"images"},
                       .outputs = {"batched"},
                       .attrs = {{"max_shape", IntListAttr({8, 8, 3})}}});
  pipe.SetOutputs({"batched"});
  REQUIRE_OK(pipe.Build());
  absl::Status failed;
  for (int i = 0; i < 2 && failed.ok(); ++i) {
    failed = pipe.Run();
    if (failed.ok()) failed = pipe.Outputs().status();
  }
  INFO(failed.message());
  CHECK(absl::IsInvalidArgument(failed));
  CHECK(absl::StrContains(failed.message(), "zz_large.jpg"));
  CHECK(absl::StrContains(failed.message(),
                          "uint8 [12, 12, 3], which does not fit the batch's "
                          "uint8 [8, 8, 3]"));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
