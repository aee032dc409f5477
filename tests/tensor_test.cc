// Data types, blob descriptions, register layout, typed views and their
// errors (word for word), host tensors, element conversion, and the typed
// built-in kernels (cast, head, checksum, identity) one piece at a time.
#include "actorflow/tensor.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "actor/act_context.h"
#include "actor/blob_desc_proto.h"
#include "actor/register.h"
#include "actor/register_layout.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "actorflow/kernel_harness.h"
#include "kernels/convert.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace {

// The task as KernelHarness::Create takes it (text format).
std::string Task(const std::string& op_type,
                 std::map<std::string, AttrValue> attrs = {}) {
  return KernelTaskText(op_type, attrs);
}

TEST_CASE("data types: names, sizes, parsing", "[tensor]") {
  int count = 0;
  const DataType* all = AllDataTypes(&count);
  REQUIRE(count == 7);
  const char* names[] = {"float32", "float64", "int8", "uint8",
                         "int32",   "int64",   "bool"};
  const size_t sizes[] = {4, 8, 1, 1, 4, 8, 1};
  for (int i = 0; i < count; ++i) {
    CHECK(std::string(DataTypeName(all[i])) == names[i]);
    CHECK(DataTypeSize(all[i]) == sizes[i]);
    auto parsed = ParseDataType(names[i]);
    REQUIRE(parsed.ok());
    CHECK(*parsed == all[i]);
  }
  CHECK(ParseDataType("float").status().message() ==
        "unknown data type 'float' (known: float32, float64, int8, uint8, "
        "int32, int64, bool)");
  CHECK(IsFloatingType(DT_FLOAT64));
  CHECK_FALSE(IsFloatingType(DT_INT64));
}

TEST_CASE("blob entries of a plan are checked", "[tensor]") {
  RegisterDescProto proto;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    BlobDescProto* blob = proto.add_blob();
    blob->set_name(name);
    blob->set_data_type(DataTypes::DT_UINT8);
    for (int64_t d : shape) blob->add_shape(d);
  };
  add("img", {28, 28, 3});
  add("label", {});
  auto blobs = BlobDescsFromProto(proto);
  REQUIRE(blobs.ok());
  REQUIRE(blobs->size() == 2);
  CHECK((*blobs)[0].ToString() == "img: uint8 [28, 28, 3]");
  CHECK((*blobs)[1].ToString() == "label: uint8 []");
  CHECK((*blobs)[1].elem_cnt() == 1);  // a scalar

  SECTION("duplicate name") {
    add("img", {1});
    CHECK(BlobDescsFromProto(proto).status().message() ==
          "blob 'img'.name: duplicate in this register");
  }
  SECTION("empty name") {
    add("", {1});
    CHECK(BlobDescsFromProto(proto).status().message() ==
          "blob[2].name: must not be empty");
  }
  SECTION("negative dimension") {
    add("x", {4, -1});
    CHECK(BlobDescsFromProto(proto).status().message() ==
          "blob 'x'.shape: dimension 1 must be >= 0, got -1");
  }
  SECTION("too large") {
    add("x", {1LL << 40, 1LL << 40});
    CHECK(BlobDescsFromProto(proto).status().message() ==
          "blob 'x'.shape: [1099511627776, 1099511627776] is too large to "
          "address");
  }
}

TEST_CASE("a register's blobs are each aligned to 64 bytes", "[tensor]") {
  std::vector<BlobDesc> blobs = {{"a", DT_UINT8, {3}, false},
                                 {"b", DT_FLOAT64, {9}, false},
                                 {"c", DT_BOOL, {0}, false},
                                 {"d", DT_INT32, {64}, false}};
  RegisterLayout layout = LayOut(blobs);
  CHECK(layout.offsets == std::vector<int64_t>{0, 64, 192, 192});
  CHECK(layout.bytes == 448);
  for (int64_t offset : layout.offsets) CHECK(offset % kBlobAlignment == 0);
}

// One register with the given blobs in host memory, as the runtime makes.
struct OneRegister {
  explicit OneRegister(std::vector<BlobDesc> blobs) {
    desc.id = 42;
    desc.blobs = std::move(blobs);
    desc.layout = LayOut(desc.blobs);
    memory = std::make_unique<SyncedMemory>(
        desc.layout.bytes,
        SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
    auto base = memory->mutable_cpu_data();
    REQUIRE(base.ok());
    reg = std::make_unique<Register>(&desc, nullptr, static_cast<char*>(*base));
  }
  RegisterDesc desc;
  std::unique_ptr<SyncedMemory> memory;
  std::unique_ptr<Register> reg;
};

TEST_CASE("views: typed access checks the element type", "[tensor]") {
  OneRegister r(
      {{"img", DT_UINT8, {2, 3}, false}, {"len", DT_INT64, {4}, true}});
  RegisterView out(r.reg.get());
  ConstRegisterView in(r.reg.get());
  REQUIRE(out.num_blobs() == 2);

  auto img = out.blob("img").mutable_data<uint8_t>();
  REQUIRE(img.ok());
  CHECK(img->size() == 6);
  for (size_t i = 0; i < img->size(); ++i) (*img)[i] = static_cast<uint8_t>(i);
  auto read = in.blob(0).data<uint8_t>();
  REQUIRE(read.ok());
  CHECK((*read)[5] == 5);
  CHECK(in.blob(0).shape() == absl::Span<const int64_t>({2, 3}));

  CHECK(in.blob("img").data<float>().status().message() ==
        "blob 'img' (regst_desc 42): holds uint8, asked for float32");
  CHECK(out.blob(1).mutable_data<int32_t>().status().message() ==
        "blob 'len' (regst_desc 42): holds int64, asked for int32");
  CHECK_FALSE(in.blob("nope").valid());
  CHECK(in.blob("nope").data<float>().status().message() ==
        "no such blob or register: asked for float32 data from an empty view");
  CHECK_FALSE(in.blob(7).valid());
  CHECK_FALSE(ConstRegisterView().blob(0).valid());
}

TEST_CASE("views: a dynamic blob's shape is set per piece", "[tensor]") {
  OneRegister r(
      {{"img", DT_UINT8, {2, 3}, false}, {"len", DT_INT64, {4, 2}, true}});
  RegisterView out(r.reg.get());
  TensorView len = out.blob("len");
  CHECK(len.elem_cnt() == 8);  // the maximum until set
  REQUIRE(len.set_shape({3, 2}).ok());
  CHECK(len.elem_cnt() == 6);
  CHECK(len.byte_size() == 48);
  CHECK(len.mutable_data<int64_t>()->size() == 6);
  CHECK(len.max_shape() == absl::Span<const int64_t>({4, 2}));

  CHECK(len.set_shape({5, 2}).message() ==
        "blob 'len' (regst_desc 42): shape [5, 2]: dimension 0 is 5, outside "
        "[0, 4]");
  CHECK(
      len.set_shape({2}).message() ==
      "blob 'len' (regst_desc 42): shape [2] has rank 1, the blob has rank 2");
  CHECK(out.blob("img").set_shape({1, 3}).message() ==
        "blob 'img' (regst_desc 42): shape [1, 3]: dimension 0 is 1, but the "
        "blob is static with [2, 3]");
  CHECK(out.blob("img").set_shape({2, 3}).ok());

  r.reg->ResetShapes();
  CHECK(len.elem_cnt() == 8);
}

TEST_CASE("tensors: values, shape, typed access", "[tensor]") {
  auto t = Tensor::FromValues<int32_t>({2, 2}, {1, 2, 3, 4});
  REQUIRE(t.ok());
  CHECK(t->byte_size() == 16);
  CHECK((*t->data<int32_t>())[3] == 4);
  CHECK(t->data<int64_t>().status().message() ==
        "tensor holds int32, asked for int64");
  CHECK(Tensor::FromValues<float>({3}, {1.0f}).status().message() ==
        "tensor of shape [3] holds 3 elements, got 1 values");
  Tensor zeros(DT_BOOL, {5});
  CHECK(zeros.elem_cnt() == 5);
  CHECK((*zeros.data<bool>())[4] == false);
}

TEST_CASE("element conversion: saturate, truncate, wrap", "[tensor]") {
  CHECK(ConvertElement<int8_t>(300.7) == 127);
  CHECK(ConvertElement<int8_t>(-300.0f) == -128);
  CHECK(ConvertElement<int8_t>(-3.9) == -3);
  CHECK(ConvertElement<uint8_t>(-1.5) == 0);
  CHECK(ConvertElement<uint8_t>(255.9) == 255);
  CHECK(ConvertElement<int32_t>(std::nan("")) == 0);
  CHECK(ConvertElement<int32_t>(3e9) == std::numeric_limits<int32_t>::max());
  CHECK(ConvertElement<int64_t>(1e30f) == std::numeric_limits<int64_t>::max());
  CHECK(ConvertElement<int64_t>(-1e30) == std::numeric_limits<int64_t>::min());
  CHECK(ConvertElement<uint8_t>(int32_t{300}) == 44);  // wraps
  CHECK(ConvertElement<int8_t>(uint8_t{200}) == -56);
  CHECK(ConvertElement<bool>(0.25) == true);
  CHECK(ConvertElement<bool>(int64_t{0}) == false);
  CHECK(ConvertElement<float>(true) == 1.0f);
  CHECK(ConvertElement<double>(int64_t{-7}) == -7.0);
}

TEST_CASE("cast: every type to every type, one piece", "[tensor][kernels]") {
  int count = 0;
  const DataType* all = AllDataTypes(&count);
  for (int f = 0; f < count; ++f) {
    for (int t = 0; t < count; ++t) {
      DataType from = all[f], to = all[t];
      INFO(DataTypeName(from) << " -> " << DataTypeName(to));
      auto h = KernelHarness::Create(
          Task("cast", {{"to", StringAttr(DataTypeName(to))}}),
          {{{"x", from, {2, 2}, false}}}, true);
      REQUIRE(h.ok());
      // 0, 1, 2, 3 in the source type (bool: 0, 1, 1, 1).
      VisitDataType(from, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto in = (*h)->input(0).blob(0).mutable_data<T>();
        REQUIRE(in.ok());
        for (int i = 0; i < 4; ++i) (*in)[i] = ConvertElement<T>(i);
      });
      REQUIRE((*h)->Run(0).ok());
      ConstTensorView out = (*h)->output().blob(0);
      CHECK(out.data_type() == to);
      CHECK(out.name() == "x");
      CHECK(out.shape() == absl::Span<const int64_t>({2, 2}));
      VisitDataType(to, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto values = out.data<T>();
        REQUIRE(values.ok());
        for (int i = 0; i < 4; ++i) {
          int expected = from == DT_BOOL ? (i > 0) : i;
          CHECK((*values)[i] == ConvertElement<T>(expected));
        }
      });
    }
  }
}

TEST_CASE("cast: attr errors", "[tensor][kernels]") {
  auto bad = KernelHarness::Create(Task("cast", {{"to", StringAttr("half")}}),
                                   {{{"x", DT_FLOAT32, {2}, false}}}, true);
  CHECK(bad.status().message() ==
        "kernel.attr['to']: unknown data type 'half' (known: float32, "
        "float64, int8, uint8, int32, int64, bool)");
  auto missing = KernelHarness::Create(Task("cast"),
                                       {{{"x", DT_FLOAT32, {2}, false}}}, true);
  CHECK(missing.status().message() ==
        "kernel.attr['to']: missing; cast needs a string (s)");
  auto wrong = KernelHarness::Create(Task("cast", {{"to", IntAttr(3)}}),
                                     {{{"x", DT_FLOAT32, {2}, false}}}, true);
  CHECK(wrong.status().message() ==
        "kernel.attr['to']: must be a string (s), got an int (i)");
}

TEST_CASE("head: piece p keeps 1 + p % mod rows", "[tensor][kernels]") {
  auto h = KernelHarness::Create(Task("head", {{"mod", IntAttr(3)}}),
                                 {{{"rows", DT_INT32, {4, 2}, false}}}, true);
  REQUIRE(h.ok());
  auto in = (*h)->input(0).blob(0).mutable_data<int32_t>();
  for (int i = 0; i < 8; ++i) (*in)[i] = 10 + i;
  for (int64_t p = 0; p < 7; ++p) {
    REQUIRE((*h)->Run(p).ok());
    ConstTensorView out = (*h)->output().blob(0);
    CHECK(out.is_dynamic());
    int64_t rows = 1 + p % 3;
    CHECK(out.shape() == absl::Span<const int64_t>({rows, 2}));
    auto values = out.data<int32_t>();
    REQUIRE(values->size() == static_cast<size_t>(rows * 2));
    for (int64_t i = 0; i < rows * 2; ++i) CHECK((*values)[i] == 10 + i);
  }
  // Never more than the input has.
  auto small = KernelHarness::Create(Task("head", {{"mod", IntAttr(10)}}),
                                     {{{"v", DT_UINT8, {2}, false}}}, true);
  REQUIRE(small.ok());
  REQUIRE((*small)->Run(9).ok());
  CHECK((*small)->output().blob(0).elem_cnt() == 2);

  CHECK(KernelHarness::Create(Task("head", {{"mod", IntAttr(0)}}),
                              {{{"v", DT_UINT8, {2}, false}}}, true)
            .status()
            .message() == "kernel.attr['mod']: must be >= 1, got 0");
  CHECK(KernelHarness::Create(Task("head", {{"mod", IntAttr(2)}}),
                              {{{"v", DT_UINT8, {}, false}}}, true)
            .status()
            .message() ==
        "consumed_regst_desc_id['in']: blob 'v' of regst_desc 1 has rank 0; "
        "head keeps entries along dimension 0");
}

TEST_CASE("checksum sums the valid elements of every blob of any type",
          "[tensor][kernels]") {
  auto h = KernelHarness::Create(Task("checksum"),
                                 {{{"a", DT_INT8, {3}, false},
                                   {"b", DT_BOOL, {2}, false},
                                   {"c", DT_INT64, {4}, true}}},
                                 false);
  REQUIRE(h.ok());
  RegisterView in = (*h)->input(0);
  auto a = in.blob("a").mutable_data<int8_t>();
  (*a)[0] = -5;
  (*a)[1] = 7;
  (*a)[2] = 100;
  auto b = in.blob("b").mutable_data<bool>();
  (*b)[0] = true;
  (*b)[1] = true;
  auto c = in.blob("c").mutable_data<int64_t>();
  for (int i = 0; i < 4; ++i) (*c)[i] = 1000 * (i + 1);
  REQUIRE(in.blob("c").set_shape({2}).ok());  // only 1000 and 2000 count
  REQUIRE((*h)->Run(0).ok());
  auto summary = (*h)->kernel().sink_summary();
  REQUIRE(summary.has_value());
  CHECK(summary->checksum == -5 + 7 + 100 + 2 + 1000 + 2000);
}

TEST_CASE("element-wise kernels: types they refuse, word for word",
          "[tensor][kernels]") {
  CHECK(KernelHarness::Create(Task("scale", {{"factor", FloatAttr(2)}}),
                              {{{"x", DT_INT32, {2}, false}}}, true)
            .status()
            .message() ==
        "consumed_regst_desc_id['in']: blob 'x' of regst_desc 1 is int32; "
        "scale takes float32, float64");
  CHECK(KernelHarness::Create(
            Task("add"),
            {{{"x", DT_FLOAT64, {2}, false}}, {{"y", DT_FLOAT32, {2}, false}}},
            true)
            .status()
            .message() ==
        "consumed_regst_desc_id['in']: add needs inputs with the same blobs, "
        "but blob 'x' of regst_desc 1 and blob 'y' of regst_desc 2 differ in "
        "data type: float64 vs float32");
  CHECK(KernelHarness::Create(Task("add"),
                              {{{"x", DT_FLOAT64, {2, 3}, false}},
                               {{"y", DT_FLOAT64, {2, 4}, false}}},
                              true)
            .status()
            .message() ==
        "consumed_regst_desc_id['in']: add needs inputs with the same blobs, "
        "but blob 'x' of regst_desc 1 and blob 'y' of regst_desc 2 differ in "
        "dimension 1: 3 vs 4");
}

TEST_CASE("identity and add keep types and shapes", "[tensor][kernels]") {
  auto identity = KernelHarness::Create(
      Task("identity"), {{{"img", DT_UINT8, {2, 2, 3}, false}}}, true);
  REQUIRE(identity.ok());
  auto img = (*identity)->input(0).blob(0).mutable_data<uint8_t>();
  for (int i = 0; i < 12; ++i) (*img)[i] = static_cast<uint8_t>(250 + i);
  REQUIRE((*identity)->Run(3).ok());
  auto copied = (*identity)->output().blob(0).data<uint8_t>();
  REQUIRE(copied.ok());
  CHECK(std::vector<uint8_t>(copied->begin(), copied->end()) ==
        std::vector<uint8_t>(img->begin(), img->end()));

  auto add = KernelHarness::Create(
      Task("add"),
      {{{"x", DT_FLOAT64, {3}, false}}, {{"y", DT_FLOAT64, {3}, false}}}, true);
  REQUIRE(add.ok());
  for (int k = 0; k < 2; ++k) {
    auto in = (*add)->input(k).blob(0).mutable_data<double>();
    for (int i = 0; i < 3; ++i) (*in)[i] = 0.1 * (k + 1) * (i + 1);
  }
  REQUIRE((*add)->Run(0).ok());
  auto sum = (*add)->output().blob(0).data<double>();
  REQUIRE(sum.ok());
  for (int i = 0; i < 3; ++i) CHECK((*sum)[i] == 0.1 * (i + 1) + 0.2 * (i + 1));
  CHECK((*add)->output().blob(0).name() == "x");
}

TEST_CASE("normalize: per channel along an axis, float32 out", "[tensor]") {
  AttrValue mean, stddev;
  mean.mutable_list()->add_f(10);
  mean.mutable_list()->add_f(20);
  stddev.mutable_list()->add_f(2);
  stddev.mutable_list()->add_f(4);
  // uint8 [2, 3, 2]: channels on the last axis.
  auto h = KernelHarness::Create(
      Task("normalize", {{"mean", mean}, {"std", stddev}}),
      {{{"img", DT_UINT8, {2, 3, 2}, true}}}, true);
  REQUIRE(h.ok());
  TensorView in = (*h)->input(0).blob(0);
  const int64_t piece[] = {1, 3, 2};  // a dynamic piece: half the rows
  REQUIRE(in.set_shape(piece).ok());
  auto values = in.mutable_data<uint8_t>();
  for (int i = 0; i < 6; ++i) (*values)[i] = static_cast<uint8_t>(30 + i);
  REQUIRE((*h)->Run(0).ok());
  ConstTensorView out = (*h)->output().blob(0);
  CHECK(out.data_type() == DT_FLOAT32);
  CHECK(out.shape() == absl::Span<const int64_t>({1, 3, 2}));
  auto f = out.data<float>();
  REQUIRE(f.ok());
  for (int i = 0; i < 6; ++i) {
    const float expect =
        i % 2 == 0 ? (30 + i - 10) / 2.0f : (30 + i - 20) / 4.0f;
    CHECK((*f)[i] == expect);
  }
  // Axis 0 of [2, 3]: rows are channels.
  AttrValue axis;
  axis.set_i(0);
  auto rows = KernelHarness::Create(
      Task("normalize", {{"mean", mean}, {"std", stddev}, {"axis", axis}}),
      {{{"x", DT_FLOAT32, {2, 3}, false}}}, true);
  REQUIRE(rows.ok());
  float* x = (*rows)->input_floats(0);
  for (int i = 0; i < 6; ++i) x[i] = 100;
  REQUIRE((*rows)->Run(0).ok());
  CHECK((*rows)->output_floats()[0] == 45.0f);
  CHECK((*rows)->output_floats()[5] == 20.0f);
  // Errors name the attribute.
  AttrValue three, zero;
  for (int i = 0; i < 3; ++i) three.mutable_list()->add_f(1);
  zero.mutable_list()->add_f(0);
  CHECK(KernelHarness::Create(Task("normalize", {{"mean", three}}),
                              {{{"x", DT_FLOAT32, {2, 2}, false}}}, true)
            .status()
            .message() ==
        "kernel.attr['mean']: 3 values for 2 channels (give 1 or 2)");
  CHECK(KernelHarness::Create(Task("normalize", {{"std", zero}}),
                              {{{"x", DT_FLOAT32, {2, 2}, false}}}, true)
            .status()
            .message() == "kernel.attr['std']: has a zero");
  CHECK_FALSE(KernelHarness::Create(Task("normalize"),
                                    {{{"x", DT_BOOL, {2, 2}, false}}}, true)
                  .ok());
}

TEST_CASE("attributes: strings, bools and lists, typed", "[tensor]") {
  AttrValue ints, floats, strings;
  for (int64_t i : {3, 1, 4}) ints.mutable_list()->add_i(i);
  floats.mutable_list()->add_f(0.5);
  for (const char* name : {"a", "b"}) strings.mutable_list()->add_s(name);
  AttrValue yes;
  yes.set_b(true);
  TaskProto task = KernelTask("x", {{"name", StringAttr("img")},
                                    {"flag", yes},
                                    {"ints", ints},
                                    {"floats", floats},
                                    {"strings", strings}});
  KernelInitContext ctx = MakeInitContext(task, {}, {});
  CHECK(ctx.task_name() == "x");
  CHECK(ctx.op_type() == "x");
  CHECK(ctx.attr_names() ==
        std::vector<std::string>{"flag", "floats", "ints", "name", "strings"});
  CHECK(*ctx.StringAttr("name") == "img");
  CHECK(*ctx.StringAttrOr("nope", "fallback") == "fallback");
  CHECK(*ctx.BoolAttr("flag") == true);
  CHECK(*ctx.BoolAttrOr("nope", false) == false);
  CHECK(*ctx.IntListAttr("ints") == std::vector<int64_t>{3, 1, 4});
  CHECK(*ctx.FloatListAttr("floats") == std::vector<double>{0.5});
  CHECK(*ctx.StringListAttr("strings") == std::vector<std::string>{"a", "b"});
  CHECK(ctx.IntListAttr("nope")->empty());
  CHECK(ctx.BoolAttr("name").status().message() ==
        "kernel.attr['name']: must be a bool (b), got a string (s)");
  CHECK(ctx.StringAttr("nope").status().message() ==
        "kernel.attr['nope']: missing; x needs a string (s)");
  CHECK(ctx.IntListAttr("floats").status().message() ==
        "kernel.attr['floats']: must be a list of i, got a list of f");
  CHECK(ctx.FloatListAttr("flag").status().message() ==
        "kernel.attr['flag']: must be a list (list), got a bool (b)");
  CHECK(ctx.IntAttr("ints").status().message() ==
        "kernel.attr['ints']: must be an int (i), got a list (list)");
}

}  // namespace
}  // namespace actorflow::internal
