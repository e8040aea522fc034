// Command bench measures prefill and decode speed of a model on a backend,
// optionally side by side with llama.cpp (llama-cpp-python, installed from
// tools/requirements-peer.txt) on the same file and thread count.
//
//	go run ./benchmarks/bench --model PATH [--pp 512] [--tg 128] [--threads N] [--peer llama.cpp] [--json]
//
// Prefill is one Decode of pp tokens (logits for the last only); decode is
// tg single-token Decodes after it. Token ids are fixed pseudo-random ids
// inside the vocabulary.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
)

// Result is what --json prints.
type Result struct {
	Model   string  `json:"model"`
	Backend string  `json:"backend"`
	Threads int     `json:"threads"`
	PP      int     `json:"pp"`
	TG      int     `json:"tg"`
	LoadS   float64 `json:"load_s"`
	PPTPS   float64 `json:"pp_tps"`
	TGTPS   float64 `json:"tg_tps"`
	Peer    *Peer   `json:"peer,omitempty"`
}

// Peer is the other engine's numbers from the same run.
type Peer struct {
	Name  string  `json:"name"`
	PPTPS float64 `json:"pp_tps"`
	TGTPS float64 `json:"tg_tps"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model folder or .gguf file")
	pp := fs.Int("pp", 512, "prompt tokens to prefill")
	tg := fs.Int("tg", 128, "tokens to decode")
	threads := fs.Int("threads", runtime.NumCPU(), "threads")
	backend := fs.String("backend", "cpu", "cpu, vulkan or auto")
	peer := fs.String("peer", "", `"llama.cpp" to run llama-cpp-python on the same file`)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *model == "" || *pp < 1 || *tg < 1 || *threads < 1 {
		fmt.Fprintln(stderr, "error: --model is required; --pp, --tg and --threads must be ≥ 1")
		return 2
	}
	res, err := bench(*model, *backend, *pp, *tg, *threads, stderr)
	if err == nil && *peer != "" {
		res.Peer, err = runPeer(*peer, *model, *pp, *tg, *threads)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
		return 0
	}
	fmt.Fprintf(stdout, "%s on %s, %d threads: load %.2f s, pp%d %.2f tok/s, tg%d %.2f tok/s\n",
		res.Model, res.Backend, res.Threads, res.LoadS, res.PP, res.PPTPS, res.TG, res.TGTPS)
	if p := res.Peer; p != nil {
		fmt.Fprintf(stdout, "%s: pp %.2f tok/s, tg %.2f tok/s; vkllm/peer: pp %.3f×, tg %.3f×\n",
			p.Name, p.PPTPS, p.TGTPS, res.PPTPS/p.PPTPS, res.TGTPS/p.TGTPS)
	}
	return 0
}

func bench(path, backend string, pp, tg, threads int, progress io.Writer) (*Result, error) {
	start := time.Now()
	m, err := models.Open(path, models.WithBackendName(backend, kernels.Options{Threads: threads}))
	if err != nil {
		return nil, err
	}
	defer m.Close()
	res := &Result{Model: path, Backend: m.Backend().Name(), Threads: threads, PP: pp, TG: tg, LoadS: time.Since(start).Seconds()}
	ctx, err := m.NewContext(models.ContextParams{ContextLen: pp + tg, BatchSize: pp})
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	vocab := uint32(m.Config.VocabSize)
	tok := func(i int) int32 { return int32((uint32(i)*2654435761 + 12345) % vocab) }
	var b models.Batch
	for i := range pp {
		b.Add(tok(i), int32(i), i == pp-1, 0)
	}
	fmt.Fprintf(progress, "prefill %d tokens…\n", pp)
	t0 := time.Now()
	if err := ctx.Decode(b); err != nil {
		return nil, err
	}
	res.PPTPS = float64(pp) / time.Since(t0).Seconds()
	t0 = time.Now()
	for i := range tg {
		if i%16 == 0 {
			fmt.Fprintf(progress, "\rdecode %d/%d", i, tg)
		}
		if _, err := ctx.DecodeToken(0, tok(pp+i)); err != nil {
			return nil, err
		}
	}
	res.TGTPS = float64(tg) / time.Since(t0).Seconds()
	fmt.Fprintln(progress)
	return res, nil
}

// runPeer runs tools/bench_peer.py, which prints {"pp_tps":…, "tg_tps":…}.
func runPeer(name, path string, pp, tg, threads int) (*Peer, error) {
	if name != "llama.cpp" {
		return nil, fmt.Errorf("unknown peer %q (only llama.cpp)", name)
	}
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	out, err := exec.Command(python, "tools/bench_peer.py", path, strconv.Itoa(pp), strconv.Itoa(tg), strconv.Itoa(threads)).Output()
	if err != nil {
		return nil, fmt.Errorf("peer llama.cpp (pip install -r tools/requirements-peer.txt): %w", err)
	}
	p := &Peer{Name: "llama.cpp"}
	if err := json.Unmarshal(out, p); err != nil {
		return nil, fmt.Errorf("peer output %q: %w", out, err)
	}
	return p, nil
}
