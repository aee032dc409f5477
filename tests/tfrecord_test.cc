// TFRecord framing (pipeline/tfrecord.h): records found across files, read
// back, and framing that breaks named by file and byte.
#include "pipeline/tfrecord.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

// A TFRecord file of these records (checksums 0: they are not verified).
std::string WriteRecords(const std::string& name,
                         const std::vector<std::string>& records,
                         const std::string& tail = "") {
  static const std::string dir = testing::TestTempDir("tfrecord_test");
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary);
  for (const std::string& r : records) {
    uint64_t n = r.size();
    for (int b = 0; b < 8; ++b)
      out.put(static_cast<char>((n >> (8 * b)) & 0xff));
    out << std::string(4, '\0') << r << std::string(4, '\0');
  }
  out << tail;
  return path;
}

TEST_CASE("tfrecord: records in file order, read back") {
  const std::string a = WriteRecords("a.tfrecord", {"one", "", "three!"});
  const std::string b = WriteRecords("b.tfrecord", {std::string(300, 'x')});
  auto files = TfRecordFiles::Open({a, b});
  REQUIRE(files.ok());
  CHECK((*files)->size() == 4);
  CHECK((*files)->largest_record() == 300);
  std::string data;
  REQUIRE((*files)->Read(2, &data).ok());
  CHECK(data == "three!");
  REQUIRE((*files)->Read(1, &data).ok());
  CHECK(data.empty());
  REQUIRE((*files)->Read(3, &data).ok());
  CHECK(data == std::string(300, 'x'));
  CHECK((*files)->Describe(2) == a + "@" + std::to_string(2 * 16 + 3));
}

TEST_CASE("tfrecord: framing that breaks is named by file and byte") {
  const std::string cut = WriteRecords("cut.tfrecord", {"ok"}, "abc");
  auto files = TfRecordFiles::Open({cut});
  REQUIRE_FALSE(files.ok());
  CHECK_THAT(std::string(files.status().message()),
             Catch::Contains("cut.tfrecord': a record header cut short at "
                             "byte 18"));
  const std::string big = WriteRecords("big.tfrecord", {"ok"},
                                       std::string("\xff\x00\x00\x00\x00\x00"
                                                   "\x00\x00\0\0\0\0",
                                                   12));
  files = TfRecordFiles::Open({big});
  REQUIRE_FALSE(files.ok());
  CHECK_THAT(std::string(files.status().message()),
             Catch::Contains("the record at byte 18 claims 255 bytes, more "
                             "than the file holds"));
  const std::string empty = WriteRecords("empty.tfrecord", {});
  files = TfRecordFiles::Open({empty});
  REQUIRE_FALSE(files.ok());
  CHECK_THAT(std::string(files.status().message()),
             Catch::Contains("hold no record"));
  files = TfRecordFiles::Open(
      {testing::TestTempDir("tfrecord_none") + "/missing.tfrecord"});
  REQUIRE_FALSE(files.ok());
  CHECK_THAT(std::string(files.status().message()),
             Catch::Contains("cannot open TFRecord file"));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
