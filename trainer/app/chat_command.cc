// `fabtrain chat --message TEXT [--url URL] ...`: one chat message to a running `fabtrain serve`
// (or any OpenAI-compatible server), the reply printed as it streams (serve/client/chat_client.h
// does the work).
#include <iostream>
#include <memory>

#include "trainer/app/commands.h"
#include "trainer/serve/client/chat_client.h"

namespace fabkit::trainer {

void register_chat_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<fabkit::serve::ChatArgs>();
  auto no_stream = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "chat", "send one chat message to a fabtrain serve server and print the reply "
              "(docs/fabtrain-serve.md)");
  cmd->add_option("--message,-m", args->message, "the user's message")->required();
  cmd->add_option("--url", args->url, "the server (default http://127.0.0.1:8000)");
  cmd->add_option("--system", args->system, "a system message sent before it");
  cmd->add_option("--model", args->model, "the model name (default: the server's first)");
  cmd->add_option("--max-tokens", args->max_tokens, "the most tokens to generate");
  cmd->add_option("--temperature", args->temperature, "0 = greedy");
  cmd->add_option("--seed", args->seed, "sampling seed");
  cmd->add_flag("--no-stream", *no_stream, "wait for the whole reply instead of streaming it");
  cmd->add_option("--api-key-file", args->api_key_file, "a file holding the server's bearer token");
  cmd->add_option("--timeout-s", args->timeout_s, "connect and read timeout (default 120)");
  cmd->add_flag("--usage", args->usage, "print the token counts to stderr afterwards");
  cmd->callback([args, no_stream, exit_code] {
    args->stream = !*no_stream;
    *exit_code = fabkit::serve::run_chat(*args, std::cout, std::cerr);
  });
}

}  // namespace fabkit::trainer
