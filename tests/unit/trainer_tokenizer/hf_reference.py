#!/usr/bin/env python3
"""Reference side of the tokenizer.json parity test (hf_parity_test.cc).

Builds small byte-level BPE tokenizers with the PyPI `tokenizers` package itself (trained here on
a generated corpus: nothing is downloaded), saves each as a model directory (tokenizer.json and
config.json or tokenizer_config.json), and writes what the library returns for a test corpus:
encode ids with and without the post-processor, decode of the whole sequence and of every single
token. Usage: hf_reference.py OUTDIR  ->  OUTDIR/<config>/..., OUTDIR/expected.json
"""
import json
import os
import random
import sys

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

# Llama 3's split pattern, as its tokenizer.json spells it.
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "fabric", "infiniband",
         "gradients", "rank", "shard", "packing", "token", "sequence", "café", "naïve", "résumé",
         "über", "Straße", "niño", "façade", "Ελλάδα", "Москва", "東京", "日本語", "中文字符", "한국어",
         "😀", "🚀🔥", "👩‍💻", "it's", "don't", "we're", "they've", "I'm", "you'll", "he'd", "IT'S",
         "2024", "3.14159", "1234567890123", "$100", "50%", "a+b=c", "(x)", "[y]", "{z}", "...", "--",
         "\t", "\n", "  ", "\r\n"]

TEST_TEXTS = [
    "",
    "Hello world",
    "hello   world  ",
    " leading space and trailing   ",
    "The café's naïve résumé über Straße.",
    "東京は日本の首都です。中文字符测试",
    "한국어 텍스트와 English mixed",
    "emoji 😀🚀🔥 and ZWJ 👩‍💻 family 👨‍👩‍👧",
    "numbers 1234567890123456789 and 3.14159 and 007",
    "it's don't we're they've I'm you'll he'd IT'S DON'T",
    "tabs\tand\nnewlines\n\n\nand\r\nwindows\r\n",
    "    indented code:\n        return x + 1\n",
    "multiple     spaces\u00a0nbsp\u3000ideographic\u2003em",
    "<|endoftext|>",
    "before<|endoftext|>after",
    "a <|endoftext|> b<|endoftext|><|endoftext|>c",
    "<|begin_of_text|>Hello<|eot_id|>\n\n<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
    "x <mask> y <mask>z",
    "user added <|user|> token and <|user|>again",
    "partial special <|endoftext and <|begin_of",
    "punctuation!!! ??? ... --- ;;; ,,, (((nested)))",
    "mixed€£¥₹ symbols ©®™ and math ∑∫√∞",
    "\u0085next line\u2028line sep\u2029para sep",
    "long-digit-run-99999999999999999999999999999",
    "   ",
    "\n",
    "ſ long s it'ſ and Kelvin \u212a",
]


def byte_chars():
    """GPT-2's bytes_to_unicode, to write injected vocabulary entries."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def corpus(rng, lines):
    out = []
    for _ in range(lines):
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))))
    return out


def train(pre_tokenizer, special, vocab_size, ignore_merges, train_lines):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(train_lines, trainer=trainer)
    return tok


def inject_whole_words(tok, words):
    """Adds whole pre-tokens to the vocabulary without merges that build them, as Llama 3's
    vocabulary has: only ignore_merges emits them."""
    doc = json.loads(tok.to_str())
    vocab = doc["model"]["vocab"]
    bc = byte_chars()
    next_id = max(list(vocab.values()) + [t["id"] for t in doc["added_tokens"]]) + 1
    injected = []
    for w in words:
        key = "".join(bc[b] for b in w.encode("utf-8"))
        if key not in vocab:
            vocab[key] = next_id
            next_id += 1
            injected.append(w)
    assert injected, "nothing injected"
    return Tokenizer.from_str(json.dumps(doc))


def main():
    out = sys.argv[1]
    rng = random.Random(20261125)
    train_lines = corpus(rng, 3000)
    texts = TEST_TEXTS + corpus(random.Random(7), 150)
    texts.append("\r\n".join(texts))  # everything at once: pieces meet across lines and CRLFs

    configs = {}

    # GPT-2: ByteLevel pre-tokenizer with its built-in pattern; no BOS template; an lstrip/rstrip
    # special token and a normalized (non-special) added token.
    gpt2 = train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), ["<|endoftext|>"], 700, False,
                 train_lines)
    gpt2.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True, normalized=False)])
    gpt2.add_tokens(["<|user|>"])
    gpt2.post_processor = processors.ByteLevel(trim_offsets=True)
    configs["gpt2"] = (gpt2, {"config.json": {"vocab_size": 2000, "eos_token_id": 0, "bos_token_id": 0}})

    # Llama 3: Split with its pattern, then ByteLevel without regex; ignore_merges; the template
    # puts <|begin_of_text|> first; whole words in the vocabulary that merges do not reach.
    llama3_pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    whole = [" infiniband", " gradients", "Straße", " résumé", "東京", " 😀", "Hello", " world"]
    for ignore in (True, False):
        t = train(llama3_pre, specials, 900, ignore, train_lines)
        t = inject_whole_words(t, whole)
        t.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)])])
        name = "llama3" if ignore else "llama3_no_ignore_merges"
        configs[name] = (t, {"tokenizer_config.json": {"eos_token": {"content": "<|end_of_text|>", "special": True},
                                                        "pad_token": "<|eot_id|>"}})

    # Prefix space (per piece, also after an added token), a <s> $A </s> template, and the other
    # Split behaviours and invert ahead of ByteLevel's own regex.
    split_pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\n+"), behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"\p{N}"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"[,.!?]"), behavior="merged_with_previous"),
        pre_tokenizers.Split("--", behavior="removed"),
        pre_tokenizers.Split(Regex(r"[^\p{Han}]+"), behavior="isolated", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)])
    sp = train(split_pre, ["<s>", "</s>", "<|endoftext|>"], 600, False, train_lines)
    sp.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    configs["prefix_splits"] = (sp, {})

    expected = {"tokenizers_version": tokenizers.__version__, "texts": texts, "configs": {}}
    for name, (tok, extra) in configs.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"))
        for fname, content in extra.items():
            with open(os.path.join(d, fname), "w") as f:
                json.dump(content, f)
        cases = []
        for text in texts:
            ids = tok.encode(text, add_special_tokens=False).ids
            cases.append({
                "ids": ids,
                "ids_with_template": tok.encode(text, add_special_tokens=True).ids,
                "decoded": tok.decode(ids, skip_special_tokens=False),
                "per_token": [tok.decode([i], skip_special_tokens=False) for i in ids],
            })
        expected["configs"][name] = {"dir": d, "vocab_size": tok.get_vocab_size(with_added_tokens=True),
                                     "cases": cases}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
