// Decoding that does less work, checked against decoding everything: JPEG
// windows (libjpeg-turbo's crop and skip), the fused decode_random_crop and
// decode_resize operators against the unfused chain, and images that claim
// more than they are or are damaged: refused before anything is allocated,
// never a crash, never more memory than the image itself.
#include <zlib.h>
// clang-format off
#include <cstdio>  // before jpeglib.h, which needs FILE
#include <jpeglib.h>
// clang-format on

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "actor/act_context.h"
#include "pipeline/clean_jpegs.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "pipeline/jpeg_rows.h"
#include "pipeline/sample_ops.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

Bytes Encoded(const absl::StatusOr<std::string>& bytes) {
  REQUIRE(bytes.ok());
  return Bytes(bytes->begin(), bytes->end());
}

// A photo-like JPEG (quality 90) of height x width.
Bytes PhotoJpeg(uint64_t seed, int64_t height, int64_t width) {
  Sample photo;
  MakePhotoImage(seed, height, width, &photo);
  return Encoded(EncodeJpeg(photo.ref(), 90));
}

Bytes PhotoPng(uint64_t seed, int64_t height, int64_t width) {
  Sample photo;
  MakePhotoImage(seed, height, width, &photo);
  return Encoded(EncodePng(photo.ref()));
}

Sample Decode(const Bytes& bytes) {
  Sample out;
  absl::Status ok = DecodeImage(bytes, 3, &out);
  INFO(ok.ToString());
  REQUIRE(ok.ok());
  return out;
}

// The pixel at (y, x), channel k, of an HWC uint8 image.
int At(const Sample& s, int64_t y, int64_t x, int64_t k) {
  return s.storage[(y * s.shape[1] + x) * s.shape[2] + k];
}

// How many values of rows [y0, y0 + h) and columns [x0, x0 + w) of `whole`
// `part` (decoded where `region` says) does not hold.
int64_t WrongInWindow(const Sample& part, const DecodedRegion& region,
                      const Sample& whole, int64_t y0, int64_t x0, int64_t h,
                      int64_t w) {
  int64_t wrong = 0;
  for (int64_t y = y0; y < y0 + h; ++y) {
    for (int64_t x = x0; x < x0 + w; ++x) {
      for (int k = 0; k < 3; ++k) {
        wrong += At(part, y - region.y, x - region.x, k) != At(whole, y, x, k);
      }
    }
  }
  return wrong;
}

// A sample operator made from attrs, as a pipeline stage makes it.
std::unique_ptr<SampleOp> MakeOp(
    const std::string& name, const std::map<std::string, AttrValue>& attrs) {
  auto op = MakeSampleOp(name);
  REQUIRE(op.ok());
  TaskProto task = KernelTask("pipeline." + name, attrs);
  KernelInitContext ctx = MakeInitContext(task, {}, {});
  absl::Status ok = (*op)->Init(ctx);
  INFO(ok.ToString());
  REQUIRE(ok.ok());
  return std::move(*op);
}

SampleRef BytesRef(const Bytes& bytes, const int64_t* size) {
  return SampleRef{DT_UINT8, absl::MakeConstSpan(size, 1), bytes.data(),
                   static_cast<int64_t>(bytes.size())};
}

// The unfused chain: decode, [resize to `shorter`,] crop, each with its
// own generator as a pipeline stage seeds it (crop's is op index 2).
Sample Unfused(const Bytes& bytes, int64_t shorter, int64_t crop, bool random,
               uint64_t position, bool antialias = false) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  auto decode = MakeOp("decode", {});
  Sample decoded, resized, cropped;
  SampleRng rng0(7, 0, 0, position);
  REQUIRE(decode->Apply(BytesRef(bytes, &size), &rng0, &decoded).ok());
  SampleRef current = decoded.ref();
  if (shorter > 0) {
    auto resize = MakeOp("resize", {{"shorter", IntAttr(shorter)},
                                    {"antialias", BoolAttr(antialias)}});
    SampleRng rng1(7, 1, 0, position);
    REQUIRE(resize->Apply(current, &rng1, &resized).ok());
    current = resized.ref();
  }
  auto op = MakeOp("crop", {{"size", IntListAttr({crop, crop})},
                            {"random", BoolAttr(random)}});
  SampleRng rng2(7, 2, 0, position);
  REQUIRE(op->Apply(current, &rng2, &cropped).ok());
  return cropped;
}

Sample Fused(const Bytes& bytes, int64_t shorter, int64_t crop, bool random,
             uint64_t position, bool antialias = false) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  std::map<std::string, AttrValue> attrs = {{"size", IntListAttr({crop, crop})},
                                            {"random", BoolAttr(random)},
                                            {"antialias", BoolAttr(antialias)}};
  if (shorter > 0) attrs["resize_shorter"] = IntAttr(shorter);
  auto op = MakeOp("decode_random_crop", attrs);
  Sample out;
  SampleRng rng(7, 2, 0, position);  // the crop's generator
  absl::Status ok = op->Apply(BytesRef(bytes, &size), &rng, &out);
  INFO(ok.ToString());
  REQUIRE(ok.ok());
  return out;
}

struct Difference {
  double mean = 0;
  int max = 0;
};
Difference Compare(const Sample& a, const Sample& b) {
  REQUIRE(a.shape == b.shape);
  Difference d;
  for (size_t i = 0; i < a.storage.size(); ++i) {
    const int diff = std::abs(int(a.storage[i]) - int(b.storage[i]));
    d.mean += diff;
    d.max = std::max(d.max, diff);
  }
  d.mean /= static_cast<double>(a.storage.size());
  return d;
}

TEST_CASE("a decoded window holds exactly the whole image's pixels there") {
  const Bytes jpeg = PhotoJpeg(3, 375, 500);
  const Sample whole = Decode(jpeg);
  struct Window {
    int64_t y, x, h, w;
  };
  for (const Window& win : {Window{0, 0, 375, 500}, Window{10, 37, 224, 224},
                            Window{151, 276, 224, 224}, Window{374, 499, 1, 1},
                            Window{0, 3, 17, 5}, Window{200, 0, 175, 500}}) {
    INFO("window " << win.h << "x" << win.w << " at (" << win.y << ", " << win.x
                   << ")");
    DecodeOptions options;
    options.y = win.y;
    options.x = win.x;
    options.h = win.h;
    options.w = win.w;
    Sample part;
    DecodedRegion region;
    REQUIRE(DecodeImage(jpeg, options, &part, &region).ok());
    CHECK(region.full_height == 375);
    CHECK(region.full_width == 500);
    // Widened by a margin (columns to block boundaries), never narrower.
    CHECK(region.y <= win.y);
    CHECK(region.x <= win.x);
    CHECK(region.y + part.shape[0] >= win.y + win.h);
    CHECK(region.x + part.shape[1] >= win.x + win.w);
    CHECK(part.shape[0] <= win.h + 2 * 16);
    CHECK(part.shape[1] <= win.w + 3 * 16);
    CHECK(WrongInWindow(part, region, whole, win.y, win.x, win.h, win.w) == 0);
  }
}

// A JPEG's luma sampling (chroma at 1x1): 4:4:4, 4:2:2, 4:2:0, 4:4:0,
// and gray.
struct Sampling {
  int h, v;
  bool gray;
};
constexpr Sampling kSamplings[] = {
    {1, 1, false}, {2, 1, false}, {2, 2, false}, {1, 2, false}, {1, 1, true}};

// A photo-like JPEG of height x width encoded with luma sampling factors
// h_samp x v_samp (chroma at 1 x 1: 4:4:4 is 1 x 1, 4:2:2 is 2 x 1, 4:2:0
// is 2 x 2, 4:4:0 is 1 x 2), progressive or baseline, or gray (one
// component).
Bytes SampledJpeg(uint64_t seed, int64_t height, int64_t width, int h_samp,
                  int v_samp, bool progressive, bool gray,
                  bool optimize_coding = false, int restart_rows = 0) {
  Sample photo;
  MakePhotoImage(seed, height, width, &photo);
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): libjpeg's type
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  if (gray) jpeg_set_colorspace(&cinfo, JCS_GRAYSCALE);
  jpeg_set_quality(&cinfo, 90, TRUE);
  cinfo.comp_info[0].h_samp_factor = h_samp;
  cinfo.comp_info[0].v_samp_factor = v_samp;
  if (progressive) jpeg_simple_progression(&cinfo);
  cinfo.optimize_coding = optimize_coding ? TRUE : FALSE;
  cinfo.restart_in_rows = restart_rows;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = photo.storage.data() + cinfo.next_scanline * width * 3;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buffer, buffer + size);
  free(buffer);
  return out;
}

TEST_CASE("windows are exact whatever the sampling, scan mode and scale") {
  // The window's margin is what the decoder's chroma upsampling reads past
  // an edge; too little and the pixels next to the window's edge differ
  // from the whole image's. Random windows (edges, corners, one pixel
  // wide) in images of odd sizes, each sampling and both scan modes, at
  // every DCT scale the fused decoders use.
  const uint64_t seed = testing::TestSeed("windows at every sampling");
  std::mt19937_64 gen(seed);
  auto below = [&](int64_t n) {
    return static_cast<int64_t>(gen() % static_cast<uint64_t>(n));
  };
  int index = 0;
  for (const Sampling& sampling : kSamplings) {
    // Baseline files of every other sampling with tables fitted to the
    // image (whose windows may need wider stand-ins: JpegRows::Columns).
    const bool fitted = index++ % 2 == 1;
    for (bool progressive : {false, true}) {
      const int64_t height = 97 + below(90), width = 97 + below(90);
      const Bytes jpeg =
          SampledJpeg(gen(), height, width, sampling.h, sampling.v, progressive,
                      sampling.gray, fitted && !progressive);
      for (int scale : {8, 4, 2, 1}) {
        DecodeOptions whole_options;
        whole_options.scale_eighths = scale;
        Sample whole;
        REQUIRE(DecodeImage(jpeg, whole_options, &whole, nullptr).ok());
        const int64_t full_h = whole.shape[0], full_w = whole.shape[1];
        for (int round = 0; round < 12; ++round) {
          DecodeOptions options = whole_options;
          options.h = 1 + below(round % 3 == 0 ? 3 : full_h);
          options.w = 1 + below(round % 3 == 1 ? 3 : full_w);
          options.y = below(full_h - options.h + 1);
          options.x = below(full_w - options.w + 1);
          Sample part;
          DecodedRegion region;
          REQUIRE(DecodeImage(jpeg, options, &part, &region).ok());
          int64_t wrong = 0;
          for (int64_t y = options.y; y < options.y + options.h; ++y) {
            for (int64_t x = options.x; x < options.x + options.w; ++x) {
              for (int k = 0; k < 3; ++k) {
                wrong += At(part, y - region.y, x - region.x, k) !=
                         At(whole, y, x, k);
              }
            }
          }
          INFO("sampling " << sampling.h << "x" << sampling.v
                           << (sampling.gray ? " gray" : "")
                           << (progressive ? " progressive" : " baseline")
                           << (fitted && !progressive ? ", fitted tables" : "")
                           << ", " << height << "x" << width << " at " << scale
                           << "/8, window " << options.h << "x" << options.w
                           << " at (" << options.y << ", " << options.x << ")");
          REQUIRE(wrong == 0);
        }
      }
    }
  }
}

TEST_CASE("a JPEG entered at any MCU row decodes as the whole image there") {
  // JpegRows: from each row's start (found by reading the Huffman codes),
  // a stand-in row that leaves the DC predictors as the row needs and ends
  // on its first bit, then the file's own data: every row below the first
  // is the whole image's, at every sampling, with the standard tables and
  // with tables fitted to the image (which may lack the codes a one-block
  // stand-in would use, such as a difference of 0).
  const uint64_t seed = testing::TestSeed("jpeg rows");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  std::mt19937_64 gen(seed);
  // Rows that begin inside a 0xFF byte (whose 0x00 the copy passes over).
  int inside_ff = 0;
  auto check_every_row = [&](const Sampling& sampling, bool optimize) {
    const int64_t height = 90 + gen() % 120, width = 90 + gen() % 120;
    const Bytes jpeg = SampledJpeg(gen(), height, width, sampling.h, sampling.v,
                                   false, sampling.gray, optimize);
    INFO("sampling " << sampling.h << "x" << sampling.v
                     << (sampling.gray ? " gray" : "")
                     << (optimize ? ", fitted tables" : ", standard tables")
                     << ", " << height << "x" << width);
    std::optional<JpegRows> rows = JpegRows::Parse(jpeg);
    REQUIRE(rows.has_value());
    const int mcu = rows->mcu_height();
    CHECK(mcu == 8 * (sampling.gray ? 1 : sampling.v));
    CHECK(rows->mcu_rows() == (height + mcu - 1) / mcu);
    std::vector<JpegMcuStart> starts;
    REQUIRE(rows->Scan(jpeg, &starts));
    Sample whole;
    REQUIRE(DecodeImage(jpeg, 3, &whole).ok());
    for (int r = 1; r < rows->mcu_rows(); ++r) {
      const JpegMcuStart& start = rows->Start(starts, r, 0);
      INFO("from row " << r << " (byte " << start.byte << ", bit "
                       << int{start.bit} << ")");
      inside_ff += start.bit > 0 && jpeg[start.byte] == 0xFF;
      std::vector<uint8_t> data;
      REQUIRE(rows->StartingAt(jpeg, starts, r, &data));
      Sample part;
      REQUIRE(DecodeImage(data, 3, &part).ok());
      REQUIRE(part.shape[0] == height - (r - 1) * mcu);
      REQUIRE(part.shape[1] == width);
      int64_t wrong = 0;
      for (int64_t y = mcu + 1; y < part.shape[0]; ++y) {
        for (int64_t x = 0; x < width; ++x) {
          for (int k = 0; k < 3; ++k) {
            wrong += At(part, y, x, k) != At(whole, y + (r - 1) * mcu, x, k);
          }
        }
      }
      REQUIRE(wrong == 0);
    }
  };
  for (const Sampling& sampling : kSamplings) {
    for (bool optimize : {false, true}) check_every_row(sampling, optimize);
  }
  // A row rarely begins inside a 0xFF byte (the row above must end, and
  // the row begin, with 1-bits, where the commonest codes begin with 0):
  // the splice is checked on a start made up at such a byte instead. The
  // stand-in's last byte takes the byte's unused bits; the file's 0x00
  // after it is passed over, and its data follow as they are.
  INFO("rows seen to begin inside a 0xFF byte: " << inside_ff);
  const Bytes jpeg = SampledJpeg(gen(), 160, 160, 2, 2, false, false);
  std::optional<JpegRows> rows = JpegRows::Parse(jpeg);
  REQUIRE(rows.has_value());
  std::vector<JpegMcuStart> starts;
  REQUIRE(rows->Scan(jpeg, &starts));
  const size_t row1 = &rows->Start(starts, 1, 0) - starts.data();
  size_t at = starts[row1].byte;
  while (at + 2 < jpeg.size() && !(jpeg[at] == 0xFF && jpeg[at + 1] == 0)) {
    ++at;
  }
  REQUIRE(at + 2 < jpeg.size());
  for (int bit = 1; bit < 8; ++bit) {
    INFO("a start at bit " << bit << " of the 0xFF at byte " << at);
    std::vector<JpegMcuStart> made_up = starts;
    made_up[row1].byte = static_cast<uint32_t>(at);
    made_up[row1].bit = static_cast<uint8_t>(bit);
    std::vector<uint8_t> data;
    REQUIRE(rows->StartingAt(jpeg, made_up, 1, &data));
    const size_t tail = jpeg.size() - (at + 2);
    REQUIRE(data.size() > tail + 2);
    CHECK(std::equal(jpeg.begin() + at + 2, jpeg.end(), data.end() - tail));
    const uint8_t before = data[data.size() - tail - 1];
    const uint8_t low_bits = (1u << (8 - bit)) - 1;
    if (before == 0) {
      // The spliced byte came out 0xFF: the writer stuffed it.
      CHECK(data[data.size() - tail - 2] == 0xFF);
    } else {
      CHECK((before & low_bits) == low_bits);
      CHECK(before != 0xFF);
    }
  }
}

TEST_CASE("a JPEG's block of MCUs decodes as the whole image there") {
  // JpegRows::Columns: each row of the block led by a stand-in MCU that
  // moves the DC predictors from where the row above's last MCU left them
  // to what the row's first needs, and ends on its first bit. Inside a
  // pixel of the cut edges, the block is the whole image's, at every
  // sampling, with standard tables and tables fitted to the image; where
  // the block reaches the image's last row or column, to the edge.
  const uint64_t seed = testing::TestSeed("jpeg columns");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  std::mt19937_64 gen(seed);
  auto below = [&](int n) { return static_cast<int>(gen() % n); };
  constexpr int kStride = JpegRows::kColumnStride;
  int made = 0, refused = 0, wider = 0;
  for (const Sampling& sampling : kSamplings) {
    for (bool optimize : {false, true}) {
      const int64_t height = 90 + below(120), width = 90 + below(200);
      const Bytes jpeg =
          SampledJpeg(gen(), height, width, sampling.h, sampling.v, false,
                      sampling.gray, optimize);
      std::optional<JpegRows> rows = JpegRows::Parse(jpeg);
      REQUIRE(rows.has_value());
      const int mh = rows->mcu_height(), mw = rows->mcu_width();
      CHECK(mw == 8 * (sampling.gray ? 1 : sampling.h));
      CHECK(rows->mcus_per_row() == (width + mw - 1) / mw);
      std::vector<JpegMcuStart> starts;
      REQUIRE(rows->Scan(jpeg, &starts));
      Sample whole;
      REQUIRE(DecodeImage(jpeg, 3, &whole).ok());
      const int column_starts = (rows->mcus_per_row() + kStride - 1) / kStride;
      for (int round = 0; round < 16; ++round) {
        // Round 0: the whole image; round 1: its last row and column.
        int first_row = 0, end_row = rows->mcu_rows(), first_mcu = 0;
        int end_mcu = rows->mcus_per_row();
        if (round == 1) {
          first_row = rows->mcu_rows() - 1;
          first_mcu = (column_starts - 1) * kStride;
        } else if (round > 1) {
          first_row = below(rows->mcu_rows());
          end_row = first_row + 1 + below(rows->mcu_rows() - first_row);
          first_mcu = below(column_starts) * kStride;
          end_mcu = std::min(rows->mcus_per_row(),
                             first_mcu + kStride * (1 + below(column_starts)));
        }
        INFO("sampling " << sampling.h << "x" << sampling.v
                         << (sampling.gray ? " gray" : "")
                         << (optimize ? ", fitted tables" : ", standard tables")
                         << ", " << height << "x" << width << ": rows "
                         << first_row << "-" << end_row << ", MCUs "
                         << first_mcu << "-" << end_mcu);
        std::vector<uint8_t> data;
        int stand_ins = 0;
        if (!rows->Columns(jpeg, starts, first_row, end_row, first_mcu, end_mcu,
                           &data, &stand_ins)) {
          // Only tables fitted to an image may lack the codes even 8
          // stand-in MCUs need.
          REQUIRE(optimize);
          ++refused;
          continue;
        }
        ++made;
        if (stand_ins > 1) ++wider;
        REQUIRE(!(stand_ins > 1 && !optimize));
        Sample part;
        REQUIRE(DecodeImage(data, 3, &part).ok());
        const bool last_row = end_row == rows->mcu_rows();
        const bool last_column = end_mcu == rows->mcus_per_row();
        const int64_t top = first_row * mh, left = first_mcu * mw;
        const int64_t lead = stand_ins * mw;  // the stand-ins' columns
        REQUIRE(part.shape[0] ==
                (last_row ? height - top : (end_row - first_row) * mh));
        REQUIRE(part.shape[1] ==
                lead +
                    (last_column ? width - left : (end_mcu - first_mcu) * mw));
        int64_t wrong = 0;
        for (int64_t y = first_row > 0 ? 1 : 0;
             y < part.shape[0] - (last_row ? 0 : 1); ++y) {
          for (int64_t x = lead + 1; x < part.shape[1] - (last_column ? 0 : 1);
               ++x) {
            for (int k = 0; k < 3; ++k) {
              wrong +=
                  At(part, y, x, k) != At(whole, top + y, left + x - lead, k);
            }
          }
        }
        REQUIRE(wrong == 0);
      }
    }
  }
  // Standard tables code every difference a DC predictor can need in one
  // block; fitted ones here needed 1-8 stand-in MCUs.
  INFO("blocks made " << made << " (" << wider
                      << " with more than one stand-in MCU a row), refused "
                      << refused);
  CHECK(made > 80);
}

TEST_CASE("a scan finds the same starts whatever was scanned before") {
  // Scans keep the decoders of recent tables (per thread, a few): files
  // with tables fitted to each image, scanned in turns and in an order
  // that reuses some tables while others are built, find what a first
  // scan of each found.
  const uint64_t seed = testing::TestSeed("scans in turn");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  std::mt19937_64 gen(seed);
  std::vector<Bytes> jpegs;
  std::vector<std::vector<JpegMcuStart>> first;
  for (int i = 0; i < 7; ++i) {
    jpegs.push_back(SampledJpeg(gen(), 40 + i * 8, 56, 2, 2, false, false,
                                /*optimize_coding=*/true));
    std::optional<JpegRows> rows = JpegRows::Parse(jpegs.back());
    REQUIRE(rows.has_value());
    first.emplace_back();
    REQUIRE(rows->Scan(jpegs.back(), &first.back()));
  }
  for (int round = 0; round < 40; ++round) {
    const size_t i = gen() % jpegs.size();
    INFO("round " << round << ", file " << i);
    std::vector<JpegMcuStart> again;
    REQUIRE(JpegRows::Parse(jpegs[i])->Scan(jpegs[i], &again));
    REQUIRE(again.size() == first[i].size());
    for (size_t k = 0; k < again.size(); ++k) {
      REQUIRE(again[k].byte == first[i][k].byte);
      REQUIRE(again[k].bit == first[i][k].bit);
      REQUIRE(std::equal(again[k].pred, again[k].pred + 3, first[i][k].pred));
    }
  }
}

TEST_CASE("windows of clean files start at their MCUs; others as before") {
  // The first window of a file reads it whole to its end, and then where
  // its MCUs begin (CleanJpegs); later windows of it decode their MCUs
  // alone (their rows from the left edge, or their block of columns),
  // with the same pixels. Files JpegRows does not follow (progressive,
  // restart markers) never do, and still decode exactly; a file cut short
  // has no starts.
  const uint64_t seed = testing::TestSeed("windows from rows");
  std::mt19937_64 gen(seed);
  const Bytes baseline = SampledJpeg(gen(), 200, 150, 2, 2, false, false);
  const Bytes progressive = SampledJpeg(gen(), 200, 150, 2, 2, true, false);
  const Bytes restarts = SampledJpeg(gen(), 200, 150, 2, 2, false, false, false,
                                     /*restart_rows=*/1);
  CHECK(JpegRows::Parse(baseline).has_value());
  CHECK_FALSE(JpegRows::Parse(progressive).has_value());
  CHECK_FALSE(JpegRows::Parse(restarts).has_value());
  CHECK_FALSE(JpegRows::Parse(PhotoPng(seed, 20, 20)).has_value());
  CHECK_FALSE(JpegRows::Parse(Bytes(baseline.begin(), baseline.begin() + 100))
                  .has_value());
  {
    const Bytes cut(baseline.begin(), baseline.begin() + baseline.size() / 2);
    std::optional<JpegRows> rows = JpegRows::Parse(cut);
    REQUIRE(rows.has_value());
    std::vector<JpegMcuStart> starts;
    CHECK_FALSE(rows->Scan(cut, &starts));
    CHECK(starts.empty());
  }
  for (const Bytes* jpeg : {&baseline, &progressive, &restarts}) {
    const uint64_t key = CleanJpegs::Key(*jpeg);
    Sample whole;
    REQUIRE(DecodeImage(*jpeg, 3, &whole).ok());
    for (int round = 0; round < 6; ++round) {
      DecodeOptions options;
      options.y = 40 + 25 * round;
      options.h = 200 - options.y - 5 * round;
      options.x = 3 * round;
      options.w = 60;
      Sample part;
      DecodedRegion region;
      REQUIRE(DecodeImage(*jpeg, options, &part, &region).ok());
      INFO("window at row " << options.y << ", round " << round);
      CHECK(WrongInWindow(part, region, whole, options.y, options.x, options.h,
                          options.w) == 0);
    }
    CHECK(CleanJpegs::Get().Contains(key));
    // 13 rows of 10 MCUs (16 x 16 pixels), a start kept at MCUs 0, 4
    // and 8 of each, and the end of the data.
    CleanJpegs::Starts starts;
    REQUIRE(CleanJpegs::Get().Find(key, &starts));
    if (jpeg == &baseline) {
      REQUIRE(starts != nullptr);
      CHECK(starts->size() == 13 * 3 + 1);
    } else {
      CHECK(starts == nullptr);
    }
  }
}

// `jpeg` with an EXIF block stating `orientation` (APP1 right after SOI:
// "Exif\0\0", a little-endian TIFF header, one IFD with tag 0x0112).
Bytes WithOrientation(const Bytes& jpeg, int orientation) {
  const uint8_t exif[] = {'E',
                          'x',
                          'i',
                          'f',
                          0,
                          0,  // the EXIF header
                          'I',
                          'I',
                          42,
                          0,
                          8,
                          0,
                          0,
                          0,  // TIFF, IFD0 at 8
                          1,
                          0,  // one entry
                          0x12,
                          0x01,
                          3,
                          0,
                          1,
                          0,
                          0,
                          0,  // orientation, SHORT x1
                          static_cast<uint8_t>(orientation),
                          0,
                          0,
                          0,  // its value
                          0,
                          0,
                          0,
                          0};  // no next IFD
  const uint16_t length = sizeof(exif) + 2;
  Bytes out(jpeg.begin(), jpeg.begin() + 2);  // SOI
  out.push_back(0xFF);
  out.push_back(0xE1);
  out.push_back(static_cast<uint8_t>(length >> 8));
  out.push_back(static_cast<uint8_t>(length & 0xFF));
  out.insert(out.end(), exif, exif + sizeof(exif));
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

// The stored image turned upright by EXIF's rule for `orientation`.
Sample Upright(const Sample& stored, int orientation) {
  const int64_t h = stored.shape[0], w = stored.shape[1], c = stored.shape[2];
  const bool swap = orientation >= 5;
  const int64_t uh = swap ? w : h, uw = swap ? h : w;
  Sample out;
  const int64_t shape[] = {uh, uw, c};
  out.Reshape(DT_UINT8, shape);
  for (int64_t u = 0; u < uh; ++u) {
    for (int64_t v = 0; v < uw; ++v) {
      int64_t r = u, col = v;  // orientation 1
      switch (orientation) {
        case 2:
          col = w - 1 - v;
          break;
        case 3:
          r = h - 1 - u, col = w - 1 - v;
          break;
        case 4:
          r = h - 1 - u;
          break;
        case 5:
          r = v, col = u;
          break;
        case 6:
          r = h - 1 - v, col = u;
          break;
        case 7:
          r = h - 1 - v, col = w - 1 - u;
          break;
        case 8:
          r = v, col = w - 1 - u;
          break;
      }
      for (int64_t k = 0; k < c; ++k) {
        out.storage[(u * uw + v) * c + k] =
            stored.storage[(r * w + col) * c + k];
      }
    }
  }
  return out;
}

TEST_CASE("an EXIF orientation turns the image upright, windows and all") {
  const Bytes plain = PhotoJpeg(5, 75, 120);
  const Sample stored = Decode(plain);
  for (int orientation = 1; orientation <= 8; ++orientation) {
    INFO("orientation " << orientation);
    const Bytes jpeg = WithOrientation(plain, orientation);
    auto header = ReadImageHeader(jpeg, /*read_orientation=*/true);
    REQUIRE(header.ok());
    CHECK(header->orientation == orientation);
    CHECK(ReadImageHeader(jpeg)->orientation == 1);  // not asked
    const Sample want = Upright(stored, orientation);
    CHECK(header->upright_height() == want.shape[0]);
    CHECK(header->upright_width() == want.shape[1]);
    // Not asked: the file as stored.
    CHECK(Compare(Decode(jpeg), stored).max == 0);
    DecodeOptions options;
    options.adjust_orientation = true;
    Sample whole;
    REQUIRE(DecodeImage(jpeg, options, &whole).ok());
    CHECK(Compare(whole, want).max == 0);
    // Windows of the upright image: its pixels exactly, where the region
    // says they are.
    using Window = std::tuple<int64_t, int64_t, int64_t, int64_t>;
    for (const auto& [y, x, h, w] :
         {Window{0, 0, 10, 10}, Window{17, 33, 40, 21},
          Window{want.shape[0] - 9, want.shape[1] - 7, 9, 7}}) {
      INFO("window " << h << "x" << w << " at (" << y << ", " << x << ")");
      options.y = y, options.x = x, options.h = h, options.w = w;
      Sample part;
      DecodedRegion region;
      REQUIRE(DecodeImage(jpeg, options, &part, &region).ok());
      CHECK(region.full_height == want.shape[0]);
      CHECK(region.full_width == want.shape[1]);
      REQUIRE(region.y <= y);
      REQUIRE(region.x <= x);
      REQUIRE(region.y + part.shape[0] >= y + h);
      REQUIRE(region.x + part.shape[1] >= x + w);
      int64_t wrong = 0;
      for (int64_t r = y; r < y + h; ++r) {
        for (int64_t c = x; c < x + w; ++c) {
          for (int k = 0; k < 3; ++k) {
            wrong +=
                At(part, r - region.y, c - region.x, k) != At(want, r, c, k);
          }
        }
      }
      CHECK(wrong == 0);
    }
    // At half scale: the upright half-scale image.
    DecodeOptions half;
    half.scale_eighths = 4;
    Sample stored_half, upright_half;
    REQUIRE(DecodeImage(plain, half, &stored_half).ok());
    half.adjust_orientation = true;
    REQUIRE(DecodeImage(jpeg, half, &upright_half).ok());
    CHECK(Compare(upright_half, Upright(stored_half, orientation)).max == 0);
  }
}

TEST_CASE("decode_random_crop without a resize is decode then crop, exactly") {
  const uint64_t seed = testing::TestSeed("decode_crop");
  INFO("seed " << seed);
  for (int i = 0; i < 6; ++i) {
    const Bytes jpeg = PhotoJpeg(seed + i, 300 + 17 * i, 260 + 31 * i);
    const Bytes png = PhotoPng(seed + i, 240, 230);
    for (const Bytes* file : {&jpeg, &png}) {
      for (bool random : {true, false}) {
        const Sample want = Unfused(*file, 0, 224, random, seed + i);
        const Sample got = Fused(*file, 0, 224, random, seed + i);
        CHECK(got.shape == want.shape);
        CHECK(got.storage == want.storage);
      }
    }
  }
}

TEST_CASE("decode_random_crop after a resize: the unfused chain's window") {
  // At full scale (the target needs more than half the image) the fused
  // step reads the same source pixels through the same arithmetic: equal.
  // Where a JPEG is decoded at 1/2 (or less) in the DCT domain, its pixels
  // differ from a bilinear resize of the whole decode by that scaling's
  // filtering (the DCT scaling averages each 2 x 2 area; the bilinear
  // resize of the whole samples it): stated bounds, mean absolute difference
  // 4.0 and any one value 48 (of 255), on photo-like images with fine grain
  // (measured: 2.7-3.3 and 17-21). PNG is never scaled.
  const uint64_t seed = testing::TestSeed("decode_resize_crop");
  INFO("seed " << seed);
  for (int i = 0; i < 4; ++i) {
    const Bytes jpeg375 = PhotoJpeg(seed + i, 375, 500);   // scale 8/8
    const Bytes jpeg750 = PhotoJpeg(seed + i, 750, 1000);  // scale 4/8
    const Bytes png = PhotoPng(seed + i, 375, 500);
    for (bool antialias : {false, true}) {
      INFO("antialias " << antialias);
      const Sample want = Unfused(jpeg375, 256, 224, true, seed + i, antialias);
      const Sample got = Fused(jpeg375, 256, 224, true, seed + i, antialias);
      CHECK(got.storage == want.storage);
      const Sample want_png = Unfused(png, 256, 224, true, seed + i);
      const Sample got_png = Fused(png, 256, 224, true, seed + i);
      CHECK(got_png.storage == want_png.storage);
    }
    const Sample want = Unfused(jpeg750, 256, 224, true, seed + i);
    const Sample got = Fused(jpeg750, 256, 224, true, seed + i);
    const Difference d = Compare(got, want);
    INFO("image " << i << ": mean difference " << d.mean << ", max " << d.max);
    CHECK(d.mean <= 4.0);
    CHECK(d.max <= 48);
  }
  CHECK(DctScaleFor(750, 1000, 256, 341) == 4);
  CHECK(DctScaleFor(375, 500, 256, 341) == 8);
  CHECK(DctScaleFor(2000, 3000, 100, 150) == 1);
}

TEST_CASE(
    "decode_random_resized_crop is decode, random_resized_crop, exactly") {
  // The fused step decodes only the window's rows and columns; its pixels,
  // and those of the window resized, are the unfused chain's.
  const uint64_t seed = testing::TestSeed("decode_area_crop");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  const std::map<std::string, AttrValue> area = {
      {"random_area", FloatListAttr({0.1f, 1.0f})},
      {"random_aspect_ratio", FloatListAttr({0.8f, 1.25f})},
      {"num_attempts", IntAttr(100)}};
  for (int i = 0; i < 4; ++i) {
    const Bytes jpeg = PhotoJpeg(seed + i, 375, 500);
    const Bytes png = PhotoPng(seed + i, 200, 260);
    for (const Bytes* file : {&jpeg, &png}) {
      const int64_t size = static_cast<int64_t>(file->size());
      for (int64_t target : {0, 224, -224}) {  // -224: antialiased
        std::map<std::string, AttrValue> attrs = area;
        if (target != 0) attrs["size"] = IntListAttr({224, 224});
        attrs["antialias"] = BoolAttr(target < 0);
        for (uint64_t position = 0; position < 8; ++position) {
          Sample decoded, want, got;
          SampleRng unused(7, 0, 0, position);
          REQUIRE(MakeOp("decode", {})
                      ->Apply(BytesRef(*file, &size), &unused, &decoded)
                      .ok());
          SampleRng crop_rng(7, 1, 0, position), fused_rng(7, 1, 0, position);
          REQUIRE(MakeOp("random_resized_crop", attrs)
                      ->Apply(decoded.ref(), &crop_rng, &want)
                      .ok());
          const absl::Status ok =
              MakeOp("decode_random_resized_crop", attrs)
                  ->Apply(BytesRef(*file, &size), &fused_rng, &got);
          INFO(ok.ToString());
          REQUIRE(ok.ok());
          CHECK(got.shape == want.shape);
          CHECK(got.storage == want.storage);
          if (target != 0) CHECK(got.shape == SampleShape{224, 224, 3});
        }
      }
    }
  }
}

TEST_CASE("decode_resize decodes at a reduced scale within the same bounds") {
  const Bytes jpeg = PhotoJpeg(11, 800, 600);
  auto fused = MakeOp("decode_resize", {{"shorter", IntAttr(200)}});
  const int64_t size = static_cast<int64_t>(jpeg.size());
  Sample got, decoded, want;
  SampleRng rng(1, 0, 0, 0);
  REQUIRE(fused->Apply(BytesRef(jpeg, &size), &rng, &got).ok());
  decoded = Decode(jpeg);
  REQUIRE(Resize(decoded.ref(), 267, 200, &want).ok());
  CHECK(got.shape == SampleShape{267, 200, 3});
  const Difference d = Compare(got, want);
  INFO("mean difference " << d.mean << ", max " << d.max);
  CHECK(d.mean <= 4.0);
  CHECK(d.max <= 48);
}

// The JPEG's frame header (SOF0..SOF2) rewritten to claim height x width.
Bytes ClaimJpegSize(Bytes jpeg, int height, int width) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] >= 0xC0 && jpeg[i + 1] <= 0xC2) {
      jpeg[i + 5] = static_cast<uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<uint8_t>(height);
      jpeg[i + 7] = static_cast<uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<uint8_t>(width);
      return jpeg;
    }
  }
  FAIL("no frame header");
  return jpeg;
}

// The PNG's IHDR rewritten to claim height x width, its CRC made right.
Bytes ClaimPngSize(Bytes png, uint32_t height, uint32_t width) {
  auto put = [&](size_t at, uint32_t v) {
    for (int b = 0; b < 4; ++b)
      png[at + b] = static_cast<uint8_t>(v >> (24 - 8 * b));
  };
  put(16, width);
  put(20, height);
  put(29, static_cast<uint32_t>(crc32(0, png.data() + 12, 17)));
  return png;
}

// Peak resident memory since the last reset, in MiB; -1 where the kernel
// does not let a process reset its peak (/proc/self/clear_refs).
int64_t ResetPeak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.close();
  return clear ? 0 : -1;
}
int64_t PeakMiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t kib = 0;
  while (status >> key) {
    if (key == "VmHWM:") {
      status >> kib;
      return kib / 1024;
    }
  }
  return -1;
}
// Under AddressSanitizer freed memory sits in a quarantine (256 MiB by
// default) and every allocation has shadow memory, so resident memory
// there says little about what a decode needs: the bound is looser, still
// far below the gigabytes a header's claim would have cost.
extern "C" void __asan_init() __attribute__((weak));
extern "C" void __tsan_init() __attribute__((weak));
int64_t PeakBoundMiB() {
  return (&__asan_init != nullptr || &__tsan_init != nullptr) ? 768 : 64;
}

int64_t NowMiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t kib = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> kib;
      return kib / 1024;
    }
  }
  return -1;
}

TEST_CASE("resize with DALI's attrs: each sample's own size, or one size") {
  Sample image;
  image.Reshape(DT_UINT8, {30, 40, 3});
  for (size_t i = 0; i < image.storage.size(); ++i) {
    image.storage[i] = static_cast<uint8_t>(i * 7);
  }
  SampleRng rng(1, 2, 3, 4);
  Sample out;
  auto shape_after = [&](const std::map<std::string, AttrValue>& attrs) {
    REQUIRE(MakeOp("resize", attrs)->Apply(image.ref(), &rng, &out).ok());
    return std::vector<int64_t>(out.shape.begin(), out.shape.end());
  };
  using V = std::vector<int64_t>;
  CHECK(shape_after({{"resize_x", FloatAttr(20)}}) == V{15, 20, 3});
  CHECK(shape_after({{"resize_x", FloatAttr(20)},
                     {"mode", StringAttr("stretch")}}) == V{30, 20, 3});
  CHECK(shape_after({{"longer", IntAttr(20)}}) == V{15, 20, 3});
  CHECK(shape_after({{"shorter", IntAttr(60)},
                     {"max_size", FloatListAttr({70})}}) == V{53, 70, 3});
  CHECK(shape_after({{"resize_x", FloatAttr(10)},
                     {"resize_y", FloatAttr(10)},
                     {"mode", StringAttr("not_smaller")}}) == V{10, 13, 3});
  // The bound: one size when both sides are asked for and only limited.
  SampleSpec in{DT_UINT8, {-1, -1, 3}};
  auto spec = MakeOp("resize", {{"resize_x", FloatAttr(20)},
                                {"resize_y", FloatAttr(50)},
                                {"max_size", FloatListAttr({40, 0})}})
                  ->Infer(in);
  REQUIRE(spec.ok());
  CHECK(spec->max_shape == V{40, 20, 3});
  spec = MakeOp("resize", {{"resize_x", FloatAttr(20)}})->Infer(in);
  REQUIRE(spec.ok());
  CHECK(spec->max_shape == V{-1, -1, 3});
  // Errors name the attribute.
  auto init_error = [](const std::map<std::string, AttrValue>& attrs) {
    auto op = MakeSampleOp("resize");
    REQUIRE(op.ok());
    TaskProto task = KernelTask("pipeline.resize", attrs);
    KernelInitContext ctx = MakeInitContext(task, {}, {});
    return std::string((*op)->Init(ctx).message());
  };
  CHECK_THAT(init_error({}), Catch::Contains("give exactly one of"));
  CHECK_THAT(init_error({{"shorter", IntAttr(5)}, {"longer", IntAttr(5)}}),
             Catch::Contains("give exactly one of"));
  CHECK_THAT(init_error({{"resize_x", FloatAttr(-3)}}),
             Catch::Contains("attr 'resize_x': a side's length must stay "
                             "above 0 (given -3)"));
  CHECK_THAT(init_error({{"shorter_coin_flip", FloatAttr(0.5)}}),
             Catch::Contains("attr 'shorter': a side's length must stay "
                             "above 0 (drawn, its lowest is 0)"));
  CHECK_THAT(
      init_error({{"shorter", IntAttr(5)}, {"mode", StringAttr("stretch")}}),
      Catch::Contains("attr 'mode': not with 'shorter'"));
  CHECK_THAT(
      init_error({{"resize_x", FloatAttr(5)}, {"mode", StringAttr("fit")}}),
      Catch::Contains("attr 'mode': \"default\""));
  CHECK_THAT(init_error({{"resize_x", FloatAttr(5)},
                         {"max_size", FloatListAttr({1, 2, 3})}}),
             Catch::Contains("attr 'max_size'"));
}

TEST_CASE("resize sides drawn per sample: each sample its own draw") {
  Sample image;
  image.Reshape(DT_UINT8, {30, 40, 3});
  for (size_t i = 0; i < image.storage.size(); ++i) {
    image.storage[i] = static_cast<uint8_t>(i * 5);
  }
  auto shorter = MakeOp("resize", {{"shorter_uniform", FloatListAttr({8, 24})},
                                   {"shorter_stream", IntAttr(7)}});
  // The same value given to resize_x (one stream): the same draw.
  auto wide = MakeOp("resize", {{"resize_x_uniform", FloatListAttr({8, 24})},
                                {"resize_x_stream", IntAttr(7)},
                                {"resize_y", FloatAttr(12)}});
  REQUIRE(shorter->Infer(SampleSpec{DT_UINT8, {30, 40, 3}})->max_shape ==
          std::vector<int64_t>{-1, -1, 3});
  std::set<int64_t> seen;
  for (uint64_t position = 0; position < 20; ++position) {
    SampleRng rng(9, 1, 0, position), rng2(9, 2, 0, position);
    Sample a, b, want;
    REQUIRE(shorter->Apply(image.ref(), &rng, &a).ok());
    REQUIRE(wide->Apply(image.ref(), &rng2, &b).ok());
    const int64_t side = a.shape[0];  // the shorter of 30 x 40
    INFO("position " << position << ": " << a.shape[0] << "x" << a.shape[1]);
    CHECK(side >= 8);
    CHECK(side <= 24);
    CHECK(b.shape[1] == side);
    CHECK(b.shape[0] == 12);
    // Pixel for pixel the resize to that size.
    REQUIRE(Resize(image.ref(), a.shape[0], a.shape[1], &want).ok());
    CHECK(a.storage == want.storage);
    seen.insert(side);
  }
  CHECK(seen.size() > 5);
}

TEST_CASE("a header that claims 60000 x 60000 is refused before allocating") {
  const Bytes jpeg = ClaimJpegSize(PhotoJpeg(5, 120, 160), 60000, 60000);
  const Bytes png = ClaimPngSize(PhotoPng(5, 120, 160), 60000, 60000);
  const bool peak_known = ResetPeak() == 0;
  const int64_t before = NowMiB();
  for (const Bytes* file : {&jpeg, &png}) {
    Sample out;
    absl::Status status = DecodeImage(*file, 3, &out);
    INFO(status.ToString());
    CHECK(absl::IsResourceExhausted(status));
    CHECK(absl::StrContains(status.message(),
                            "the header claims 60000 x 60000 = 3600000000 "
                            "pixels, above max_pixels 67108864"));
    CHECK(out.storage.capacity() == 0);
    // The fused decoders refuse it the same way.
    const int64_t size = static_cast<int64_t>(file->size());
    auto fused = MakeOp(
        "decode_random_crop",
        {{"size", IntListAttr({224, 224})}, {"resize_shorter", IntAttr(256)}});
    SampleRng rng(1, 2, 0, 0);
    status = fused->Apply(BytesRef(*file, &size), &rng, &out);
    CHECK(absl::IsResourceExhausted(status));
    CHECK(fused->skippable());
  }
  if (peak_known) {
    INFO("resident before " << before << " MiB, peak " << PeakMiB() << " MiB");
    CHECK(PeakMiB() - before < PeakBoundMiB());
  } else {
    WARN("this kernel does not reset the peak RSS; memory bound unchecked");
  }
  // A limit of its own, and none.
  const Bytes real = PhotoJpeg(6, 375, 500);
  DecodeOptions small;
  small.max_pixels = 1000;
  Sample out;
  CHECK(absl::IsResourceExhausted(DecodeImage(real, small, &out)));
  small.max_pixels = 0;
  CHECK(DecodeImage(real, small, &out).ok());
  CHECK(out.shape == SampleShape{375, 500, 3});
}

TEST_CASE("a damaged JPEG fails whatever window is decoded") {
  // Damage near the end of the data is found only by decoding to the end:
  // a window at the top must find it as the whole image does.
  const uint64_t seed = testing::TestSeed("damage_any_window");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  std::mt19937_64 rng(seed);
  const Bytes jpeg = PhotoJpeg(seed, 375, 500);
  REQUIRE(jpeg.size() > 1000);
  REQUIRE(jpeg[jpeg.size() - 2] == 0xFF);
  REQUIRE(jpeg.back() == 0xD9);
  std::vector<std::pair<std::string, Bytes>> damaged;
  Bytes extraneous = jpeg;
  extraneous.insert(extraneous.end() - 2, 509, 0x5A);
  damaged.emplace_back("509 bytes before the end marker", extraneous);
  damaged.emplace_back("cut 1 % short",
                       Bytes(jpeg.begin(), jpeg.end() - jpeg.size() / 100));
  for (int i = 0; i < 40; ++i) {
    Bytes flipped = jpeg;
    // In the last tenth of the file: the bottom rows' data.
    const size_t at = jpeg.size() - 3 - rng() % (jpeg.size() / 10);
    flipped[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    damaged.emplace_back("bit flip at " + std::to_string(at), flipped);
  }
  int failed = 0;
  for (const auto& [what, file] : damaged) {
    INFO(what);
    Sample whole;
    const absl::Status verdict = DecodeImage(file, 3, &whole);
    for (int64_t y : {0, 64, 150, 250}) {
      DecodeOptions options;
      options.y = y;
      options.x = 100;
      options.h = 64;
      options.w = 64;
      Sample part;
      const absl::Status windowed = DecodeImage(file, options, &part);
      INFO("window at row " << y << ": " << windowed.ToString()
                            << "; whole: " << verdict.ToString());
      CHECK(windowed.ok() == verdict.ok());
    }
    failed += !verdict.ok();
  }
  Sample out;
  CHECK_FALSE(DecodeImage(extraneous, 3, &out).ok());
  CHECK(failed >= 2);
}

TEST_CASE("a file read clean to its end is not read past a window again") {
  // CleanJpegs: the first window of a file reads its data to the end; once
  // that found no damage, later windows stop after their last row, with the
  // same pixels. A damaged file is never taken for clean: every window of
  // it reads to the end again, and fails.
  const uint64_t seed = testing::TestSeed("clean jpegs");
  const Bytes jpeg = PhotoJpeg(seed, 375, 500);
  Bytes damaged = jpeg;
  damaged.insert(damaged.end() - 2, 509, 0x5A);  // found only at the end
  DecodeOptions options;
  options.y = 40;
  options.x = 100;
  options.h = 64;
  options.w = 64;
  CleanJpegs& clean = CleanJpegs::Get();
  CHECK_FALSE(clean.Contains(CleanJpegs::Key(jpeg)));
  Sample first, again;
  DecodedRegion first_region, again_region;
  REQUIRE(DecodeImage(jpeg, options, &first, &first_region).ok());
  CHECK(clean.Contains(CleanJpegs::Key(jpeg)));
  REQUIRE(DecodeImage(jpeg, options, &again, &again_region).ok());
  CHECK(again.shape == first.shape);
  CHECK(again.storage == first.storage);
  CHECK((again_region.y == first_region.y && again_region.x == first_region.x));
  for (int round = 0; round < 2; ++round) {
    Sample part;
    CHECK_FALSE(DecodeImage(damaged, options, &part).ok());
    CHECK_FALSE(clean.Contains(CleanJpegs::Key(damaged)));
  }
}

TEST_CASE("damaged files fail fast and small, or decode; never crash") {
  // Bit flips, truncations, bad PNG chunks, empty and garbage files: each
  // is an error with a message, or (a flip in the pixels' entropy-coded
  // data can leave a valid file) an image no larger than the header says.
  const uint64_t seed = testing::TestSeed("damaged_images");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  std::mt19937_64 rng(seed);
  const Bytes jpeg = PhotoJpeg(seed, 150, 200);
  const Bytes png = PhotoPng(seed, 150, 200);
  const bool peak_known = ResetPeak() == 0;
  const int64_t before = NowMiB();
  int errors = 0, decoded = 0;
  auto check = [&](const Bytes& file, const std::string& what) {
    Sample out;
    absl::Status status = DecodeImage(file, 3, &out);
    INFO(what << ": " << status.ToString());
    if (status.ok()) {
      ++decoded;
      CHECK(out.shape.size() == 3);
      CHECK(out.shape[0] * out.shape[1] <= kDefaultMaxPixels);
    } else {
      ++errors;
      CHECK(!status.message().empty());
    }
  };
  for (const Bytes* file : {&jpeg, &png}) {
    const std::string kind = file == &jpeg ? "jpeg" : "png";
    for (int i = 0; i < 150; ++i) {
      Bytes flipped = *file;
      const size_t at = rng() % flipped.size();
      flipped[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      check(flipped, kind + " bit flip at " + std::to_string(at));
    }
    for (int i = 0; i < 60; ++i) {
      const size_t keep = rng() % file->size();
      check(Bytes(file->begin(), file->begin() + keep),
            kind + " truncated to " + std::to_string(keep));
    }
  }
  // A PNG chunk whose CRC is wrong, and a JPEG marker segment cut short.
  Bytes bad_crc = png;
  bad_crc[30] ^= 0xFF;
  check(bad_crc, "png with a bad IHDR CRC");
  check(Bytes(), "empty");
  check(Bytes(5000, 0xFF), "0xFF bytes");
  Bytes garbage(5000);
  for (uint8_t& b : garbage) b = static_cast<uint8_t>(rng());
  garbage[0] = 0xFF;
  garbage[1] = 0xD8;
  garbage[2] = 0xFF;
  check(garbage, "garbage after a JPEG signature");
  CHECK(errors > 100);
  if (peak_known) {
    INFO("resident before " << before << " MiB, peak " << PeakMiB() << " MiB");
    CHECK(PeakMiB() - before < PeakBoundMiB());
  }
}

}  // namespace
}  // namespace actorflow::internal::pipeline
