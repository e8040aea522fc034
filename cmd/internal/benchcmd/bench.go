package benchcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tensor"
)

// source is what the bench runs: a model file, or a synthetic model
// (shape set) built in memory.
type source struct {
	name     string // the path, or the --synthetic spec
	peerPath string // the file the peer runs
	shape    *synth.Shape
	dtype    synth.Quant
	seed     uint64
}

// open opens the model on the backend opt gives; for a synthetic model,
// it builds it first and reports the time that took.
func (s source) open(opt models.Option, progress io.Writer) (m *models.Model, build time.Duration, err error) {
	if s.shape == nil {
		m, err = models.Open(context.Background(), s.name, opt)
		return m, 0, err
	}
	t0 := time.Now()
	sm, err := synth.Build(*s.shape, s.dtype, s.seed, 0)
	if err != nil {
		return nil, 0, err
	}
	g, err := sm.Parse()
	if err != nil {
		return nil, 0, err
	}
	build = time.Since(t0)
	fmt.Fprintf(progress, "built %s (seed %d, %.0f MB) in %.2f s\n", s.name, s.seed, float64(sm.Bytes())/1e6, build.Seconds())
	sm = nil // the parsed file holds its own copy
	m, err = models.OpenGGUF(context.Background(), "synthetic:"+s.name, g, opt)
	return m, build, err
}

// writeSynthetic builds the synthetic model s and writes it to path as
// GGUF (through a temporary file beside it, renamed when complete).
func writeSynthetic(path string, s source, progress io.Writer) error {
	t0 := time.Now()
	sm, err := synth.Build(*s.shape, s.dtype, s.seed, 0)
	if err != nil {
		return err
	}
	if err := sm.WriteFile(path); err != nil {
		return err
	}
	fmt.Fprintf(progress, "wrote %s (seed %d, %.0f MB of tensors) to %s in %.2f s\n", s.name, s.seed, float64(sm.Bytes())/1e6, path, time.Since(t0).Seconds())
	return nil
}

func bench(src source, backend string, pp, tg, threads int, kv tensor.DType, batches []int, ops, withProbe bool, progress io.Writer) (*Result, error) {
	start := time.Now()
	opt := models.WithBackendName(backend, kernels.Options{Threads: threads})
	var timer *opTimer // --ops
	if ops {
		b, err := kernels.Open(backend, kernels.Options{Threads: threads})
		if err != nil {
			return nil, err
		}
		defer b.Close()
		timer = newOpTimer(b)
		opt = models.WithBackend(timer)
	}
	m, build, err := src.open(opt, progress)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	res := &Result{Model: src.name, Backend: m.Backend().Name(), Threads: threads, PP: pp, TG: tg, KV: strings.ToLower(kv.String()),
		LoadS: (time.Since(start) - build).Seconds()}
	if res.Backend == kernels.CPU {
		res.SIMD = cpu.SIMD() // the kernels the fast path runs
	}
	if src.shape != nil {
		res.Synthetic, res.Seed, res.BuildS = src.name, src.seed, build.Seconds()
		res.ModelBytes = m.Files.Size // the tensors' bytes: the file's, to within its metadata
	} else if st, err := os.Stat(src.name); err == nil && !st.IsDir() {
		res.ModelBytes = st.Size()
	}
	params := models.ContextParams{ContextLen: pp + tg, BatchSize: pp, KVType: kv}
	vocab := uint32(m.Config.VocabSize)
	tok := func(i int) int32 { return int32((uint32(i)*2654435761 + 12345) % vocab) }
	var b models.Batch
	for i := range pp {
		b.Add(tok(i), int32(i), i == pp-1, 0)
	}
	fmt.Fprintf(progress, "loaded on %s in %.2f s; warm-up…\n", m.DescribeBackend(), res.LoadS)
	if err := warmUp(m, params, b, tok(pp)); err != nil {
		return nil, err
	}
	phaseDone("warm-up", m)
	ctx, err := m.NewContext(params)
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	fmt.Fprintf(progress, "prefill %d tokens…\n", pp)
	if timer != nil {
		res.OpsClock = timer.clock()
		if err := timer.start(); err != nil && res.OpsClock == clockGPU {
			// a device without timestamps: each op and a Sync, timed
			fmt.Fprintf(progress, "no GPU timestamps (%v): --ops times each op with a Sync\n", err)
			timer.prof, res.OpsClock = nil, clockHost
			err = timer.start()
		}
		if err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	if err := ctx.Decode(b); err != nil {
		return nil, err
	}
	prefill := time.Since(t0)
	res.PPTPS = float64(pp) / prefill.Seconds()
	fmt.Fprintf(progress, "prefill %.2f tok/s\n", res.PPTPS)
	if timer != nil {
		ops, p, err := timer.stop(prefill)
		if err != nil {
			return nil, err
		}
		res.PrefillOps = ops
		if p != nil {
			res.PrefillGPUS = p.Span.Seconds()
		}
		if err := timer.start(); err != nil {
			return nil, err
		}
	}
	// Decode steps as the engine runs them: one reused one-token batch,
	// then the logits row copied out (llama-bench, the peer, leaves its
	// logits where llama.cpp wrote them).
	var step models.Batch
	step.Add(0, 0, true, 0)
	logits := make([]float32, m.Config.VocabSize)
	// With the probe on, a probe pass every windowEvery steps, outside
	// the steps' time: the bandwidth the machine had during the decode.
	var window *probe
	if withProbe {
		res.PeakRSSMB = peakRSSMB() // before the probe's buffer (see run)
		window = newProbe(threads, windowBytes)
		defer window.release()
	}
	var decoding time.Duration // the steps' time, without the probe passes
	for i := range tg {
		if i%8 == 0 && i > 0 {
			fmt.Fprintf(progress, "\rdecode %d/%d, %.2f tok/s ", i, tg, float64(i)/decoding.Seconds())
		}
		if window != nil && i%windowEvery == windowEvery/2 {
			time.Sleep(windowQuiet)
			window.pass()
		}
		t0 := time.Now()
		step.Token[0], step.Pos[0] = tok(pp+i), int32(pp+i)
		if err := ctx.Decode(step); err != nil {
			return nil, err
		}
		copy(logits, ctx.Logits(0))
		decoding += time.Since(t0)
	}
	res.TGTPS = float64(tg) / decoding.Seconds()
	if window != nil {
		res.WindowGBs = window.best
		window.release()
		_ = resetPeakRSS() // so that the buffer does not count in the peak
	}
	if timer != nil {
		ops, p, err := timer.stop(decoding)
		if err != nil {
			return nil, err
		}
		res.Ops = ops
		if p != nil {
			res.DecodeGPUUS = float64(p.Span.Nanoseconds()) / 1e3 / float64(tg)
			res.DecodeWallUS = float64(decoding.Nanoseconds()) / 1e3 / float64(tg)
			res.DecodeSubmits = float64(p.Submits) / float64(tg)
		}
	}
	fmt.Fprintf(progress, "\rdecode %d/%d, %.2f tok/s\n", tg, tg, res.TGTPS)
	phaseDone("decode", m)
	ctx.Close()
	for _, n := range batches {
		br, err := batched(m, n, min(tg, 32), kv, tok, progress)
		if err != nil {
			return nil, err
		}
		res.Batch = append(res.Batch, br)
	}
	return res, nil
}

// phaseDone is called after each phase of a bench ("warm-up", "decode",
// and per batch size "batch warm-up", "batch"), for tests to look at
// the backend.
var phaseDone = func(phase string, m *models.Model) {}

// warmUp runs an untimed prefill of b and one decode step of the token
// tok after it, on a Context of params that it closes, so that the timed
// runs find the pipelines made and the device's shaders compiled
// (llama-bench warms up so too).
func warmUp(m *models.Model, params models.ContextParams, b models.Batch, tok int32) error {
	ctx, err := m.NewContext(params)
	if err != nil {
		return err
	}
	defer ctx.Close()
	if err := ctx.Decode(b); err != nil {
		return err
	}
	var step models.Batch
	step.Add(tok, int32(len(b.Token)), true, 0)
	return ctx.Decode(step)
}

// batched decodes steps tokens in each of n sequences, n tokens per
// Decode, after a 32-token prompt per sequence and one untimed step (a
// step of n tokens may run kernels, and make pipelines, that neither the
// prompts nor a single sequence's decode did).
func batched(m *models.Model, n, steps int, kv tensor.DType, tok func(int) int32, progress io.Writer) (BatchResult, error) {
	const prompt = 32
	ctx, err := m.NewContext(models.ContextParams{ContextLen: n * (prompt + 1 + steps), MaxSeqs: n, BatchSize: max(n, prompt), KVType: kv})
	if err != nil {
		return BatchResult{}, err
	}
	defer ctx.Close()
	// one reused batch of a token per sequence, the logits copied out
	// into one buffer, as the single-sequence decode runs (see bench)
	var step models.Batch
	for s := range n {
		var pre models.Batch // the sequence's prompt, one Decode
		for i := range prompt {
			pre.Add(tok(1000*s+i), int32(i), i == prompt-1, models.SeqID(s))
		}
		if err := ctx.Decode(pre); err != nil {
			return BatchResult{}, err
		}
		step.Add(0, 0, true, models.SeqID(s))
	}
	logits := make([]float32, n*m.Config.VocabSize)
	var t0 time.Time
	for i := range steps + 1 { // step 0 is the warm-up
		if i == 1 {
			phaseDone("batch warm-up", m)
			t0 = time.Now()
		}
		fmt.Fprintf(progress, "\rbatched decode: batch %d, step %d/%d ", n, max(i-1, 0), steps)
		for s := range n {
			step.Token[s], step.Pos[s] = tok(1000*s+prompt+i), int32(prompt+i)
		}
		if err := ctx.Decode(step); err != nil {
			return BatchResult{}, err
		}
		for s := range n {
			copy(logits[s*m.Config.VocabSize:], ctx.Logits(s))
		}
	}
	r := BatchResult{Batch: n, Steps: steps, TPS: float64(n*steps) / time.Since(t0).Seconds()}
	phaseDone("batch", m)
	fmt.Fprintf(progress, "\rbatched decode: batch %d, %d steps, %.2f tok/s\n", n, steps, r.TPS)
	return r, nil
}
