// fabtrain eval --model DIR --data FILE: mean token loss and perplexity of a model on a JSONL
// file (every record, file order, no split). Used to check correctness against a reference.
#include "trainer/eval/eval_command.h"

#include <ATen/Parallel.h>

#include <iomanip>
#include <iostream>
#include <memory>

#include "common/errors.h"
#include "common/report.h"
#include "trainer/data/dataset.h"
#include "trainer/distributed/thread_plan.h"
#include "trainer/eval/evaluate.h"
#include "trainer/model/pretrained.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace {

struct EvalArgs {
  std::string model_dir;
  std::string data;
  int64_t max_length = 512;
  size_t batch_size = 4;
  std::string dtype = "float32";
  std::string text_column = "text";
  std::string format = "auto";
  bool no_packing = false;
  bool skip_bad_lines = false;
  bool json = false;
};

int run_eval(const EvalArgs& a) {
  // The same thread plan as training (thread_plan.h): one process, so the BLAS pool gets every
  // allowed core and ATen's element-wise ops stay on this thread.
  const ThreadPlan plan = plan_threads(gather_thread_facts(Environment::from_process(), 1, std::nullopt, std::nullopt));
  apply_blas_threads(plan);
  at::set_num_threads(plan.intra_op);
  LoadOptions lo;
  lo.dtype = parse_dtype_name(a.dtype);
  LoadedModel m = load_pretrained(a.model_dir, lo);
  auto tok = load_tokenizer(a.model_dir);
  DataOptions o;
  o.format = parse_data_format(a.format);
  o.text_column = a.text_column;
  o.max_length = a.max_length;
  o.packing = !a.no_packing;
  o.skip_bad_lines = a.skip_bad_lines;
  o.vocab_size = m.config.vocab_size;
  LoadedData d = load_dataset(a.data, *tok, o);
  m.model->eval();
  EvalResult r = evaluate(*m.model, d.train, a.batch_size);
  if (a.json) {
    // schema_version and kind first, as every fabkit --json document (docs/json-schema.md).
    Json j{{"schema_version", 1}, {"kind", "eval"}};
    j.update(to_json(r));
    j["model"] = a.model_dir;
    j["data"] = a.data;
    j["random_init"] = m.random_init;
    j["dtype"] = a.dtype;
    j["max_length"] = a.max_length;
    j["lines_skipped"] = d.train_stats.lines_skipped;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << std::setprecision(6) << "mean_loss " << r.mean_loss << "\nperplexity " << r.perplexity
              << "\ntokens " << r.tokens << "\nexamples " << r.examples << "\n";
    if (m.random_init) std::cerr << "fabtrain eval: note: " << a.model_dir << " has no weights; random init\n";
    if (d.train_stats.lines_skipped)
      std::cerr << "fabtrain eval: skipped " << d.train_stats.lines_skipped << " bad lines\n";
  }
  return kExitClean;
}

// Same exit-code mapping as cli/command.cc (UsageError 2, anything else 3), kept here because
// fabtrain does not link fabcheck's cli/ objects.
int guarded(const EvalArgs& a) {
  auto fail = [&](int code, const std::string& msg) {
    if (a.json)
      std::cout << Json{{"schema_version", 1},
                        {"kind", "eval"},
                        {"error", {{"command", "eval"}, {"exit_code", code}, {"message", msg}}}}
                       .dump(2)
                << "\n";
    else
      std::cerr << "fabtrain eval: " << msg << "\n";
    return code;
  };
  try {
    return run_eval(a);
  } catch (const UsageError& e) {
    return fail(kExitUsage, e.what());
  } catch (const std::exception& e) {
    return fail(kExitInternal, std::string("internal error: ") + e.what());
  }
}

}  // namespace

void register_eval_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<EvalArgs>();
  auto* sub = app.add_subcommand("eval", "Mean token loss and perplexity of a model on a JSONL file");
  sub->add_option("--model", a->model_dir, "HF model directory (config.json [+ safetensors, tokenizer.model])")
      ->required();
  sub->add_option("--data", a->data, "JSONL file (text column, input_ids or chat messages)")->required();
  sub->add_option("--max-length", a->max_length, "Tokens per example (packed blocks)")->capture_default_str();
  sub->add_option("--batch-size", a->batch_size, "Examples per forward pass")->capture_default_str();
  sub->add_option("--dtype", a->dtype, "float32 | bfloat16 | float16")->capture_default_str();
  sub->add_option("--text-column", a->text_column, "Column holding the text")->capture_default_str();
  sub->add_option("--format", a->format, "auto | text | input_ids | chat")->capture_default_str();
  sub->add_flag("--no-packing", a->no_packing, "One example per record, padded (default: packed)");
  sub->add_flag("--skip-bad-lines", a->skip_bad_lines, "Skip (and count) malformed lines");
  sub->add_flag("--json", a->json, "Print the result as JSON");
  sub->callback([a, exit_code] { *exit_code = guarded(*a); });
}

}  // namespace fabkit::trainer
