"""C++ messages and gRPC services from one .proto, with Debian's protoc and
grpc_cpp_plugin (packages protobuf-compiler and protobuf-compiler-grpc)."""

def cc_grpc_proto(name, src, visibility = None):
    """Declares `name`: a cc_library of src's messages and services.

    Args:
      name: the library; its genrule is name + "_cc".
      src: "x.proto" in this package (imports resolve from the repository root).
      visibility: of the library.
    """
    base = src[:-len(".proto")]
    outs = [base + ext for ext in [".grpc.pb.cc", ".grpc.pb.h", ".pb.cc", ".pb.h"]]
    native.genrule(
        name = name + "_cc",
        srcs = [src],
        outs = outs,
        cmd = "protoc --proto_path=. --cpp_out=$(GENDIR) --grpc_out=$(GENDIR) " +
              "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " +
              "$(location " + src + ")",
    )
    native.cc_library(
        name = name,
        srcs = [base + ".grpc.pb.cc", base + ".pb.cc"],
        hdrs = [base + ".grpc.pb.h", base + ".pb.h"],
        deps = ["@system//:grpc", "@system//:protobuf"],
        visibility = visibility,
    )
