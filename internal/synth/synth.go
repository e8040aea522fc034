// Package synth builds random-weight models of real models' shapes in
// memory, for benchmarks: no file to download or carry. A model is GGUF
// metadata and tensors named as llama.cpp names them, so the same model can
// be opened by vkllm (Model.Parse, then models.OpenGGUF) and written as a
// .gguf file that llama.cpp's llama-bench loads (Model.WriteGGUF).
//
// The weights are deterministic: the same shape, dtype and seed give the
// same bytes, whatever the number of workers. Each tensor is cut into
// chunks of chunkElems values, each drawn from its own PCG stream keyed by
// (seed, tensor index, chunk index), so chunks can be filled in parallel.
// Matrix values are triangular on ±0.02·√6 (standard deviation 0.02, as
// the usual N(0, 0.02²) initialisation), quantised with tensor.Quantize;
// norm weights are 1 plus such noise, biases such noise, both F32.
//
// The K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and the IQ4 types (IQ4_NL,
// IQ4_XS) have no Go quantiser, so their matrices get random blocks
// (random sub-block scales and values under a fixed small block scale,
// weights of order 0.02; random.go). With one dtype for every matrix (as
// llama-quantize --pure), a matrix whose rows are not whole blocks of it
// takes llama.cpp's fallback type (IQ4_XS to IQ4_NL, Q2_K and Q3_K to
// Q4_0, Q5_K to Q5_1, Q6_K to Q8_0), except that Q4_K falls back to Q4_0
// (as it did before layouts, so older benchmarks keep their types). A
// layout (SHAPE:Q4_K_M, SHAPE:Q5_K_M, SHAPE:IQ4_XS) mixes dtypes per
// tensor as llama.cpp's llama-quantize does for that file type (layout.go
// has the rules); IQ4_XS names the layout, the file people download, not
// the pure model.
//
// The vocabulary is llama.cpp's "no_vocab" tokenizer with <arch>.vocab_size
// set: llama-bench draws random token ids, and so does vkllm's bench.
package synth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// Errors of Lookup, ParseSpec and Build.
var (
	ErrUnknownShape = errors.New("synth: unknown shape")
	ErrDType        = errors.New("synth: unsupported dtype")
	ErrBadShape     = errors.New("synth: invalid shape")
)

// Shape is a decoder's dimensions: what a random model of it needs to be
// run and benchmarked like the real one.
type Shape struct {
	Name         string
	Arch         string // "llama", "qwen2" or "qwen3" (GGUF general.architecture)
	Hidden       int
	Layers       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Intermediate int
	Vocab        int
	ContextLen   int
	RoPETheta    float64
	RMSNormEps   float64
	QKVBias      bool // biases on q, k and v (Qwen2)
	QKNorm       bool // per-head RMSNorm weights on q and k (Qwen3)
	Tied         bool // the output matrix is the embedding
	// Llama3RoPE, if set, is Llama 3.1's RoPE scaling, written as
	// llama.cpp's rope_freqs tensor.
	Llama3RoPE *Llama3RoPE
}

// Llama3RoPE is the "llama3" rope_scaling of a HF config.
type Llama3RoPE struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalMaxPositions                  int
}

var shapes = map[string]Shape{
	"qwen2.5-0.5b": {
		Name: "qwen2.5-0.5b", Arch: "qwen2", Hidden: 896, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64,
		Intermediate: 4864, Vocab: 151936, ContextLen: 32768, RoPETheta: 1e6, RMSNormEps: 1e-6,
		QKVBias: true, Tied: true,
	},
	"llama-3.2-1b": {
		Name: "llama-3.2-1b", Arch: "llama", Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64,
		Intermediate: 8192, Vocab: 128256, ContextLen: 131072, RoPETheta: 5e5, RMSNormEps: 1e-5, Tied: true,
		Llama3RoPE: &Llama3RoPE{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192},
	},
	"qwen3-0.6b": {
		Name: "qwen3-0.6b", Arch: "qwen3", Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128,
		Intermediate: 3072, Vocab: 151936, ContextLen: 40960, RoPETheta: 1e6, RMSNormEps: 1e-6,
		QKNorm: true, Tied: true,
	},
	"llama-3.1-8b": {
		Name: "llama-3.1-8b", Arch: "llama", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128,
		Intermediate: 14336, Vocab: 128256, ContextLen: 131072, RoPETheta: 5e5, RMSNormEps: 1e-5,
		Llama3RoPE: &Llama3RoPE{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192},
	},
}

// Shapes lists the known shape names, sorted.
func Shapes() []string {
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the named shape; NAME-tiny is NAME's Tiny scale.
func Lookup(name string) (Shape, error) {
	base, tiny := strings.CutSuffix(name, "-tiny")
	s, ok := shapes[base]
	if ok && tiny {
		return s.Tiny(), nil
	}
	if !ok {
		return Shape{}, fmt.Errorf("%w %q (known: %s, each also as NAME-tiny)", ErrUnknownShape, name, strings.Join(Shapes(), ", "))
	}
	return s, nil
}

// DTypes are the matrix dtypes Build makes.
var DTypes = []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS}

// ParseSpec reads "SHAPE:DTYPE" or "SHAPE:LAYOUT", e.g.
// "qwen2.5-0.5b:Q4_0" or "qwen2.5-0.5b:Q4_K_M".
func ParseSpec(spec string) (Shape, Quant, error) {
	name, dtName, ok := strings.Cut(spec, ":")
	if !ok {
		return Shape{}, Quant{}, fmt.Errorf("%w %q: want SHAPE:DTYPE, e.g. qwen2.5-0.5b:Q4_0", ErrUnknownShape, spec)
	}
	s, err := Lookup(name)
	if err != nil {
		return Shape{}, Quant{}, err
	}
	q, err := parseQuant(dtName)
	if err != nil {
		return Shape{}, Quant{}, err
	}
	return s, q, nil
}

func parseDType(name string) (tensor.DType, error) {
	dt, ok := tensor.ParseDType(strings.ToUpper(name))
	if ok {
		for _, d := range DTypes {
			if d == dt {
				return dt, nil
			}
		}
	}
	names := make([]string, len(DTypes))
	for i, d := range DTypes {
		names[i] = d.String()
	}
	return tensor.Invalid, fmt.Errorf("%w %q (supported: %s)", ErrDType, name, strings.Join(names, ", "))
}

// Tiny is s at a test's scale: the same architecture, biases, tying, head
// size, RoPE and GQA grouping (up to 2 KV heads), with 2 layers, twice as
// many query heads as KV heads, a 512-wide MLP and a 1000-token vocabulary.
func (s Shape) Tiny() Shape {
	t := s
	t.Name = s.Name + "-tiny"
	t.Layers = 2
	t.KVHeads = min(s.KVHeads, 2)
	t.Heads = 2 * t.KVHeads
	t.Hidden = t.Heads * s.HeadDim
	t.Intermediate = 512
	t.Vocab = 1000
	return t
}

// Validate checks that s describes a decoder Build can make.
func (s Shape) Validate() error {
	switch {
	case s.Arch != "llama" && s.Arch != "qwen2" && s.Arch != "qwen3":
		return fmt.Errorf("%w %s: arch %q (want llama, qwen2 or qwen3)", ErrBadShape, s.Name, s.Arch)
	case s.Hidden < 1 || s.Layers < 1 || s.Heads < 1 || s.KVHeads < 1 || s.HeadDim < 2 || s.Intermediate < 1 || s.Vocab < 1:
		return fmt.Errorf("%w %s: every dimension must be positive", ErrBadShape, s.Name)
	case s.Heads%s.KVHeads != 0:
		return fmt.Errorf("%w %s: %d heads are not a multiple of %d KV heads", ErrBadShape, s.Name, s.Heads, s.KVHeads)
	case s.HeadDim%2 != 0:
		return fmt.Errorf("%w %s: odd head size %d", ErrBadShape, s.Name, s.HeadDim)
	case s.ContextLen < 1 || s.RoPETheta <= 0 || s.RMSNormEps <= 0:
		return fmt.Errorf("%w %s: context length, RoPE theta and RMSNorm epsilon must be positive", ErrBadShape, s.Name)
	}
	return nil
}

// Model is a built random model: GGUF metadata and tensors, in the order
// they are written.
type Model struct {
	Shape   Shape
	Quant   Quant // of the matrices (a layout mixes dtypes; a Q4_K model has some Q4_0 matrices)
	Seed    uint64
	KV      []gguf.KV
	Tensors []tensor.Tensor
}

// Bytes is the tensors' data size.
func (m *Model) Bytes() int64 {
	var n int64
	for _, t := range m.Tensors {
		n += int64(len(t.Data))
	}
	return n
}

// WriteGGUF writes the model as a GGUF file.
func (m *Model) WriteGGUF(w io.Writer) error { return gguf.Write(w, m.KV, m.Tensors, nil) }

// WriteFile writes the model as a GGUF file at path, through a temporary
// file beside it that is renamed when complete (and removed on error).
func (m *Model) WriteFile(path string) error {
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = m.WriteGGUF(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Parse writes the model as GGUF into memory and parses it: a *gguf.File
// that models.OpenGGUF runs. The file's tensors are views of a new buffer,
// so the Model's own tensor data can be dropped afterwards.
func (m *Model) Parse() (*gguf.File, error) {
	var buf bytes.Buffer
	buf.Grow(int(m.Bytes()) + 1<<20) // data, padding and metadata
	if err := m.WriteGGUF(&buf); err != nil {
		return nil, err
	}
	return gguf.Parse(buf.Bytes())
}

// chunkElems is how many values one job fills: a multiple of every block
// size, so that a chunk is whole blocks.
const chunkElems = 1 << 18

// fill says how a tensor's values are drawn.
type fill int

const (
	fillMatrix   fill = iota // triangular noise, sd 0.02
	fillNorm                 // 1 + noise
	fillBias                 // noise
	fillComputed             // not drawn (rope_freqs)
)

// Plan lists the tensors Build makes for shape s and matrices q, in
// order, with their names, dtypes and shapes but no data: it checks that
// every matrix's rows are whole blocks of its dtype without allocating
// them.
func Plan(s Shape, q Quant) ([]tensor.Tensor, error) {
	ts, _, err := plan(s, q)
	return ts, err
}

// plan is Plan with each tensor's fill.
func plan(s Shape, q Quant) ([]tensor.Tensor, []fill, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkQuant(q); err != nil {
		return nil, nil, err
	}
	var ts []tensor.Tensor
	var fills []fill
	add := func(name string, f fill, dt tensor.DType, shape ...int64) error {
		n, err := tensor.NumElements(shape)
		if err == nil {
			_, err = dt.Bytes(n)
		}
		if err != nil {
			return fmt.Errorf("%w %s: %s: %w", ErrBadShape, s.Name, name, err)
		}
		ts = append(ts, tensor.Tensor{Name: name, DType: dt, Shape: shape})
		fills = append(fills, f)
		return nil
	}
	// A matrix in the dtype q gives it (layer -1: outside the layers).
	mat := func(name string, layer, rows, cols int) error {
		role := strings.TrimSuffix(name, ".weight")
		if layer >= 0 {
			role = strings.TrimPrefix(role, fmt.Sprintf("blk.%d.", layer))
		}
		t := q.matrixType(s, matrix{role: role, layer: layer, cols: cols})
		if cols%t.BlockSize() != 0 {
			return fmt.Errorf("%w %s: %s: rows of %d values are not whole %v blocks of %d", ErrBadShape, s.Name, name, cols, t, t.BlockSize())
		}
		return add(name, fillMatrix, t, int64(rows), int64(cols))
	}
	vec := func(name string, f fill, n int) error { return add(name, f, tensor.F32, int64(n)) }

	nq, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	errs := []error{
		mat("token_embd.weight", -1, s.Vocab, s.Hidden),
		vec("output_norm.weight", fillNorm, s.Hidden),
	}
	if !s.Tied {
		errs = append(errs, mat("output.weight", -1, s.Vocab, s.Hidden))
	}
	for l := range s.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		errs = append(errs,
			vec(p+"attn_norm.weight", fillNorm, s.Hidden),
			mat(p+"attn_q.weight", l, nq, s.Hidden),
			mat(p+"attn_k.weight", l, kv, s.Hidden),
			mat(p+"attn_v.weight", l, kv, s.Hidden))
		if s.QKVBias {
			errs = append(errs, vec(p+"attn_q.bias", fillBias, nq), vec(p+"attn_k.bias", fillBias, kv), vec(p+"attn_v.bias", fillBias, kv))
		}
		if s.QKNorm {
			errs = append(errs, vec(p+"attn_q_norm.weight", fillNorm, s.HeadDim), vec(p+"attn_k_norm.weight", fillNorm, s.HeadDim))
		}
		errs = append(errs,
			mat(p+"attn_output.weight", l, s.Hidden, nq),
			vec(p+"ffn_norm.weight", fillNorm, s.Hidden),
			mat(p+"ffn_gate.weight", l, s.Intermediate, s.Hidden),
			mat(p+"ffn_up.weight", l, s.Intermediate, s.Hidden),
			mat(p+"ffn_down.weight", l, s.Hidden, s.Intermediate))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if r := s.Llama3RoPE; r != nil {
		ts = append(ts, ropeFreqs(s.HeadDim, s.RoPETheta, r))
		fills = append(fills, fillComputed)
	}
	return ts, fills, nil
}

// Build makes the random model of shape s with matrices q from seed,
// filling chunks on workers goroutines (runtime.GOMAXPROCS(0) when
// workers < 1). The bytes depend on s, q and seed only.
func Build(s Shape, q Quant, seed uint64, workers int) (*Model, error) {
	ts, fills, err := plan(s, q)
	if err != nil {
		return nil, err
	}
	type job struct {
		t     int // index in ts
		chunk int
	}
	var jobs []job
	for i := range ts {
		if fills[i] == fillComputed {
			continue
		}
		n := ts[i].NumElements()
		size, _ := ts[i].DType.Bytes(n) // checked by plan
		ts[i].Data = make([]byte, size)
		for c := range (n + chunkElems - 1) / chunkElems {
			jobs = append(jobs, job{i, int(c)})
		}
	}
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			scratch := make([]float32, chunkElems)
			for {
				i := next.Add(1) - 1
				if i >= int64(len(jobs)) {
					return
				}
				j := jobs[i]
				fillChunk(&ts[j.t], fills[j.t], j.chunk, seed, uint64(j.t), scratch)
			}
		})
	}
	wg.Wait()
	return &Model{Shape: s, Quant: q, Seed: seed, KV: metadata(s, q), Tensors: ts}, nil
}

// fillChunk draws chunk c of t from the stream (seed, tensor index, c).
func fillChunk(t *tensor.Tensor, f fill, c int, seed, index uint64, scratch []float32) {
	n := t.NumElements()
	lo := int64(c) * chunkElems
	hi := min(n, lo+chunkElems)
	r := rand.New(rand.NewPCG(seed, index<<32|uint64(c)))
	b0, _ := t.DType.Bytes(lo)
	b1, _ := t.DType.Bytes(hi)
	dst := t.Data[b0:b1]
	if random := randomBlocks[t.DType]; random != nil {
		random(r, dst)
		return
	}
	x := scratch[:hi-lo]
	// Triangular on [-a, a] from two 16-bit uniforms: sd a/√6 = 0.02.
	const a = 0.02 * 2.449489742783178
	const scale = a / 65535
	for i := 0; i < len(x); i += 2 {
		u := r.Uint64()
		x[i] = float32(scale * float64(int64(u&0xffff)+int64(u>>16&0xffff)-65535))
		if i+1 < len(x) {
			x[i+1] = float32(scale * float64(int64(u>>32&0xffff)+int64(u>>48)-65535))
		}
	}
	if f == fillNorm {
		for i := range x {
			x[i] += 1
		}
	}
	if err := tensor.Quantize(t.DType, x, dst); err != nil {
		panic(fmt.Sprintf("synth: %s: %v", t.Name, err)) // sizes are whole blocks by construction
	}
}

// ropeFreqs is llama.cpp's rope_freqs tensor for Llama 3.1's scaling
// (convert_hf_to_gguf.py, LlamaModel.generate_extra_tensors): one factor a
// frequency pair, 1 for short wavelengths, Factor for long ones, smooth
// between.
func ropeFreqs(headDim int, theta float64, r *Llama3RoPE) tensor.Tensor {
	lowWave := float64(r.OriginalMaxPositions) / r.LowFreqFactor
	highWave := float64(r.OriginalMaxPositions) / r.HighFreqFactor
	f := make([]float32, headDim/2)
	for i := range f {
		freq := 1 / math.Pow(theta, float64(2*i)/float64(headDim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			f[i] = 1
		case wave > lowWave:
			f[i] = float32(r.Factor)
		default:
			smooth := (float64(r.OriginalMaxPositions)/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			f[i] = float32(1 / ((1-smooth)/r.Factor + smooth))
		}
	}
	data := make([]byte, 4*len(f))
	_ = tensor.Quantize(tensor.F32, f, data)
	return tensor.Tensor{Name: "rope_freqs.weight", DType: tensor.F32, Shape: []int64{int64(len(f))}, Data: data}
}

// fileTypes are llama.cpp's general.file_type for a model whose matrices
// are mostly dt (llama_ftype; a pure K-quant is its _S file type: Q3_K_S,
// Q5_K_S).
var fileTypes = map[tensor.DType]uint32{
	tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q4_1: 3, tensor.Q8_0: 7,
	tensor.Q5_0: 8, tensor.Q5_1: 9, tensor.Q2_K: 10, tensor.Q3_K: 11, tensor.Q4_K: 15, tensor.Q5_K: 16,
	tensor.Q6_K: 18, tensor.IQ4_NL: 25, tensor.IQ4_XS: 30, tensor.BF16: 32,
}

// metadata is the GGUF metadata llama.cpp's loader reads for s.
func metadata(s Shape, q Quant) []gguf.KV {
	u32 := func(k string, v int) gguf.KV {
		return gguf.KV{Key: k, Value: gguf.Value{Type: gguf.Uint32, V: uint32(v)}}
	}
	f32 := func(k string, v float64) gguf.KV {
		return gguf.KV{Key: k, Value: gguf.Value{Type: gguf.Float32, V: float32(v)}}
	}
	str := func(k, v string) gguf.KV { return gguf.KV{Key: k, Value: gguf.Value{Type: gguf.String, V: v}} }
	a := s.Arch + "."
	kv := []gguf.KV{
		str("general.architecture", s.Arch),
		str("general.name", fmt.Sprintf("%s-shaped random (%v)", s.Name, q)),
		u32("general.file_type", int(q.fileType())),
		u32(a+"context_length", s.ContextLen),
		u32(a+"embedding_length", s.Hidden),
		u32(a+"block_count", s.Layers),
		u32(a+"feed_forward_length", s.Intermediate),
		u32(a+"attention.head_count", s.Heads),
		u32(a+"attention.head_count_kv", s.KVHeads),
		u32(a+"attention.key_length", s.HeadDim),
		u32(a+"attention.value_length", s.HeadDim),
		f32(a+"attention.layer_norm_rms_epsilon", s.RMSNormEps),
		f32(a+"rope.freq_base", s.RoPETheta),
		u32(a+"rope.dimension_count", s.HeadDim),
		u32(a+"vocab_size", s.Vocab),
		str("tokenizer.ggml.model", "no_vocab"),
	}
	return kv
}
