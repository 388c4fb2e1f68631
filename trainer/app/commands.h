// fabtrain's subcommands (one file each).
#pragma once

#include <CLI/CLI.hpp>

namespace fabkit::trainer {

void register_export_command(CLI::App& app, int* exit_code);
void register_control_command(CLI::App& app, int* exit_code);  // control_command.cc
void register_chat_command(CLI::App& app, int* exit_code);     // chat_command.cc
void register_serve_command(CLI::App& app, int* exit_code);    // serve_command.cc

}  // namespace fabkit::trainer
