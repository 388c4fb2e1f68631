// fabtrain: fine-tune a Llama-family decoder across ranks with the fabric settings a profile
// validated. `fabtrain [train] --profile cluster.json --model DIR --data train.jsonl [options]`,
// `fabtrain export`, `fabtrain eval`, `fabtrain control` (its own codes: control_client.h),
// `fabtrain serve`, `fabtrain chat` (chat_client.h). Exit codes: 0 done; 1 the node disagrees
// with the profile; 2 bad flags/files/env; 3 a rank, the fabric or an invariant failed.
#include <cstdlib>
#include <iostream>

#include "common/errors.h"
#include "trainer/app/commands.h"
#include "trainer/app/error_exit.h"
#include "trainer/app/fabric_setup.h"
#include "trainer/app/train_options.h"
#include "trainer/distributed/comm.h"
#ifdef FABTRAIN_HAVE_EVAL
#include "trainer/eval/eval_command.h"  // train-model's `fabtrain eval`
#endif

namespace {

// Leaves without running destructors (error_exit.h says why).
[[noreturn]] void die(int code, const std::string& what) { fabkit::trainer::exit_with_error(code, what); }

}  // namespace

int main(int argc, char** argv) {
  using namespace fabkit::trainer;
  std::vector<std::string> args(argv, argv + argc);
  // `fabtrain --model ...` means `fabtrain train --model ...`.
  if (argc > 1 && argv[1][0] == '-' && std::string(argv[1]) != "--help" && std::string(argv[1]) != "-h") {
    args.insert(args.begin() + 1, "train");
  }

  CLI::App app{"fabtrain: sharded (FSDP-style) training of Llama-family models with validated fabric settings"};
  app.require_subcommand(1);
  int exit_code = 0;
  TrainOptions train;
  CLI::App* train_cmd = app.add_subcommand("train", "train (the default command)");
  bind_train_options(*train_cmd, train);
  train_cmd->callback([&] { exit_code = run_train(train, args); });
  register_export_command(app, &exit_code);
  register_control_command(app, &exit_code);
  register_chat_command(app, &exit_code);
  register_serve_command(app, &exit_code);
#ifdef FABTRAIN_HAVE_EVAL
  register_eval_command(app, &exit_code);
#endif

  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A bad flag or value is bad usage, exit 2 like every other refusal (CLI11's own codes,
    // 105-109, would say nothing a launcher script could test for).
    app.exit(e);
    return 2;
  } catch (const ValidationRefused& e) {
    die(1, e.what());
  } catch (const fabkit::UsageError& e) {
    die(2, e.what());
  } catch (const CommError& e) {
    die(3, e.what());
  } catch (const std::exception& e) {
    die(3, e.what());
  }
  std::cout.flush();
  std::cerr.flush();
  // Clean runs also skip static destructors of LibTorch's thread pools (measured: no effect on
  // output; avoids a rare hang at exit with live Gloo threads).
  std::_Exit(exit_code);
}
