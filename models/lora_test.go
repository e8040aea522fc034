package models

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tensor/safetensors"
)

const loraData = "../testdata/lora"

func loadAdapter(t *testing.T, m *Model, name string) AdapterID {
	t.Helper()
	id, err := m.LoadAdapter(filepath.Join(loraData, name))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestLoRAParity runs the golden prompts of tools/make_lora_goldens.py
// through each base model with each adapter, unmerged, and checks them
// as TestParity does (logits within 1e-4 × max|logit| of transformers +
// peft; greedy steps). The cases cover PEFT folders (all seven modules;
// rsLoRA on three), llama.cpp GGUF adapters (F32, F16) written by its
// convert_lora_to_gguf.py, either kind over either kind of base (a Llama
// GGUF's Q and K rows are permuted, and so must B's be), and an adapter
// over a Q4_0 base (its golden: transformers on the dequantised weights
// + peft). The fast path skips the Q4_0 case as TestParity does.
func TestLoRAParity(t *testing.T) {
	cases := []struct{ model, adapter, golden string }{
		{"qwen2-tiny", "qwen2-tiny-lora-a", "qwen2-tiny-lora-a"},
		{"qwen2-tiny", "qwen2-tiny-lora-b", "qwen2-tiny-lora-b"},
		{"llama-tiny", "llama-tiny-lora-a", "llama-tiny-lora-a"},
		{"llama-tiny", "llama-tiny-lora-b", "llama-tiny-lora-b"},
		{"qwen2-tiny-F32.gguf", "qwen2-tiny-lora-a-F16.gguf", "qwen2-tiny-lora-a"},
		{"llama-tiny-F32.gguf", "llama-tiny-lora-a", "llama-tiny-lora-a"},
		{"llama-tiny-F32.gguf", "llama-tiny-lora-a-F32.gguf", "llama-tiny-lora-a"},
		{"llama-tiny", "llama-tiny-lora-a-F16.gguf", "llama-tiny-lora-a"},
		{"llama-tiny-sharded", "llama-tiny-lora-b", "llama-tiny-lora-b"},
		{"llama-tiny-Q4_0.gguf", "llama-tiny-lora-a", "llama-tiny-Q4_0-lora-a"},
	}
	for _, c := range cases {
		t.Run(c.model+"+"+c.adapter, func(t *testing.T) {
			if fastTest() && strings.Contains(c.model, "Q4_0") {
				t.Skip("fast path: Q4_0 weights meet Q8 activations; checked by kerneltest.MatMulQ8, not against transformers")
			}
			m := openTest(t, filepath.Join(testdata, c.model))
			checkParityAdapter(t, m, loadGolden(t, "../lora/"+c.golden), loadAdapter(t, m, c.adapter))
		})
	}
}

// TestLoRAChangesOutput: the adapters of the parity test do change the
// logits (else it would prove nothing), and NoAdapter runs the base model
// exactly, whatever adapters are loaded.
func TestLoRAChangesOutput(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	p := prompts[0]
	base := decodeWith(t, m, p, NoAdapter)
	a := loadAdapter(t, m, "qwen2-tiny-lora-a")
	loadAdapter(t, m, "qwen2-tiny-lora-b")
	if got := decodeWith(t, m, p, NoAdapter); !bitwiseEqual(got[len(p)-1], base[len(p)-1]) {
		t.Fatal("NoAdapter differs from the base model once adapters are loaded")
	}
	if d := maxAbsDiff(decodeWith(t, m, p, a)[len(p)-1], base[len(p)-1]); d < 0.1 {
		t.Fatalf("the adapter changes the logits by only %g", d)
	}
}

// decodeWith returns copies of the logits of every position of prompt,
// run as sequence 0 of a fresh context with adapter ad.
func decodeWith(t *testing.T, m *Model, prompt []int32, ad AdapterID) [][]float32 {
	t.Helper()
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
	var b Batch
	for i, tok := range prompt {
		b.Add(tok, int32(i), true, 0)
		b.Adapter = append(b.Adapter, ad)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(prompt))
	for i := range prompt {
		out[i] = append([]float32(nil), ctx.Logits(i)...)
	}
	return out
}

// TestLoRABatchInvariance: sequences with different adapters (two
// adapters, and none) prefilled in one batch, then decoded in one batch,
// give bitwise the logits each gives alone — also over a quantised base.
func TestLoRABatchInvariance(t *testing.T) {
	for _, c := range []struct{ model, a, b string }{
		{"qwen2-tiny", "qwen2-tiny-lora-a", "qwen2-tiny-lora-b"},
		{"llama-tiny-Q8_0.gguf", "llama-tiny-lora-a-F16.gguf", "llama-tiny-lora-b"},
	} {
		t.Run(c.model, func(t *testing.T) {
			m := openTest(t, filepath.Join(testdata, c.model))
			mixedAdapterBatch(t, m, loadAdapter(t, m, c.a), loadAdapter(t, m, c.b))
		})
	}
}

// mixedAdapterBatch prefills the four prompts in one batch, sequences 0
// and 3 with adapter a, 1 with b, 2 with none, then decodes one token of
// each in one batch, and checks every row of logits bitwise against the
// sequence alone.
func mixedAdapterBatch(t *testing.T, m *Model, a, b AdapterID) {
	t.Helper()
	ads := []AdapterID{a, b, NoAdapter, a} // per sequence of prompts
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, MaxSeqs: 4, BatchSize: 64})
	var bt Batch
	for s, p := range prompts {
		for i, tok := range p {
			bt.Add(tok, int32(i), true, SeqID(s))
			bt.Adapter = append(bt.Adapter, ads[s])
		}
	}
	if err := ctx.Decode(bt); err != nil {
		t.Fatal(err)
	}
	k := 0
	for s, p := range prompts {
		alone := decodeWith(t, m, p, ads[s])
		for i := range p {
			if !bitwiseEqual(ctx.Logits(k), alone[i]) {
				t.Fatalf("seq %d (adapter %d) pos %d: batched logits differ from alone", s, ads[s], i)
			}
			k++
		}
	}
	next := []int32{10, 20, 30, 40}
	bt = Batch{}
	for s := range prompts {
		bt.Add(next[s], int32(len(prompts[s])), true, SeqID(s))
		bt.Adapter = append(bt.Adapter, ads[s])
	}
	if err := ctx.Decode(bt); err != nil {
		t.Fatal(err)
	}
	for s, p := range prompts {
		alone := decodeWith(t, m, append(append([]int32{}, p...), next[s]), ads[s])
		if !bitwiseEqual(ctx.Logits(s), alone[len(p)]) {
			t.Fatalf("decode step, seq %d (adapter %d): batched logits differ from alone", s, ads[s])
		}
	}
}

// TestLoRAMerged: the adapter unmerged equals the model whose weights
// are W' = W + scale·B·A (computed in float64, stored F32), within the
// parity bound, for a safetensors and a Llama GGUF base (whose Q and K
// rows are permuted: B's rows must follow).
func TestLoRAMerged(t *testing.T) {
	for _, c := range []struct{ model, adapter string }{
		{"qwen2-tiny", "qwen2-tiny-lora-a"},
		{"llama-tiny", "llama-tiny-lora-b"},
		{"llama-tiny-F32.gguf", "llama-tiny-lora-a"},
	} {
		t.Run(c.model+"+"+c.adapter, func(t *testing.T) {
			m := openTest(t, filepath.Join(testdata, c.model))
			ad := loadAdapter(t, m, c.adapter)
			h, err := readAdapter(filepath.Join(loraData, c.adapter), m.Files)
			if err != nil {
				t.Fatal(err)
			}
			merged := openTest(t, writeMerged(t, c.model, m.Files, h))
			for s, p := range prompts {
				got, want := decodeWith(t, m, p, ad), decodeWith(t, merged, p, NoAdapter)
				for i := range p {
					if j, d, bound := farLogit(got[i], want[i], 1e-4); j >= 0 {
						t.Fatalf("prompt %d pos %d token %d: unmerged %v, merged %v (|diff| %.3g > %.3g)", s, i, j, got[i][j], want[i][j], d, bound)
					}
				}
			}
		})
	}
}

// writeMerged writes model (a safetensors folder or an F32 GGUF file of
// testdata) with h merged into its weights and returns its path.
func writeMerged(t *testing.T, model string, f *Files, h *loraHost) string {
	t.Helper()
	l := &loader{f: f}
	edits := map[string][]float32{}
	for layer, ly := range h.layers {
		for tg, p := range ly {
			if p == nil {
				continue
			}
			name := l.name(layer, loraHF[tg]+".weight")
			w, ok := f.Weights.Tensor(name)
			if !ok {
				t.Fatalf("no %s", name)
			}
			v, err := toF32(w)
			if err != nil {
				t.Fatal(err)
			}
			out, in, r := int(w.Shape[0]), int(w.Shape[1]), h.info.Rank
			for i := range out {
				for j := range in {
					var s float64
					for k := range r {
						s += float64(p.b[i*r+k]) * float64(p.a[k*in+j])
					}
					v[i*in+j] = float32(float64(v[i*in+j]) + h.info.Scale*s)
				}
			}
			edits[name] = v
		}
	}
	edit := func(ts []tensor.Tensor) []tensor.Tensor {
		var out []tensor.Tensor
		for _, t := range ts {
			if v, ok := edits[t.Name]; ok {
				t.DType, t.Data = tensor.F32, f32Bytes(v)
			}
			out = append(out, t)
		}
		return out
	}
	if f.Format == FormatGGUF {
		return rewriteGGUF(t, model, edit)
	}
	dir := t.TempDir()
	for _, n := range []string{"config.json", "tokenizer.json"} {
		raw, err := os.ReadFile(filepath.Join(testdata, model, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), edit(f.Weights.Tensors()), nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// TestLoRAErrors: adapters that cannot run on the model, and batches
// naming an adapter not loaded, are refused with typed errors (nothing
// panics, nothing is loaded).
func TestLoRAErrors(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	src := filepath.Join(loraData, "qwen2-tiny-lora-a")
	peft := func(edit func(cfg map[string]any, ts []tensor.Tensor) []tensor.Tensor) string {
		t.Helper()
		return writePEFT(t, src, edit)
	}
	setCfg := func(k string, v any) string {
		return peft(func(cfg map[string]any, ts []tensor.Tensor) []tensor.Tensor { cfg[k] = v; return ts })
	}
	dropTensor := func(suffix string) string {
		return peft(func(_ map[string]any, ts []tensor.Tensor) []tensor.Tensor {
			var out []tensor.Tensor
			for _, t := range ts {
				if !strings.HasSuffix(t.Name, suffix) {
					out = append(out, t)
				}
			}
			return out
		})
	}
	renameTensor := func(from, to string) string {
		return peft(func(_ map[string]any, ts []tensor.Tensor) []tensor.Tensor {
			for i := range ts {
				ts[i].Name = strings.Replace(ts[i].Name, from, to, 1)
			}
			return ts
		})
	}
	cases := []struct {
		name, path string
		want       error
		reason     string
	}{
		{"missing", filepath.Join(t.TempDir(), "nope"), nil, "not found"},
		{"no config", func() string { d := t.TempDir(); return d }(), nil, "adapter_config.json"},
		{"rank 0", setCfg("r", 0), ErrBadAdapter, "rank r 0"},
		{"alpha 0", setCfg("lora_alpha", 0), ErrBadAdapter, "lora_alpha"},
		{"dora", setCfg("use_dora", true), ErrBadAdapter, "DoRA"},
		{"bias", setCfg("bias", "all"), ErrBadAdapter, "bias"},
		{"lora bias", setCfg("lora_bias", true), ErrBadAdapter, "lora_bias"},
		{"not lora", setCfg("peft_type", "IA3"), ErrBadAdapter, "peft_type"},
		{"modules to save", setCfg("modules_to_save", []string{"lm_head"}), ErrBadAdapter, "modules_to_save"},
		{"rank pattern", setCfg("rank_pattern", map[string]int{"q_proj": 2}), ErrBadAdapter, "rank_pattern"},
		{"missing B", dropTensor("layers.1.mlp.up_proj.lora_B.weight"), ErrBadAdapter, "must both be given"},
		{"layer out of range", renameTensor("layers.1.", "layers.7."), ErrBadAdapter, "layer 7"},
		{"unknown module", renameTensor("mlp.up_proj", "mlp.w3"), ErrBadAdapter, "not one of"},
		{"embedding", renameTensor("model.layers.0.self_attn.q_proj.lora_A", "model.embed_tokens.lora_embedding_A"), ErrBadAdapter, "not the lora_A"},
		{"another model", filepath.Join(loraData, "llama-tiny-lora-a"), ErrBadAdapter, "shape"},
		{"GGUF of another arch", filepath.Join(loraData, "llama-tiny-lora-a-F32.gguf"), ErrBadAdapter, "architecture"},
		{"GGUF model, not adapter", filepath.Join(testdata, "qwen2-tiny-F32.gguf"), ErrBadAdapter, "general.type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.LoadAdapter(c.path)
			if err == nil {
				t.Fatal("no error")
			}
			var nf *NotFoundError
			if c.want != nil && !errors.Is(err, c.want) || c.want == nil && !errors.As(err, &nf) {
				t.Fatalf("error %v (%T), want %v", err, err, c.want)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("error %q does not say %q", err, c.reason)
			}
		})
	}
	if len(m.adapterList()) != 0 {
		t.Fatalf("%d adapters loaded by failed calls", len(m.adapterList()))
	}

	ctx := newCtx(t, m, ContextParams{ContextLen: 64})
	id := loadAdapter(t, m, "qwen2-tiny-lora-a")
	for _, bad := range [][]AdapterID{{id + 1}, {-1}, {id, id}} {
		b := Batch{Adapter: bad}
		b.Add(5, 0, true, 0)
		if err := ctx.Decode(b); !errors.Is(err, ErrBadBatch) {
			t.Fatalf("adapters %v: error %v, want ErrBadBatch", bad, err)
		}
	}
	if ctx.Used() != 0 {
		t.Fatal("a refused batch changed the cache")
	}
}

// writePEFT copies the PEFT adapter folder src with edit applied to its
// config and tensors, and returns the copy's path.
func writePEFT(t *testing.T, src string, edit func(cfg map[string]any, ts []tensor.Tensor) []tensor.Tensor) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(src, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	sf, err := safetensors.Open(filepath.Join(src, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	ts := edit(cfg, append([]tensor.Tensor(nil), sf.Tensors()...))
	dir := t.TempDir()
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGGUFLoRAAlpha: a GGUF adapter's scale is alpha/rank, or 1 without
// alpha (llama.cpp's rule).
func TestGGUFLoRAAlpha(t *testing.T) {
	m := openTest(t, filepath.Join(testdata, "qwen2-tiny"))
	src, err := gguf.Open(filepath.Join(loraData, "qwen2-tiny-lora-a-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var kv []gguf.KV
	for _, e := range src.KV {
		if e.Key != "adapter.lora.alpha" {
			kv = append(kv, e)
		}
	}
	path := filepath.Join(t.TempDir(), "noalpha.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(out, kv, src.Tensors(), nil); err != nil {
		t.Fatal(err)
	}
	out.Close()
	for _, c := range []struct {
		path  string
		scale float64
	}{{filepath.Join(loraData, "qwen2-tiny-lora-a-F32.gguf"), 8.0 / 4}, {path, 1}} {
		id, err := m.LoadAdapter(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if info, _ := m.Adapter(id); info.Scale != c.scale || info.Rank != 4 || len(info.Targets) != 7 {
			t.Fatalf("%s: %+v, want scale %v, rank 4, 7 targets", c.path, info, c.scale)
		}
	}
}
