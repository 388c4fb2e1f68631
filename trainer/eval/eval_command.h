// `fabtrain eval`: registered by the fabtrain main (trainer/app).
#pragma once

#include <CLI/CLI.hpp>

namespace fabkit::trainer {

void register_eval_command(CLI::App& app, int* exit_code);

}  // namespace fabkit::trainer
