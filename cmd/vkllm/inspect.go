package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
)

// Report is what inspect prints.
type Report struct {
	Path        string         `json:"path"`
	Format      string         `json:"format"`
	Arch        string         `json:"architecture"`
	Config      *models.Config `json:"config"`
	Files       []string       `json:"files"`
	FileBytes   int64          `json:"file_bytes"`
	Tensors     int            `json:"tensors"`
	ByDType     map[string]int `json:"tensors_by_dtype"`
	Parameters  int64          `json:"parameters"`
	GGUFVersion uint32         `json:"gguf_version,omitempty"`
	// Loads is whether the weights pass models.Files.Check; Problems are
	// its errors, one per weight.
	Loads    bool     `json:"loads"`
	Problems []string `json:"problems,omitempty"`
}

// inspectCmd is `vkllm inspect`: what a model folder or GGUF file holds
// (format, architecture, configuration, tensor count by dtype, parameter
// count, file size), then whether the model would load: every weight its
// configuration needs present, with the shape the decoder expects and a
// dtype it can read (models.Files.Check).
//
// On a file it cannot read it prints one line, "error: …", to stderr and
// exits 1. On a model that would not load it prints the report, each
// problem weight with its expected and actual shape ("check: FAILED"),
// then one "error: …" line on stderr, and exits 1.
func inspectCmd(ctx context.Context, e env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	fs := newFlags(e, "inspect")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	ctx, cancel := e.interruptible(ctx)
	defer cancel()
	path, err := resolveModel(ctx, stderr, fs.Arg(0)) // a Hub name is pulled first
	if err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	r, err := inspect(path)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		printText(stdout, r)
	}
	if !r.Loads {
		fmt.Fprintf(stderr, "error: the model would not load: %d weight problem(s), first: %s [%s]\n",
			len(r.Problems), r.Problems[0], errcode.ModelCorrupt)
		return 1
	}
	return 0
}

func inspect(path string) (*Report, error) {
	f, err := models.OpenFiles(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &Report{Path: path, Format: string(f.Format), Arch: f.Config.Arch, Config: f.Config,
		Files: f.WeightPaths, FileBytes: f.Size, ByDType: map[string]int{}}
	if f.GGUF != nil {
		r.GGUFVersion = f.GGUF.Version
	}
	for _, t := range f.Weights.Tensors() {
		r.Tensors++
		r.ByDType[t.DType.String()]++
		r.Parameters += t.NumElements()
	}
	r.Loads = true
	if err := f.Check(); err != nil {
		r.Loads = false
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			var we *models.WeightError
			if errors.As(e, &we) {
				r.Problems = append(r.Problems, we.Name+": "+we.Reason)
			} else {
				r.Problems = append(r.Problems, e.Error())
			}
		}
	}
	return r, nil
}

func printText(w io.Writer, r *Report) {
	c := r.Config
	fmt.Fprintf(w, "path:          %s\n", r.Path)
	fmt.Fprintf(w, "format:        %s", r.Format)
	if r.GGUFVersion != 0 {
		fmt.Fprintf(w, " v%d", r.GGUFVersion)
	}
	fmt.Fprintf(w, "\narchitecture:  %s\n", r.Arch)
	fmt.Fprintf(w, "file size:     %s (%d files)\n", humanBytes(r.FileBytes), len(r.Files))
	fmt.Fprintf(w, "parameters:    %d (%.1fM)\n", r.Parameters, float64(r.Parameters)/1e6)
	names := make([]string, 0, len(r.ByDType))
	for k := range r.ByDType {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "tensors:       %d:", r.Tensors)
	for _, k := range names {
		fmt.Fprintf(w, " %s×%d", k, r.ByDType[k])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "config:\n  vocab %d, hidden %d, intermediate %d, layers %d\n", c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumLayers)
	fmt.Fprintf(w, "  heads %d, kv heads %d, head dim %d, max positions %d\n", c.NumHeads, c.NumKVHeads, c.HeadDim, c.MaxPositions)
	fmt.Fprintf(w, "  rms eps %g, rope theta %g", c.RMSNormEps, c.RoPETheta)
	if s := c.RoPEScaling; s != nil {
		fmt.Fprintf(w, ", rope scaling %s ×%g", s.Type, s.Factor)
	}
	fmt.Fprintf(w, "\n  tied embeddings %v, attention bias %v, bos %v, eos %v\n", c.TieEmbedding, c.AttentionBias, c.BOS, c.EOS)
	if c.QKNorm {
		fmt.Fprintln(w, "  q/k norm per head")
	}
	if c.SlidingWindow > 0 {
		fmt.Fprintf(w, "  sliding window %d on layers %v\n", c.SlidingWindow, layerList(c.SWALayers))
	}
	if len(c.NoRoPELayers) > 0 {
		fmt.Fprintf(w, "  no RoPE on layers %v\n", layerList(c.NoRoPELayers))
	}
	if r.Loads {
		fmt.Fprintln(w, "check:         ok, would load: every weight the config needs is there, shape and dtype as expected")
		return
	}
	fmt.Fprintf(w, "check:         FAILED, would not load: %d weight problem(s)\n", len(r.Problems))
	const shown = 20
	for i, p := range r.Problems {
		if i == shown {
			fmt.Fprintf(w, "  … and %d more\n", len(r.Problems)-shown)
			break
		}
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// layerList lists the layers a per-layer flag marks.
func layerList(marked []bool) []int {
	var out []int
	for l, m := range marked {
		if m {
			out = append(out, l)
		}
	}
	return out
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
