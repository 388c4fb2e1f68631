"""The model directory and token data the GPU and memory benchmarks train on (no download: a
config.json and random token ids)."""
import json, os, random

SIZES = {
    # ~1.1B: TinyLlama-1.1B's public shape (GQA 32 query / 4 kv heads of 64).
    "1b": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
               num_key_value_heads=4, vocab_size=32000),
    "350m": dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=24, num_attention_heads=16,
                 num_key_value_heads=16, vocab_size=32000),
    "110m": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
                 num_key_value_heads=12, vocab_size=32000),
    "33m": dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=8, num_attention_heads=8,
                num_key_value_heads=8, vocab_size=8192),
    "tiny": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, vocab_size=512),
}


def llama_config(size):
    """The config.json of an untied Llama of SIZES[size]."""
    return dict(SIZES[size], architectures=["LlamaForCausalLM"], model_type="llama", rms_norm_eps=1e-5,
                rope_theta=10000.0, max_position_embeddings=4096, tie_word_embeddings=False,
                initializer_range=0.02, bos_token_id=1, eos_token_id=2, torch_dtype="float32")


def write_inputs(d, size, records, length):
    """d/model/config.json (an untied Llama of SIZES[size]) and d/train.jsonl; returns the config."""
    c = llama_config(size)
    os.makedirs(os.path.join(d, "model"), exist_ok=True)
    with open(os.path.join(d, "model", "config.json"), "w") as f:
        json.dump(c, f)
    rng = random.Random(0)
    with open(os.path.join(d, "train.jsonl"), "w") as f:
        for _ in range(records):
            f.write(json.dumps({"input_ids": [rng.randrange(3, c["vocab_size"]) for _ in range(length)]}) + "\n")
    return c
