// `actorflow kernels`: the op_types this binary can run.
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/kernel.h"
#include "cli/command.h"
#include "cli/commands.h"

namespace actorflow::internal::cli {
namespace {

class KernelsCommand : public Command {
 public:
  KernelsCommand()
      : Command("actorflow kernels [--load=LIB.so]",
                "Lists the kernels linked into this binary and loaded with "
                "--load: one op_type per line, then the devices it has a "
                "kernel for (cpu, gpu).") {}

  int Run(const std::vector<std::string>&) override {
    const KernelRegistry& registry = KernelRegistry::Get();
    std::set<std::string> ops;
    for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kGpu}) {
      for (const std::string& op : registry.op_types(device)) ops.insert(op);
    }
    for (const std::string& op : ops) {
      std::string devices;
      for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kGpu}) {
        if (registry.Has(op, device)) {
          absl::StrAppend(&devices, " ", DeviceKindName(device));
        }
      }
      std::printf("%s%s\n", op.c_str(), devices.c_str());
    }
    return kExitOk;
  }
};

}  // namespace

std::unique_ptr<Command> MakeKernelsCommand() {
  return std::make_unique<KernelsCommand>();
}

}  // namespace actorflow::internal::cli
