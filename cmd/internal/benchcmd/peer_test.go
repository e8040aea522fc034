package benchcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// The testdata/llama-bench-*.json files are llama-bench's own -o json
// output (tools/build-llama-bench.sh's binary, llama.cpp 0c1e57098), from
// the two command lines llamaBenchArgs gives for SmolLM2-135M-Instruct
// Q4_1 with pp 128, tg 32, 2 threads, F16 KV and 2 repetitions.
const (
	samplePrefill = "testdata/llama-bench-pp.json"
	sampleDecode  = "testdata/llama-bench-tg.json"
)

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLlamaBenchArgs(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		pp, tg, threads, reps   int
		kv                      tensor.DType
		wantPrefill, wantDecode string
	}{
		{"pp512 tg128 f16", 512, 128, 2, 5, tensor.F16,
			"-m M.gguf -t 2 -ctk f16 -ctv f16 -b 512 -ub 512 -lm mmap -r 5 -o json -p 512 -n 0",
			"-m M.gguf -t 2 -ctk f16 -ctv f16 -b 512 -ub 512 -lm mmap -r 5 -o json -p 0 -n 128 -d 512"},
		{"pp7 tg3 f32", 7, 3, 16, 1, tensor.F32,
			"-m M.gguf -t 16 -ctk f32 -ctv f32 -b 7 -ub 7 -lm mmap -r 1 -o json -p 7 -n 0",
			"-m M.gguf -t 16 -ctk f32 -ctv f32 -b 7 -ub 7 -lm mmap -r 1 -o json -p 0 -n 3 -d 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefill, decode := llamaBenchArgs("M.gguf", tc.pp, tc.tg, tc.threads, tc.reps, tc.kv)
			if got := strings.Join(prefill, " "); got != tc.wantPrefill {
				t.Errorf("prefill %q\nwant     %q", got, tc.wantPrefill)
			}
			if got := strings.Join(decode, " "); got != tc.wantDecode {
				t.Errorf("decode %q\nwant   %q", got, tc.wantDecode)
			}
		})
	}
}

// TestParseLlamaBench reads the captured llama-bench output and checks the
// fields the bench takes from it.
func TestParseLlamaBench(t *testing.T) {
	for _, tc := range []struct {
		file                  string
		nPrompt, nGen, nDepth int
		avg, stddev           float64
	}{
		{samplePrefill, 128, 0, 0, 317.981327, 0.868640},
		{sampleDecode, 0, 32, 128, 124.434770, 3.212212},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := parseLlamaBench(readSample(t, tc.file), tc.nPrompt, tc.nGen, tc.nDepth, 2, "f16")
			if err != nil {
				t.Fatal(err)
			}
			if got.AvgTS != tc.avg || got.StddevTS != tc.stddev {
				t.Errorf("avg_ts %v ± %v, want %v ± %v", got.AvgTS, got.StddevTS, tc.avg, tc.stddev)
			}
			if got.BuildCommit != "0c1e57098" || got.BuildNumber != 0 || got.Backends != "CPU" || got.CPUInfo == "" {
				t.Errorf("build %q %d, backends %q, cpu %q", got.BuildCommit, got.BuildNumber, got.Backends, got.CPUInfo)
			}
			if len(got.SamplesNS) != 2 {
				t.Errorf("%d samples, want 2", len(got.SamplesNS))
			}
		})
	}
}

// TestParseLlamaBenchErrors: output that is not the one test asked for is
// errPeerOutput, never a number.
func TestParseLlamaBenchErrors(t *testing.T) {
	sample := readSample(t, samplePrefill)
	// edit returns the sample with one field of its test changed.
	edit := func(field string, v any) []byte {
		var tests []map[string]any
		if err := json.Unmarshal(sample, &tests); err != nil {
			t.Fatal(err)
		}
		tests[0][field] = v
		b, err := json.Marshal(tests)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	twice := append(append([]byte("["), bytes.Trim(bytes.TrimSpace(sample), "[]")...), ',')
	twice = append(append(twice, bytes.Trim(bytes.TrimSpace(sample), "[]")...), ']')
	for _, tc := range []struct {
		name string
		out  []byte
		want string
	}{
		{"empty", nil, "unexpected end"},
		{"markdown", []byte("| model | size |\n"), "invalid character"},
		{"no tests", []byte("[]"), "0 tests"},
		{"two tests", twice, "2 tests"},
		{"other prompt", edit("n_prompt", 64), "pp64"},
		{"generation", edit("n_gen", 32), "tg32"},
		{"depth", edit("n_depth", 128), "depth 128"},
		{"threads", edit("n_threads", 4), "4 threads"},
		{"kv", edit("type_v", "q8_0"), "f16/q8_0"},
		{"zero", edit("avg_ts", 0), "avg_ts 0"},
		{"avg_ts a string", edit("avg_ts", "fast"), "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseLlamaBench(tc.out, 128, 0, 0, 2, "f16")
			if !errors.Is(err, errPeerOutput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want errPeerOutput saying %q", err, tc.want)
			}
		})
	}
}

// TestLlamaBenchMissing: without the binary the bench says how to build it.
func TestLlamaBenchMissing(t *testing.T) {
	t.Run("env", func(t *testing.T) {
		t.Setenv("VKLLM_LLAMA_BENCH", filepath.Join(t.TempDir(), "no-such-llama-bench"))
		_, err := llamaBenchPath()
		if !errors.Is(err, errNoLlamaBench) || !strings.Contains(err.Error(), "no-such-llama-bench") ||
			!strings.Contains(err.Error(), "tools/build-llama-bench.sh") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("cache", func(t *testing.T) {
		cache := t.TempDir()
		t.Setenv("VKLLM_LLAMA_BENCH", "")
		t.Setenv("XDG_CACHE_HOME", cache)
		want := filepath.Join(cache, "vkllm", "llama.cpp-0.3.36", "llama-bench")
		if _, err := llamaBenchPath(); !errors.Is(err, errNoLlamaBench) || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want errNoLlamaBench naming %s", err, want)
		}
		if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(want, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if got, err := llamaBenchPath(); err != nil || got != want {
			t.Fatalf("%q, %v; want %q", got, err, want)
		}
	})
	t.Run("command", func(t *testing.T) {
		t.Setenv("VKLLM_LLAMA_BENCH", filepath.Join(t.TempDir(), "no-such-llama-bench"))
		var out, errs bytes.Buffer
		args := []string{"--model", "../../../testdata/models/qwen2-tiny-F16.gguf", "--pp", "8", "--tg", "4",
			"--threads", "2", "--no-bandwidth", "--peer", "llama.cpp"}
		if rc := Run(t.Context(), args, &out, &errs); rc != 1 || !strings.Contains(errs.String(), "tools/build-llama-bench.sh") {
			t.Fatalf("rc %d, stderr %q", rc, errs.String())
		}
	})
}

// fakeLlamaBench writes a shell script that stands in for llama-bench: it
// appends its arguments to a log and prints the captured prefill or decode
// output (decode when it is given -d), or, if fail, an error and status 1.
func fakeLlamaBench(t *testing.T, fail bool) (bin, log string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake llama-bench is a shell script")
	}
	dir := t.TempDir()
	log = filepath.Join(dir, "args")
	pp, err := filepath.Abs(samplePrefill)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := filepath.Abs(sampleDecode)
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = --version ]; then echo 'version: 0.5.0-dev (build 0, commit 0c1e57098)' >&2; exit 0; fi\n" +
		"echo \"$@\" >> '" + log + "'\n"
	if fail {
		script += "echo 'main: error: failed to load model' >&2\nexit 1\n"
	} else {
		script += "case \" $* \" in *' -d '*) cat '" + tg + "' ;; *) cat '" + pp + "' ;; esac\n"
	}
	bin = filepath.Join(dir, "llama-bench")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// TestRunPeer runs a fake llama-bench: runPeer passes it the arguments
// llamaBenchArgs gives and fills Peer from its two outputs.
func TestRunPeer(t *testing.T) {
	bin, log := fakeLlamaBench(t, false)
	t.Setenv("VKLLM_LLAMA_BENCH", bin)
	p, err := runPeer("llama.cpp", "M.gguf", 128, 32, 2, 2, tensor.F16)
	if err != nil {
		t.Fatal(err)
	}
	want := Peer{Name: "llama.cpp", Version: "0.5.0-dev", PPTPS: 317.981327, PPStddev: 0.868640, TGTPS: 124.434770, TGStddev: 3.212212, Reps: 2,
		Commit: "0c1e57098", Backends: "CPU", CPUInfo: p.CPUInfo}
	prefill, decode := llamaBenchArgs("M.gguf", 128, 32, 2, 2, tensor.F16)
	want.Commands = []string{bin + " " + strings.Join(prefill, " "), bin + " " + strings.Join(decode, " ")}
	if p.CPUInfo == "" || !reflect.DeepEqual(*p, want) {
		t.Errorf("peer %+v\nwant %+v", *p, want)
	}
	args, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(args), strings.Join(prefill, " ")+"\n"+strings.Join(decode, " ")+"\n"; got != want {
		t.Errorf("llama-bench ran with\n%s\nwant\n%s", got, want)
	}
}

// TestRunPeerErrors: a llama-bench that fails or answers for another test
// is an error that says so.
func TestRunPeerErrors(t *testing.T) {
	t.Run("fails", func(t *testing.T) {
		bin, _ := fakeLlamaBench(t, true)
		t.Setenv("VKLLM_LLAMA_BENCH", bin)
		_, err := runPeer("llama.cpp", "M.gguf", 128, 32, 2, 2, tensor.F16)
		if err == nil || !strings.Contains(err.Error(), "failed to load model") || !strings.Contains(err.Error(), "exit status 1") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("other test", func(t *testing.T) {
		bin, _ := fakeLlamaBench(t, false)
		t.Setenv("VKLLM_LLAMA_BENCH", bin)
		_, err := runPeer("llama.cpp", "M.gguf", 512, 32, 2, 2, tensor.F16)
		if !errors.Is(err, errPeerOutput) {
			t.Fatalf("error %v, want errPeerOutput", err)
		}
	})
	t.Run("other peer", func(t *testing.T) {
		if _, err := runPeer("vllm", "M.gguf", 128, 32, 2, 2, tensor.F16); err == nil || !strings.Contains(err.Error(), "only llama.cpp") {
			t.Fatalf("error %v", err)
		}
	})
}
