"""A data record's message (no imports) for C++ and for Python tests."""

def record_proto(name, src):
    """Declares `<name>_proto` and `<name>_py`.

    Args:
      name: `<name>_proto` is the C++ library (Debian's protoc), `<name>_py`
        (testonly) the Python module `<base>_pb2`, for tests that write
        such records.
      src: "x.proto" in this package, importing nothing.
    """
    base = src[:-len(".proto")]
    native.genrule(
        name = name + "_proto_cc",
        srcs = [src],
        outs = [base + ".pb.cc", base + ".pb.h"],
        cmd = "protoc --proto_path=. --cpp_out=$(GENDIR) $(location %s)" % src,
    )
    native.cc_library(
        name = name + "_proto",
        srcs = [base + ".pb.cc"],
        hdrs = [base + ".pb.h"],
        deps = ["@system//:protobuf"],
    )
    native.genrule(
        name = name + "_pb2",
        srcs = [src],
        outs = [base + "_pb2.py"],
        cmd = "protoc --proto_path=. --python_out=$(GENDIR) $(location %s)" % src,
    )
    native.py_library(
        name = name + "_py",
        testonly = True,
        srcs = [":" + name + "_pb2"],
    )
