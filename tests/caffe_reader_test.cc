// pipeline.caffe_reader over LMDBs written here with liblmdb as Caffe
// writes them (a Datum per key): images and labels as stored, sharding
// that covers every record once, raw records, and errors that name the
// path, the record and the attribute.
#include <lmdb.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "actorflow/pipeline.h"
#include "pipeline/caffe_lmdb.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "plan/plan_builder.h"
#include "proto/caffe_datum.pb.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

using actorflow::pipeline::CaffeDatum;

// An LMDB directory holding `records` (key, value), written in one
// transaction.
std::string WriteLmdb(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& records) {
  const std::string dir = testing::TestTempDir(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_mapsize(env, size_t{64} << 20) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0644) == 0);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == 0);
  for (const auto& [key, value] : records) {
    MDB_val k{key.size(), const_cast<char*>(key.data())};
    MDB_val v{value.size(), const_cast<char*>(value.data())};
    REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
  }
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
  return dir;
}

// Record i: a JPEG photo of its own size, label i (so labels name records).
std::vector<std::pair<std::string, std::string>> PhotoRecords(int count) {
  std::vector<std::pair<std::string, std::string>> records;
  for (int i = 0; i < count; ++i) {
    Sample photo;
    MakePhotoImage(i, 30 + 3 * i, 40 + 2 * i, &photo);
    auto jpeg = EncodeJpeg(photo.ref(), 90);
    REQUIRE(jpeg.ok());
    CaffeDatum datum;
    datum.set_channels(3);
    datum.set_height(photo.shape[0]);
    datum.set_width(photo.shape[1]);
    datum.set_data(*jpeg);
    datum.set_label(i);
    datum.set_encoded(true);
    records.emplace_back(absl::StrFormat("%08d", i), datum.SerializeAsString());
  }
  return records;
}

std::unique_ptr<Pipeline> CaffePipeline(const std::string& path, int shard,
                                        int shards) {
  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = 2;
  options.fuse_decode = false;  // decoded whole, as the check below does
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(OperatorDef{.op = "caffe_reader",
                        .name = "reader",
                        .outputs = {"encoded", "labels"},
                        .attrs = {{"path", StringAttr(path)},
                                  {"shard_id", IntAttr(shard)},
                                  {"num_shards", IntAttr(shards)}}});
  pipe->Add(OperatorDef{
      .op = "decode", .inputs = {"encoded"}, .outputs = {"images"}});
  pipe->Add(OperatorDef{.op = "resize",
                        .inputs = {"images"},
                        .outputs = {"small"},
                        .attrs = {{"size", IntListAttr({16, 20})}}});
  pipe->SetOutputs({"small", "labels"});
  return pipe;
}

TEST_CASE("caffe_reader hands out each record's image and label, sharded") {
  const auto records = PhotoRecords(13);
  const std::string path = WriteLmdb("photos", records);
  std::set<int32_t> seen;
  for (int shard = 0; shard < 2; ++shard) {
    auto pipe = CaffePipeline(path, shard, 2);
    REQUIRE_OK(pipe->Build());
    CHECK(pipe->epoch_size() == 7);  // ceil(13 / 2): shards are equal
    REQUIRE(pipe->Run().ok());
    while (true) {
      auto out = pipe->Outputs();
      if (absl::IsOutOfRange(out.status())) break;
      REQUIRE(out.ok());
      const auto images = out->outputs[0].data();
      auto labels = out->outputs[1].data().data<int32_t>();
      REQUIRE(labels.ok());
      for (size_t i = 0; i < labels->size(); ++i) {
        const int32_t label = (*labels)[i];
        REQUIRE(label >= 0);
        REQUIRE(label < 13);
        seen.insert(label);
        // The record's own JPEG, decoded and resized as the pipeline does.
        CaffeDatum datum;
        REQUIRE(datum.ParseFromString(records[label].second));
        Sample decoded, want;
        REQUIRE_OK(DecodeImage(
            absl::MakeConstSpan(
                reinterpret_cast<const uint8_t*>(datum.data().data()),
                datum.data().size()),
            3, &decoded));
        REQUIRE_OK(Resize(decoded.ref(), 16, 20, &want));
        INFO("record " << label);
        CHECK(std::memcmp(
                  static_cast<const uint8_t*>(images.raw_data()) + i * 960,
                  want.storage.data(), 960) == 0);
      }
      REQUIRE(pipe->Run().ok());
    }
    CHECK(pipe->Finish().ok());
  }
  CHECK(seen.size() == 13);  // every record, in one shard or the other
}

TEST_CASE("raw records come out as height x width x channels") {
  std::vector<std::pair<std::string, std::string>> records;
  for (int i = 0; i < 5; ++i) {
    CaffeDatum datum;
    datum.set_channels(2);
    datum.set_height(3);
    datum.set_width(4);
    std::string pixels(24, static_cast<char>(10 * i));
    pixels[0] = static_cast<char>(i);
    datum.set_data(pixels);
    datum.set_label(100 + i);
    datum.set_encoded(false);
    records.emplace_back(absl::StrFormat("k%d", i), datum.SerializeAsString());
  }
  const std::string path = WriteLmdb("raw", records);
  PipelineOptions options;
  options.batch_size = 5;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{.op = "caffe_reader",
                       .outputs = {"raw", "labels"},
                       .attrs = {{"path", StringAttr(path)}}});
  pipe.SetOutputs({"raw", "labels"});
  REQUIRE_OK(pipe.Build());
  REQUIRE(pipe.Run().ok());
  auto out = pipe.Outputs();
  REQUIRE(out.ok());
  const auto raw = out->outputs[0].data();
  CHECK(raw.shape() == absl::Span<const int64_t>({5, 3, 4, 2}));
  auto labels = out->outputs[1].data().data<int32_t>();
  REQUIRE(labels.ok());
  const auto* bytes = static_cast<const uint8_t*>(raw.raw_data());
  for (int i = 0; i < 5; ++i) {
    CHECK((*labels)[i] == 100 + i);
    CHECK(bytes[i * 24] == i);
    CHECK(bytes[i * 24 + 23] == 10 * i);
  }
  CHECK(pipe.Finish().ok());
}

TEST_CASE("CaffeLmdb reads each record's image size in place") {
  auto records = PhotoRecords(4);
  CaffeDatum raw;
  raw.set_height(7);
  raw.set_width(9);
  raw.set_channels(1);
  raw.set_data(std::string(63, 'x'));
  raw.set_encoded(false);
  records.emplace_back("raw", raw.SerializeAsString());
  records.emplace_back("zz", "\xff\xff garbage");
  auto db = CaffeLmdb::Open(WriteLmdb("sizes", records));
  REQUIRE(db.ok());
  REQUIRE((*db)->size() == 6);
  for (int i = 0; i < 4; ++i) {
    auto size = (*db)->ImageSize(i);
    REQUIRE(size.ok());
    CHECK(*size == std::pair<int64_t, int64_t>{30 + 3 * i, 40 + 2 * i});
  }
  auto size = (*db)->ImageSize(4);  // "raw" sorts after the digits
  REQUIRE(size.ok());
  CHECK(*size == std::pair<int64_t, int64_t>{7, 9});
  CHECK_THAT(std::string((*db)->ImageSize(5).status().message()),
             Catch::Contains("record 'zz': not a Caffe Datum with data"));
  CHECK(absl::IsNotFound(CaffeLmdb::Open("/nonexistent/lmdb").status()));
}

TEST_CASE("caffe_reader errors name the path, the record and the attr") {
  auto build_error = [](const std::string& path,
                        std::vector<std::string> outputs,
                        std::map<std::string, AttrValue> attrs) {
    attrs["path"] = StringAttr(path);
    Pipeline pipe(PipelineOptions{});
    pipe.Add(OperatorDef{.op = "caffe_reader",
                         .name = "reader",
                         .outputs = outputs,
                         .attrs = attrs});
    pipe.SetOutputs(outputs);
    return std::string(pipe.Build().message());
  };
  CHECK_THAT(build_error("/nonexistent/db", {"images", "labels"}, {}),
             Catch::Contains("operator 'reader' (caffe_reader): attr 'path': "
                             "LMDB '/nonexistent/db': No such file"));
  const std::string photos = WriteLmdb("few", PhotoRecords(2));
  CHECK_THAT(build_error(photos, {"images", "labels"},
                         {{"label_available", BoolAttr(false)}}),
             Catch::Contains("give 1 output(s), attr 'outputs' names 2"));
  const std::string empty = WriteLmdb("empty", {});
  CHECK_THAT(build_error(empty, {"images", "labels"}, {}),
             Catch::Contains("is empty"));
  // A record that is no Datum fails the run, named; skip_sample drops it.
  auto records = PhotoRecords(3);
  records[1].second = std::string("\xff\xff\xff\xff garbage", 12);
  const std::string broken = WriteLmdb("broken", records);
  for (OnError on_error : {OnError::kFail, OnError::kSkipSample}) {
    PipelineOptions options;
    options.batch_size = 3;
    options.on_error = on_error;
    Pipeline pipe(options);
    pipe.Add(OperatorDef{.op = "caffe_reader",
                         .name = "reader",
                         .outputs = {"images", "labels"},
                         .attrs = {{"path", StringAttr(broken)}}});
    pipe.SetOutputs({"labels"});
    REQUIRE_OK(pipe.Build());
    REQUIRE(pipe.Run().ok());
    auto out = pipe.Outputs();
    if (on_error == OnError::kFail) {
      CHECK_THAT(std::string(out.status().message()),
                 Catch::Contains("record '00000001': not a Caffe Datum"));
    } else {
      REQUIRE(out.ok());
      CHECK(out->outputs[0].num_samples() == 2);
      REQUIRE(pipe.skipped().size() == 1);
      CHECK_THAT(pipe.skipped()[0].name, Catch::Contains(":00000001"));
    }
    (void)pipe.Finish();
  }
}

}  // namespace
}  // namespace actorflow::internal::pipeline
