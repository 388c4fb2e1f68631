// fabcheck: find the silent fabric failures before a job burns GPU hours.
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/ship_option.h"
#include "common/build_info.h"
#include "common/errors.h"
#include "common/report.h"
#include "reports/report_render.h"

int main(int argc, char** argv) {
  CLI::App app{"fabcheck: check RDMA/RoCE/socket fabrics for multi-node GPU training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fabcheck ") + fabkit::fabkit_version());
  int exit_code = fabkit::kExitClean;

  fabkit::cli::register_node_command(app, &exit_code);
  fabkit::cli::register_nccl_log_command(app, &exit_code);  // [nccl-log]
  fabkit::cli::register_topo_command(app, &exit_code);  // [topo]
  fabkit::cli::register_profile_command(app, &exit_code);  // [profile]
  fabkit::cli::register_emit_env_command(app, &exit_code);  // [profile]
  fabkit::cli::register_validate_command(app, &exit_code);  // [profile]
  fabkit::cli::register_pair_command(app, &exit_code);  // [pair]
  fabkit::cli::register_agent_command(app, &exit_code);  // [pair]
  fabkit::cli::register_cluster_command(app, &exit_code);  // [cluster]
  fabkit::cli::register_report_command(app, &exit_code);  // [report]
  // [register commands]

  try {
    fabkit::cli::verify_shipped_copy();  // a copy fabcheck --ship put on this host runs only there
    app.parse(argc, argv);
  } catch (const fabkit::UsageError& e) {
    std::cerr << "fabcheck: " << e.what() << std::endl;
    return fabkit::kExitUsage;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    bool json = false;
    for (int i = 1; i < argc; ++i) json = json || std::strcmp(argv[i], "--json") == 0;
    if (json) {
      fabkit::reports::render_error_json("usage", fabkit::kExitUsage, e.what(), std::cout);
    } else {
      app.exit(e);
    }
    return fabkit::kExitUsage;
  }
  return exit_code;
}
