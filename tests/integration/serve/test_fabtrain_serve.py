#!/usr/bin/env python3
"""`fabtrain serve` end to end: the real binary on a tiny random Llama that transformers makes here
(no tokenizer files, so fabkit's byte tokenizer; a ChatML chat template), answering
`fabtrain chat` and raw HTTP on 127.0.0.1.

- greedy /v1/completions on token ids generates what transformers' generate() does: the same
  text (the model can only choose printable ASCII or EOS), as many tokens, the same finish reason;
- `fabtrain chat` streamed and whole print the same greedy reply, and /v1/models names the model;
- a model folder without weights is refused (exit 2, naming `fabtrain export`); SIGTERM ends the
  server with exit 0;
- a fabtrain checkpoint (two steps trained from the model here) is served directly and answers
  what its `fabtrain export` answers, with the tokenizer and chat template of the model folder
  its run recorded; when that folder is gone it is refused naming --tokenizer-dir, which works;
- `--device cuda` on a machine without a visible GPU is refused (exit 2) naming the device.

Run by ctest with FABKIT_PYTHON (.venv's, which has transformers pinned); it skips, saying so,
when that interpreter cannot import transformers.
"""
import argparse, json, os, re, select, shutil, signal, subprocess, sys, tempfile, time, unittest
import urllib.request

FABTRAIN = None
EOS = 257  # the byte tokenizer's </s>
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def make_model(d):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=261, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         rms_norm_eps=1e-5, initializer_range=0.15, bos_token_id=256,
                         eos_token_id=EOS, pad_token_id=258, tie_word_embeddings=False)
    torch.manual_seed(3)
    model = LlamaForCausalLM(config).eval()
    # Only printable ASCII and EOS can win a greedy step: every other token's output row is zero
    # (logit 0, below the best of ~95 random ones), so the reply's text compares byte for byte.
    with torch.no_grad():
        for t in range(config.vocab_size):
            if not (32 <= t < 127 or t == EOS):
                model.lm_head.weight[t].zero_()
    model.save_pretrained(d)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": CHATML, "bos_token": "<s>", "eos_token": "</s>"}, f)
    return model


def hf_greedy(model, prompt, max_new):
    import torch
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=max_new,
                             eos_token_id=EOS, pad_token_id=258)
    return out[0, len(prompt):].tolist()


class Server:
    def __init__(self, model_dir, *more):
        # On the CPU, also on a machine with a GPU: the greedy text is compared with generate()
        # on the CPU (the GPU's path is DecodeOnCuda.* in serve_engine_test, run by gpu-check).
        self.proc = subprocess.Popen([FABTRAIN, "serve", "--model", model_dir, "--port", "0",
                                      "--max-batch", "4", "--max-queue", "8", "--device", "cpu",
                                      *more],
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        self.log = b""
        deadline = time.time() + 120
        while time.time() < deadline:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if r:
                chunk = os.read(self.proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                self.log += chunk
                m = re.search(rb"listening on (http://127\.0\.0\.1:\d+)/v1", self.log)
                if m:
                    self.url = m.group(1).decode()
                    return
        self.proc.kill()
        raise AssertionError("fabtrain serve did not say where it listens:\n" + self.log.decode())

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.log += self.proc.stderr.read()
        self.proc.stderr.close()
        return rc


def chat(url, *more):
    return subprocess.run([FABTRAIN, "chat", "--url", url, "--timeout-s", "60", *more],
                          capture_output=True, timeout=120)


class FabtrainServe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            import transformers  # noqa: F401
        except ImportError as e:
            raise unittest.SkipTest(f"{sys.executable} cannot import transformers ({e}): "
                                    "run scripts/setup-python")
        cls.dir = tempfile.mkdtemp(prefix="fabtrain-serve-")
        cls.model_dir = os.path.join(cls.dir, "tiny")
        cls.model = make_model(cls.model_dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_greedy_completions_and_chat_through_the_real_binary(self):
        s = Server(self.model_dir)
        try:
            models = json.loads(urllib.request.urlopen(s.url + "/v1/models", timeout=30).read())
            self.assertEqual([m["id"] for m in models["data"]], ["tiny"])
            for prompt in ([256, 72, 105], [256, 10, 20, 30, 40, 50], [256]):
                want = hf_greedy(self.model, prompt, 12)
                got = s.post("/v1/completions", {"model": "tiny", "prompt": prompt,
                                                 "max_tokens": 12, "temperature": 0})
                choice = got["choices"][0]
                self.assertEqual(choice["finish_reason"], "stop" if want[-1] == EOS else "length",
                                 f"prompt {prompt}: transformers generated {want}")
                self.assertEqual(got["usage"]["prompt_tokens"], len(prompt))
                self.assertEqual(got["usage"]["completion_tokens"], len(want), f"prompt {prompt}")
                text_ids = [t for t in want if t != EOS]
                self.assertTrue(all(32 <= t < 127 for t in text_ids), want)  # make_model's rows
                self.assertEqual(choice["text"], bytes(text_ids).decode(), f"prompt {prompt}")
            streamed = chat(s.url, "-m", "Hi", "--temperature", "0", "--max-tokens", "10")
            whole = chat(s.url, "-m", "Hi", "--temperature", "0", "--max-tokens", "10",
                         "--no-stream", "--usage")
            self.assertEqual(streamed.returncode, 0, streamed.stderr.decode())
            self.assertEqual(whole.returncode, 0, whole.stderr.decode())
            self.assertEqual(streamed.stdout, whole.stdout)
            self.assertRegex(whole.stderr.decode(), r"usage: prompt_tokens \d+, completion_tokens \d+")
        finally:
            rc = s.stop()
        self.assertEqual(rc, 0, s.log.decode())

    def greedy_texts(self, server, name):
        out = []
        for prompt in ([256, 72, 105], [256, 10, 20, 30, 40, 50]):
            got = server.post("/v1/completions", {"model": name, "prompt": prompt,
                                                  "max_tokens": 10, "temperature": 0})
            out.append((got["choices"][0]["text"], got["usage"]["completion_tokens"]))
        chat = server.post("/v1/chat/completions", {
            "model": name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8,
            "temperature": 0})
        out.append((chat["choices"][0]["message"]["content"], chat["usage"]["prompt_tokens"]))
        return out

    def test_a_checkpoint_is_served_as_its_export_is(self):
        # Trained from a copy of the model folder, which the checkpoint records as its model_dir.
        src = os.path.join(self.dir, "trained-from")
        shutil.copytree(self.model_dir, src)
        data = os.path.join(self.dir, "train.jsonl")
        with open(data, "w") as f:
            for i in range(16):
                f.write(json.dumps({"input_ids": [256] + [32 + (i * 7 + k) % 90 for k in range(16)]}) + "\n")
        run_dir = os.path.join(self.dir, "run")
        r = subprocess.run([FABTRAIN, "train", "--model", src, "--data", data, "--output", run_dir,
                            "--max-steps", "2", "--max-length", "16", "--micro-batch-size", "2",
                            "--format", "input_ids", "--lr", "5e-2", "--warmup-steps", "1",
                            "--device", "cpu"],
                           capture_output=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-3000:])
        ckpts = sorted(d for d in os.listdir(run_dir) if d.startswith("checkpoint-"))
        self.assertTrue(ckpts, os.listdir(run_dir))
        ckpt = os.path.join(run_dir, ckpts[-1])
        exported = os.path.join(self.dir, "exported")
        r = subprocess.run([FABTRAIN, "export", "--checkpoint", ckpt, "--out", exported],
                           capture_output=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr.decode())

        s = Server(ckpt, "--served-model-name", "tuned")
        try:
            from_checkpoint = self.greedy_texts(s, "tuned")
        finally:
            rc = s.stop()
        self.assertEqual(rc, 0, s.log.decode())
        self.assertIn("fabtrain serve: checkpoint " + ckpt, s.log.decode())
        self.assertIn("tokenizer from " + src, s.log.decode())
        s = Server(exported, "--served-model-name", "tuned")
        try:
            from_export = self.greedy_texts(s, "tuned")
        finally:
            self.assertEqual(s.stop(), 0, s.log.decode())
        self.assertEqual(from_checkpoint, from_export)
        # Trained: the weights moved, so the replies are not the untrained model's.
        s = Server(self.model_dir, "--served-model-name", "tuned")
        try:
            untrained = self.greedy_texts(s, "tuned")
        finally:
            self.assertEqual(s.stop(), 0, s.log.decode())
        self.assertNotEqual(from_checkpoint, untrained)

        # The recorded model folder gone: refused, naming the flag that fixes it; the flag works.
        shutil.rmtree(src)
        r = subprocess.run([FABTRAIN, "serve", "--model", ckpt, "--port", "0", "--device", "cpu"],
                           capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("--tokenizer-dir", r.stderr.decode())
        self.assertIn(src + " is not a directory here", r.stderr.decode())
        s = Server(ckpt, "--served-model-name", "tuned", "--tokenizer-dir", self.model_dir)
        try:
            self.assertEqual(self.greedy_texts(s, "tuned"), from_checkpoint)
        finally:
            self.assertEqual(s.stop(), 0, s.log.decode())

    def test_device_cuda_without_a_gpu_is_refused(self):
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True) if shutil.which("nvidia-smi") else None
        if r is not None and r.returncode == 0 and b"GPU" in r.stdout:
            self.skipTest("this machine has a GPU: the refusal needs one without "
                          "(DecodeOnCuda.* runs the engine there)")
        r = subprocess.run([FABTRAIN, "serve", "--model", self.model_dir, "--port", "0",
                            "--device", "cuda"], capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("--device cuda: no CUDA device is visible", r.stderr.decode())

    def test_a_model_without_weights_is_refused_naming_export(self):
        d = os.path.join(self.dir, "noweights")
        os.makedirs(d)
        shutil.copy(os.path.join(self.model_dir, "config.json"), d)
        r = subprocess.run([FABTRAIN, "serve", "--model", d, "--port", "0"], capture_output=True,
                           timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("fabtrain export", r.stderr.decode())


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    a, rest = p.parse_known_args()
    FABTRAIN = a.fabtrain
    unittest.main(argv=[sys.argv[0]] + rest)
