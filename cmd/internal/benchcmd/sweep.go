//go:build cgo

package benchcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/tensor"
)

// sweepShapes are the matrices of a model's decode step as the sweep
// times them: per layer Q, K and V, O, gate and up, down; the output
// head once.
func sweepShapes(s synth.Shape) []vulkan.SweepShape {
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	sh := func(name string, k, rows, count int) vulkan.SweepShape {
		return vulkan.SweepShape{Name: s.Name + " " + name, Model: s.Name, K: k, Rows: rows, Count: count}
	}
	return []vulkan.SweepShape{
		sh("q", s.Hidden, q, s.Layers), sh("k,v", s.Hidden, kv, 2*s.Layers), sh("o", q, s.Hidden, s.Layers),
		sh("gate,up", s.Hidden, s.Intermediate, 2*s.Layers), sh("down", s.Intermediate, s.Hidden, s.Layers),
		sh("output", s.Hidden, s.Vocab, 1),
	}
}

// runSweep is --sweep: Sweep on the Vulkan device over the shapes of
// models for dtypes, the table (or the JSON result) on stdout, progress
// on stderr as it goes, the chosen tuning to c.out if set.
//
// It sweeps in pieces, one weight type at a time in the order given, with
// the attention calls after the fourth type, and rewrites c.out after
// each piece, so that a run cut short keeps what it finished. With
// c.budget > 0 no kernel family and no candidate starts past it; when ctx
// is cancelled (SIGTERM) the run in flight finishes, c.out is written
// and runSweep returns an error. What either cuts is listed on stderr,
// in the table and in the JSON result's "cut", and keeps its defaults.
func runSweep(ctx context.Context, models []synth.Shape, dtypes []tensor.DType, c sweepConfig, stdout, stderr io.Writer) error {
	t0 := time.Now()
	cfg, err := vulkan.FromEnv(vulkan.Config{})
	if err != nil {
		return err
	}
	b, err := vulkan.Open(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	var shapes []vulkan.SweepShape
	var attn []vulkan.SweepAttention
	for _, m := range models {
		shapes = append(shapes, sweepShapes(m)...)
		attn = append(attn, vulkan.AttentionSweepShapes(m.Name, m.Heads, m.KVHeads, m.HeadDim)...)
	}
	fmt.Fprintf(stderr, "sweep on %s: %d shapes, %d weight types, %d attention calls\n", b.Describe(), len(shapes), len(dtypes), len(attn))
	type piece struct {
		name string
		o    vulkan.SweepOptions
	}
	base := vulkan.SweepOptions{Batch: c.batch, Reps: c.reps, Candidates: c.cands, Progress: stderr, Verbose: c.verbose}
	if c.budget > 0 {
		base.Deadline = t0.Add(c.budget)
	}
	var pieces []piece
	for i, dt := range dtypes {
		if i == 4 {
			o := base
			o.DTypes, o.Attention = dtypes[:1], attn
			pieces = append(pieces, piece{"attention", o})
		}
		o := base
		o.DTypes, o.Shapes = []tensor.DType{dt}, shapes
		pieces = append(pieces, piece{dt.String(), o})
	}
	if len(dtypes) <= 4 {
		o := base
		o.DTypes, o.Attention = dtypes[:1], attn
		pieces = append(pieces, piece{"attention", o})
	}
	res := &vulkan.SweepResult{Shapes: shapes, Attention: attn}
	for _, p := range pieces {
		r, err := b.Sweep(ctx, p.o)
		if r == nil {
			return fmt.Errorf("sweep %s: %w", p.name, err)
		}
		if res.Tuning.Kernels == nil {
			res.Tuning = r.Tuning
		} else {
			maps.Copy(res.Tuning.Kernels, r.Tuning.Kernels)
		}
		res.Rows = append(res.Rows, r.Rows...)
		res.Cut = append(res.Cut, r.Cut...)
		if c.out != "" {
			js, err := json.MarshalIndent(res.Tuning, "", "  ")
			if err == nil {
				err = os.WriteFile(c.out, append(js, '\n'), 0o644)
			}
			if err != nil {
				return err
			}
		}
	}
	res.Time = time.Since(t0)
	if c.out != "" {
		fmt.Fprintf(stderr, "wrote the chosen tuning to %s (commit it as kernels/vulkan/tuning/%04x-NAME.json)\n", c.out, res.Tuning.Vendor)
	}
	for _, k := range res.Cut {
		fmt.Fprintf(stderr, "sweep cut: %s\n", k)
	}
	if asJSON := c.asJSON; asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return err
		}
	} else {
		res.Table(stdout)
		if len(res.Cut) > 0 {
			fmt.Fprintf(stdout, "cut (budget or interrupt): %s\n", strings.Join(res.Cut, "; "))
		}
		fmt.Fprintf(stdout, "sweep took %.1f s\n", res.Time.Seconds())
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sweep interrupted after %.1f s (what finished is written): %w", res.Time.Seconds(), err)
	}
	return nil
}
