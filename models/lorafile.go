// Reading LoRA adapters: a PEFT folder (adapter_config.json and
// adapter_model.safetensors) or a llama.cpp GGUF LoRA file, into a
// loraHost checked against the base model's Config.

package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tensor/safetensors"
)

// peftConfig is what vkllm reads of PEFT's adapter_config.json.
type peftConfig struct {
	PeftType      string          `json:"peft_type"`
	R             int             `json:"r"`
	Alpha         float64         `json:"lora_alpha"`
	UseRSLoRA     bool            `json:"use_rslora"`
	UseDoRA       bool            `json:"use_dora"`
	FanInFanOut   bool            `json:"fan_in_fan_out"`
	Bias          string          `json:"bias"`
	LoRABias      bool            `json:"lora_bias"`
	ALoRATokens   []int           `json:"alora_invocation_tokens"`
	TargetModules json.RawMessage `json:"target_modules"`
	ModulesToSave []string        `json:"modules_to_save"`
	RankPattern   map[string]any  `json:"rank_pattern"`
	AlphaPattern  map[string]any  `json:"alpha_pattern"`
}

// readAdapter reads a LoRA adapter for a model of f's config and format:
// a PEFT folder (adapter_config.json, adapter_model.safetensors) or a
// llama.cpp GGUF LoRA file. Anything it does not run as PEFT does (DoRA,
// biases, rank or alpha patterns, modules other than the seven linear
// layers) is refused with an *AdapterError.
func readAdapter(path string, f *Files) (*loraHost, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &NotFoundError{Path: path, What: "LoRA adapter"}
		}
		return nil, fmt.Errorf("models: %w", err)
	}
	var h *loraHost
	if st.IsDir() {
		h, err = readPEFT(path, f.Config)
	} else {
		h, err = readGGUFLoRA(path, f.Config)
	}
	if err != nil {
		return nil, err
	}
	// Llama GGUF files hold Q and K with permuted rows (ropeOf): B must
	// follow the base model's layout, whichever file the adapter is.
	if f.Arch != nil && f.Arch.GGUFPermutedQK && (f.Format == FormatGGUF) != (h.info.Format == FormatGGUF) {
		toGGUF := f.Format == FormatGGUF
		c := f.Config
		for _, ly := range h.layers {
			for t, heads := range map[loraTarget]int{loraQ: c.NumHeads, loraK: c.NumKVHeads} {
				if p := ly[t]; p != nil {
					p.b = permuteRows(p.b, heads, len(p.b)/h.info.Rank/heads, h.info.Rank, toGGUF)
				}
			}
		}
	}
	return h, nil
}

// permuteRows reorders the rows (each of cols values) of a (heads·hd,
// cols) matrix as llama.cpp's converter does for Q and K
// (LlamaModel.permute: per head, row (half, i) goes to (i, half)), or
// undoes it when toGGUF is false.
func permuteRows(m []float32, heads, hd, cols int, toGGUF bool) []float32 {
	out := make([]float32, len(m))
	half := hd / 2
	for h := range heads {
		for s := range 2 {
			for i := range half {
				hf := h*hd + s*half + i // HF row (half s, index i)
				gg := h*hd + 2*i + s    // GGUF row
				src, dst := hf, gg
				if !toGGUF {
					src, dst = gg, hf
				}
				copy(out[dst*cols:(dst+1)*cols], m[src*cols:(src+1)*cols])
			}
		}
	}
	return out
}

func readPEFT(dir string, c *Config) (*loraHost, error) {
	bad := func(format string, args ...any) error {
		return &AdapterError{Path: dir, Reason: fmt.Sprintf(format, args...)}
	}
	cfgPath := filepath.Join(dir, "adapter_config.json")
	raw, err := readLimited(cfgPath, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NotFoundError{Path: cfgPath, What: "adapter_config.json"}
	}
	if err != nil {
		return nil, err
	}
	var pc peftConfig
	if err := json.Unmarshal(raw, &pc); err != nil {
		return nil, bad("adapter_config.json: %v", err)
	}
	switch {
	case pc.PeftType != "" && pc.PeftType != "LORA":
		return nil, bad("peft_type %q is not LORA", pc.PeftType)
	case pc.R <= 0:
		return nil, bad("rank r %d is not positive", pc.R)
	case !(pc.Alpha > 0) || math.IsInf(pc.Alpha, 0):
		return nil, bad("lora_alpha %v is not a positive number", pc.Alpha)
	case pc.UseDoRA:
		return nil, bad("DoRA (use_dora) is not supported")
	case pc.FanInFanOut:
		return nil, bad("fan_in_fan_out is not supported (a Llama-family model has none)")
	case pc.Bias != "" && pc.Bias != "none":
		return nil, bad("bias %q is not supported (only \"none\")", pc.Bias)
	case pc.LoRABias:
		return nil, bad("lora_bias is not supported")
	case len(pc.ALoRATokens) > 0:
		return nil, bad("activated LoRA (alora_invocation_tokens) is not supported")
	case len(pc.ModulesToSave) > 0:
		return nil, bad("modules_to_save %v is not supported", pc.ModulesToSave)
	case len(pc.RankPattern) > 0 || len(pc.AlphaPattern) > 0:
		return nil, bad("rank_pattern and alpha_pattern are not supported")
	}
	wpath := filepath.Join(dir, "adapter_model.safetensors")
	sf, err := safetensors.Open(wpath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &NotFoundError{Path: wpath, What: "adapter_model.safetensors"}
		}
		return nil, err
	}
	defer sf.Close()
	scale := pc.Alpha / float64(pc.R)
	if pc.UseRSLoRA {
		scale = pc.Alpha / math.Sqrt(float64(pc.R))
	}
	h := &loraHost{info: AdapterInfo{Path: dir, Format: FormatSafetensors, Rank: pc.R, Alpha: pc.Alpha, Scale: scale},
		layers: make([][numLoRATargets]*loraPair, c.NumLayers)}
	names := map[string]loraTarget{}
	for t, m := range loraHF {
		names[m] = loraTarget(t)
	}
	for _, t := range sf.Tensors() {
		m := peftName.FindStringSubmatch(t.Name)
		if m == nil {
			return nil, bad("tensor %q is not the lora_A or lora_B of a decoder layer's linear module", t.Name)
		}
		target, ok := names[m[2]]
		if !ok {
			return nil, bad("tensor %q: module %q is not one of %v", t.Name, m[2], loraModules)
		}
		if err := h.set(c, m[1], target, m[3] == "A", t); err != nil {
			return nil, bad("%v", err)
		}
	}
	if err := h.finish(c); err != nil {
		return nil, bad("%v", err)
	}
	return h, nil
}

// peftName matches PEFT's saved names: layer, module, A or B.
var peftName = regexp.MustCompile(`^base_model\.model\.model\.layers\.(\d+)\.((?:self_attn|mlp)\.[a-z0-9_]+)\.lora_(A|B)\.weight$`)

// ggufLoRAName matches llama.cpp's adapter names: layer, weight, a or b.
var ggufLoRAName = regexp.MustCompile(`^blk\.(\d+)\.([a-z0-9_]+)\.weight\.lora_(a|b)$`)

func readGGUFLoRA(path string, c *Config) (*loraHost, error) {
	bad := func(format string, args ...any) error {
		return &AdapterError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	typ, _ := g.String("general.type")
	arch, _ := g.String("general.architecture")
	atype, _ := g.String("adapter.type")
	switch {
	case typ != "adapter":
		return nil, bad("general.type %q, want \"adapter\"", typ)
	case atype != "lora":
		return nil, bad("adapter.type %q, want \"lora\"", atype)
	case arch != c.Arch:
		return nil, bad("architecture %q, the model is %q", arch, c.Arch)
	}
	alpha, _ := g.Float("adapter.lora.alpha")
	if math.IsNaN(alpha) || math.IsInf(alpha, 0) || alpha < 0 {
		return nil, bad("adapter.lora.alpha %v", alpha)
	}
	h := &loraHost{info: AdapterInfo{Path: path, Format: FormatGGUF, Alpha: alpha},
		layers: make([][numLoRATargets]*loraPair, c.NumLayers)}
	names := map[string]loraTarget{}
	for t, m := range loraGGUF {
		names[m] = loraTarget(t)
	}
	for _, t := range g.Tensors() {
		m := ggufLoRAName.FindStringSubmatch(t.Name)
		if m == nil {
			return nil, bad("tensor %q is not the lora_a or lora_b of a decoder layer's weight", t.Name)
		}
		target, ok := names[m[2]]
		if !ok {
			return nil, bad("tensor %q: weight %q is not one of %v", t.Name, m[2], loraGGUF)
		}
		if err := h.set(c, m[1], target, m[3] == "a", t); err != nil {
			return nil, bad("%v", err)
		}
	}
	if err := h.finish(c); err != nil {
		return nil, bad("%v", err)
	}
	// llama.cpp: scale = alpha / rank, or 1 when the file gives no alpha.
	h.info.Scale = 1
	if alpha != 0 {
		h.info.Scale = alpha / float64(h.info.Rank)
	}
	return h, nil
}

// set stores one A (rank, in) or B (out, rank) matrix of a target,
// checking the layer and the shape; the rank is the first one seen.
func (h *loraHost) set(c *Config, layer string, t loraTarget, isA bool, w tensor.Tensor) error {
	l, err := strconv.Atoi(layer)
	if err != nil || l < 0 || l >= c.NumLayers {
		return fmt.Errorf("tensor %q: layer %s outside the model's %d", w.Name, layer, c.NumLayers)
	}
	if len(w.Shape) != 2 {
		return fmt.Errorf("tensor %q: shape %v is not a matrix", w.Name, w.Shape)
	}
	rows, cols := int(w.Shape[0]), int(w.Shape[1])
	out, in := t.dims(c)
	rank := rows
	if !isA {
		rank = cols
	}
	switch {
	case h.info.Rank == 0 && rank > 0 && rank <= 1<<16:
		h.info.Rank = rank
	case rank != h.info.Rank:
		return fmt.Errorf("tensor %q: shape %v has rank %d, want %d", w.Name, w.Shape, rank, h.info.Rank)
	}
	if isA && cols != in || !isA && rows != out {
		want := []int{rank, in}
		if !isA {
			want = []int{out, rank}
		}
		return fmt.Errorf("tensor %q: shape %v, want %v (another base model's adapter?)", w.Name, w.Shape, want)
	}
	v, err := toF32(w)
	if err != nil {
		return fmt.Errorf("tensor %q: %v", w.Name, err)
	}
	p := h.layers[l][t]
	if p == nil {
		p = &loraPair{}
		h.layers[l][t] = p
	}
	dst := &p.b
	if isA {
		dst = &p.a
	}
	if *dst != nil {
		return fmt.Errorf("tensor %q given twice", w.Name)
	}
	*dst = v
	return nil
}

// finish checks that every adapted target has both matrices and lists
// the targets.
func (h *loraHost) finish(c *Config) error {
	seen := [numLoRATargets]bool{}
	for l, ly := range h.layers {
		for t, p := range ly {
			if p == nil {
				continue
			}
			if p.a == nil || p.b == nil {
				return fmt.Errorf("layer %d %s: lora_A and lora_B must both be given", l, loraModules[t])
			}
			seen[t] = true
		}
	}
	for t, ok := range seen {
		if ok {
			h.info.Targets = append(h.info.Targets, loraModules[t])
		}
	}
	if len(h.info.Targets) == 0 {
		return errors.New("no LoRA weights")
	}
	return nil
}
