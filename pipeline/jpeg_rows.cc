#include "pipeline/jpeg_rows.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <memory>

#include "absl/base/attributes.h"

namespace actorflow::internal::pipeline {
namespace {

// Walks a DHT table's canonical codes (shortest first, each length's codes
// consecutive): f(length, code, index) for each symbol in order. False if
// the counts overrun the code space or the symbols (a table no encoder
// makes; libjpeg refuses it too).
template <typename F>
bool ForEachCode(const uint8_t counts[17], size_t symbols, F&& f) {
  int code = 0, k = 0;
  for (int len = 1; len <= 16; ++len) {
    for (int i = 0; i < counts[len]; ++i, ++k, ++code) {
      if (code >= (1 << len) || k >= static_cast<int>(symbols)) return false;
      f(len, code, k);
    }
    code <<= 1;
  }
  return true;
}

// Decodes one DHT table's codes: a 12-bit table for the short codes (most
// symbols) and the canonical bounds per length for the rest.
class HuffmanDecoder {
 public:
  bool Build(const uint8_t counts[17], const std::vector<uint8_t>& symbols) {
    symbols_ = &symbols;
    fast_.fill(0);
    std::fill(std::begin(maxcode_), std::end(maxcode_), -1);
    return ForEachCode(counts, symbols.size(), [&](int len, int code, int k) {
      maxcode_[len] = code;
      valoffset_[len] = k - code;
      if (len <= kFastBits) {
        const int shift = kFastBits - len;
        for (int j = 0; j < (1 << shift); ++j) {
          fast_[(code << shift) | j] =
              static_cast<uint16_t>((len << 8) | symbols[k]);
        }
      }
    });
  }

  // For an AC table: what the coefficients whose codes begin within the
  // next kFastBits bits do (each: its code and its value's bits, and how
  // far it moves in the block: its run and itself, 16 for a run of 16
  // zeros, 64 for the block's end), in one look. Reading several codes at
  // once breaks the chain of look, shift, look that bounds a scan's speed.
  // Packed: the bits and the advance of the first code, of all of them,
  // and the advance of all but the last (the block may end before it).
  void BuildSkips() {
    constexpr uint32_t kWindow = (1u << kFastBits) - 1;
    for (uint32_t i = 0; i <= kWindow; ++i) {
      int used = 0, advance = 0, before_last = 0, count = 0;
      int first_bits = 0, first_advance = 0;
      while (used < kFastBits && advance < 64) {
        const uint16_t entry = fast_[(i << used) & kWindow];
        const int length = entry >> 8;
        if (entry == 0 || used + length > kFastBits) break;
        const int run = (entry >> 4) & 15, size = entry & 15;
        const int moves = size != 0 ? run + 1 : (run == 15 ? 16 : 64);
        before_last = advance;
        used += length + size;
        advance += moves;
        if (++count == 1) {
          first_bits = used;
          first_advance = moves;
        }
      }
      skip_[i] = count == 0
                     ? 0
                     : static_cast<uint32_t>(first_bits | (first_advance << 5) |
                                             (used << 12) | (advance << 17) |
                                             (before_last << 24));
    }
  }
  // Skips the coefficients of a block from index k on as far as one look
  // goes; returns the index reached (64 or more: the block ended), or -1
  // for a code no table has.
  template <typename Reader>
  int SkipCoefficients(Reader* bits, int k) const {
    const uint32_t entry = skip_[bits->Peek(kFastBits)];
    if (entry != 0) {
      if (k + static_cast<int>(entry >> 24) < 64) {
        bits->Skip((entry >> 12) & 31);
        return k + static_cast<int>((entry >> 17) & 127);
      }
      bits->Skip(entry & 31);
      return k + static_cast<int>((entry >> 5) & 127);
    }
    const int rs = Decode(bits);
    if (rs < 0) return -1;
    const int run = rs >> 4, size = rs & 15;
    if (size != 0) {
      bits->Skip(size);
      return k + run + 1;
    }
    return k + (run == 15 ? 16 : 64);
  }

  template <typename Reader>
  int Decode(Reader* bits) const {
    const uint16_t entry = fast_[bits->Peek(kFastBits)];
    if (entry != 0) {
      bits->Skip(entry >> 8);
      return entry & 0xFF;
    }
    for (int len = kFastBits + 1; len <= 16; ++len) {
      const int code = static_cast<int>(bits->Peek(len));
      if (code <= maxcode_[len]) {
        bits->Skip(len);
        return (*symbols_)[valoffset_[len] + code];
      }
    }
    return -1;
  }

 private:
  static constexpr int kFastBits = 12;
  std::array<uint16_t, 1 << kFastBits> fast_;  // (length << 8) | symbol
  std::array<uint32_t, 1 << kFastBits> skip_;  // as BuildSkips packs it
  int maxcode_[17] = {0};
  int valoffset_[17] = {0};
  const std::vector<uint8_t>* symbols_ = nullptr;
};

// Reads entropy-coded bits, dropping the 0x00 after each 0xFF. Remembers
// where in the file each of the last bytes it loaded lies, so that the
// position of the next bit can be told in file offsets. A marker or the
// end of the data reads as zeros, as libjpeg reads them; OverRan says
// whether any such bit was used.
class BitReader {
 public:
  BitReader(absl::Span<const uint8_t> data, uint32_t byte, int bit)
      : data_(data), pos_(byte) {
    Fill();
    Skip(bit);
  }

  ABSL_ATTRIBUTE_ALWAYS_INLINE void Fill() {
    while (bits_ <= 56) {
      const auto at = static_cast<uint32_t>(pos_);
      uint8_t c = 0;
      if (pos_ < data_.size()) {
        c = data_[pos_];
        if (c != 0xFF) {
          ++pos_;
        } else if (pos_ + 1 < data_.size() && data_[pos_ + 1] == 0) {
          pos_ += 2;
        } else {
          c = 0;  // a marker: stays where it is
          MarkEnd();
        }
      } else {
        MarkEnd();
      }
      buffer_ |= uint64_t{c} << (56 - bits_);
      bits_ += 8;
      offsets_[loaded_ & 15] = at;
      ++loaded_;
    }
  }
  // Callers Fill while fewer than 32 bits are left: one code and its
  // extra bits need at most 32.
  bool Low() const { return bits_ < 32; }
  uint32_t Peek(int n) const {
    return static_cast<uint32_t>(buffer_ >> (64 - n));
  }
  void Skip(int n) {
    buffer_ <<= n;
    bits_ -= n;
  }
  uint32_t Take(int n) {
    const uint32_t v = Peek(n);
    Skip(n);
    return v;
  }
  bool OverRan() const { return Used() > end_ * 8; }
  // The next bit's byte in the file, and how many bits of it were used.
  // Right after a Fill, that byte is among the last 16 loaded.
  uint32_t byte() const { return offsets_[(Used() >> 3) & 15]; }
  int bit() const { return static_cast<int>(Used() & 7); }

 private:
  uint64_t Used() const { return loaded_ * 8 - static_cast<uint64_t>(bits_); }
  void MarkEnd() { end_ = std::min(end_, loaded_); }

  absl::Span<const uint8_t> data_;
  size_t pos_;
  uint64_t buffer_ = 0;  // the next bits_, from the top
  int bits_ = 0;
  uint64_t loaded_ = 0;
  uint64_t end_ = std::numeric_limits<uint64_t>::max();  // first padded byte
  uint32_t offsets_[16] = {0};
};

}  // namespace

// Writes entropy-coded bits, a 0x00 after each 0xFF byte; the last partial
// byte's bits stay pending.
class JpegBitWriter {
 public:
  explicit JpegBitWriter(std::vector<uint8_t>* out) : out_(out) {}
  // The low n bits of value (n up to 16), first the highest.
  void Put(uint32_t value, int n) {
    pending_ = (pending_ << n) | (value & ((1u << n) - 1));
    pending_bits_ += n;
    while (pending_bits_ >= 8) {
      pending_bits_ -= 8;
      const auto byte = static_cast<uint8_t>(pending_ >> pending_bits_);
      out_->push_back(byte);
      if (byte == 0xFF) out_->push_back(0);
    }
    pending_ &= (1u << pending_bits_) - 1;
  }
  // Bytes of entropy-coded data as they are (stuffed already), at a byte
  // boundary.
  void Append(absl::Span<const uint8_t> stuffed) {
    out_->insert(out_->end(), stuffed.begin(), stuffed.end());
  }
  // Completes the last byte with 1-bits, as an encoder ends a scan.
  void Finish() {
    if (pending_bits_ > 0) {
      Put((1u << (8 - pending_bits_)) - 1, 8 - pending_bits_);
    }
  }
  int pending_bits() const { return pending_bits_; }

 private:
  std::vector<uint8_t>* out_;
  uint32_t pending_ = 0;
  int pending_bits_ = 0;
};

namespace {

// A table's code for each symbol (length 0: none).
struct HuffmanCodes {
  uint16_t code[256] = {0};
  uint8_t length[256] = {0};
  bool Build(const uint8_t counts[17], const std::vector<uint8_t>& symbols) {
    return ForEachCode(counts, symbols.size(), [&](int len, int value, int k) {
      code[symbols[k]] = static_cast<uint16_t>(value);
      length[symbols[k]] = static_cast<uint8_t>(len);
    });
  }
};

int Category(int value) {
  int magnitude = std::abs(value), c = 0;
  while (magnitude > 0) {
    magnitude >>= 1;
    ++c;
  }
  return c;
}

int Extend(uint32_t bits, int size) {
  const int v = static_cast<int>(bits);
  return v < (1 << (size - 1)) ? v - (1 << size) + 1 : v;
}

// DC differences for `blocks` blocks, each of a category `dc` has a code
// for, that sum to `target`: the largest the table codes first, then
// zeros; or, for a table without a code for 0 (tables fitted to an image
// whose blocks all differ), pairs that cancel (+v, -v), with one triple
// (+v, +v, -2v) or one difference split in two where the count is odd.
bool StandInDiffs(const HuffmanCodes& dc, int target, int blocks,
                  std::vector<int>* diffs) {
  auto coded = [&](int value) {
    const int category = Category(value);
    return category <= 15 && dc.length[category] != 0;
  };
  int rest = target;
  while (rest != 0) {
    const int magnitude = std::abs(rest);
    int category = std::min(Category(magnitude), 15);
    while (category > 0 && dc.length[category] == 0) --category;
    if (category == 0 || static_cast<int>(diffs->size()) == blocks) {
      return false;
    }
    const int value = std::min(magnitude, (1 << category) - 1);
    diffs->push_back(rest > 0 ? value : -value);
    rest -= diffs->back();
  }
  if (dc.length[0] != 0) {
    diffs->resize(blocks, 0);
    return true;
  }
  int smallest = 1;
  while (smallest <= 15 && dc.length[smallest] == 0) ++smallest;
  if (smallest > 15) return false;
  const int v = 1 << (smallest - 1);
  int left = blocks - static_cast<int>(diffs->size());
  if (left % 2 != 0) {
    if (left >= 3 && coded(2 * v)) {
      diffs->insert(diffs->end(), {v, v, -2 * v});
      left -= 3;
    } else {
      // Split a difference d into v and d - v (or -v and d + v).
      bool split = false;
      for (int& d : *diffs) {
        const int part = d > 0 ? v : -v;
        if (d != part && coded(d - part)) {
          d -= part;
          diffs->push_back(part);
          split = true;
          break;
        }
      }
      if (!split || left < 1) return false;
      --left;
    }
  }
  if (left < 0) return false;
  for (; left > 0; left -= 2) diffs->insert(diffs->end(), {v, -v});
  return static_cast<int>(diffs->size()) == blocks;
}

uint16_t Be16(absl::Span<const uint8_t> e, size_t at) {
  return static_cast<uint16_t>((e[at] << 8) | e[at + 1]);
}

}  // namespace

std::optional<JpegRows> JpegRows::Parse(absl::Span<const uint8_t> e) {
  const size_t n = e.size();
  if (n < 4 || e[0] != 0xFF || e[1] != 0xD8) return std::nullopt;
  JpegRows rows;
  rows.kept_segments_.push_back({0, 2});
  struct FrameComponent {
    int id, h, v;
  };
  std::vector<FrameComponent> frame;
  size_t p = 2;
  while (true) {
    if (p + 1 >= n || e[p] != 0xFF) return std::nullopt;
    while (p < n && e[p] == 0xFF) ++p;  // fill bytes
    if (p + 2 >= n) return std::nullopt;
    const uint8_t marker = e[p];
    const size_t begin = p - 1;
    ++p;
    if (marker == 0x01) continue;  // TEM: no segment
    if (marker == 0xD8 || marker == 0xD9 ||
        (marker >= 0xD0 && marker <= 0xD7)) {
      return std::nullopt;
    }
    const size_t length = Be16(e, p);
    if (length < 2 || p + length > n) return std::nullopt;
    const absl::Span<const uint8_t> s = e.subspan(p + 2, length - 2);
    const size_t end = p + length;
    bool keep = false;
    switch (marker) {
      case 0xC0:    // baseline
      case 0xC1: {  // extended sequential, Huffman
        if (s.size() < 6 || s[0] != 8) return std::nullopt;
        rows.height_ = Be16(s, 1);
        rows.width_ = Be16(s, 3);
        const int count = s[5];
        if ((count != 1 && count != 3) || s.size() != 6u + 3u * count) {
          return std::nullopt;
        }
        for (int c = 0; c < count; ++c) {
          const int h = s[7 + 3 * c] >> 4, v = s[7 + 3 * c] & 15;
          if (h < 1 || h > 4 || v < 1 || v > 4) return std::nullopt;
          frame.push_back({s[6 + 3 * c], h, v});
        }
        rows.height_offset_ = static_cast<uint32_t>(p + 3);
        keep = true;
        break;
      }
      case 0xC4: {  // DHT
        size_t q = 0;
        while (q < s.size()) {
          const int kind = s[q] >> 4, id = s[q] & 15;
          if (kind > 1 || id > 3 || q + 17 > s.size()) return std::nullopt;
          HuffmanTable& table = kind == 0 ? rows.dc_[id] : rows.ac_[id];
          int total = 0;
          for (int len = 1; len <= 16; ++len) {
            table.counts[len] = s[q + len];
            total += s[q + len];
          }
          if (total > 256 || q + 17 + total > s.size()) return std::nullopt;
          table.symbols.assign(s.begin() + q + 17, s.begin() + q + 17 + total);
          table.defined = true;
          q += 17 + total;
        }
        keep = true;
        break;
      }
      case 0xDD:  // DRI
        if (s.size() < 2 || Be16(s, 0) != 0) return std::nullopt;
        break;
      case 0xDB:  // DQT
      case 0xE0:  // JFIF and Adobe: they choose the color transform
      case 0xEE:
        keep = true;
        break;
      case 0xDA: {  // SOS
        if (frame.empty() || s.empty() || s[0] != frame.size() ||
            s.size() != 4u + 2u * s[0]) {
          return std::nullopt;
        }
        int h_max = 1, v_max = 1;
        for (const FrameComponent& f : frame) {
          h_max = std::max(h_max, f.h);
          v_max = std::max(v_max, f.v);
        }
        for (int c = 0; c < s[0]; ++c) {
          auto it = std::find_if(
              frame.begin(), frame.end(),
              [&](const FrameComponent& f) { return f.id == s[1 + 2 * c]; });
          if (it == frame.end()) return std::nullopt;
          Component component;
          component.h = frame.size() == 1 ? 1 : it->h;
          component.v = frame.size() == 1 ? 1 : it->v;
          component.dc_table = s[2 + 2 * c] >> 4;
          component.ac_table = s[2 + 2 * c] & 15;
          if (component.dc_table > 3 || component.ac_table > 3 ||
              !rows.dc_[component.dc_table].defined ||
              !rows.ac_[component.ac_table].defined) {
            return std::nullopt;
          }
          rows.components_.push_back(component);
        }
        const size_t t = 1 + 2 * s[0];
        if (s[t] != 0 || s[t + 1] != 63 || s[t + 2] != 0) return std::nullopt;
        if (frame.size() == 1) {
          if (frame[0].h != 1 || frame[0].v != 1) return std::nullopt;
          h_max = v_max = 1;
        }
        if (rows.height_ == 0 || rows.width_ == 0) return std::nullopt;
        rows.mcu_height_ = 8 * v_max;
        rows.mcu_width_ = 8 * h_max;
        rows.mcus_per_row_ = (rows.width_ + 8 * h_max - 1) / (8 * h_max);
        rows.mcu_rows_ = (rows.height_ + 8 * v_max - 1) / (8 * v_max);
        rows.kept_segments_.push_back(
            {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)});
        rows.data_begin_ = static_cast<uint32_t>(end);
        return rows;
      }
      default:
        // Other frames (progressive, lossless, arithmetic) and DAC: not
        // followed. APPn and COM: not needed to decode.
        if ((marker >= 0xC2 && marker <= 0xCF) || marker == 0xDC) {
          return std::nullopt;
        }
        break;
    }
    if (keep) {
      rows.kept_segments_.push_back(
          {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)});
    }
    p = end;
  }
}

namespace {

// A thread's decoders of the tables its last scans used: a dataset's files
// mostly share their tables (their encoder's standard ones), and building
// a decoder costs about an eighth of scanning a photo. Null for a table
// no decoder can be built from. A decoder dropped from the cache lives on
// while a scan holds it.
std::shared_ptr<const HuffmanDecoder> CachedDecoder(
    const uint8_t counts[17], const std::vector<uint8_t>& symbols, bool ac) {
  struct Entry {
    bool ac = false, ok = false;
    uint8_t counts[17] = {0};
    std::vector<uint8_t> symbols;
    HuffmanDecoder decoder;
  };
  constexpr size_t kEntries = 8;
  thread_local std::vector<std::shared_ptr<Entry>> cache;  // oldest first
  auto found = std::find_if(
      cache.begin(), cache.end(), [&](const std::shared_ptr<Entry>& entry) {
        return entry->ac == ac && entry->symbols == symbols &&
               std::equal(counts, counts + 17, entry->counts);
      });
  if (found != cache.end()) {
    std::rotate(found, found + 1, cache.end());
  } else {
    if (cache.size() == kEntries) cache.erase(cache.begin());
    auto entry = std::make_shared<Entry>();
    entry->ac = ac;
    std::copy(counts, counts + 17, entry->counts);
    entry->symbols = symbols;
    entry->ok = entry->decoder.Build(entry->counts, entry->symbols);
    if (entry->ok && ac) entry->decoder.BuildSkips();
    cache.push_back(std::move(entry));
  }
  const std::shared_ptr<Entry>& last = cache.back();
  if (!last->ok) return nullptr;
  return std::shared_ptr<const HuffmanDecoder>(last, &last->decoder);
}

}  // namespace

bool JpegRows::Scan(absl::Span<const uint8_t> encoded,
                    std::vector<JpegMcuStart>* starts) const {
  starts->clear();
  if (ReadStarts(encoded, starts)) return true;
  starts->clear();
  return false;
}

bool JpegRows::ReadStarts(absl::Span<const uint8_t> encoded,
                          std::vector<JpegMcuStart>* starts) const {
  // A start's byte is 32 bits.
  if (encoded.size() > std::numeric_limits<uint32_t>::max()) return false;
  std::shared_ptr<const HuffmanDecoder> dc[4], ac[4];
  for (const Component& component : components_) {
    const HuffmanTable& dc_table = dc_[component.dc_table];
    const HuffmanTable& ac_table = ac_[component.ac_table];
    dc[component.dc_table] =
        CachedDecoder(dc_table.counts, dc_table.symbols, false);
    ac[component.ac_table] =
        CachedDecoder(ac_table.counts, ac_table.symbols, true);
    if (dc[component.dc_table] == nullptr ||
        ac[component.ac_table] == nullptr) {
      return false;
    }
  }
  starts->reserve(static_cast<size_t>(mcu_rows_) * starts_per_row() + 1);
  BitReader bits(encoded, data_begin_, 0);
  int pred[3] = {0, 0, 0};
  const int components = static_cast<int>(components_.size());
  // Where the next bit lies, with the predictors so far.
  auto keep = [&]() ABSL_ATTRIBUTE_ALWAYS_INLINE {
    bits.Fill();  // so that the next bit's byte is among those loaded
    if (bits.OverRan()) return false;
    JpegMcuStart start{
        bits.byte(), static_cast<uint8_t>(bits.bit()), {0, 0, 0}};
    for (int c = 0; c < components; ++c) {
      if (pred[c] < std::numeric_limits<int16_t>::min() ||
          pred[c] > std::numeric_limits<int16_t>::max()) {
        return false;
      }
      start.pred[c] = static_cast<int16_t>(pred[c]);
    }
    starts->push_back(start);
    return true;
  };
  for (int r = 0; r < mcu_rows_; ++r) {
    for (int m = 0; m < mcus_per_row_; ++m) {
      if (m % kColumnStride == 0 && !keep()) return false;
      for (int c = 0; c < components; ++c) {
        const Component& component = components_[c];
        const HuffmanDecoder& dc_codes = *dc[component.dc_table];
        const HuffmanDecoder& ac_codes = *ac[component.ac_table];
        for (int b = component.h * component.v; b > 0; --b) {
          if (bits.Low()) bits.Fill();
          const int size = dc_codes.Decode(&bits);
          if (size < 0 || size > 15) return false;
          if (size > 0) pred[c] += Extend(bits.Take(size), size);
          for (int k = 1; k < 64;) {
            if (bits.Low()) bits.Fill();
            k = ac_codes.SkipCoefficients(&bits, k);
            if (k < 0) return false;
          }
        }
      }
    }
  }
  return keep();
}

const JpegMcuStart& JpegRows::Start(absl::Span<const JpegMcuStart> starts,
                                    int row, int mcu) const {
  if (mcu >= mcus_per_row_) return starts[(row + 1) * starts_per_row()];
  return starts[row * starts_per_row() + mcu / kColumnStride];
}

void JpegRows::WriteHeader(absl::Span<const uint8_t> encoded, int height,
                           int width, std::vector<uint8_t>* out) const {
  for (const auto& [begin, end] : kept_segments_) {
    const size_t at = out->size();
    out->insert(out->end(), encoded.begin() + begin, encoded.begin() + end);
    if (height_offset_ >= begin && height_offset_ + 4 <= end) {
      uint8_t* size = out->data() + at + (height_offset_ - begin);
      size[0] = static_cast<uint8_t>(height >> 8);
      size[1] = static_cast<uint8_t>(height);
      size[2] = static_cast<uint8_t>(width >> 8);
      size[3] = static_cast<uint8_t>(width);
    }
  }
}

struct JpegRows::Codes {
  HuffmanCodes dc[4], ac[4];
  // For each length mod 8 a stand-in must add, the fewest AC coefficients
  // that add it (component, symbol; each: its code and its value's bits),
  // found breadth-first; `reachable` false where none do.
  std::array<std::vector<std::pair<int, int>>, 8> extras;
  std::array<bool, 8> reachable = {};
};

bool JpegRows::BuildCodes(Codes* codes) const {
  for (int t = 0; t < 4; ++t) {
    if ((dc_[t].defined &&
         !codes->dc[t].Build(dc_[t].counts, dc_[t].symbols)) ||
        (ac_[t].defined &&
         !codes->ac[t].Build(ac_[t].counts, ac_[t].symbols))) {
      return false;
    }
  }
  const int components = static_cast<int>(components_.size());
  std::vector<std::pair<int, int>> menu;
  for (int c = 0; c < components; ++c) {
    const HuffmanCodes& ac_codes = codes->ac[components_[c].ac_table];
    for (int symbol = 1; symbol < 0x80; ++symbol) {
      if ((symbol & 15) != 0 && ac_codes.length[symbol] != 0) {
        menu.push_back({c, symbol});
      }
    }
  }
  codes->reachable.fill(false);
  codes->reachable[0] = true;
  std::vector<int> frontier = {0};
  for (int depth = 0; depth < 7 && !frontier.empty(); ++depth) {
    std::vector<int> next;
    for (int residue : frontier) {
      for (const auto& [c, symbol] : menu) {
        const int cost =
            codes->ac[components_[c].ac_table].length[symbol] + (symbol & 15);
        const int reached = (residue + cost) % 8;
        if (codes->reachable[reached]) continue;
        codes->reachable[reached] = true;
        codes->extras[reached] = codes->extras[residue];
        codes->extras[reached].push_back({c, symbol});
        next.push_back(reached);
      }
    }
    frontier = std::move(next);
  }
  return true;
}

bool JpegRows::WriteStandIn(const Codes& codes, int mcus, const int16_t from[3],
                            const int16_t to[3], int to_bit,
                            JpegBitWriter* writer) const {
  // The stand-in's blocks, component by component: DC differences that
  // sum to the change of predictor (StandInDiffs); every block ends at
  // once (EOB) but for up to 7 AC coefficients (Codes::extras) that bring
  // its length to the bit asked for.
  const int components = static_cast<int>(components_.size());
  thread_local std::vector<int> diffs[3];  // kept for their capacity
  int64_t length = writer->pending_bits();
  for (int c = 0; c < components; ++c) {
    const Component& component = components_[c];
    const HuffmanCodes& dc_codes = codes.dc[component.dc_table];
    const HuffmanCodes& ac_codes = codes.ac[component.ac_table];
    diffs[c].clear();
    if (ac_codes.length[0] == 0 ||
        !StandInDiffs(dc_codes, int{to[c]} - int{from[c]},
                      mcus * component.h * component.v, &diffs[c])) {
      return false;
    }
    for (int d : diffs[c]) {
      const int category = Category(d);
      length += dc_codes.length[category] + category + ac_codes.length[0];
    }
  }
  const int want = ((to_bit - length) % 8 + 8) % 8;
  if (!codes.reachable[want]) return false;
  int next_block[3] = {0, 0, 0};
  for (int m = 0; m < mcus; ++m) {
    for (int c = 0; c < components; ++c) {
      const Component& component = components_[c];
      const HuffmanCodes& dc_codes = codes.dc[component.dc_table];
      const HuffmanCodes& ac_codes = codes.ac[component.ac_table];
      for (int b = component.h * component.v; b > 0; --b) {
        const int block = next_block[c]++;
        const int d = diffs[c][block];
        const int category = Category(d);
        writer->Put(dc_codes.code[category], dc_codes.length[category]);
        if (category > 0) {
          writer->Put(d > 0 ? d : d + (1 << category) - 1, category);
        }
        if (block == 0) {
          // At most 7 coefficients of runs up to 7: they end by index 56.
          for (const auto& [extra_component, symbol] : codes.extras[want]) {
            if (extra_component != c) continue;
            writer->Put(ac_codes.code[symbol], ac_codes.length[symbol]);
            const int size = symbol & 15;
            writer->Put(1u << (size - 1), size);
          }
        }
        writer->Put(ac_codes.code[0], ac_codes.length[0]);
      }
    }
  }
  return writer->pending_bits() == to_bit;  // cannot differ
}

namespace {

// Copies the entropy-coded bits from `from` to `to` of `encoded` to a
// writer left from.bit bits into a byte: the first byte's bits the MCUs
// before did not use, then the file's bytes as they are (a 0xFF's 0x00
// is the writer's to add where it writes the byte, the file's where the
// file's bytes are copied), then the bits of the last byte up to `to`.
bool CopyBits(absl::Span<const uint8_t> encoded, const JpegMcuStart& from,
              const JpegMcuStart& to, JpegBitWriter* writer) {
  if (to.byte < from.byte || to.byte >= encoded.size() ||
      writer->pending_bits() != from.bit) {
    return false;
  }
  if (from.byte == to.byte) {
    const int n = to.bit - from.bit;
    if (n < 0) return false;
    writer->Put((encoded[to.byte] >> (8 - to.bit)) & ((1u << n) - 1), n);
    return true;
  }
  size_t next = from.byte;
  if (from.bit > 0) {
    const uint8_t first = encoded[from.byte];
    const int low = 8 - from.bit;
    writer->Put(first & ((1u << low) - 1), low);
    ++next;
    if (first == 0xFF) {
      if (next >= to.byte || encoded[next] != 0) return false;
      ++next;
    }
  }
  writer->Append(encoded.subspan(next, to.byte - next));
  if (to.bit > 0) writer->Put(encoded[to.byte] >> (8 - to.bit), to.bit);
  return true;
}

}  // namespace

bool JpegRows::StartingAt(absl::Span<const uint8_t> encoded,
                          absl::Span<const JpegMcuStart> starts, int start_row,
                          std::vector<uint8_t>* out) const {
  Codes codes;
  if (start_row < 1 || start_row >= mcu_rows_ || !Fits(starts) ||
      !BuildCodes(&codes)) {
    return false;
  }
  out->clear();
  out->reserve(encoded.size() - Start(starts, start_row, 0).byte + 1024);
  WriteHeader(encoded, height_ - start_row * mcu_height_ + mcu_height_, width_,
              out);
  JpegBitWriter writer(out);
  const JpegMcuStart& start = Start(starts, start_row, 0);
  const int16_t zero[3] = {0, 0, 0};
  if (!WriteStandIn(codes, mcus_per_row_, zero, start.pred, start.bit,
                    &writer) ||
      !CopyBits(encoded, start, starts.back(), &writer)) {
    return false;
  }
  writer.Finish();
  out->insert(out->end(), {0xFF, 0xD9});
  return true;
}

bool JpegRows::Columns(absl::Span<const uint8_t> encoded,
                       absl::Span<const JpegMcuStart> starts, int first_row,
                       int end_row, int first_mcu, int end_mcu,
                       std::vector<uint8_t>* out, int* stand_in_mcus) const {
  Codes codes;
  if (first_row < 0 || first_row >= end_row || end_row > mcu_rows_ ||
      first_mcu < 0 || first_mcu >= end_mcu || end_mcu > mcus_per_row_ ||
      first_mcu % kColumnStride != 0 ||
      (end_mcu % kColumnStride != 0 && end_mcu != mcus_per_row_) ||
      !Fits(starts) || !BuildCodes(&codes)) {
    return false;
  }
  // One stand-in MCU moves a predictor by one difference a block (per
  // block of the component in an MCU); tables fitted to an image may lack
  // the large ones, and more MCUs share the move.
  for (int mcus : {1, 2, 4, 8}) {
    if (WriteColumns(encoded, starts, codes, first_row, end_row, first_mcu,
                     end_mcu, mcus, out)) {
      *stand_in_mcus = mcus;
      return true;
    }
  }
  return false;
}

bool JpegRows::WriteColumns(absl::Span<const uint8_t> encoded,
                            absl::Span<const JpegMcuStart> starts,
                            const Codes& codes, int first_row, int end_row,
                            int first_mcu, int end_mcu, int stand_in_mcus,
                            std::vector<uint8_t>* out) const {
  // Where the kept MCUs reach the file's last row or column, the JPEG
  // ends where the file does (its last MCU's padding cut as the file's).
  const int height = end_row == mcu_rows_ ? height_ - first_row * mcu_height_
                                          : (end_row - first_row) * mcu_height_;
  const int width =
      (end_mcu == mcus_per_row_ ? width_ - first_mcu * mcu_width_
                                : (end_mcu - first_mcu) * mcu_width_) +
      stand_in_mcus * mcu_width_;
  if (width > 0xFFFF) return false;
  out->clear();
  out->reserve(Start(starts, end_row - 1, end_mcu).byte -
               Start(starts, first_row, first_mcu).byte + 1024);
  WriteHeader(encoded, height, width, out);
  JpegBitWriter writer(out);
  const int16_t zero[3] = {0, 0, 0};
  const int16_t* pred = zero;
  for (int r = first_row; r < end_row; ++r) {
    const JpegMcuStart& from = Start(starts, r, first_mcu);
    const JpegMcuStart& to = Start(starts, r, end_mcu);
    if (!WriteStandIn(codes, stand_in_mcus, pred, from.pred, from.bit,
                      &writer) ||
        !CopyBits(encoded, from, to, &writer)) {
      return false;
    }
    pred = to.pred;
  }
  writer.Finish();
  out->insert(out->end(), {0xFF, 0xD9});
  return true;
}

}  // namespace actorflow::internal::pipeline
