// The `actorflow` command as users run it: exit codes, the JSON summary on
// the last stdout line, relative paths under `bazel run`.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "actorflow/cuda_api.h"
#include "tests/cli_util.h"

namespace {
namespace cuda = ::actorflow::cuda;
using ::actorflow::internal::Json;
using ::actorflow::internal::ParseJson;
using ::actorflow::internal::testing::CliResult;
using ::actorflow::internal::testing::Contains;
using ::actorflow::internal::testing::RunCli;
using ::actorflow::internal::testing::Runfile;

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("run the quickstart diamond", "[cli]") {
  CliResult r =
      RunCli("run '" + Runfile("examples/plans/quickstart.pbtxt") + "'");
  CHECK(r.exit_code == 0);
  INFO(r.out);
  CHECK(r.last_line.rfind("{\"status\":\"ok\",\"pieces\":1000,\"wall_ms\":",
                          0) == 0);
  CHECK(Contains(r.last_line,
                 "\"sinks\":{\"sink\":{\"pieces\":1000,\"checksum\":640640000,"
                 "\"in_order\":true}}}"));
}

TEST_CASE("jobs: compile to a plan, or run, validate and draw directly",
          "[cli][job]") {
  const std::string diamond = Runfile("examples/jobs/diamond.pbtxt");
  const std::string plan =
      std::string(std::getenv("TEST_TMPDIR")) + "/diamond_plan.pbtxt";
  CliResult compiled = RunCli("compile '" + diamond + "' -o '" + plan + "'");
  INFO(compiled.out << compiled.err);
  REQUIRE(compiled.exit_code == 0);
  CHECK(compiled.last_line ==
        "{\"status\":\"ok\",\"plan\":\"" + plan +
            "\",\"ops\":5,\"tasks\":5,\"copies\":0,\"boxing\":0,"
            "\"streams\":1,\"register_bytes\":8192,\"shared_blocks\":0,"
            "\"shared_registers\":0,\"bytes_saved\":0}");
  // The compiled plan runs as any plan does, and so does the job itself.
  for (const std::string& file : {plan, diamond}) {
    CliResult r = RunCli("run '" + file + "'");
    CHECK(r.exit_code == 0);
    CHECK(Contains(r.last_line,
                   "\"sinks\":{\"checksum\":{\"pieces\":1000,"
                   "\"checksum\":640640000,\"in_order\":true}}}"));
  }
  CHECK(RunCli("validate '" + diamond + "'").last_line ==
        "{\"status\":\"ok\",\"tasks\":5}");
  CliResult dot = RunCli("dot '" + diamond + "'");
  CHECK(dot.exit_code == 0);
  CHECK(Contains(dot.out, "digraph plan {"));
  CliResult compile_dot = RunCli("compile --dot '" + diamond + "'");
  CHECK(compile_dot.exit_code == 0);
  CHECK(Contains(compile_dot.out, "digraph plan {"));
  CliResult text = RunCli("compile '" + diamond + "'");
  CHECK(text.exit_code == 0);
  CHECK(Contains(text.out, "# Compiled from "));
  CHECK(Contains(text.out, "name: \"checksum\""));

  // Data parallel: slices before the four devices, a concat after.
  CliResult parallel =
      RunCli("run '" + Runfile("examples/jobs/data_parallel.pbtxt") + "'");
  CHECK(parallel.exit_code == 0);
  CHECK(Contains(parallel.last_line, "\"checksum\":30412800,"));

  // Errors: a plan given to compile, a job with a dangling input.
  CliResult not_job =
      RunCli("compile '" + Runfile("examples/plans/quickstart.pbtxt") + "'");
  CHECK(not_job.exit_code == 2);
  CHECK(Contains(not_job.err, "holds a Plan, not a Job"));
  const std::string bad = WriteTemp("bad_job.pbtxt", R"pb(
    total_piece_num: 3
    op {
      name: "src"
      op_type: "source"
      shape: [ 4 ]
    }
    op { name: "sink" op_type: "checksum" input: "scr" }
  )pb");
  for (const char* command : {"compile", "run", "validate"}) {
    CliResult r = RunCli(std::string(command) + " '" + bad + "'");
    CHECK(r.exit_code == 2);
    CHECK(r.last_line ==
          "{\"status\":\"invalid\",\"errors\":[\"op 'sink' input 0 "
          "('scr'): no op named 'scr'\"]}");
  }
  // A job with a typo: the job parser's message, naming line and field.
  const std::string typo =
      WriteTemp("typo_job.pbtxt",
                "total_piece_num: 3\n"
                "op { name: \"src\" op_tpye: \"source\" }\n");
  CliResult typo_run = RunCli("run '" + typo + "'");
  CHECK(typo_run.exit_code == 2);
  CHECK(Contains(typo_run.last_line, "typo_job.pbtxt:2:"));
  CHECK(Contains(typo_run.last_line, "actorflow.OpConf"));
  CHECK(Contains(typo_run.last_line, "op_tpye"));
  CHECK(RunCli("compile").exit_code == 2);
  CHECK(RunCli("compile '" + diamond + "' -o /tmp/x.json").exit_code == 2);
}

TEST_CASE("run the 8-stage pipeline with --pieces", "[cli]") {
  std::string plan = Runfile("examples/plans/pipeline8.pbtxt");
  CliResult r = RunCli("run '" + plan + "'");
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.last_line, "\"checksum\":3199680000,\"in_order\":true"));
  // 64 * (0 + 1 + ... + 9) = 2880
  CliResult ten = RunCli("run --pieces=10 '" + plan + "'");
  CHECK(ten.exit_code == 0);
  CHECK(Contains(ten.last_line, "\"pieces\":10,"));
  CHECK(Contains(ten.last_line, "\"checksum\":2880,"));
}

TEST_CASE("relative plan paths resolve against BUILD_WORKING_DIRECTORY",
          "[cli]") {
  std::string dir = Runfile("examples");
  CliResult r = RunCli("validate plans/quickstart.pbtxt", "/",
                       "BUILD_WORKING_DIRECTORY='" + dir + "' ");
  CHECK(r.exit_code == 0);
  CHECK(r.last_line == "{\"status\":\"ok\",\"tasks\":5}");
}

TEST_CASE("an invalid plan exits 2 and lists its problems", "[cli]") {
  std::string path = WriteTemp("bad.pbtxt", R"pb(
    total_piece_num: 3
    task {
      task_id: 1
      name: "src"
      kernel { op_type: "source" }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 10
          producer_task_id: 1
          register_num: 0
          elem_cnt: 4
        }
      }
    }
    task {
      task_id: 2
      name: "x"
      kernel { op_type: "mystery" }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 10 ] }
      }
    }
  )pb");
  for (const char* command : {"validate", "run", "dot"}) {
    CliResult r = RunCli(std::string(command) + " '" + path + "'");
    CHECK(r.exit_code == 2);
    CHECK_FALSE(Contains(r.out, "digraph"));
    CHECK(r.last_line.rfind("{\"status\":\"invalid\",\"errors\":[", 0) == 0);
    CHECK(Contains(r.last_line,
                   "(regst_desc 10).register_num: must be >= 1, got 0"));
    CHECK(Contains(r.last_line, "unknown op_type 'mystery'"));
    CHECK(Contains(r.last_line,
                   "(regst_desc 10).consumer_task_id: task 'x' (task_id 2) "
                   "consumes it but is not listed"));
  }
}

TEST_CASE("a typed plan: shapes stated at the source only", "[cli]") {
  std::string plan = Runfile("examples/plans/typed.pbtxt");
  CliResult shapes = RunCli("validate '" + plan + "' --shapes");
  CHECK(shapes.exit_code == 0);
  CHECK(shapes.out ==
        "task 'pixels' (task_id 1) out (regst_desc 10, register_num 2): img: "
        "uint8 [4, 4, 3]\n"
        "task 'to_float' (task_id 2) out (regst_desc 20, register_num 2): "
        "img: float32 [4, 4, 3]\n"
        "task 'halve' (task_id 3) out (regst_desc 30, register_num 2): img: "
        "float32 [4, 4, 3]\n"
        "task 'rows' (task_id 4) out (regst_desc 40, register_num 2): img: "
        "float32 [4, 4, 3] dynamic\n"
        "{\"status\":\"ok\",\"tasks\":5}\n");
  // Without --shapes, only the summary.
  CHECK(RunCli("validate '" + plan + "'").out ==
        "{\"status\":\"ok\",\"tasks\":5}\n");
  // sum over p < 100 of (1 + p % 4) rows * 12 * 0.5 * min(250 + p, 255)
  CliResult run = RunCli("run '" + plan + "'");
  CHECK(run.exit_code == 0);
  CHECK(Contains(run.last_line,
                 "\"sink\":{\"pieces\":100,\"checksum\":382314,"
                 "\"in_order\":true}"));
  CHECK(RunCli("run --shapes '" + plan + "'").exit_code == 2);
}

TEST_CASE("a shape that contradicts inference is refused", "[cli]") {
  std::string path = WriteTemp("mismatch.pbtxt", R"pb(
    total_piece_num: 3
    task {
      task_id: 1
      name: "src"
      kernel { op_type: "source" }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 10
          producer_task_id: 1
          consumer_task_id: [ 2 ]
          register_num: 1
          blob {
            name: "x"
            data_type: DT_INT64
            shape: [ 2, 3 ]
          }
        }
      }
    }
    task {
      task_id: 2
      name: "cast"
      kernel {
        op_type: "cast"
        attr {
          key: "to"
          value { s: "int8" }
        }
      }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 10 ] }
      }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 20
          producer_task_id: 2
          register_num: 1
          blob {
            name: "x"
            data_type: DT_INT8
            shape: [ 3, 2 ]
          }
        }
      }
    }
  )pb");
  CliResult r = RunCli("validate '" + path + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.last_line ==
        "{\"status\":\"invalid\",\"errors\":[\"task 'cast' (task_id 2): "
        "produced_regst_desc['out'] (regst_desc 20): blob 'x'.shape: "
        "dimension 0 is 3 in the plan, but shape inference gives 2 ([2, "
        "3])\"]}");
}

TEST_CASE("a plan with feeds is for a program, not the command", "[cli]") {
  std::string path = WriteTemp("feed.pbtxt", R"pb(
    task {
      task_id: 1
      name: "in"
      kernel { op_type: "feed" }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 10
          producer_task_id: 1
          consumer_task_id: [ 2 ]
          register_num: 2
          blob {
            name: "x"
            data_type: DT_FLOAT32
            shape: [ 4 ]
          }
        }
      }
    }
    task {
      task_id: 2
      name: "sink"
      kernel { op_type: "checksum" }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 10 ] }
      }
    }
  )pb");
  CHECK(RunCli("validate '" + path + "'").exit_code == 0);
  CliResult r = RunCli("run '" + path + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.last_line ==
        "{\"status\":\"invalid\",\"errors\":[\"task 'in' (task_id 1): "
        "feed and fetch tasks connect a plan to a program; run this plan "
        "through a Session (actorflow/session.h), not the command\"]}");
}

TEST_CASE("a failing kernel exits 1 naming task and piece", "[cli]") {
  std::string path = WriteTemp("fail.pbtxt", R"pb(
    total_piece_num: 100
    task {
      task_id: 1
      name: "src"
      kernel { op_type: "source" }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 10
          producer_task_id: 1
          consumer_task_id: [ 2 ]
          register_num: 2
          elem_cnt: 4
        }
      }
    }
    task {
      task_id: 2
      name: "boom"
      stream { stream_index: 1 }
      kernel {
        op_type: "fail"
        attr {
          key: "at_piece"
          value { i: 42 }
        }
      }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 10 ] }
      }
    }
  )pb");
  CliResult r = RunCli("run '" + path + "'");
  CHECK(r.exit_code == 1);
  CHECK(r.last_line ==
        "{\"status\":\"error\",\"error\":\"task 'boom' (task_id 2) failed at "
        "piece 42: fail kernel: reached at_piece 42\"}");
}

TEST_CASE("arguments: help, unknown commands and options, missing files",
          "[cli]") {
  CliResult help = RunCli("--help");
  CHECK(help.exit_code == 0);
  CHECK(Contains(help.out, "actorflow run PLAN [--pieces=N]"));
  CHECK(RunCli("help").exit_code == 0);
  CliResult run_help = RunCli("run --help");
  CHECK(run_help.exit_code == 0);
  // The long help is every command's own --help, generated from the same
  // declarations: one flag's text, one place.
  CHECK(Contains(help.out, run_help.out));
  CHECK(Contains(run_help.out, "--checkpoint-dir=DIR"));
  CHECK(RunCli("help validate").out == RunCli("validate --help").out);
  CliResult no_such = RunCli("help deploy");
  CHECK(no_such.exit_code == 2);
  CHECK(Contains(no_such.err, "help: unknown command 'deploy'"));
  CHECK(Contains(RunCli("kernels extra").err, "unexpected argument 'extra'"));

  CliResult none = RunCli("");
  CHECK(none.exit_code == 2);
  CliResult unknown = RunCli("deploy x.pbtxt");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.last_line ==
        "{\"status\":\"invalid\",\"errors\":[\"unknown command 'deploy'\"]}");
  std::string plan = Runfile("examples/plans/quickstart.pbtxt");
  CHECK(RunCli("run --threads=4 '" + plan + "'").exit_code == 2);
  CHECK(RunCli("run --pieces=-1 '" + plan + "'").exit_code == 2);
  CHECK(RunCli("run --pieces=many '" + plan + "'").exit_code == 2);
  CHECK(RunCli("run '" + plan + "' extra").exit_code == 2);
  CliResult missing = RunCli("run /nonexistent/plan.pbtxt");
  CHECK(missing.exit_code == 2);
  CHECK(Contains(missing.last_line, "cannot open: No such file or directory"));

  CliResult kernels = RunCli("kernels");
#define kPipelineKernels                       \
  "pipeline.arith cpu\n"                       \
  "pipeline.batch cpu\n"                       \
  "pipeline.bb_flip cpu\n"                     \
  "pipeline.bbox_paste cpu\n"                  \
  "pipeline.box_encoder cpu\n"                 \
  "pipeline.brightness_contrast cpu\n"         \
  "pipeline.caffe_reader cpu\n"                \
  "pipeline.cast cpu\n"                        \
  "pipeline.cat cpu\n"                         \
  "pipeline.chain cpu\n"                       \
  "pipeline.color_space_conversion cpu\n"      \
  "pipeline.color_twist cpu\n"                 \
  "pipeline.coord_transform cpu\n"             \
  "pipeline.crop cpu\n"                        \
  "pipeline.crop_mirror_normalize cpu\n"       \
  "pipeline.decode cpu\n"                      \
  "pipeline.decode_random_crop cpu\n"          \
  "pipeline.decode_random_resized_crop cpu\n"  \
  "pipeline.decode_resize cpu\n"               \
  "pipeline.decode_slice cpu\n"                \
  "pipeline.erase cpu\n"                       \
  "pipeline.external_source cpu\n"             \
  "pipeline.file_reader cpu\n"                 \
  "pipeline.flip cpu\n"                        \
  "pipeline.function cpu\n"                    \
  "pipeline.gaussian_blur cpu\n"               \
  "pipeline.gaussian_noise cpu\n"              \
  "pipeline.hsv cpu\n"                         \
  "pipeline.idx_reader cpu\n"                  \
  "pipeline.jitter cpu\n"                      \
  "pipeline.jpeg_compression_distortion cpu\n" \
  "pipeline.math cpu\n"                        \
  "pipeline.npy_decode cpu\n"                  \
  "pipeline.one_hot cpu\n"                     \
  "pipeline.paste cpu\n"                       \
  "pipeline.peek_image_shape cpu\n"            \
  "pipeline.random_bbox_crop cpu\n"            \
  "pipeline.random_resized_crop cpu\n"         \
  "pipeline.recordio_reader cpu\n"             \
  "pipeline.reshape cpu\n"                     \
  "pipeline.resize cpu\n"                      \
  "pipeline.rotate cpu\n"                      \
  "pipeline.salt_and_pepper_noise cpu\n"       \
  "pipeline.scale_shift cpu\n"                 \
  "pipeline.shapes cpu\n"                      \
  "pipeline.shot_noise cpu\n"                  \
  "pipeline.sleep cpu\n"                       \
  "pipeline.slice cpu\n"                       \
  "pipeline.slice_at cpu\n"                    \
  "pipeline.sphere cpu\n"                      \
  "pipeline.stack cpu\n"                       \
  "pipeline.standardize cpu\n"                 \
  "pipeline.table_rows cpu\n"                  \
  "pipeline.tfrecord_reader cpu\n"             \
  "pipeline.transpose cpu\n"                   \
  "pipeline.warp_affine cpu\n"                 \
  "pipeline.water cpu\n"                       \
  "pipeline.webdataset_reader cpu\n"
  CHECK(kernels.exit_code == 0);
  // GPU kernels exist in builds with CUDA (whether or not a GPU is here).
  CHECK(kernels.out ==
        (cuda::BuiltWithCuda()
             ? "accuracy cpu gpu\nadd cpu gpu\nbias_add cpu gpu\n"
               "bias_add_grad cpu gpu\n"
               "cast cpu gpu\nchecksum cpu gpu\nconcat cpu\n"
               "d2h gpu\nfail cpu\nfeed cpu\nfetch cpu\n"
               "h2d gpu\nhead cpu gpu\nidentity cpu gpu\nidx_batches cpu\n"
               "image_batches cpu\nmatmul cpu gpu\n"
               "normalize cpu gpu\n" kPipelineKernels
               "relu cpu gpu\nrelu_grad cpu gpu\n"
               "scale cpu gpu\nsgd_momentum cpu gpu\nslice cpu\nsoftmax_xent "
               "cpu gpu\n"
               "source cpu gpu\nspin cpu gpu\nvariable cpu gpu\n"
             : "accuracy cpu\nadd cpu\nbias_add cpu\nbias_add_grad cpu\n"
               "cast cpu\nchecksum cpu\nconcat cpu\nfail cpu\n"
               "feed cpu\nfetch cpu\nhead cpu\nidentity cpu\nidx_batches cpu\n"
               "image_batches cpu\nmatmul cpu\n"
               "normalize cpu\n" kPipelineKernels "relu cpu\nrelu_grad cpu\n"
               "scale cpu\nsgd_momentum cpu\nslice cpu\nsoftmax_xent cpu\n"
               "source cpu\nspin cpu\nvariable cpu\n"));
}

TEST_CASE("launch: its flags and run's are checked before any rank starts",
          "[cli]") {
  const std::string plan = Runfile("examples/plans/quickstart.pbtxt");
  CliResult help = RunCli("launch --help");
  CHECK(help.exit_code == 0);
  CHECK(Contains(help.out, "actorflow launch --nproc=N PLAN"));
  CHECK(Contains(help.out, "--nproc=N"));
  CHECK(Contains(help.out, "--pieces=N"));  // run's flags, shown too
  struct Case {
    std::string args, error;
  };
  for (const Case& c : std::vector<Case>{
           {"launch '" + plan + "'", "launch: missing --nproc=N"},
           {"launch --nproc=2", "launch: missing PLAN"},
           {"launch --nproc=0 '" + plan + "'",
            "--nproc needs a number of processes in 1..1024, got '0'"},
           {"launch --nproc=2 --rank=1 '" + plan + "'",
            "launch: --rank is launch's to set (--nproc says how many)"},
           {"launch --nproc=2 --pieces=many '" + plan + "'",
            "--pieces needs a whole number >= 0, got 'many'"},
           {"launch --nproc=2 --bogus '" + plan + "'", "unknown flag --bogus"},
       }) {
    INFO(c.args);
    CliResult r = RunCli(c.args);
    CHECK(r.exit_code == 2);
    const Json line = ParseJson(r.last_line);
    REQUIRE(line.is_object());
    CHECK(line["status"] == "invalid");
    REQUIRE(line["errors"].size() == 1);
    CHECK(Contains(line["errors"][0].get<std::string>(), c.error));
    // Said once on stderr, with where the usage is.
    const size_t first = r.err.find(c.error);
    REQUIRE(first != std::string::npos);
    CHECK(r.err.find(c.error, first + 1) == std::string::npos);
  }
  CliResult usage = RunCli("run --bogus '" + plan + "'");
  CHECK(usage.exit_code == 2);
  CHECK(Contains(usage.err,
                 "error: unknown flag --bogus (flags: --pieces, --trace"));
  CHECK(Contains(usage.err, "(actorflow help for usage)"));
  CHECK(usage.err.find("unknown flag") == usage.err.rfind("unknown flag"));
}

TEST_CASE("the GPU pipeline equals its CPU twin, or is refused with the reason",
          "[cli][gpu]") {
  CliResult cpu =
      RunCli("run '" + Runfile("examples/plans/gpu_pipeline_cpu.pbtxt") + "'");
  CHECK(cpu.exit_code == 0);
  const std::string expected =
      "\"checksum\":{\"pieces\":1000,\"checksum\":2050048000,\"in_order\":"
      "true}";
  CHECK(Contains(cpu.last_line, expected));

  CliResult gpu =
      RunCli("run '" + Runfile("examples/plans/gpu_pipeline.pbtxt") + "'");
  // The same pipeline as a job: the compiler inserts the copies.
  CliResult job =
      RunCli("run '" + Runfile("examples/jobs/gpu_pipeline.pbtxt") + "'");
  if (cuda::DeviceAvailable(0).ok()) {
    CHECK(gpu.exit_code == 0);
    CHECK(Contains(gpu.last_line, expected));
    CHECK(job.exit_code == 0);
    CHECK(Contains(job.last_line, expected));
    return;
  }
  CHECK(job.exit_code == 2);
  CHECK(Contains(job.last_line,
                 "\"op 'triple': placement on gpu 0: this machine cannot "
                 "serve it: "));
  CHECK(Contains(job.last_line, "\"op 'add': placement on gpu 0: "));
  std::printf("gpu_pipeline refused here, as it must be: %s\n",
              gpu.last_line.c_str());
  CHECK(gpu.exit_code == 2);
  CHECK(
      Contains(gpu.last_line,
               "task 'h2d' (task_id 2): stream.device_type GPU (device 0): "));
  CHECK(Contains(gpu.last_line, cuda::BuiltWithCuda()
                                    ? "this machine cannot serve it"
                                    : "this build has no CUDA support"));
  CHECK(
      RunCli("validate '" + Runfile("examples/plans/gpu_pipeline.pbtxt") + "'")
          .exit_code == 2);
}

TEST_CASE("a custom kernel in its own target runs in its own runner", "[cli]") {
  std::string plan = Runfile("examples/custom_kernel/square.pbtxt");
  CliResult r =
      RunCli("run '" + plan + "'", ".", "", "examples/custom_kernel/runner");
  CHECK(r.exit_code == 0);
  CHECK(
      Contains(r.last_line,
               "\"sink\":{\"pieces\":10,\"checksum\":1540,\"in_order\":true}"));
  // The stock command does not know the kernel.
  CliResult stock = RunCli("validate '" + plan + "'");
  CHECK(stock.exit_code == 2);
  CHECK(Contains(stock.last_line, "unknown op_type 'square'"));
}

// Renders `dot_text` with Graphviz; its exit code (0: it parsed).
int RenderSvg(const std::string& name, const std::string& dot_text) {
  REQUIRE(std::system("command -v dot >/dev/null") == 0);  // tools/bazel
  const std::string path = WriteTemp(name + ".dot", dot_text);
  const std::string svg = path + ".svg";
  int status =
      std::system(("dot -Tsvg '" + path + "' -o '" + svg + "'").c_str());
  if (status != 0) return status;
  std::ifstream in(svg);
  std::string head(64, '\0');
  in.read(head.data(), head.size());
  return Contains(head, "<?xml") || Contains(head, "<svg") ? 0 : -1;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + part.size())) {
    ++n;
  }
  return n;
}

TEST_CASE("dot: the example plans as Graphviz, one cluster per stream",
          "[cli]") {
  // task count, stream count, consumed-register edges
  struct Expected {
    const char* plan;
    size_t tasks, streams, edges;
  };
  for (const Expected& e :
       {Expected{"quickstart", 5, 3, 5}, Expected{"pipeline8", 8, 2, 7},
        Expected{"gpu_pipeline_cpu", 6, 4, 6}, Expected{"typed", 5, 2, 4}}) {
    INFO(e.plan);
    CliResult r = RunCli(
        "dot '" + Runfile(std::string("examples/plans/") + e.plan + ".pbtxt") +
        "'");
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.rfind("digraph plan {", 0) == 0);
    CHECK(Count(r.out, "(task_id ") == e.tasks);
    CHECK(Count(r.out, "subgraph cluster_") == e.streams);
    CHECK(Count(r.out, " -> t") == e.edges);
    CHECK(Count(r.out, "register_num ") == e.edges);
    CHECK(RenderSvg(e.plan, r.out) == 0);
  }
  CliResult r =
      RunCli("dot '" + Runfile("examples/plans/quickstart.pbtxt") + "'");
  CHECK(Contains(r.out, "label=\"stream m0/cpu0/s1\""));
  CHECK(Contains(r.out,
                 "t1 -> t2 [label=\"regst 10: out -> in\\nregister_num "
                 "2\\ndata: float32 [256]\"];"));
}

TEST_CASE("dot: a cycle's initial register is dashed; names are escaped",
          "[cli]") {
  std::string path = WriteTemp("cycle.pbtxt", R"pb(
    total_piece_num: 4
    task {
      task_id: 1
      name: "w \"weights\""
      stream { stream_index: 0 }
      kernel {
        op_type: "variable"
        attr {
          key: "init"
          value { s: "uniform" }
        }
        attr {
          key: "scale"
          value { f: 1 }
        }
        attr {
          key: "seed"
          value { i: 7 }
        }
      }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 10
          producer_task_id: 1
          consumer_task_id: [ 2 ]
          register_num: 1
          initial_register: true
          blob {
            name: "w"
            data_type: DT_FLOAT32
            shape: [ 4 ]
          }
        }
      }
      consumed_regst_desc_id {
        key: "delta"
        value { regst_desc_id: [ 20 ] }
      }
    }
    task {
      task_id: 2
      name: "step"
      stream { stream_index: 1 }
      kernel { op_type: "add" }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 10, 30 ] }
      }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 20
          producer_task_id: 2
          consumer_task_id: [ 1 ]
          register_num: 1
        }
      }
    }
    task {
      task_id: 3
      name: "x"
      stream { stream_index: 1 }
      kernel { op_type: "source" }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 30
          producer_task_id: 3
          consumer_task_id: [ 2 ]
          register_num: 2
          elem_cnt: 4
        }
      }
    }
  )pb");
  CliResult r = RunCli("dot '" + path + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.out,
                 "t1 [label=\"w \\\"weights\\\"\\nvariable (task_id 1)\"];"));
  CHECK(Contains(r.out,
                 "t1 -> t2 [label=\"regst 10: out -> in\\nregister_num 1, "
                 "initial register\\nw: float32 [4]\", style=dashed];"));
  CHECK(Contains(r.out,
                 "t2 -> t1 [label=\"regst 20: out -> delta\\nregister_num "
                 "1\\nw: float32 [4]\"];"));
  CHECK(RenderSvg("cycle", r.out) == 0);
}

// src -> slow (spins `us` per piece, on its own thread) -> checksum.
std::string SlowPlan(const std::string& name, int64_t us, int64_t pieces) {
  return WriteTemp(name, R"pb(
                               total_piece_num:)pb" +
                             std::to_string(pieces) + R"pb(
                               task {
                                 task_id: 1
                                 name: "src"
                                 kernel { op_type: "source" }
                                 produced_regst_desc {
                                   key: "out"
                                   value {
                                     regst_desc_id: 10
                                     producer_task_id: 1
                                     consumer_task_id: [ 2 ]
                                     register_num: 2
                                     elem_cnt: 4
                                   }
                                 }
                               }
                               task { task_id: 2 name: "slow"
                                      stream { stream_index: 1 }
                                      kernel { op_type: "spin"
                                               attr { key: "us"
                                                      value { i:)pb" +
                             std::to_string(us) + R"pb(}
                                                       }
      }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 10 ] }
      }
      produced_regst_desc {
        key: "out"
        value {
          regst_desc_id: 20
          producer_task_id: 2
          consumer_task_id: [ 3 ]
          register_num: 2
          elem_cnt: 4
        }
      }
    }
    task {
      task_id: 3
      name: "sink"
      kernel { op_type: "checksum" }
      consumed_regst_desc_id {
        key: "in"
        value { regst_desc_id: [ 20 ] }
      }
    }
  )pb");
}

TEST_CASE("--stats: a table on stderr, the figures in the JSON line", "[cli]") {
  CliResult r =
      RunCli("run --stats " + Runfile("examples/plans/quickstart.pbtxt"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.err, "busy ms"));
  CHECK(Contains(r.err, "blocked in ms"));
  CHECK(Contains(r.err, "blocked out ms"));
  const Json line = ParseJson(r.last_line);
  REQUIRE(line.contains("stats"));
  const Json& stats = line["stats"];
  CHECK(stats.size() == 7);  // the tasks, "runtime" and "stalls"
  for (const char* task : {"source", "double", "triple", "add", "sink"}) {
    INFO(task);
    REQUIRE(stats.contains(task));
    // Every task acted once per piece.
    CHECK(stats[task]["acts"] == 1000);
    for (const char* figure :
         {"busy_ms", "blocked_on_inputs_ms", "blocked_on_outputs_ms"}) {
      INFO(figure);
      REQUIRE(stats[task][figure].is_number());
      CHECK(stats[task][figure].get<double>() >= 0);
    }
    CHECK(Contains(r.err, std::string("\n") + task));
  }
  // A source blocks on no input.
  CHECK(stats["source"]["blocked_on_inputs_ms"] == 0);
  // Each of the source's 2 registers holds 256 floats; the sink has none.
  CHECK(stats["source"]["register_bytes"] == 2 * 256 * 4);
  CHECK(stats["sink"]["register_bytes"] == 0);
  CHECK(Contains(r.err, "register bytes"));
  // What the run found of its CPUs, and its threads: the quick start's
  // three CPU streams on a thread each when the CPUs allow, else on as many
  // threads as the usable CPUs less those busy elsewhere.
  const Json& runtime = stats["runtime"];
  const int usable = runtime["usable_cpus"].get<int>();
  CHECK(usable >= 1);
  CHECK(usable <= runtime["affinity_cpus"].get<int>());
  CHECK(runtime["online_cpus"].get<int>() >=
        runtime["affinity_cpus"].get<int>());
  CHECK(runtime["cgroup_quota_cpus"].is_number());
  CHECK(runtime["streams"] == 3);
  CHECK(runtime["cpu_streams"] == 3);
  const int busy = runtime["busy_elsewhere"].get<int>();
  CHECK(busy >= 0);
  // A thread a stream where they fit; else one, as its acts are too short
  // to pay for hand-offs between threads.
  const int free_cpus = usable - busy;
  CHECK(runtime["cpu_threads"] == (free_cpus >= 3 ? 3 : 1));
  CHECK((runtime["estimated_piece_ns"].get<int64_t>() > 0) == (free_cpus == 2));
  CHECK(Contains(r.err, "usable CPUs: " + std::to_string(usable) + " ("));
  // Where it stalled, by stage (each task a stage of one here), the sink
  // standing for the caller: one verdict, also on stderr.
  const Json& stalls = stats["stalls"];
  for (const char* task : {"source", "double", "triple", "add", "sink"}) {
    INFO(task);
    REQUIRE(stalls["stages"].contains(task));
    CHECK(stalls["stages"][task]["threads"] == 1);
    CHECK(stalls["stages"][task]["acts"] == 1000);
    CHECK(stalls["stages"][task]["register_bytes"] ==
          stats[task]["register_bytes"]);
    for (const char* share : {"busy", "starved", "back_pressured"}) {
      const double value = stalls["stages"][task][share].get<double>();
      CHECK(value >= 0);
      CHECK(value <= 1.01);
    }
  }
  const double wait = stalls["last_tasks_wait"].get<double>();
  CHECK(wait == Approx(stalls["stages"]["sink"]["starved"].get<double>()));
  const std::string verdict = stalls["verdict"].get<std::string>();
  CHECK_THAT(verdict,
             Catch::Matches("input-bound [0-9]+ %: (source|double|triple|add|"
                            "sink), [01] of 1 thread busy [0-9]+ %|the last "
                            "tasks are the bottleneck: they waited [0-9] % of "
                            "the time for input"));
  CHECK(Contains(r.err, "stalls: " + verdict + "\n"));
  // Without --stats there is no table and no "stats".
  CliResult plain = RunCli("run " + Runfile("examples/plans/quickstart.pbtxt"));
  CHECK_FALSE(Contains(plain.last_line, "\"stats\""));
  CHECK_FALSE(Contains(plain.err, "busy ms"));
}

TEST_CASE("--cpus and ACTORFLOW_CPUS set the usable CPUs", "[cli]") {
  const std::string plan = Runfile("examples/plans/quickstart.pbtxt");
  auto runtime_of = [](const CliResult& r) {
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const Json line = ParseJson(r.last_line);
    // The same sums whatever the threads.
    CHECK(line["sinks"]["sink"]["checksum"] == 640640000);
    return line["stats"]["runtime"];
  };
  Json one =
      runtime_of(RunCli("run --stats " + plan, ".", "ACTORFLOW_CPUS=1 "));
  CHECK(one["usable_cpus"] == 1);
  CHECK(one["cpus_from"] == "ACTORFLOW_CPUS");
  CHECK(one["cpu_threads"] == 1);
  CHECK(one["threads"] == 1);
  // The flag wins over the variable; a thread per stream once they fit.
  Json three = runtime_of(
      RunCli("run --stats --cpus=3 " + plan, ".", "ACTORFLOW_CPUS=1 "));
  CHECK(three["usable_cpus"] == 3);
  CHECK(three["cpus_from"] == "SessionOptions");
  CHECK(three["cpu_threads"] == 3);
  CHECK(three["sharing"] == "none");
  // Three streams on two threads: its acts are too short to pay for
  // hand-offs, so one thread; blocks of 3 and 2 tasks, or any thread, on
  // request, with the same sums.
  Json auto_placed = runtime_of(RunCli("run --stats --cpus=2 " + plan));
  CHECK(auto_placed["cpu_threads"] == 1);
  CHECK(auto_placed["sharing"] == "consecutive");
  CHECK(auto_placed["estimated_piece_ns"] > 0);
  Json blocks =
      runtime_of(RunCli("run --stats --cpus=2 --sharing=consecutive " + plan));
  CHECK(blocks["sharing"] == "consecutive");
  CHECK(blocks["cpu_threads"] == 2);
  CHECK(blocks["estimated_piece_ns"] == 0);
  Json pooled =
      runtime_of(RunCli("run --stats --cpus=2 --sharing=any_thread " + plan));
  CHECK(pooled["sharing"] == "any_thread");
  CHECK(pooled["cpu_threads"] == 2);
  CHECK(pooled["threads"] == 2);
  CliResult sharing = RunCli("run --sharing=sometimes " + plan);
  CHECK(sharing.exit_code == 2);
  CHECK(Contains(sharing.err,
                 "--sharing is auto, consecutive or any_thread, got "
                 "'sometimes'"));
  // Bad values: exit 2, named.
  CliResult bad = RunCli("run " + plan, ".", "ACTORFLOW_CPUS=lots ");
  CHECK(bad.exit_code == 2);
  CHECK(Contains(bad.err,
                 "ACTORFLOW_CPUS='lots': give a whole number of "
                 "CPUs >= 1"));
  CliResult flag = RunCli("run --cpus=0 " + plan);
  CHECK(flag.exit_code == 2);
  CHECK(Contains(flag.err, "--cpus needs a whole number >= 1, got '0'"));
}

TEST_CASE("--stall: a kernel that does not return gets a hang report",
          "[cli]") {
  // 30 s per piece: nothing acts after the first piece reaches `slow`.
  // --cpus: a thread per stream whatever else keeps the machine busy (on a
  // busy one the two streams would share a thread, and the sink's thread
  // would be the stuck one).
  std::string plan = SlowPlan("stall.pbtxt", 30 * 1000 * 1000, 10);
  CliResult r = RunCli("run --cpus=2 --stall=0.5 '" + plan + "'");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(Contains(r.last_line, "{\"status\":\"error\",\"error\":\"hang report"));
  CHECK(Contains(r.err, "hang report: no task acted for"));
  CHECK(Contains(r.err,
                 "task 'slow' (task_id 2) [spin on m0/cpu0/s1]: its "
                 "kernel has been running for"));
  CHECK(Contains(r.err,
                 "task 'sink' (task_id 3) [checksum on m0/cpu0/s0, 0 "
                 "acts]: waits for input 'in' (regst_desc 20): nothing "
                 "ready from 'slow'"));
  // The stuck thread is the one left behind, and the message says so.
  CHECK(Contains(r.err,
                 "its thread (stream m0/cpu0/s1) is left running and "
                 "is not joined"));
}

TEST_CASE("--timeout: a run that takes too long is stopped and reported",
          "[cli]") {
  // 1000 pieces of 20 ms: 20 s, against a 0.5 s deadline. Each kernel
  // returns soon after the cancel, so every thread is joined.
  std::string plan = SlowPlan("slow.pbtxt", 20 * 1000, 1000);
  CliResult r = RunCli("run --timeout=0.5 '" + plan + "'");
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(Contains(r.err,
                 "hang report: the run did not end within its timeout "
                 "of 0.50 s"));
  CHECK(Contains(r.err, "task 'src' (task_id 1)"));
  CHECK_FALSE(Contains(r.err, "left running"));
  // The same plan within generous limits runs to the end.
  CliResult ok =
      RunCli("run --pieces=5 --timeout=600 --stall=600 '" + plan + "'");
  CHECK(ok.exit_code == 0);
  CHECK(Contains(ok.last_line, "\"sink\":{\"pieces\":5,"));
}

TEST_CASE("--progress forces the progress line, --no-progress hides it",
          "[cli]") {
  const std::string quickstart = Runfile("examples/plans/quickstart.pbtxt");
  CliResult on = RunCli("run --progress " + quickstart);
  INFO(on.err);
  CHECK(on.exit_code == 0);
  // stderr is not a terminal here: whole lines, the last at the end.
  CHECK(Contains(on.err, "progress: 1000/1000 pieces, "));
  CliResult off = RunCli("run --no-progress " + quickstart);
  CHECK(off.exit_code == 0);
  CHECK_FALSE(Contains(off.err, "progress:"));
  // Not a terminal and not forced: no line either.
  CHECK_FALSE(Contains(RunCli("run " + quickstart).err, "progress:"));
}

TEST_CASE("--stats-every: a stalls line per window, the last one at the end",
          "[cli]") {
  // However short the run, the last window's line comes when it ends.
  CliResult r = RunCli("run --stats-every=60 " +
                       Runfile("examples/plans/quickstart.pbtxt"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Matches("(.|\n)*stalls [0-9.]+-[0-9.]+ s: [0-9]+ "
                                   "pieces/s; (input-bound|the last tasks)"
                                   "[^\n]*; registers 8.0 KiB\n(.|\n)*"));
  // Live lines only: no table, no "stats" in the JSON line.
  CHECK_FALSE(Contains(r.err, "busy ms"));
  CHECK_FALSE(Contains(r.last_line, "\"stats\""));
}

TEST_CASE("--timeout and --stall need a positive number of seconds", "[cli]") {
  const std::string quickstart = Runfile("examples/plans/quickstart.pbtxt");
  for (const char* bad : {"--timeout=0", "--timeout=-1", "--timeout=",
                          "--stall=abc", "--stall=nan", "--stats-every=0"}) {
    INFO(bad);
    CliResult r = RunCli(std::string("run ") + bad + " " + quickstart);
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.last_line, "needs a number of seconds > 0"));
  }
}

}  // namespace
