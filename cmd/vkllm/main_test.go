package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

const tinyDir = "../../testdata/models/qwen2-tiny"

// testEnv is an env over the given stdin and writers whose signals never
// come.
func testEnv(stdin io.Reader, stdout, stderr io.Writer) env {
	return env{stdin: stdin, stdout: stdout, stderr: stderr, signals: func() <-chan os.Signal { return nil }}
}

// The commands as the tests moved from the single-command programs call
// them.
func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return vkllm(ctx, testEnv(strings.NewReader(""), stdout, stderr), append([]string{"run"}, args...))
}

func runChat(args []string, stdin io.Reader, stdout, stderr io.Writer, intr chan os.Signal) int {
	e := testEnv(stdin, stdout, stderr)
	e.signals = func() <-chan os.Signal { return intr }
	return vkllm(context.Background(), e, append([]string{"run", "--chat"}, args...))
}

func runInspect(args []string, stdout, stderr io.Writer) int {
	return vkllm(context.Background(), testEnv(strings.NewReader(""), stdout, stderr), append([]string{"inspect"}, args...))
}

func runTokenize(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return vkllm(context.Background(), testEnv(stdin, stdout, stderr), append([]string{"tokenize"}, args...))
}

func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	return vkllm(ctx, testEnv(strings.NewReader(""), io.Discard, stderr), append([]string{"serve"}, args...))
}

// TestCommands runs the command line as a user types it: the exit status
// and what stdout and stderr hold.
func TestCommands(t *testing.T) {
	for _, c := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // substrings; "" checks nothing
	}{
		{"no args", nil, 2, "", "Usage:"},
		{"help", []string{"help"}, 0, "vkllm serve", ""},
		{"--help", []string{"--help"}, 0, "vkllm tokenize", ""},
		{"help lists every command", []string{"help"}, 0, "vkllm bench", ""},
		{"help CMD", []string{"help", "pull"}, 0, "", "usage: vkllm pull [--dir DIR] NAME"},
		{"help unknown", []string{"help", "fly"}, 2, "", `error: unknown command "fly"`},
		{"unknown command", []string{"fly"}, 2, "", `error: unknown command "fly"`},
		{"serve -h", []string{"serve", "-h"}, 0, "", "-api-key"},
		{"run -h", []string{"run", "-h"}, 0, "", "-prompt"},
		{"bench -h", []string{"bench", "-h"}, 0, "", "measure prefill and decode speed"}, // described, as every command
		{"bench -h flags", []string{"bench", "-h"}, 0, "", "-pp"},
		{"inspect -h", []string{"inspect", "-h"}, 0, "", "-json"},
		{"tokenize -h", []string{"tokenize", "-h"}, 0, "", "-add-special"},
		{"bad flag", []string{"run", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"run without model", []string{"run", "--prompt", "x"}, 1, "", "error: --model is required [BAD_PARAMS]"},
		{"run max-tokens -1", []string{"run", "--model", tinyDir, "--prompt", "x", "--max-tokens", "-1"}, 1, "", "≥ 1, got -1 [BAD_PARAMS]"},
		{"run temperature 5", []string{"run", "--model", tinyDir, "--prompt", "x", "--temperature", "5"}, 1, "", "[BAD_PARAMS]"},
		{"run bad token id", []string{"run", "--model", tinyDir, "--tokens", "1,abc"}, 1, "", `error: --tokens: "abc" is not a token id [BAD_PARAMS]`},
		{"run empty prompt", []string{"run", "--model", tinyDir, "--prompt", ""}, 1, "", "error: --prompt is empty; leave it out to chat [EMPTY_PROMPT]"},
		{"run ctx -1", []string{"run", "--model", tinyDir, "--prompt", "x", "--ctx", "-1"}, 1, "", "--ctx must be ≥ 0"},
		{"run ctx bounds the prompt", []string{"run", "--model", tinyDir, "--backend", "cpu", "--ctx", "16", "--prompt", strings.Repeat("one two three four ", 10)}, 1, "", "[PROMPT_TOO_LONG]"},
		{"chat with --json", []string{"run", "--model", tinyDir, "--json"}, 1, "", "error: --prompt, --tokens, --json and --top-logprobs do not go with --chat"},
		{"system without chat", []string{"run", "--model", tinyDir, "--prompt", "x", "--system", "s"}, 1, "", "error: --system is for a chat"},
		{"inspect", []string{"inspect", tinyDir}, 0, "architecture:  qwen2", ""},
		{"inspect no path", []string{"inspect"}, 2, "", "usage: vkllm inspect"},
		{"pull unknown", []string{"pull", "gpt-7"}, 1, "", `error: pull: unknown model "gpt-7"; known models: smollm2`},
		{"pull no name", []string{"pull"}, 2, "", "usage: vkllm pull"},
		{"bench without model", []string{"bench"}, 2, "", "error: give --model PATH or --synthetic SHAPE:DTYPE (vkllm bench -h lists the flags)\n"},
		{"bench bad tg", []string{"bench", "--synthetic", "x", "--tg", "0"}, 2, "", "error: --tg must be ≥ 1, got 0\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := vkllm(context.Background(), testEnv(strings.NewReader(""), &out, &errb), c.args)
			if code != c.code || !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("vkllm %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					c.args, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
			}
		})
	}
}

// TestLoadCancelled: a run whose context is cancelled while the model
// loads ends with one clear error line, exit 1.
func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"--model", tinyDir, "--prompt", "x", "--backend", "cpu"},
		{"--model", tinyDir, "--chat", "--backend", "cpu"},
	} {
		var out, errb bytes.Buffer
		code := vkllm(ctx, testEnv(strings.NewReader("hello\n"), &out, &errb), append([]string{"run"}, args...))
		if code != 1 || errb.String() != "error: models: load cancelled: context canceled [CANCELLED]\n" || out.Len() != 0 {
			t.Errorf("run %q: exit %d, stdout %q, stderr %q; want the load cancelled", args, code, out.String(), errb.String())
		}
	}
}

// TestRunHelpDefaults: `run -h` gives each flag one default, not Go's
// "(default N)" beside a chat's.
func TestRunHelpDefaults(t *testing.T) {
	var errb bytes.Buffer
	if code := vkllm(context.Background(), testEnv(strings.NewReader(""), io.Discard, &errb), []string{"run", "-h"}); code != 0 {
		t.Fatalf("run -h: exit %d", code)
	}
	for _, entry := range strings.Split(errb.String(), "\n  -")[1:] {
		if n := strings.Count(entry, "default"); n > 1 {
			t.Errorf("run -h shows %d defaults for -%s", n, entry)
		}
	}
}

// TestUnescape: --stop "\n\n" as a shell passes it (a backslash and an n,
// twice) is two new lines, as in llama.cpp's tools.
func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`\n\n`: "\n\n", `a\tb`: "a\tb", `c:\\dir`: `c:\dir`, `\x`: `\x`, `end\`: `end\`, "plain": "plain", `\\n`: `\n`,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
