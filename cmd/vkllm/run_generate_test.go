package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestGenerateJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := runGen(context.Background(), []string{"--model", "../../testdata/models/qwen2-tiny", "--prompt", "Hello world",
		"--max-tokens", "5", "--top-logprobs", "3", "--ignore-eos", "--json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.PromptTokens) == 0 || len(r.Tokens) != 5 || len(r.TopLogprobs) != 5 || len(r.TopLogprobs[0]) != 3 {
		t.Fatalf("%+v", r)
	}
	if r.TopLogprobs[0][0].ID != r.Tokens[0] {
		t.Errorf("greedy token %d is not the top logprob %d", r.Tokens[0], r.TopLogprobs[0][0].ID)
	}
	// The same prompt given as ids gives the same tokens.
	ids := make([]string, len(r.PromptTokens))
	for i, id := range r.PromptTokens {
		ids[i] = itoa(int(id))
	}
	var out2 bytes.Buffer
	if code := runGen(context.Background(), []string{"--model", "../../testdata/models/qwen2-tiny", "--tokens", strings.Join(ids, ","),
		"--max-tokens", "5", "--ignore-eos", "--json"}, &out2, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	var r2 Result
	json.Unmarshal(out2.Bytes(), &r2)
	for i := range r.Tokens {
		if r.Tokens[i] != r2.Tokens[i] {
			t.Fatalf("--tokens gave %v, --prompt %v", r2.Tokens, r.Tokens)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestGenerateErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--tokens", "1"},
		{"--model", "../../testdata/models/qwen2-tiny", "--tokens", "1,x"},
		{"--model", "../../testdata/models/qwen2-tiny", "--tokens", "999999"},
		{"--model", "../../testdata/models/qwen2-tiny", "--tokens", "1", "--top-logprobs", "21"},
		{"--model", "/nonexistent", "--tokens", "1"},
	} {
		var out, errb bytes.Buffer
		// A model that loaded has its load line first; the error is last.
		if code := runGen(context.Background(), args, &out, &errb); code != 1 || !strings.HasPrefix(lastLine(errb.String()), "error: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

var (
	loadLine   = regexp.MustCompile(`^loaded qwen2-tiny \(qwen2, F32, \d+K params, \d+\.\d\d MiB\) on cpu \([^)]+, \d+ threads\) in \d+\.\d\d s$`)
	timingLine = regexp.MustCompile(`^prompt (\d+) tokens? \((\d+\.\d) tok/s\), generated (\d+) tokens? \((\d+\.\d) tok/s\), first token after (\d+\.\d{3}) s, on cpu$`)
)

// TestGenerateTiming: stderr has the load line and, after generating, the
// timing line, whose counts are the prompt's and the output's; stdout has
// neither, in --json mode or streaming.
func TestGenerateTiming(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"json", []string{"--json", "--max-tokens", "6", "--ignore-eos"}},
		{"stream", []string{"--max-tokens", "6", "--ignore-eos"}},
		{"stop", []string{"--json", "--max-tokens", "9", "--ignore-eos", "--stop", "nnn"}}, // the output is "nnnn…",
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"--model", "../../testdata/models/qwen2-tiny", "--backend", "cpu", "--prompt", "Hello world"}, tc.args...)
			if code := runGen(context.Background(), args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if strings.Contains(out.String(), "tok/s") || strings.Contains(out.String(), "loaded") {
				t.Errorf("stdout has the stderr lines: %q", out.String())
			}
			lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
			if len(lines) != 2 || !loadLine.MatchString(lines[0]) {
				t.Fatalf("stderr %q: want the load line then the timing line", errb.String())
			}
			m := timingLine.FindStringSubmatch(lines[1])
			if m == nil {
				t.Fatalf("timing line %q does not match %v", lines[1], timingLine)
			}
			prompt, _ := strconv.Atoi(m[1])
			generated, _ := strconv.Atoi(m[3])
			promptRate, _ := strconv.ParseFloat(m[2], 64)
			genRate, _ := strconv.ParseFloat(m[4], 64)
			ttft, _ := strconv.ParseFloat(m[5], 64)
			if promptRate <= 0 || genRate <= 0 || ttft < 0 {
				t.Errorf("rates %v, %v tok/s, first token %v s", promptRate, genRate, ttft)
			}
			want := 6
			if tc.name == "stream" {
				if prompt != 7 { // "Hello world" is 7 tokens of this tokenizer, as the json case shows
					t.Errorf("prompt %d tokens, want 7", prompt)
				}
			} else {
				var r Result
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if prompt != len(r.PromptTokens) {
					t.Errorf("prompt %d tokens, the result has %d", prompt, len(r.PromptTokens))
				}
				want = len(r.Tokens)
				if tc.name == "stop" && (r.FinishReason != "stop" || want >= 9) {
					t.Errorf("--stop: %d tokens, finish %q; want fewer than 9 and stop", want, r.FinishReason)
				}
			}
			if generated != want {
				t.Errorf("generated %d tokens, want %d", generated, want)
			}
		})
	}
}

func runJSON(t *testing.T, args ...string) Result {
	t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"--model", "../../testdata/models/qwen2-tiny", "--backend", "cpu", "--json"}, args...)
	if code := runGen(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGenerateSampling(t *testing.T) {
	greedy := runJSON(t, "--prompt", "Hello world", "--max-tokens", "12", "--ignore-eos")
	args := []string{"--prompt", "Hello world", "--max-tokens", "12", "--ignore-eos", "--temperature", "1.5", "--top-k", "50",
		"--top-p", "0.95", "--min-p", "0.01", "--repetition-penalty", "1.1", "--presence-penalty", "0.5", "--frequency-penalty", "0.5"}
	a := runJSON(t, append(args, "--seed", "11")...)
	b := runJSON(t, append(args, "--seed", "11")...)
	c := runJSON(t, append(args, "--seed", "12")...)
	if !slices.Equal(a.Tokens, b.Tokens) {
		t.Fatalf("same seed, different tokens: %v %v", a.Tokens, b.Tokens)
	}
	if slices.Equal(a.Tokens, greedy.Tokens) && slices.Equal(c.Tokens, greedy.Tokens) {
		t.Fatalf("sampling at temperature 1.5 gave the greedy tokens twice: %v", a.Tokens)
	}
	if len(a.Tokens) != 12 || a.FinishReason != "length" {
		t.Fatalf("%+v", a)
	}
}

func TestGenerateStop(t *testing.T) {
	full := runJSON(t, "--prompt", "Once upon", "--max-tokens", "16", "--ignore-eos")
	r := []rune(full.Text)
	if len(r) < 4 {
		t.Fatalf("too short: %q", full.Text)
	}
	stop := string(r[len(r)/2])
	want := full.Text[:strings.Index(full.Text, stop)]
	// Streamed to stdout (not --json): the text stops before the stop string.
	var out, errb bytes.Buffer
	if code := runGen(context.Background(), []string{"--model", "../../testdata/models/qwen2-tiny", "--prompt", "Once upon",
		"--max-tokens", "16", "--ignore-eos", "--stop", "never-there", "--stop", stop}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	if out.String() != want+"\n" {
		t.Fatalf("stdout %q, want %q", out.String(), want+"\n")
	}
}

func TestGenerateBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--temperature", "5"},
		{"--top-p", "2"},
		{"--top-k", "-1"},
		{"--min-p", "2"},
		{"--repetition-penalty", "3"},
		{"--presence-penalty", "-3"},
		{"--stop", ""},
		{"--backend", "tpu"},
		{"--max-tokens", "0"},
	} {
		var out, errb bytes.Buffer
		args = append([]string{"--model", "../../testdata/models/qwen2-tiny", "--prompt", "hi"}, args...)
		if code := runGen(context.Background(), args, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "error: ") || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
