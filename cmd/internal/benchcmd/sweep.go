//go:build cgo

package benchcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

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
func runSweep(models []synth.Shape, dtypes []tensor.DType, batch, reps, cands int, out string, asJSON bool, stdout, stderr io.Writer) error {
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
	res, err := b.Sweep(vulkan.SweepOptions{DTypes: dtypes, Shapes: shapes, Attention: attn, Batch: batch, Reps: reps, Candidates: cands, Progress: stderr})
	if err != nil {
		return err
	}
	if out != "" {
		js, err := json.MarshalIndent(res.Tuning, "", "  ")
		if err == nil {
			err = os.WriteFile(out, append(js, '\n'), 0o644)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote the chosen tuning to %s (commit it as kernels/vulkan/tuning/%04x-NAME.json)\n", out, res.Tuning.Vendor)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	res.Table(stdout)
	fmt.Fprintf(stdout, "sweep took %.1f s\n", res.Time.Seconds())
	return nil
}
