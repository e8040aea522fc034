package runinfo

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/vkllm/vkllm/models"
)

func TestLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		t    Timing
		want string
	}{
		{"plain", Timing{start: t0, first: at(20), last: at(1020), generated: 11, prompt: 7},
			"prompt 7 tokens (350.0 tok/s), generated 11 tokens (10.0 tok/s), first token after 0.020 s, on cpu"},
		{"cached", Timing{start: t0, first: at(10), last: at(510), generated: 6, prompt: 40, cached: 32},
			"prompt 40 tokens (32 cached, 800.0 tok/s), generated 6 tokens (10.0 tok/s), first token after 0.010 s, on cpu"},
		{"one token", Timing{start: t0, first: at(100), last: at(100), generated: 1, prompt: 1},
			"prompt 1 token (10.0 tok/s), generated 1 token, first token after 0.100 s, on cpu"},
		{"nothing", Timing{start: t0, prompt: 3},
			"prompt 3 tokens, generated 0 tokens, on cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.t.Line("cpu"); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	tm := Start()
	tm.Tokens(0)
	tm.Tokens(1)
	tm.Tokens(2)
	tm.Done(5, 0)
	if tm.generated != 3 || tm.first.Before(tm.start) || tm.last.Before(tm.first) || tm.prompt != 5 {
		t.Fatalf("%+v", tm)
	}
}

func TestLoaded(t *testing.T) {
	for path, want := range map[string]string{
		"../../../testdata/models/qwen2-tiny":           `^loaded qwen2-tiny \(qwen2, F32, \d+K params, 0\.\d\d MiB\) on cpu \([^)]+, \d+ threads\) in \d+\.\d\d s$`,
		"../../../testdata/models/qwen2-tiny/":          `^loaded qwen2-tiny \(qwen2, F32, \d+K params, 0\.\d\d MiB\) on cpu \([^)]+, \d+ threads\) in \d+\.\d\d s$`,
		"../../../testdata/models/llama-tiny-Q4_1.gguf": `^loaded llama-tiny \(llama, Q4_1, \d+K params, 0\.\d\d MiB\) on cpu \([^)]+, \d+ threads\) in \d+\.\d\d s$`,
	} {
		m, err := models.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		got := Loaded(m, 210*time.Millisecond)
		m.Close()
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("%s: %q does not match %s", path, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{96_000: "96K", 134_515_008: "135M", 1_235_814_400: "1.2B"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
