//go:build cgo

package benchcmd

import (
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
// models for dtypes, the table (or the JSON result) on stdout, the
// chosen tuning to out if set.
//
// It sweeps in pieces, one weight type at a time in the order given, with
// the attention calls after the fourth type, and rewrites out after each
// piece, so that a run cut short (a GPU lease's time limit) keeps what it
// finished. With budget > 0 a piece starts only while the time left
// exceeds the longest piece so far; the pieces left out are named on
// stderr and in the JSON result's "skipped", and their kernels keep their
// defaults.
func runSweep(models []synth.Shape, dtypes []tensor.DType, batch, reps, cands int, budget time.Duration, out string, asJSON bool, stdout, stderr io.Writer) error {
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
	base := vulkan.SweepOptions{Batch: batch, Reps: reps, Candidates: cands, Progress: stderr}
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
	res := sweepRun{SweepResult: &vulkan.SweepResult{Shapes: shapes, Attention: attn}}
	var longest time.Duration
	for _, p := range pieces {
		if left := budget - time.Since(t0); budget > 0 && left < longest {
			fmt.Fprintf(stderr, "sweep: %s skipped: %.0f s left of the budget, the longest piece took %.0f s\n", p.name, left.Seconds(), longest.Seconds())
			res.Skipped = append(res.Skipped, p.name)
			continue
		}
		p0 := time.Now()
		r, err := b.Sweep(p.o)
		if err != nil {
			return fmt.Errorf("sweep %s: %w", p.name, err)
		}
		longest = max(longest, time.Since(p0))
		if res.Tuning.Kernels == nil {
			res.Tuning = r.Tuning
		} else {
			maps.Copy(res.Tuning.Kernels, r.Tuning.Kernels)
		}
		res.Rows = append(res.Rows, r.Rows...)
		if out != "" {
			js, err := json.MarshalIndent(res.Tuning, "", "  ")
			if err == nil {
				err = os.WriteFile(out, append(js, '\n'), 0o644)
			}
			if err != nil {
				return err
			}
		}
	}
	res.Time = time.Since(t0)
	if out != "" {
		fmt.Fprintf(stderr, "wrote the chosen tuning to %s (commit it as kernels/vulkan/tuning/%04x-NAME.json)\n", out, res.Tuning.Vendor)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	res.Table(stdout)
	if len(res.Skipped) > 0 {
		fmt.Fprintf(stdout, "skipped (budget): %s\n", strings.Join(res.Skipped, ", "))
	}
	fmt.Fprintf(stdout, "sweep took %.1f s\n", res.Time.Seconds())
	return nil
}

// sweepRun is runSweep's result: Sweep's, merged over the pieces, and the
// pieces the budget left out.
type sweepRun struct {
	*vulkan.SweepResult
	Skipped []string `json:"skipped,omitempty"`
}
