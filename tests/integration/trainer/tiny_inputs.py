"""The tiny Llama and token data the Python fabtrain tests train on (2 layers, hidden 32, tied
head; no download): one writer for the Slurm, sbatch and terminal tests."""
import json, os


def write_inputs(d, records):
    """d/model/config.json and d/train.jsonl with `records` lines of 30 deterministic token ids."""
    os.makedirs(os.path.join(d, "model"))
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
           "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "torch_dtype": "float32",
           "bos_token_id": 1, "eos_token_id": 2}
    with open(os.path.join(d, "model", "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "train.jsonl"), "w") as f:
        for r in range(records):
            f.write(json.dumps({"input_ids": [3 + (r * 7 + i) % 290 for i in range(30)]}) + "\n")
