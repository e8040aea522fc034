// Package benchcmd is the `vkllm bench` command: it measures prefill and
// decode speed of a model on a backend, optionally side by side with
// llama.cpp on the same file and thread count.
//
//	vkllm bench --model PATH [--pp 512] [--tg 128] [--batch 1,4,16]
//	    [--threads N] [--backend auto|cpu|cpu-ref|vulkan] [--kv f32|f16] [--peer llama.cpp] [--ops] [--json | --benchfmt]
//	vkllm bench --model PATH --draft ngram|miss|PATH [--draft-max 8] [--reps 5] [--tg 128] [--json]
//	vkllm bench --synthetic SHAPE:DTYPE [--seed N] [--peer llama.cpp --peer-model PATH] [flags as above]
//	vkllm bench --synthetic SHAPE:DTYPE [--seed N] --write-gguf PATH
//	vkllm bench --sweep [--sweep-models qwen2.5-0.5b,llama-3.1-8b] [--sweep-dtypes F16,Q4_0,…] [--sweep-out FILE] [--json]
//	vkllm bench --probe [--probe-small] [--probe-budget 60s] [--json]
//
// --synthetic builds a random-weight model of a real model's shape in
// memory (package internal/synth: qwen2.5-0.5b, llama-3.2-1b, qwen3-0.6b,
// llama-3.1-8b; F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, IQ4_NL and more, or
// the per-tensor mix llama-quantize writes for Q4_K_M, Q5_K_M and IQ4_XS)
// and benches it: nothing
// to download or carry. --write-gguf writes that model (the same bytes
// for the same shape, dtype and seed) as a GGUF file and exits, for the
// peer: llama-bench runs on --peer-model, which must be that file.
//
// The backend is "auto", what the library gives by default (a real GPU
// through Vulkan, else kernels/cpu's fast path), unless --backend names
// another ("cpu-ref" is the exact reference path).
//
// Prefill is one Decode of pp tokens (logits for the last only); decode is
// tg single-token Decodes after it, each one reused batch and its logits
// copied out, as the engine runs them. Before them, an untimed warm-up
// runs the same prefill and one decode step on a Context it then closes,
// so that making pipelines (and a GPU driver compiling shaders) is not
// timed. Batched decode (--batch) runs B
// sequences, each after a 32-token prompt, decoding one token each per
// Decode (again one reused batch, the B logits rows copied out) for
// min(tg, 32) steps after an untimed one, and reports B·steps/s. Token ids are fixed
// pseudo-random ids inside the vocabulary. The KV cache is F32 (the
// library's default) or, with --kv f16, F16 (llama.cpp's default); the
// peer runs with the same.
//
// The peer, --peer llama.cpp, is llama.cpp's own llama-bench, built by
// tools/build-llama-bench.sh from a pinned source (the llama.cpp tree in
// the llama-cpp-python 0.3.36 sdist) into
// ${XDG_CACHE_HOME:-~/.cache}/vkllm/llama.cpp-0.3.36/llama-bench, or the
// binary $VKLLM_LLAMA_BENCH names. It runs after our measurements, twice:
//
//	llama-bench -m PATH -t THREADS -ctk KV -ctv KV -b PP -ub PP -lm mmap -r REPS -o json -p PP -n 0
//	llama-bench -m PATH -t THREADS -ctk KV -ctv KV -b PP -ub PP -lm mmap -r REPS -o json -p 0 -n TG -d PP
//
// that is, prefill of pp tokens as one batch, and tg single-token decodes
// after a pp-token prompt, as ours; each the mean (± standard deviation) of
// REPS repetitions (--peer-reps, 5 by default) after a warmup. Its prompt
// tokens are random ids, its decode does not copy logits out, and flash
// attention is llama-bench's default (auto).
//
// The same run measures memory read bandwidth (a STREAM-like read of a
// 512 MiB buffer on the same number of threads, as one stream and as four
// streams a thread, best of 20 each) and reports
// decode speed as a fraction of the roofline: model file bytes × tg tok/s
// ÷ bandwidth (decode reads every weight once per token; for a model with
// tied embeddings the file is the weights read, to within its metadata).
// On a shared machine the bandwidth available changes from one second to
// the next, so the run also reads it during the decode: one probe pass
// over 64 MiB every 8 decode steps, outside the steps' time, the best
// pass giving bandwidth_window_gbs and roofline_window_frac.
// Peak memory is the process's RSS high-water mark (VmHWM) before the
// probe, mapped weight pages included (the window probe's buffer
// is left out: the mark is read before it is mapped and reset after it
// is unmapped).
//
// --ops times the prefill and the decode phases op by op and prints, for
// each phase, each op's calls, mean time, share of the phase and, for
// matmuls, the rate their weights were read at (weight bytes ÷ time). On
// a backend with device timestamps (kernels.OpProfiler: Vulkan) the times
// are the GPU's own, taken inside the normal submissions (ops_clock
// "gpu"): an op's time runs from its first command's start to the next
// op's, so barrier waits count as the op's and the ops (and the
// transfers, as SetI32/SetF32/GetF32 rows) add up to the phase's GPU
// time; the run also prints a decode step's GPU time against its wall
// time, the rest being the host's work, the submit and the wait. On the
// CPU backends (ops_clock "host") each op is timed with a Sync after it
// and the rest of the phase's wall time is "between ops" (the model's
// bookkeeping, the visible-cell lists, the logits' copy). The timing
// costs a little, so tok/s are best taken from a run without it.
//
// --draft ngram|miss|PATH measures speculative decoding instead: a greedy
// chat request that repeats its input ("Rewrite the following text
// exactly:" and about 300 tokens of text, tg tokens generated) runs on
// an LLM without drafts and on one with --draft (prompt lookup, a draft
// source whose drafts are always rejected, or a draft model), --reps
// times each, alternated, after a warm-up run of each. It reports the
// median decode rates (tokens after the first over the time from the
// first to the last), their ratio (the speedup) and the fraction of
// drafts kept; --json prints them with every run's rate.
//
// --sweep tunes the Vulkan kernels for the device (VKLLM_DEVICE picks
// it): every candidate of each tuned kernel family (kernels/vulkan's
// Families: workgroup size, rows per workgroup, tokens per workgroup,
// blocks per invocation of the matrix-vector kernel, for one token and
// for a batch of --sweep-batch, float and, for the weight types that have
// one, int8 ("matvec_int8", "matvec_int8_batch": the Config.Int8 mode's
// kernel, timed whether or not the mode is on)) is timed with GPU timestamps on the
// matrices of the --sweep-models' decode step (synthetic weights of each
// --sweep-dtypes type), checked bitwise against the default (and the
// default against float64 sums), and the fastest right one of each kernel
// and weight type chosen by its time a token. Decode attention (Families
// "attention": segments, heads per workgroup, workgroup target, K/V
// tile) is timed on the models' GQA shapes, one token and 4, lists of 256
// and 4096 cells, each candidate checked against float64 sums and, where
// its segments are the default's, bitwise against the default. The
// weight layout (Families "layout": Q8_0, Q4_0, Q4_1 and Q6_K repacked
// for aligned 16-byte loads, or the file's) is timed per type on the
// matrices whose rows can be repacked, a matrix-vector and a tiled call
// in each layout, the repacked results checked bitwise against the
// file layout's. It prints the table (--json:
// the whole result) and writes the chosen tuning to --sweep-out, the file
// to commit as kernels/vulkan/tuning/VENDOR-NAME.json for the backend to
// use on that device. On a GPU it takes a few minutes: progress goes to
// stderr as it runs (a line when each kernel starts and ends;
// --sweep-verbose: each candidate's timings), --sweep-budget stops it
// starting any kernel or candidate past that time, and SIGTERM (or ^C)
// stops it at the next candidate; either way what finished is chosen
// from and written, and what was cut is listed (stderr, the table, the
// JSON result's "cut") and keeps its defaults.
//
// --probe is a one-call diagnostic of the Vulkan device for a short GPU
// lease (kernels/vulkan's Probe; benchmarks/gpu/README.md says what each
// row means): a streaming read of device memory and of an uploaded
// weight, the latency of dependent loads, MatMul and the matrix-vector
// kernel at a handful of knob points on decode shapes, ablations of that
// kernel, and the tiled and cooperative-matrix kernels on a prefill, each
// timed with GPU timestamps and checked. It stops starting measurements
// past --probe-budget (a skipped row says so); --probe-small takes the
// shapes a CPU implementation runs in seconds (implied on one).
//
// --benchfmt prints Go benchmark lines (for benchstat over repeated runs)
// instead of the summary.
package benchcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	_ "github.com/vkllm/vkllm/kernels/cpuref" // registers "cpu-ref"
	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan" for --backend vulkan|auto

	"github.com/vkllm/vkllm/cmd/internal/runinfo"
	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/tensor"
)

// Result is what --json prints.
type Result struct {
	Model string `json:"model"`
	// Synthetic is the --synthetic spec and Seed its seed; BuildS is the
	// time to build the model in memory (not in LoadS).
	Synthetic    string        `json:"synthetic,omitempty"`
	Seed         uint64        `json:"seed,omitempty"`
	BuildS       float64       `json:"build_s,omitempty"`
	Backend      string        `json:"backend"`
	SIMD         string        `json:"simd,omitempty"`
	Threads      int           `json:"threads"`
	PP           int           `json:"pp"`
	TG           int           `json:"tg"`
	KV           string        `json:"kv"`
	LoadS        float64       `json:"load_s"`
	PPTPS        float64       `json:"pp_tps"`
	TGTPS        float64       `json:"tg_tps"`
	Batch        []BatchResult `json:"batch,omitempty"`
	PeakRSSMB    float64       `json:"peak_rss_mb"`
	ModelBytes   int64         `json:"model_bytes"`
	BandwidthGBs float64       `json:"bandwidth_gbs"`
	RooflineFrac float64       `json:"roofline_frac"`
	// the same from probe passes between the decode steps
	WindowGBs      float64 `json:"bandwidth_window_gbs,omitempty"`
	WindowRoofline float64 `json:"roofline_window_frac,omitempty"`
	LoadAvg        string  `json:"loadavg"`
	// --ops: the decode's ops (Ops) and the prefill's (PrefillOps), timed
	// by OpsClock, "gpu" (the backend's timestamps) or "host" (see
	// OpStat). With "gpu": the prefill's GPU time (PrefillGPUS), and a
	// decode step's mean GPU time, wall time (both µs) and submits.
	Ops           []OpStat `json:"ops,omitempty"`
	PrefillOps    []OpStat `json:"prefill_ops,omitempty"`
	OpsClock      string   `json:"ops_clock,omitempty"`
	PrefillGPUS   float64  `json:"prefill_gpu_s,omitempty"`
	DecodeGPUUS   float64  `json:"decode_gpu_us_per_step,omitempty"`
	DecodeWallUS  float64  `json:"decode_wall_us_per_step,omitempty"`
	DecodeSubmits float64  `json:"decode_submits_per_step,omitempty"`
	Peer          *Peer    `json:"peer,omitempty"`
	PeerError     string   `json:"peer_error,omitempty"` // why the peer has no numbers
}

// roofline is decode against bandwidth gbs: the model's bytes read tg
// tok/s times a second, as a fraction of it (0 without a bandwidth).
func (r *Result) roofline(gbs float64) float64 {
	if gbs <= 0 {
		return 0
	}
	return float64(r.ModelBytes) * r.TGTPS / (gbs * 1e9)
}

// BatchResult is one batched-decode size.
type BatchResult struct {
	Batch int     `json:"batch"`
	Steps int     `json:"steps"`
	TPS   float64 `json:"tps"` // tokens (batch × steps) per second
}

// Run runs the bench command with args (without the command name) and is
// its exit code: 0, 1 on a failed run, 2 on bad flags. Cancelling ctx
// (vkllm cancels it on SIGINT or SIGTERM) ends a sweep after the run in
// flight, with what finished written out.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vkllm bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model folder or .gguf file, or a Hub name hf://OWNER/REPO[:QUANT] (pulled first by vkllm)")
	synthetic := fs.String("synthetic", "", "bench a random model built in memory, SHAPE:DTYPE ("+strings.Join(synth.Shapes(), ", ")+"; F16, Q8_0, Q4_0, Q4_K, …, or "+strings.Join(synth.Layouts(), ", ")+"), instead of --model")
	seed := fs.Uint64("seed", 1, "--synthetic's random seed")
	writeGGUF := fs.String("write-gguf", "", "write the --synthetic model to this .gguf file and exit")
	peerModel := fs.String("peer-model", "", "the file the peer runs (default --model; with --synthetic, the file --write-gguf wrote)")
	pp := fs.Int("pp", 512, "prompt tokens to prefill")
	tg := fs.Int("tg", 128, "tokens to decode")
	batch := fs.String("batch", "", "batched decode sizes, e.g. 1,4,16 (none by default)")
	threads := fs.Int("threads", runtime.NumCPU(), "threads")
	backend := runinfo.BackendFlag(fs)
	peer := fs.String("peer", "", `"llama.cpp" to run llama.cpp's llama-bench (tools/build-llama-bench.sh) on the same file`)
	peerReps := fs.Int("peer-reps", 5, "llama-bench's repetitions (-r) of each phase")
	asJSON := fs.Bool("json", false, "print one JSON object")
	benchfmt := fs.Bool("benchfmt", false, "print Go benchmark lines (for benchstat)")
	noProbe := fs.Bool("no-bandwidth", false, "skip the bandwidth probe")
	kvName := fs.String("kv", "f32", "KV cache element type, f32 (the library's default) or f16 (llama.cpp's); the peer gets the same")
	ops := fs.Bool("ops", false, "time the decode phase op by op and print where its time goes")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of prefill and decode (pprof) to this file")
	draft := fs.String("draft", "", `speculative decoding instead: "ngram", "miss" (drafts always rejected) or a draft model's path`)
	draftMax := fs.Int("draft-max", 8, "with --draft: the most draft tokens per step, [1, 64]")
	reps := fs.Int("reps", 5, "with --draft: runs of each side, alternated")
	sweep := fs.Bool("sweep", false, "tune the Vulkan kernels for this device (see --sweep-*) instead")
	sweepModels := fs.String("sweep-models", "qwen2.5-0.5b,llama-3.1-8b", "with --sweep: the model shapes whose matrices are timed")
	sweepDTypes := fs.String("sweep-dtypes", "Q4_0,Q8_0,F16,Q4_K,Q6_K,Q5_K,Q4_1,BF16,F32", "with --sweep: the weight types, in the order swept (attention after the fourth)")
	sweepBatch := fs.Int("sweep-batch", 8, "with --sweep: the tokens of the batched-decode timings")
	sweepReps := fs.Int("sweep-reps", 20, "with --sweep: timed dispatches per candidate and matrix")
	sweepCands := fs.Int("sweep-candidates", 0, "with --sweep: at most this many candidates per kernel (0: all)")
	sweepOut := fs.String("sweep-out", "", "with --sweep: write the chosen tuning (JSON) to this file (after each weight type)")
	sweepBudget := fs.Duration("sweep-budget", 0, "with --sweep: start no kernel family and no candidate past this time (0: no limit); what is cut is listed and keeps its defaults")
	sweepVerbose := fs.Bool("sweep-verbose", false, "with --sweep: a progress line per candidate and matrix, not only per kernel family")
	probe := fs.Bool("probe", false, "diagnose the Vulkan device in one short call (see --probe-*) instead")
	probeSmall := fs.Bool("probe-small", false, "with --probe: small shapes (implied on a CPU implementation)")
	probeBudget := fs.Duration("probe-budget", 60*time.Second, "with --probe: start no measurement past this time")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: vkllm bench --model PATH [flags]\n       vkllm bench --synthetic SHAPE:DTYPE [flags]\n       vkllm bench --sweep [flags]\n       vkllm bench --probe [flags]\n\n"+
			"measure prefill and decode speed (with --draft: speculative decoding's speedup; with --peer: llama.cpp's on the same file; with --sweep: tune the Vulkan kernels for this device).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *probe {
		if *probeBudget <= 0 {
			fmt.Fprintln(stderr, "error: --probe-budget must be > 0")
			return 2
		}
		if err := runProbe(*probeSmall, *probeBudget, *asJSON, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
			return 1
		}
		return 0
	}
	if *sweep {
		return runSweepFlags(ctx, *sweepModels, *sweepDTypes, sweepConfig{batch: *sweepBatch, reps: *sweepReps, cands: *sweepCands,
			budget: *sweepBudget, out: *sweepOut, asJSON: *asJSON, verbose: *sweepVerbose}, stdout, stderr)
	}
	kv, kvOK := map[string]tensor.DType{"f32": tensor.F32, "f16": tensor.F16}[*kvName]
	if !kvOK {
		fmt.Fprintf(stderr, "error: --kv %q: want f32 or f16\n", *kvName)
		return 2
	}
	sizes, err := parseSizes(*batch)
	// One problem at a time, the one the user has.
	problem := ""
	switch {
	case *model == "" && *synthetic == "":
		problem = "give --model PATH or --synthetic SHAPE:DTYPE (vkllm bench -h lists the flags)"
	case *model != "" && *synthetic != "":
		problem = "give one of --model and --synthetic, not both"
	case err != nil:
		problem = "--batch is a list of sizes like 1,4,16: " + err.Error()
	default:
		for _, f := range []struct {
			name string
			v    int
		}{{"pp", *pp}, {"tg", *tg}, {"threads", *threads}, {"peer-reps", *peerReps}} {
			if f.v < 1 {
				problem = fmt.Sprintf("--%s must be ≥ 1, got %d", f.name, f.v)
				break
			}
		}
	}
	if problem != "" {
		fmt.Fprintln(stderr, "error: "+problem)
		return 2
	}
	src := source{name: *model, peerPath: *model}
	if *peerModel != "" {
		src.peerPath = *peerModel
	}
	if *synthetic != "" {
		shape, dt, err := synth.ParseSpec(*synthetic)
		if err != nil {
			fmt.Fprintf(stderr, "error: --synthetic: %v\n", err)
			return 2
		}
		if *peer != "" && *peerModel == "" {
			fmt.Fprintln(stderr, "error: --peer with --synthetic needs --peer-model: the model written by --write-gguf with the same seed")
			return 2
		}
		src.name, src.shape, src.dtype, src.seed = *synthetic, &shape, dt, *seed
	}
	if *writeGGUF != "" {
		if *synthetic == "" {
			fmt.Fprintln(stderr, "error: --write-gguf writes the --synthetic model; give --synthetic SHAPE:DTYPE")
			return 2
		}
		if err := writeSynthetic(*writeGGUF, src, stderr); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		return 0
	}
	if err := runinfo.CheckBackend(*backend); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if *draft != "" {
		if *draftMax < 1 || *draftMax > 64 || *reps < 1 {
			fmt.Fprintln(stderr, "error: --draft-max must be in [1, 64] and --reps ≥ 1")
			return 2
		}
		r, err := benchSpec(*model, *backend, *threads, *draft, *draftMax, *tg, *reps, specText, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
			return 1
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(r)
		} else {
			printSpec(stdout, r)
		}
		return 0
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		defer f.Close()
	}
	res, err := bench(src, *backend, *pp, *tg, *threads, kv, sizes, *ops, !*noProbe, stderr)
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if err == nil {
		res.PeakRSSMB = max(res.PeakRSSMB, peakRSSMB())
		if !*noProbe {
			fmt.Fprintf(stderr, "bandwidth probe (%d threads)…\n", *threads)
			res.BandwidthGBs = readBandwidth(*threads)
			res.RooflineFrac = res.roofline(res.BandwidthGBs)
			res.WindowRoofline = res.roofline(res.WindowGBs)
		}
		res.LoadAvg = loadAvg()
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	rc := 0
	if *peer != "" {
		// A failed peer does not lose our numbers: they are printed with
		// the peer's error, and the exit code is 1.
		fmt.Fprintf(stderr, "peer %s…\n", *peer)
		if res.Peer, err = runPeer(*peer, src.peerPath, *pp, *tg, *threads, *peerReps, kv); err != nil {
			fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
			res.PeerError, rc = err.Error(), 1
		}
	}
	switch {
	case *asJSON:
		json.NewEncoder(stdout).Encode(res)
	case *benchfmt:
		printBenchfmt(stdout, res)
	default:
		printSummary(stdout, res)
	}
	return rc
}

// sweepConfig is --sweep's flags past the models and weight types.
type sweepConfig struct {
	batch, reps, cands int
	budget             time.Duration
	out                string
	asJSON, verbose    bool
}

// runSweepFlags checks --sweep's flags and runs it: 0, 1 on a failed or
// interrupted sweep, 2 on bad flags.
func runSweepFlags(ctx context.Context, models, dtypes string, c sweepConfig, stdout, stderr io.Writer) int {
	var shapes []synth.Shape
	for _, name := range strings.Split(models, ",") {
		s, err := synth.Lookup(strings.TrimSpace(name))
		if err != nil {
			fmt.Fprintf(stderr, "error: --sweep-models: %v\n", err)
			return 2
		}
		shapes = append(shapes, s)
	}
	var dts []tensor.DType
	for _, name := range strings.Split(dtypes, ",") {
		dt, ok := tensor.ParseDType(strings.TrimSpace(name))
		if !ok {
			fmt.Fprintf(stderr, "error: --sweep-dtypes: unknown type %q\n", name)
			return 2
		}
		dts = append(dts, dt)
	}
	if c.batch < 2 || c.reps < 1 || c.cands < 0 || c.budget < 0 {
		fmt.Fprintln(stderr, "error: --sweep-batch must be ≥ 2, --sweep-reps ≥ 1, --sweep-candidates ≥ 0 and --sweep-budget ≥ 0")
		return 2
	}
	if err := runSweep(ctx, shapes, dts, c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	return 0
}

func parseSizes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad batch size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func printSummary(w io.Writer, r *Result) {
	backend := r.Backend
	if r.SIMD != "" {
		backend += " (" + r.SIMD + ")"
	}
	fmt.Fprintf(w, "%s on %s, %d threads, kv %s: load %.2f s, pp%d %.2f tok/s, tg%d %.2f tok/s, peak RSS %.0f MiB\n",
		r.Model, backend, r.Threads, r.KV, r.LoadS, r.PP, r.PPTPS, r.TG, r.TGTPS, r.PeakRSSMB)
	for _, b := range r.Batch {
		fmt.Fprintf(w, "batched decode: batch %d, %d steps: %.2f tok/s\n", b.Batch, b.Steps, b.TPS)
	}
	if r.BandwidthGBs > 0 {
		fmt.Fprintf(w, "read bandwidth %.2f GB/s; model %.0f MB × %.2f tok/s = %.1f%% of the roofline\n",
			r.BandwidthGBs, float64(r.ModelBytes)/1e6, r.TGTPS, 100*r.RooflineFrac)
	}
	if r.WindowGBs > 0 {
		fmt.Fprintf(w, "read bandwidth between the decode steps %.2f GB/s: %.1f%% of that roofline\n", r.WindowGBs, 100*r.WindowRoofline)
	}
	if p := r.Peer; p != nil {
		fmt.Fprintf(w, "%s (llama-bench %s, %s, %d reps): pp %.2f ± %.2f tok/s, tg %.2f ± %.2f tok/s; vkllm/peer: pp %.3f×, tg %.3f×\n",
			p.Name, p.Commit, p.Backends, p.Reps, p.PPTPS, p.PPStddev, p.TGTPS, p.TGStddev, r.PPTPS/p.PPTPS, r.TGTPS/p.TGTPS)
	}
	printOps(w, r)
	fmt.Fprintf(w, "load average: %s\n", r.LoadAvg)
}

// printBenchfmt writes one benchmark line per measurement, named by the
// model file and backend, in the format benchstat reads.
func printBenchfmt(w io.Writer, r *Result) {
	name := strings.TrimSuffix(r.Model[strings.LastIndex(r.Model, "/")+1:], ".gguf")
	line := func(what string, tps float64) {
		fmt.Fprintf(w, "Benchmark%s/model=%s/backend=%s/threads=%d 1 %.0f ns/op %.3f tok/s\n",
			what, name, r.Backend, r.Threads, 1e9/tps, tps)
	}
	line(fmt.Sprintf("Prefill/pp=%d", r.PP), r.PPTPS)
	line(fmt.Sprintf("Decode/tg=%d", r.TG), r.TGTPS)
	for _, b := range r.Batch {
		line(fmt.Sprintf("BatchedDecode/batch=%d", b.Batch), b.TPS)
	}
	if p := r.Peer; p != nil {
		fmt.Fprintf(w, "BenchmarkPrefill/pp=%d/model=%s/backend=%s/threads=%d 1 %.0f ns/op %.3f tok/s\n", r.PP, name, p.Name, r.Threads, 1e9/p.PPTPS, p.PPTPS)
		fmt.Fprintf(w, "BenchmarkDecode/tg=%d/model=%s/backend=%s/threads=%d 1 %.0f ns/op %.3f tok/s\n", r.TG, name, p.Name, r.Threads, 1e9/p.TGTPS, p.TGTPS)
	}
}
