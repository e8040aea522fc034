// Package runinfo formats the lines vkllm's commands print on stderr
// about a run, as llama-cli and `ollama run --verbose` do: what was
// loaded and where, and how fast a generation went.
package runinfo

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/vkllm/vkllm/kernels"

	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tensor"
)

// Loaded is the line for a model that took took to load:
//
//	loaded SmolLM2-135M-Instruct (llama, Q4_1, 135M params, 94 MiB) on cpu (avx2+fma, 2 threads) in 0.21 s
//
// The name is the file or folder name, without ".gguf" and without a
// dtype suffix (".Q4_1", "-F16") that the parentheses repeat: GGUF's
// general.name is often a training-run label. The dtype is the one
// holding the most parameters.
func Loaded(m *models.Model, took time.Duration) string {
	f := m.Files
	name := filepath.Base(filepath.Clean(f.Path))
	if f.Format == models.FormatGGUF {
		name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	var params int64
	byDType := map[tensor.DType]int64{}
	for _, t := range f.Weights.Tensors() {
		n := t.NumElements()
		params += n
		byDType[t.DType] += n
	}
	var top tensor.DType
	for dt, n := range byDType {
		if n > byDType[top] || n == byDType[top] && dt < top {
			top = dt
		}
	}
	if i := strings.LastIndexAny(name, ".-"); i > 0 && strings.EqualFold(name[i+1:], top.String()) {
		name = name[:i]
	}
	return fmt.Sprintf("loaded %s (%s, %v, %s params, %s) on %s in %.2f s",
		name, f.Config.Arch, top, count(params), mib(f.Size), m.DescribeBackend(), took.Seconds())
}

// BackendFlag defines the --backend flag of a command on fs: any name
// kernels.Open takes, listed in the help, default kernels.Auto.
func BackendFlag(fs *flag.FlagSet) *string {
	return fs.String("backend", kernels.Auto, fmt.Sprintf("backend: one of %v (auto: a real GPU through Vulkan, else cpu; cpu-ref: the exact reference, ~30× slower)", kernels.Names()))
}

// CheckBackend is the error for a --backend value kernels.Open would not
// take, or nil.
func CheckBackend(name string) error {
	if !kernels.Known(name) {
		return fmt.Errorf("--backend must be one of %v, got %q", kernels.Names(), name)
	}
	return nil
}

// count writes n as 135M, 1.2B or 96K.
func count(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	default:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
}

func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// Timing measures one generation: Start it when the request is sent, call
// Tokens as tokens arrive, Done with the request's final usage. The prompt
// rate is the prompt tokens computed (not found in a cache) over the time
// to the first token; the generation rate counts the tokens after the
// first over the time since it came, as llama.cpp's eval rate does. Times
// are taken where the tokens are read, so a reader that falls behind the
// engine sees them bunched (only a tiny model is that fast).
type Timing struct {
	start, first, last time.Time
	generated          int
	prompt, cached     int
}

// Start starts timing a request now.
func Start() *Timing { return &Timing{start: time.Now()} }

// Tokens records n tokens arriving now.
func (t *Timing) Tokens(n int) {
	if n <= 0 {
		return
	}
	now := time.Now()
	if t.generated == 0 {
		t.first = now
	}
	t.last = now
	t.generated += n
}

// Done records the request's prompt size and cached prompt tokens.
func (t *Timing) Done(promptTokens, cachedTokens int) {
	t.prompt, t.cached = promptTokens, cachedTokens
}

// Line is the timing line for a run on the named backend:
//
//	prompt 7 tokens (350.2 tok/s), generated 32 tokens (48.7 tok/s), first token after 0.020 s, on cpu
//
// A cached prefix shows as "prompt 40 tokens (32 cached, 350.2 tok/s)".
// A rate that cannot be measured (nothing computed, one token generated)
// is left out.
func (t *Timing) Line(backend string) string {
	var b strings.Builder
	ttft := t.first.Sub(t.start)
	fmt.Fprintf(&b, "prompt %d %s", t.prompt, plural(t.prompt))
	var notes []string
	if t.cached > 0 {
		notes = append(notes, fmt.Sprintf("%d cached", t.cached))
	}
	if computed := t.prompt - t.cached; computed > 0 && t.generated > 0 && ttft > 0 {
		notes = append(notes, rate(computed, ttft))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	fmt.Fprintf(&b, ", generated %d %s", t.generated, plural(t.generated))
	if d := t.last.Sub(t.first); t.generated > 1 && d > 0 {
		fmt.Fprintf(&b, " (%s)", rate(t.generated-1, d))
	}
	if t.generated > 0 {
		fmt.Fprintf(&b, ", first token after %.3f s", ttft.Seconds())
	}
	fmt.Fprintf(&b, ", on %s", backend)
	return b.String()
}

func rate(n int, d time.Duration) string { return fmt.Sprintf("%.1f tok/s", float64(n)/d.Seconds()) }

func plural(n int) string {
	if n == 1 {
		return "token"
	}
	return "tokens"
}
