package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tensor"
)

func build(t *testing.T, s Shape, q Quant, seed uint64, workers int) []byte {
	t.Helper()
	m, err := Build(s, q, seed, workers)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.WriteGGUF(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSameSeedSameBytes: the GGUF bytes depend on the shape, dtype and
// seed only, not on the number of workers (the tiny shapes' embeddings
// span several chunks); another seed gives other bytes. The digests pin
// the bytes across versions: a change to the generator must change them
// here on purpose.
func TestSameSeedSameBytes(t *testing.T) {
	golden := map[string]string{
		"qwen2.5-0.5b:Q4_0": "7ee559a3319d899fdf7c48bb1c3b4744c73deab121f26d9be2a541b1366ff57f",
		"llama-3.1-8b:Q8_0": "01d24ca5e4b1ac4940853e8f7390f1143c059a642e96c13366643b9472edb543",
	}
	for _, spec := range []string{"qwen2.5-0.5b:Q4_0", "qwen2.5-0.5b:F16", "llama-3.1-8b:Q8_0", "llama-3.1-8b:Q4_K", "qwen2.5-0.5b:IQ4_XS", "llama-3.1-8b:Q3_K"} {
		t.Run(spec, func(t *testing.T) {
			s, dt, err := ParseSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			s = s.Tiny()
			one := build(t, s, dt, 7, 1)
			many := build(t, s, dt, 7, 5)
			if !bytes.Equal(one, many) {
				t.Fatalf("1 worker and 5 workers wrote different bytes (%d and %d)", len(one), len(many))
			}
			if other := build(t, s, dt, 8, 5); bytes.Equal(one, other) {
				t.Fatal("seeds 7 and 8 wrote the same bytes")
			}
			sum := sha256.Sum256(one)
			got := hex.EncodeToString(sum[:])
			if want, ok := golden[spec]; ok && got != want {
				t.Errorf("sha256 %s, want %s", got, want)
			}
		})
	}
}

// TestOpens builds every shape at the tiny scale in the benchmark dtypes
// and layouts, opens it from memory on the CPU backend and decodes: the
// config is the shape's and the logits are finite and not all equal.
func TestOpens(t *testing.T) {
	var quants []Quant
	for _, qn := range []string{"F16", "BF16", "Q8_0", "Q4_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "Q4_K_M", "Q5_K_M", "IQ4_XS"} {
		q, err := parseQuant(qn)
		if err != nil {
			t.Fatal(err)
		}
		quants = append(quants, q)
	}
	quants = append(quants, Uniform(tensor.IQ4_XS)) // the name IQ4_XS is the layout
	for _, name := range Shapes() {
		for _, dt := range quants {
			qn := dt.String()
			if dt.Layout == "" && dt.DType == tensor.IQ4_XS {
				qn += "-pure"
			}
			t.Run(name+":"+qn, func(t *testing.T) {
				shape, err := Lookup(name)
				if err != nil {
					t.Fatal(err)
				}
				s := shape.Tiny()
				sm, err := Build(s, dt, 1, 0)
				if err != nil {
					t.Fatal(err)
				}
				g, err := sm.Parse()
				if err != nil {
					t.Fatal(err)
				}
				m, err := models.OpenGGUF(context.Background(), "synthetic:"+s.Name, g, models.WithBackendName("cpu", kernels.Options{Threads: 2}))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				c := m.Config
				if c.Arch != s.Arch || c.HiddenSize != s.Hidden || c.NumLayers != s.Layers || c.NumHeads != s.Heads ||
					c.NumKVHeads != s.KVHeads || c.HeadDim != s.HeadDim || c.IntermediateSize != s.Intermediate ||
					c.VocabSize != s.Vocab || c.TieEmbedding != s.Tied || c.AttentionBias != s.QKVBias || c.QKNorm != s.QKNorm {
					t.Fatalf("config %+v does not match shape %+v", c, s)
				}
				ctx, err := m.NewContext(models.ContextParams{ContextLen: 64})
				if err != nil {
					t.Fatal(err)
				}
				defer ctx.Close()
				var b models.Batch
				for i, tok := range []int32{1, 2, 3, 4, 5, 6, 7, 8} {
					b.Add(tok, int32(i), i == 7, 0)
				}
				if err := ctx.Decode(b); err != nil {
					t.Fatal(err)
				}
				logits := ctx.Logits(7)
				lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
				for _, v := range logits {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("logit %v", v)
					}
					lo, hi = min(lo, v), max(hi, v)
				}
				if !(hi > lo) {
					t.Fatalf("logits all %v", lo)
				}
			})
		}
	}
}

// TestPureFallback: a one-dtype model's matrices whose rows are not whole
// 256-blocks (the 0.5B shape's 896-wide ones) take llama.cpp's fallback
// type (Q4_0 for Q4_K, as before layouts); the others (ffn_down's 4864)
// keep the dtype.
func TestPureFallback(t *testing.T) {
	s, _ := Lookup("qwen2.5-0.5b")
	s.Layers, s.Vocab = 1, 256
	for dt, fb := range map[tensor.DType]tensor.DType{
		tensor.Q2_K: tensor.Q4_0, tensor.Q3_K: tensor.Q4_0, tensor.Q4_K: tensor.Q4_0, tensor.Q5_K: tensor.Q5_1,
		tensor.Q6_K: tensor.Q8_0, tensor.IQ4_XS: tensor.IQ4_NL, tensor.IQ4_NL: tensor.IQ4_NL, tensor.Q8_0: tensor.Q8_0,
	} {
		m, err := Build(s, Uniform(dt), 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range m.Tensors {
			if len(tn.Shape) != 2 {
				continue
			}
			want := dt
			if tn.Shape[1]%256 != 0 {
				want = fb
			}
			if tn.DType != want {
				t.Errorf("%v: %s %v: %v, want %v", dt, tn.Name, tn.Shape, tn.DType, want)
			}
		}
	}
}

// TestRandomBlocks: every dtype filled with random blocks dequantises to
// weights of order 0.02 about 0 (tensor.Dequantize, the reference), with
// no block all zero. Weights with a mean (Q4_K's and Q5_K's were about
// 0.017) make a random model's activations grow layer by layer, until the
// fast CPU path and the reference part by 0.1 in NMSE on a 2-layer
// Q4_K_M model.
func TestRandomBlocks(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS} {
		fill := randomBlocks[dt]
		if fill == nil {
			t.Errorf("%v: no random blocks", dt)
			continue
		}
		const n = 64 * 256
		size, _ := dt.Bytes(n)
		data := make([]byte, size)
		fill(rand.New(rand.NewPCG(1, 2)), data)
		x := make([]float32, n)
		if err := tensor.Dequantize(dt, data, x); err != nil {
			t.Fatal(err)
		}
		var sum, ss, mx float64
		for _, v := range x {
			sum += float64(v)
			ss += float64(v) * float64(v)
			mx = max(mx, math.Abs(float64(v)))
		}
		mean, sd := sum/n, math.Sqrt(ss/n)
		t.Logf("%v: mean %.4f, rms %.4f, max |w| %.4f", dt, mean, sd, mx)
		if sd < 0.006 || sd > 0.03 || mx > 0.1 || math.Abs(mean) > 0.005 {
			t.Errorf("%v: mean %.4f, rms %.4f, max |w| %.4f: want weights of order 0.02 about 0", dt, mean, sd, mx)
		}
		for b := 0; b < n; b += dt.BlockSize() {
			if !slices.ContainsFunc(x[b:b+dt.BlockSize()], func(v float32) bool { return v != 0 }) {
				t.Errorf("%v: block %d all zero", dt, b/dt.BlockSize())
				break
			}
		}
	}
}

func TestTinyName(t *testing.T) {
	s, dt, err := ParseSpec("llama-3.1-8b-tiny:q4_0")
	full, _ := Lookup("llama-3.1-8b")
	if err != nil || dt != Uniform(tensor.Q4_0) || s.Name != full.Tiny().Name || s.Hidden != full.Tiny().Hidden {
		t.Fatalf("%+v %v %v, want %+v Q4_0", s, dt, err, full.Tiny())
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		spec string
		want error
	}{
		{"qwen2.5-0.5b", ErrUnknownShape},
		{"gpt-5:Q4_0", ErrUnknownShape},
		{"gpt-5-tiny:Q4_0", ErrUnknownShape},
		{"-tiny:Q4_0", ErrUnknownShape},
		{"qwen2.5-0.5b:Q8_K", ErrDType},
		{"qwen2.5-0.5b:IQ2_XXS", ErrDType},
		{"qwen2.5-0.5b:I32", ErrDType},
		{"qwen2.5-0.5b:", ErrDType},
		{"qwen2.5-0.5b:Q4_K_S", ErrDType},
	} {
		if _, _, err := ParseSpec(c.spec); !errors.Is(err, c.want) {
			t.Errorf("ParseSpec(%q): %v, want %v", c.spec, err, c.want)
		}
	}
	good, _ := Lookup("llama-3.1-8b")
	good = good.Tiny()
	for name, mod := range map[string]func(*Shape){
		"arch":       func(s *Shape) { s.Arch = "gpt2" },
		"zero layer": func(s *Shape) { s.Layers = 0 },
		"gqa":        func(s *Shape) { s.Heads = 3 },
		"odd head":   func(s *Shape) { s.HeadDim = 63 },
		"theta":      func(s *Shape) { s.RoPETheta = 0 },
	} {
		s := good
		mod(&s)
		if _, err := Build(s, Uniform(tensor.F16), 1, 1); !errors.Is(err, ErrBadShape) {
			t.Errorf("%s: %v, want ErrBadShape", name, err)
		}
	}
	// rows that are not whole Q8_0 blocks
	s := good
	s.Intermediate = 500
	if _, err := Build(s, Uniform(tensor.Q8_0), 1, 1); !errors.Is(err, ErrBadShape) {
		t.Errorf("intermediate 500 in Q8_0: %v, want ErrBadShape", err)
	}
	if _, err := Build(good, Uniform(tensor.Q8_K), 1, 1); !errors.Is(err, ErrDType) {
		t.Errorf("Q8_K: %v, want ErrDType", err)
	}
	if _, err := Build(good, Quant{DType: tensor.Q8_0, Layout: "Q4_K_M"}, 1, 1); !errors.Is(err, ErrDType) {
		t.Errorf("Q4_K_M on Q8_0: %v, want ErrDType", err)
	}
}

// TestLlamaCpp has llama.cpp's llama-bench load and run each tiny shape
// written by WriteGGUF in the main dtypes and every layout, the tiny
// Llama in every other dtype of random blocks, and the IQ4_XS layout of
// narrowShape and gqa4Shape (IQ4_NL, Q5_1, Q5_K and Q8_0 beside IQ4_XS):
// the names, metadata and blocks are what its loader wants. It needs the
// binary tools/build-llama-bench.sh builds (or $VKLLM_LLAMA_BENCH) and
// skips without it.
func TestLlamaCpp(t *testing.T) {
	bin := os.Getenv("VKLLM_LLAMA_BENCH")
	if bin == "" {
		home, _ := os.UserHomeDir()
		bin = filepath.Join(home, ".cache", "vkllm", "llama.cpp-0.3.36", "llama-bench")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no llama-bench at %s (tools/build-llama-bench.sh builds it)", bin)
	}
	type file struct {
		s Shape
		q Quant
	}
	var files []file
	iq4xs := Quant{tensor.IQ4_XS, "IQ4_XS"}
	for _, name := range Shapes() {
		s, _ := Lookup(name)
		for _, q := range []Quant{Uniform(tensor.Q8_0), Uniform(tensor.Q4_K), {tensor.Q4_K, "Q4_K_M"}, {tensor.Q5_K, "Q5_K_M"}, iq4xs} {
			files = append(files, file{s.Tiny(), q})
		}
	}
	tiny, _ := Lookup("llama-3.2-1b-tiny")
	for _, dt := range []tensor.DType{tensor.Q2_K, tensor.Q3_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS} {
		files = append(files, file{tiny, Uniform(dt)})
	}
	files = append(files, file{narrowShape(), iq4xs}, file{gqa4Shape(), iq4xs})
	dir := t.TempDir()
	for i, f := range files {
		path := filepath.Join(dir, fmt.Sprintf("%02d-%s-%v.gguf", i, f.s.Name, f.q))
		if err := os.WriteFile(path, build(t, f.s, f.q, 1, 0), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "-m", path, "-p", "8", "-n", "2", "-r", "1", "-t", "1", "-o", "json").CombinedOutput()
		if err != nil {
			t.Errorf("%s: llama-bench: %v\n%s", path, err, out)
		}
		os.Remove(path)
	}
}

// TestGGUFPy has tools/check_layouts_gguf.py read files of every layout
// and of the dtypes with random blocks with llama.cpp's Python GGUF
// reader (the gguf package): each tensor's type is the one llama-quantize
// gives it by the script's own copy of llama.cpp's rules, and the random
// blocks dequantise (gguf.quants) to weights of order 0.02. The files
// are narrowShape (the fallbacks) and gqa4Shape (IQ4_XS's Q5_K rules). It
// skips without python3 and gguf (tools/requirements.txt).
func TestGGUFPy(t *testing.T) {
	if err := exec.Command("python3", "-c", "import gguf").Run(); err != nil {
		t.Skip("python3 with gguf is not installed (pip install gguf):", err)
	}
	dir := t.TempDir()
	args := []string{"../../tools/check_layouts_gguf.py", "--files"}
	add := func(s Shape, q Quant) {
		path := filepath.Join(dir, s.Name+"-"+q.String()+".gguf")
		if err := os.WriteFile(path, build(t, s, q, 1, 0), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, q.String()+"="+path)
	}
	for _, s := range []Shape{narrowShape(), gqa4Shape()} {
		for _, name := range Layouts() {
			q, _ := parseLayout(name)
			add(s, q)
		}
	}
	for _, dt := range []tensor.DType{tensor.Q2_K, tensor.Q3_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL} {
		add(narrowShape(), Uniform(dt))
	}
	out, err := exec.Command("python3", args...).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("check_layouts_gguf.py: %v", err)
	}
}

// TestPlanFullScale: the full shapes plan in every benchmark dtype without
// allocating, and their parameter counts are the real models' (Hugging
// Face's counts; rope_freqs is not a parameter).
func TestPlanFullScale(t *testing.T) {
	// qwen3-0.6b: 440,466,432 outside the embedding, the model card's 0.44B
	params := map[string]int64{"qwen2.5-0.5b": 494_032_768, "llama-3.2-1b": 1_235_814_400, "qwen3-0.6b": 596_049_920, "llama-3.1-8b": 8_030_261_248}
	for _, name := range Shapes() {
		s, _ := Lookup(name)
		for _, dt := range []Quant{Uniform(tensor.F16), Uniform(tensor.Q8_0), Uniform(tensor.Q4_0), Uniform(tensor.Q4_K),
			Uniform(tensor.Q2_K), Uniform(tensor.Q3_K), Uniform(tensor.Q5_K), Uniform(tensor.Q6_K), Uniform(tensor.IQ4_NL), Uniform(tensor.IQ4_XS),
			{tensor.Q4_K, "Q4_K_M"}, {tensor.Q5_K, "Q5_K_M"}, {tensor.IQ4_XS, "IQ4_XS"}} {
			ts, err := Plan(s, dt)
			if err != nil {
				t.Errorf("%s:%v: %v", name, dt, err)
				continue
			}
			var n int64
			for _, tn := range ts {
				if tn.Name != "rope_freqs.weight" {
					n += tn.NumElements()
				}
			}
			if n != params[name] {
				t.Errorf("%s:%v: %d parameters, want %d", name, dt, n, params[name])
			}
		}
	}
}
