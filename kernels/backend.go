package kernels

import (
	"fmt"

	"github.com/vkllm/vkllm/tensor"
)

// Tensor is backend-owned memory. Only the backend that made it may use it.
type Tensor interface {
	DType() tensor.DType
	Shape() []int // row-major, outermost first; do not modify
}

// RoPEStyle selects how the pairs of a head are rotated.
type RoPEStyle int

const (
	// RoPENormal rotates adjacent pairs (x[2i], x[2i+1]): the layout of
	// llama.cpp's LLAMA_ROPE_TYPE_NORM, which Llama GGUF files need because
	// the converter permuted the rows of Q and K.
	RoPENormal RoPEStyle = iota
	// RoPENeox rotates the halves (x[i], x[i+d/2]): HF's rotate_half,
	// used by Qwen2 and by Llama weights from safetensors.
	RoPENeox
)

// RoPEScaling selects a frequency scaling of RoPE.
type RoPEScaling int

const (
	RoPEScaleNone   RoPEScaling = iota
	RoPEScaleLinear             // positions divided by Factor
	RoPEScaleLlama3             // Llama 3.1 smooth frequency interpolation
)

// RoPE describes a rotary position embedding. Frequencies are
// theta^(-2i/HeadDim) for i in [0, HeadDim/2), then scaled.
type RoPE struct {
	Style   RoPEStyle
	HeadDim int
	Theta   float64
	Scaling RoPEScaling
	// Factor applies to Linear and Llama3 scaling.
	Factor float64
	// Llama3 scaling only.
	LowFreqFactor, HighFreqFactor float64
	OriginalMaxPositions          int
	// FreqFactors, when set (HeadDim/2 values), divide each frequency
	// instead of Scaling: llama.cpp's rope_freqs tensor, which its GGUF
	// converter writes for Llama 3 scaling.
	FreqFactors []float32
}

// Backend is the set of ops the models need. Shapes are given as
// (rows, cols); "n" is the number of tokens in the batch.
type Backend interface {
	// Name is the registered name ("cpu", "vulkan").
	Name() string
	// Close frees everything the backend holds. Tensors become invalid.
	Close() error

	// NewTensor allocates a zeroed tensor. dt is F32, F16 or I32.
	NewTensor(dt tensor.DType, shape ...int) (Tensor, error)
	// Upload copies a weight (any dtype the backend supports for weights)
	// to backend memory once. It fails with an error wrapping
	// *tensor.UnsupportedDTypeError for a dtype the backend cannot use.
	// (The CPU backend keeps a view of t.Data instead of a copy: the
	// caller keeps the weights' Source open while the tensor is used.)
	Upload(t tensor.Tensor) (Tensor, error)
	// Free releases a tensor; it may be nil. Freeing a view does
	// nothing.
	Free(t Tensor)
	// View returns a tensor of the given shape over the first elements of
	// t, a tensor made by NewTensor (or a view of one), so that an op can
	// run on the first n rows of a tensor allocated once for the largest
	// batch: t's memory, row-major, read as the new shape (as ggml_view
	// with offset 0). Writes through either are seen through the other;
	// View allocates no backend memory; the view is valid while t's
	// memory is, and not after t is freed. A shape with more elements
	// than t, or a t that is an uploaded weight, is the caller's bug and
	// panics as an op's bad shape does.
	View(t Tensor, shape ...int) Tensor

	// SetF32 and SetI32 copy host data into a tensor of that dtype
	// (len(src) must equal its element count).
	SetF32(dst Tensor, src []float32) error
	SetI32(dst Tensor, src []int32) error
	// GetF32 and GetI32 wait for issued work and copy a tensor to the host.
	// GetF32 of an F16 tensor converts to float32.
	GetF32(src Tensor, dst []float32) error
	GetI32(src Tensor, dst []int32) error
	// Sync waits for all issued work and reports a device failure.
	Sync() error

	// GetRows: dst (n, cols) F32 = rows ids[i] of table (rows, cols),
	// any weight dtype or F32. ids is I32 (n).
	GetRows(dst, table, ids Tensor)
	// MatMul: dst (n, m) = x (n, k) · wᵀ, w (m, k) of any weight dtype.
	// Each dst element is one dot product whose summation order does not
	// depend on n (batch invariance).
	MatMul(dst, x, w Tensor)
	// Add: dst (n, m) = a (n, m) + b, b of shape (n, m) or (m) broadcast
	// over rows. dst may alias a.
	Add(dst, a, b Tensor)
	// RMSNorm: dst (n, d) = x / sqrt(mean(x²) + eps) * w, w F32 (d).
	// dst may alias x.
	RMSNorm(dst, x, w Tensor, eps float32)
	// RoPE rotates x (n, heads*HeadDim) in place; pos is I32 (n).
	RoPE(x, pos Tensor, p RoPE)
	// SwiGLU: dst (n, f) = silu(gate) * up. dst may alias gate.
	SwiGLU(dst, gate, up Tensor)
	// KVWrite: cache[cells[i]] = src[i] for rows i of src (n, kvDim);
	// cache (cells, kvDim) is F32 or F16, cells I32 (n).
	KVWrite(cache, src, cells Tensor)
	// KVShift rotates rows cells[i] of a K cache by delta[i] positions
	// (RoPE is additive in position). cells and delta are I32 (m).
	KVShift(cache, cells, delta Tensor, p RoPE)
	// Attention: dst (n, heads*headDim) = softmax(q·kᵀ·scale)·v per head
	// over the cells each token attends to, with grouped KV heads (heads
	// is a multiple of kvHeads and query head h reads KV head
	// h/(heads/kvHeads)). q (n, heads*headDim); k, v caches (cells,
	// kvHeads*headDim); vis I32 (n, w): row i lists the cells token i
	// attends to, each at most once, then -1 to the end of the row
	// (kv.Cache.Visible lists them by position). A row with no cell gives
	// 0. The sums run in the row's order: a token's result depends only
	// on its q row and the K and V rows its list names, in that order —
	// not on which cells hold them, the other tokens of the batch, or the
	// thread count (placement and batch invariance).
	Attention(dst, q, k, v, vis Tensor, heads, kvHeads int, scale float32)
}

// MultiMatMul is a Backend that can also run several MatMuls of one
// activation as one op: MatMuls(dst, x, w) sets every dst[i] to exactly
// what MatMul(dst[i], x, w[i]) would (len(dst) == len(w)). A backend
// runs them together where that saves work (the CPU backend: one
// quantisation of x and one synchronisation of its threads for a layer's
// Q, K and V, or gate and up, when their weights are packed alike) and
// one by one elsewhere. The decoder uses it where the backend has it.
type MultiMatMul interface {
	MatMuls(dst []Tensor, x Tensor, w []Tensor)
}

// MatMuls sets dst[i] = x·w[i]ᵀ for every i on b: as one op where b is a
// MultiMatMul (the same values, fewer synchronisations), else one MatMul
// each.
func MatMuls(b Backend, dst []Tensor, x Tensor, w []Tensor) {
	if mb, ok := b.(MultiMatMul); ok {
		mb.MatMuls(dst, x, w)
		return
	}
	for i := range w {
		b.MatMul(dst[i], x, w[i])
	}
}

// GateUpSwiGLUer is a Backend that can also run an FFN's gate and up
// MatMuls and their SwiGLU as one op: GateUpSwiGLU(dst, x, wGate, wUp)
// sets dst = silu(x·wGateᵀ) · (x·wUpᵀ), bitwise what MatMul, MatMul,
// SwiGLU give on that backend, without writing the gate and up products
// (the Vulkan backend: one matrix-vector dispatch instead of three). It
// reports false, having done nothing, for a call it does not fuse (the
// Vulkan backend: prefill on the tiled or cooperative-matrix kernel,
// gate and up of different dtypes or layouts). The decoder uses it,
// through GateUpSwiGLU, where the backend has it.
type GateUpSwiGLUer interface {
	GateUpSwiGLU(dst, x, wGate, wUp Tensor) bool
}

// GateUpSwiGLU sets gate = silu(x·wGateᵀ) · (x·wUpᵀ) on bk: as one op
// where bk is a GateUpSwiGLUer that fuses the call, else MatMuls into
// gate and up (scratch of gate's shape) and SwiGLU(gate, gate, up).
func GateUpSwiGLU(bk Backend, gate, up, x, wGate, wUp Tensor) {
	if f, ok := bk.(GateUpSwiGLUer); ok && f.GateUpSwiGLU(gate, x, wGate, wUp) {
		return
	}
	MatMuls(bk, []Tensor{gate, up}, x, []Tensor{wGate, wUp})
	bk.SwiGLU(gate, gate, up)
}

// AddRMSNormer is a Backend that can also run a residual Add and the
// RMSNorm of its sum as one op: AddRMSNorm(sum, dst, a, b, w, eps) sets
// sum = a + b (a and b of one shape; sum may alias a or b) and dst =
// RMSNorm(sum, w, eps) (dst may alias sum), bitwise what Add then
// RMSNorm would give on that backend, reading and writing the row once
// (the Vulkan backend: one dispatch instead of two). The decoder uses it
// where the backend has it.
type AddRMSNormer interface {
	AddRMSNorm(sum, dst, a, b, w Tensor, eps float32)
}

// AddRMSNorm sets sum = a + b and dst = RMSNorm(sum, w, eps) on bk: as
// one op where bk is an AddRMSNormer, else an Add and an RMSNorm.
func AddRMSNorm(bk Backend, sum, dst, a, b, w Tensor, eps float32) {
	if f, ok := bk.(AddRMSNormer); ok {
		f.AddRMSNorm(sum, dst, a, b, w, eps)
		return
	}
	bk.Add(sum, a, b)
	bk.RMSNorm(dst, sum, w, eps)
}

// RoPEKVWriter is a Backend that can also run a layer's RoPE of q and k
// and the KV writes of k and v as one op: RoPEKVWrite(q, k, v, pos,
// kCache, vCache, cells, p) is, bitwise, RoPE(q, pos, p), RoPE(k, pos,
// p), KVWrite(kCache, k, cells), KVWrite(vCache, v, cells) (k and v of
// one shape, the caches of one dtype). The decoder uses it where the
// backend has it.
type RoPEKVWriter interface {
	RoPEKVWrite(q, k, v, pos, kCache, vCache, cells Tensor, p RoPE)
}

// RoPEKVWrite runs RoPEKVWriter's four ops on bk: as one where bk is a
// RoPEKVWriter, else one by one.
func RoPEKVWrite(bk Backend, q, k, v, pos, kCache, vCache, cells Tensor, p RoPE) {
	if f, ok := bk.(RoPEKVWriter); ok {
		f.RoPEKVWrite(q, k, v, pos, kCache, vCache, cells, p)
		return
	}
	bk.RoPE(q, pos, p)
	bk.RoPE(k, pos, p)
	bk.KVWrite(kCache, k, cells)
	bk.KVWrite(vCache, v, cells)
}

// AttentionReserver is a Backend whose Attention needs working memory of
// its own (the Vulkan backend's split attention over long lists).
// ReserveAttention allocates it, once, for every Attention call of at
// most rows tokens, those heads and head dimension, and visibility lists
// at most maxWidth cells wide, so that such calls allocate nothing. The
// memory only grows: it serves the largest of the calls made so far. An
// error (out of device memory, say) leaves what was reserved before. The
// models call it where the backend has it, when a Context is made.
type AttentionReserver interface {
	ReserveAttention(rows, heads, headDim, maxWidth int) error
}

// ReserveAttention calls b.ReserveAttention where b is an
// AttentionReserver; elsewhere it does nothing.
func ReserveAttention(b Backend, rows, heads, headDim, maxWidth int) error {
	if r, ok := b.(AttentionReserver); ok {
		return r.ReserveAttention(rows, heads, headDim, maxWidth)
	}
	return nil
}

// StagingReserver is a Backend that moves host data through staging
// memory of its own (the Vulkan backend). ReserveStaging allocates it,
// once, for host traffic of at most bytes between two syncs (SetI32 and
// SetF32 inputs and the GetF32 reads that end a step), so that such steps
// allocate nothing. Like ReserveAttention it only grows and an error
// leaves what was reserved before; the models call it when a Context is
// made.
type StagingReserver interface {
	ReserveStaging(bytes int64) error
}

// ReserveStaging calls b.ReserveStaging where b is a StagingReserver;
// elsewhere it does nothing.
func ReserveStaging(b Backend, bytes int64) error {
	if r, ok := b.(StagingReserver); ok {
		return r.ReserveStaging(bytes)
	}
	return nil
}

// WorkerPanic is how a backend that runs an op on goroutines of its own
// raises a panic from one of them again on the goroutine that called the
// op (where it can be recovered): the value passed to panic and that
// goroutine's stack. models.Context.Decode unwraps it into its PanicError.
type WorkerPanic struct {
	Value any
	Stack []byte
}

// Error gives the value, not the stack: the message may reach a client
// (a server's error response), the stack belongs in a log.
func (e *WorkerPanic) Error() string {
	return fmt.Sprintf("kernels: panic in a worker goroutine: %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *WorkerPanic) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Check reports what is wrong with p, if anything: backends call it
// before rotating (a bad RoPE is a programming error, so they panic).
func (p RoPE) Check() error {
	switch {
	case p.HeadDim <= 0 || p.HeadDim%2 != 0:
		return fmt.Errorf("head dim %d is not a positive even number", p.HeadDim)
	case !(p.Theta > 0):
		return fmt.Errorf("theta %v", p.Theta)
	case p.FreqFactors != nil && len(p.FreqFactors) != p.HeadDim/2:
		return fmt.Errorf("%d freq factors for head dim %d", len(p.FreqFactors), p.HeadDim)
	}
	switch p.Scaling {
	case RoPEScaleNone:
	case RoPEScaleLinear:
		if !(p.Factor > 0) {
			return fmt.Errorf("linear scaling factor %v", p.Factor)
		}
	case RoPEScaleLlama3:
		if !(p.Factor > 0 && p.LowFreqFactor > 0 && p.HighFreqFactor > p.LowFreqFactor && p.OriginalMaxPositions > 0) {
			return fmt.Errorf("llama3 scaling factor %v, low %v, high %v, original positions %d",
				p.Factor, p.LowFreqFactor, p.HighFreqFactor, p.OriginalMaxPositions)
		}
	default:
		return fmt.Errorf("unknown RoPE scaling %d", p.Scaling)
	}
	return nil
}
