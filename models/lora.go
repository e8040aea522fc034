package models

import (
	"fmt"
	"slices"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// AdapterID names a LoRA adapter loaded on a Model (Model.LoadAdapter).
// NoAdapter, the zero value, runs the base model.
type AdapterID int32

// NoAdapter is the base model without any adapter.
const NoAdapter AdapterID = 0

// ErrBadAdapter wraps every *AdapterError and an unknown AdapterID in a
// Batch.
var ErrBadAdapter = errcode.New(errcode.BadParams, "models: bad LoRA adapter")

// AdapterError: a LoRA adapter cannot be read, or does not fit the model.
type AdapterError struct {
	Path   string
	Reason string
}

func (e *AdapterError) Error() string {
	return fmt.Sprintf("models: LoRA adapter %s: %s", e.Path, e.Reason)
}

// Code implements errcode.Coder.
func (e *AdapterError) Code() errcode.Code { return errcode.LoadFailed }

// Unwrap makes errors.Is(err, ErrBadAdapter) hold.
func (e *AdapterError) Unwrap() error { return ErrBadAdapter }

// loraTarget is a linear layer of a decoder block that an adapter may
// change.
type loraTarget int

const (
	loraQ loraTarget = iota
	loraK
	loraV
	loraO
	loraGate
	loraUp
	loraDown
	numLoRATargets
)

// The targets' names: PEFT's module names (target_modules) and the GGUF
// weight they change.
var (
	loraModules = [numLoRATargets]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	loraHF      = [numLoRATargets]string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
		"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}
	loraGGUF = [numLoRATargets]string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}
)

// dims is the (out, in) shape of a target's base weight.
func (t loraTarget) dims(c *Config) (out, in int) {
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	switch t {
	case loraQ:
		return qDim, c.HiddenSize
	case loraK, loraV:
		return kvDim, c.HiddenSize
	case loraO:
		return c.HiddenSize, qDim
	case loraGate, loraUp:
		return c.IntermediateSize, c.HiddenSize
	default: // loraDown
		return c.HiddenSize, c.IntermediateSize
	}
}

// AdapterInfo describes a loaded adapter.
type AdapterInfo struct {
	Path   string
	Format Format // FormatSafetensors (PEFT) or FormatGGUF (llama.cpp)
	Rank   int
	Alpha  float64
	// Scale multiplies the adapter's product: alpha/rank, alpha/√rank
	// for rsLoRA, 1 for a GGUF file of alpha 0 (llama.cpp's rule).
	Scale float64
	// Targets are the PEFT module names the adapter changes, in layer
	// order ("q_proj", "v_proj", …).
	Targets []string
}

// loraPair is the adapter of one target weight W (out, in) on the host:
// W x becomes W x + Scale·B (A x).
type loraPair struct {
	a []float32 // (rank, in)
	b []float32 // (out, rank)
}

// loraHost is an adapter read from its files and checked against a
// model's config, in the base model's layout (for a Llama GGUF, the rows
// of B of q and k are permuted as the converter permuted the weights).
type loraHost struct {
	info   AdapterInfo
	layers [][numLoRATargets]*loraPair // nil where the target is not adapted
}

// adapter is a loaded adapter on the backend: per layer and target, A
// (rank, in) and Scale·B (out, rank), F32.
type adapter struct {
	info   AdapterInfo
	layers [][numLoRATargets]loraWeights
	all    []kernels.Tensor
}

type loraWeights struct {
	a, b kernels.Tensor // nil where not adapted
}

// upload puts h on b, B scaled; on failure it frees what it made.
func (h *loraHost) upload(b kernels.Backend) (_ *adapter, err error) {
	ad := &adapter{info: h.info, layers: make([][numLoRATargets]loraWeights, len(h.layers))}
	defer func() {
		if err != nil {
			ad.free(b)
		}
	}()
	put := func(v []float32, rows, cols int) (kernels.Tensor, error) {
		t, err := b.NewTensor(tensor.F32, rows, cols)
		if err != nil {
			return nil, err
		}
		ad.all = append(ad.all, t)
		return t, b.SetF32(t, v)
	}
	r, scale := h.info.Rank, float32(h.info.Scale)
	for l, ly := range h.layers {
		for t, p := range ly {
			if p == nil {
				continue
			}
			in, out := len(p.a)/r, len(p.b)/r
			sb := make([]float32, len(p.b))
			for i, x := range p.b {
				sb[i] = scale * x
			}
			w := &ad.layers[l][t]
			if w.a, err = put(p.a, r, in); err != nil {
				return nil, err
			}
			if w.b, err = put(sb, out, r); err != nil {
				return nil, err
			}
		}
	}
	return ad, b.Sync()
}

func (ad *adapter) free(b kernels.Backend) {
	for _, t := range ad.all {
		b.Free(t)
	}
	ad.all = nil
}

// LoadAdapter reads a LoRA adapter (a PEFT folder with
// adapter_config.json and adapter_model.safetensors, or a llama.cpp GGUF
// LoRA file) and puts it on the model's backend, unmerged: a Batch token
// whose Adapter is the returned id runs y = W x + Scale·B (A x) at each
// adapted weight, the others the base model. An adapter that does not fit
// the model (another architecture, shapes, an unsupported option) is an
// error wrapping ErrBadAdapter. It is safe to call while Contexts run;
// the adapter lives until the Model is closed.
func (m *Model) LoadAdapter(path string) (AdapterID, error) {
	h, err := readAdapter(path, m.Files)
	if err != nil {
		return NoAdapter, err
	}
	m.run.Lock()
	defer m.run.Unlock()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return NoAdapter, ErrModelClosed
	}
	ad, err := h.upload(m.backend)
	if err != nil {
		return NoAdapter, fmt.Errorf("models: LoRA adapter %s: %w", path, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.adapters = append(m.adapters, ad)
	return AdapterID(len(m.adapters)), nil
}

// Adapter describes the loaded adapter id; false when there is none.
func (m *Model) Adapter(id AdapterID) (AdapterInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id <= 0 || int(id) > len(m.adapters) {
		return AdapterInfo{}, false
	}
	return m.adapters[id-1].info, true
}

// adapterList is the loaded adapters; id i is element i-1.
func (m *Model) adapterList() []*adapter {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adapters
}

// loraGroup is the tokens of a batch that run one adapter.
type loraGroup struct {
	ad   *adapter
	rows []int32        // their batch indices, ascending
	idx  kernels.Tensor // I32 (len(rows)): rows on the backend
	all  bool           // every token of the batch: no gather or scatter
}

// loraScratch holds the adapted rows of a pass: a group's gathered
// inputs (x) and outputs (y), A x (r) and the product (d), each viewed
// (rows, cols) over its first values.
type loraScratch struct {
	x, y, d kernels.Tensor // F32 (BatchSize·widest)
	r       kernels.Tensor // F32 (BatchSize·rank), rank the largest used
	rank    int
	idx     []kernels.Tensor // I32 (BatchSize): one per group of a pass
	groups  []loraGroup
}

// loraPass groups the batch's tokens by adapter (in order of first
// appearance) and uploads each group's rows. It returns nil when no token
// has an adapter.
func (ctx *Context) loraPass(bt Batch) ([]loraGroup, error) {
	if len(bt.Adapter) == 0 {
		return nil, nil
	}
	ads := ctx.m.adapterList()
	ls := &ctx.lora
	ls.groups = ls.groups[:0]
	for i, id := range bt.Adapter {
		if id == NoAdapter {
			continue
		}
		gi := -1
		for j := range ls.groups {
			if ls.groups[j].ad == ads[id-1] {
				gi = j
				break
			}
		}
		if gi < 0 {
			gi = len(ls.groups)
			ls.groups = append(ls.groups, loraGroup{ad: ads[id-1]})
		}
		ls.groups[gi].rows = append(ls.groups[gi].rows, int32(i))
	}
	if len(ls.groups) == 0 {
		return nil, nil
	}
	rank := 0
	for _, g := range ls.groups {
		rank = max(rank, g.ad.info.Rank)
	}
	if err := ctx.allocLoRA(rank, len(ls.groups)); err != nil {
		return nil, err
	}
	b, n := ctx.m.backend, len(bt.Token)
	for i := range ls.groups {
		g := &ls.groups[i]
		g.all = len(g.rows) == n
		g.idx = b.View(ls.idx[i], len(g.rows))
		if err := b.SetI32(g.idx, g.rows); err != nil {
			return nil, err
		}
	}
	return ls.groups, nil
}

// allocLoRA makes the LoRA scratch for adapters of rank at most rank in
// groups groups: when the Context is made for the adapters loaded then,
// else on first use, and more of it for a larger rank or more groups
// than before.
func (ctx *Context) allocLoRA(rank, groups int) error {
	c, b, ls := ctx.m.Config, ctx.m.backend, &ctx.lora
	n := ctx.p.BatchSize
	s := ctx.s
	if ls.x == nil {
		wide := max(c.HiddenSize, c.NumHeads*c.HeadDim, c.IntermediateSize)
		if err := s.allocTensors(b, []tensorSpec{
			{&ls.x, tensor.F32, []int{n * wide}}, {&ls.y, tensor.F32, []int{n * wide}}, {&ls.d, tensor.F32, []int{n * wide}},
		}); err != nil {
			return err
		}
	}
	if rank > ls.rank {
		if ls.r != nil {
			s.forget(b, ls.r)
			ls.r, ls.rank = nil, 0
		}
		if err := s.allocTensors(b, []tensorSpec{{&ls.r, tensor.F32, []int{n * rank}}}); err != nil {
			return err
		}
		ls.rank = rank
	}
	for len(ls.idx) < groups {
		var t kernels.Tensor
		if err := s.allocTensors(b, []tensorSpec{{&t, tensor.I32, []int{n}}}); err != nil {
			return err
		}
		ls.idx = append(ls.idx, t)
	}
	return nil
}

// applyLoRA adds each group's adapter product for target t of layer l to
// its rows of y: y += Scale·B (A x), x (n, in) the weight's input, y (n,
// out) its output (bias included, as PEFT adds to the base layer's
// output). A group of the whole batch runs on x and y; another gathers
// its rows (GetRows), and writes its rows of y back (KVWrite: a row
// scatter). Every op is row-wise and batch-invariant, so a token's
// result does not depend on the other tokens or their adapters.
func (ctx *Context) applyLoRA(groups []loraGroup, l int, t loraTarget, x, y kernels.Tensor) {
	b, ls := ctx.m.backend, &ctx.lora
	in, out := x.Shape()[1], y.Shape()[1]
	for i := range groups {
		g := &groups[i]
		w := g.ad.layers[l][t]
		if w.a == nil {
			continue
		}
		ng, r := len(g.rows), g.ad.info.Rank
		xg, yg := x, y
		if !g.all {
			xg, yg = b.View(ls.x, ng, in), b.View(ls.y, ng, out)
			b.GetRows(xg, x, g.idx)
			b.GetRows(yg, y, g.idx)
		}
		ax, d := b.View(ls.r, ng, r), b.View(ls.d, ng, out)
		b.MatMul(ax, xg, w.a)
		b.MatMul(d, ax, w.b)
		b.Add(yg, yg, d)
		if !g.all {
			b.KVWrite(y, yg, g.idx)
		}
	}
}

// checkAdapters checks a batch's adapter ids against the model's.
func (ctx *Context) checkAdapters(b Batch) error {
	if len(b.Adapter) == 0 {
		return nil
	}
	if len(b.Adapter) != len(b.Pos) {
		return fmt.Errorf("%w: %d adapter ids for %d tokens", ErrBadBatch, len(b.Adapter), len(b.Pos))
	}
	n := AdapterID(len(ctx.m.adapterList()))
	for i, id := range b.Adapter {
		if id < 0 || id > n {
			return fmt.Errorf("%w: %w: adapter %d at index %d (%d loaded)", ErrBadBatch, ErrBadAdapter, id, i, n)
		}
	}
	return nil
}

// forget frees t, one of s's tensors, and drops it from s.all.
func (s *scratch) forget(b kernels.Backend, t kernels.Tensor) {
	b.Free(t)
	s.all = slices.DeleteFunc(s.all, func(u kernels.Tensor) bool { return u == t })
}
