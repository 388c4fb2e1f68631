"""Hugging Face transformers' greedy generate() on tiny random Llamas: the reference of fabtrain
serve's decode engine (hf_generate_test.cc).

For each case, builds a LlamaForCausalLM from a fixed seed, save_pretrained()s it (config.json +
model.safetensors) into OUT/CASE, runs generate(do_sample=False) on a few prompts, one at a time
(no padding), and writes OUT/CASE/generate.json:
  {"eos_token_id": N (the EOS given to generate(), see make_case), "max_new_tokens": N,
   "prompts": [[ids]...], "generated": [[new ids]...]}
The C++ test loads the folder with load_pretrained and compares its engine's tokens with these.
Nothing is downloaded: the models are made here.

usage: hf_generate_reference.py --out DIR
"""
import argparse
import json
import os

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

MAX_NEW_TOKENS = 24
EOS = 2

# (name, extra config). Larger-than-default initializer_range makes the next-token distribution
# peaked, so greedy choices are not decided by rounding.
CASES = {
    # plain multi-head attention, tied embeddings
    "llama_mha_tied": dict(num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=True),
    # grouped-query attention (2 query heads per kv head), separate lm_head
    "llama_gqa": dict(num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False),
}

PROMPTS = [
    [1, 17, 42, 99, 5],
    [1, 7],
    [1, 120, 3, 64, 64, 8, 77, 31, 90, 11, 4],
    [1],
]


def make_case(out_dir, name, extra, seed):
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        max_position_embeddings=128,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        initializer_range=0.15,
        bos_token_id=1,
        eos_token_id=EOS,
        pad_token_id=0,
        **extra,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    case_dir = os.path.join(out_dir, name)
    model.save_pretrained(case_dir)

    def generate(eos):
        gen = GenerationConfig(do_sample=False, max_new_tokens=MAX_NEW_TOKENS, eos_token_id=eos,
                               pad_token_id=0, bos_token_id=1)
        generated = []
        with torch.no_grad():
            for prompt in PROMPTS:
                ids = torch.tensor([prompt], dtype=torch.long)
                out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gen)
                generated.append(out[0, len(prompt):].tolist())
        return generated

    # A random model rarely emits the config's EOS. So that stopping is compared too, the EOS
    # passed to generate() (and to the engine as its stop token) is the first prompt's 6th greedy
    # token when it did not occur before: that prompt then stops early, the others where they
    # meet it, if they do.
    free = generate(EOS)
    first = free[0]
    eos = first[5] if first[5] not in first[:5] else EOS
    generated = generate(eos)
    with open(os.path.join(case_dir, "generate.json"), "w") as f:
        json.dump({"eos_token_id": eos, "max_new_tokens": MAX_NEW_TOKENS, "prompts": PROMPTS,
                   "generated": generated}, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for i, (name, extra) in enumerate(CASES.items()):
        make_case(args.out, name, extra, seed=1234 + i)


if __name__ == "__main__":
    main()
