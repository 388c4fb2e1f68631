// `fabtrain control list | status JOB | stop JOB | save JOB | abort JOB | cleanup [--json]`:
// talks to running jobs on this node (trainer/control/control_client.h does the work).
#include <iostream>
#include <memory>

#include "common/environment.h"
#include "trainer/app/commands.h"
#include "trainer/control/control_client.h"

namespace fabkit::trainer {

void register_control_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<control::ControlArgs>();
  CLI::App* cmd = app.add_subcommand(
      "control", "list, inspect and stop running fabtrain jobs on this node (docs/fabtrain.md)");
  cmd->add_option("command", args->command, "list | status | stop | save | abort | cleanup")
      ->required()
      ->check(CLI::IsMember({"list", "status", "stop", "save", "abort", "cleanup"}));
  cmd->add_option("job", args->job, "job id (as `list` shows it) or the job's pid");
  cmd->add_flag("--json", args->json, "print the job's JSON reply (or list/cleanup as JSON)");
  cmd->add_option("--timeout-ms", args->timeout_ms, "per job contacted (default 5000)");
  cmd->callback([args, exit_code] {
    control::ControlOutcome o = control::run_control(*args, Environment::from_process());
    std::cout << o.out;
    std::cerr << o.err;
    *exit_code = o.exit_code;
  });
}

}  // namespace fabkit::trainer
