// .npy files (pipeline/npy.h) written here byte by byte as NumPy writes
// them: headers of each version, C and Fortran order, and what is refused.
#include "pipeline/npy.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "actor/act_context.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

// A .npy file of `version` (1 or 2) with this header dict and values.
Bytes NpyFile(int version, const std::string& dict,
              const std::vector<uint8_t>& values) {
  std::string header = dict;
  const size_t prefix = version == 1 ? 10 : 12;
  // NumPy pads the header with spaces and ends it with a newline so that
  // the values start at a multiple of 64.
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes file = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version),
                0};
  const size_t n = header.size();
  file.push_back(n & 0xff);
  file.push_back((n >> 8) & 0xff);
  if (version == 2) {
    file.push_back((n >> 16) & 0xff);
    file.push_back((n >> 24) & 0xff);
  }
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), values.begin(), values.end());
  return file;
}

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<float> FloatsOf(const Sample& s) {
  const float* f = s.ref().as<float>();
  return std::vector<float>(f, f + ShapeElemCnt(s.shape));
}

std::string ErrorOf(const Bytes& file) {
  Sample out;
  return std::string(
      DecodeNpy(absl::MakeConstSpan(file.data(), file.size()), &out).message());
}

TEST_CASE("npy: C order, both header versions") {
  for (int version : {1, 2}) {
    INFO("version " << version);
    const Bytes file = NpyFile(
        version, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
        FloatBytes({1, 2, 3, 4, 5, 6}));
    auto header = ReadNpyHeader(absl::MakeConstSpan(file.data(), file.size()));
    REQUIRE(header.ok());
    CHECK(header->type == DT_FLOAT32);
    CHECK(header->shape == std::vector<int64_t>{2, 3});
    CHECK(header->data_offset % 64 == 0);
    Sample out;
    REQUIRE(
        DecodeNpy(absl::MakeConstSpan(file.data(), file.size()), &out).ok());
    CHECK(std::vector<int64_t>(out.shape.begin(), out.shape.end()) ==
          std::vector<int64_t>{2, 3});
    CHECK(FloatsOf(out) == std::vector<float>{1, 2, 3, 4, 5, 6});
  }
}

TEST_CASE("npy: Fortran order comes out in C order; scalars and bytes") {
  // [[1, 2, 3], [4, 5, 6]] stored column by column.
  const Bytes fortran =
      NpyFile(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
              FloatBytes({1, 4, 2, 5, 3, 6}));
  Sample out;
  REQUIRE(DecodeNpy(absl::MakeConstSpan(fortran.data(), fortran.size()), &out)
              .ok());
  CHECK(FloatsOf(out) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // A 2 x 2 x 2 in Fortran order: element (i, j, k) at i + 2j + 4k.
  std::vector<float> cube(8);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 2; ++k)
        cube[i + 2 * j + 4 * k] = 100 * i + 10 * j + k;
    }
  }
  const Bytes f3 = NpyFile(
      1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }",
      FloatBytes(cube));
  REQUIRE(DecodeNpy(absl::MakeConstSpan(f3.data(), f3.size()), &out).ok());
  CHECK(FloatsOf(out) == std::vector<float>{0, 1, 10, 11, 100, 101, 110, 111});
  const Bytes scalar = NpyFile(
      1, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }", {42});
  REQUIRE(
      DecodeNpy(absl::MakeConstSpan(scalar.data(), scalar.size()), &out).ok());
  CHECK(out.type == DT_UINT8);
  CHECK(out.shape.empty());
  CHECK(out.storage[0] == 42);
}

TEST_CASE("npy: what is refused names the problem") {
  CHECK_THAT(ErrorOf(Bytes{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0}),
             Catch::Contains("not a .npy file"));
  CHECK_THAT(ErrorOf(NpyFile(
                 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                 FloatBytes({1}))),
             Catch::Contains("dtype '>f4' (takes bool, uint8"));
  CHECK_THAT(
      ErrorOf(NpyFile(
          1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
          FloatBytes({1, 2}))),
      Catch::Contains("holds 8 bytes of values where its header says 16"));
  CHECK_THAT(
      ErrorOf(NpyFile(1, "{'descr': '<f4', 'fortran_order': False, }", {})),
      Catch::Contains("the header has no 'shape'"));
  CHECK_THAT(
      ErrorOf(NpyFile(
          1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }",
          {})),
      Catch::Contains("'shape' has 'x'"));
  Bytes cut = NpyFile(
      1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", {});
  cut.resize(20);
  CHECK_THAT(ErrorOf(cut), Catch::Contains("the header is cut short"));
}

TEST_CASE("npy_decode: files that differ from the defined ones are errors") {
  auto op = MakeSampleOp("npy_decode");
  REQUIRE(op.ok());
  TaskProto task = KernelTask(
      "pipeline.npy_decode",
      {{"dtype", StringAttr("float32")}, {"max_shape", IntListAttr({2, 3})}});
  KernelInitContext ctx = MakeInitContext(task, {}, {});
  REQUIRE((*op)->Init(ctx).ok());
  auto spec = (*op)->Infer(SampleSpec{DT_UINT8, {-1}});
  REQUIRE(spec.ok());
  CHECK(spec->type == DT_FLOAT32);
  CHECK(spec->max_shape == std::vector<int64_t>{2, 3});
  CHECK((*op)->skippable());
  auto apply = [&](const Bytes& file, Sample* out) {
    Sample in;
    const int64_t shape[] = {static_cast<int64_t>(file.size())};
    in.Reshape(DT_UINT8, shape);
    std::memcpy(in.storage.data(), file.data(), file.size());
    SampleRng rng;
    return (*op)->Apply(in.ref(), &rng, out);
  };
  Sample out;
  CHECK(apply(NpyFile(1,
                      "{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(1, 3), }",
                      FloatBytes({7, 8, 9})),
              &out)
            .ok());
  CHECK(FloatsOf(out) == std::vector<float>{7, 8, 9});
  CHECK_THAT(std::string(apply(NpyFile(1,
                                       "{'descr': '<i4', 'fortran_order': "
                                       "False, 'shape': (1, 3), }",
                                       FloatBytes({7, 8, 9})),
                               &out)
                             .message()),
             Catch::Contains("an array of int32 [1, 3] where the files read "
                             "when the pipeline was defined held float32 of "
                             "at most [2, 3]"));
  CHECK_THAT(std::string(apply(NpyFile(1,
                                       "{'descr': '<f4', 'fortran_order': "
                                       "False, 'shape': (3, 1), }",
                                       FloatBytes({7, 8, 9})),
                               &out)
                             .message()),
             Catch::Contains("float32 [3, 1]"));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
