#include "plan/plan_dot.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plan/plan_util.h"

namespace actorflow::internal {
namespace {

// A DOT double-quoted string: quotes and backslashes escaped, so any task or
// blob name stays one token. Line breaks are added by the caller as "\n".
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string NodeId(int64_t task_id) { return absl::StrCat("t", task_id); }

struct Produced {
  const TaskProto* producer = nullptr;
  std::string name;  // the producer's name for it
  const RegisterDescProto* desc = nullptr;
};

}  // namespace

std::string PlanToDot(const CompiledPlan& compiled) {
  const Plan& plan = compiled.plan;
  // Streams in order of first appearance, as ThreadMgr numbers its threads.
  std::vector<std::string> streams;
  std::map<std::string, std::vector<const TaskProto*>> tasks_by_stream;
  std::map<int64_t, Produced> produced;
  for (const TaskProto& task : plan.task()) {
    const std::string stream = ToStreamKey(task.stream()).ToString();
    if (!tasks_by_stream.count(stream)) streams.push_back(stream);
    tasks_by_stream[stream].push_back(&task);
    for (const auto& [name, desc] : SortedOutputs(task)) {
      produced[desc->regst_desc_id()] = Produced{&task, name, desc};
    }
  }

  std::string dot = "digraph plan {\n  rankdir=LR;\n  node [shape=box];\n";
  for (size_t s = 0; s < streams.size(); ++s) {
    absl::StrAppend(&dot, "  subgraph cluster_", s, " {\n    label=",
                    Quoted(absl::StrCat("stream ", streams[s])), ";\n");
    for (const TaskProto* task : tasks_by_stream[streams[s]]) {
      absl::StrAppend(
          &dot, "    ", NodeId(task->task_id()), " [label=",
          Quoted(absl::StrCat(task->name(), "\n", task->kernel().op_type(),
                              " (task_id ", task->task_id(), ")")),
          "];\n");
    }
    dot += "  }\n";
  }
  for (const TaskProto& task : plan.task()) {
    for (const auto& [input, ids] : SortedInputs(task)) {
      for (int64_t id : ids) {
        auto found = produced.find(id);
        if (found == produced.end()) continue;  // the validator refuses it
        const Produced& from = found->second;
        std::vector<std::string> lines = {
            absl::StrCat("regst ", id, ": ", from.name, " -> ", input),
            absl::StrCat(
                "register_num ", from.desc->register_num(),
                from.desc->initial_register() ? ", initial register" : "")};
        auto blobs = compiled.blobs.find(id);
        if (blobs != compiled.blobs.end()) {
          for (const BlobDesc& blob : blobs->second) {
            lines.push_back(blob.ToString());
          }
          if (blobs->second.empty()) lines.push_back("(control token)");
        }
        absl::StrAppend(&dot, "  ", NodeId(from.producer->task_id()), " -> ",
                        NodeId(task.task_id()),
                        " [label=", Quoted(absl::StrJoin(lines, "\n")),
                        from.desc->initial_register() ? ", style=dashed" : "",
                        "];\n");
      }
    }
  }
  dot += "}\n";
  return dot;
}

}  // namespace actorflow::internal
