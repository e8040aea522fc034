// Package cpuref is vkllm's exact reference backend, the oracle every
// faster path is checked against: plain Go loops (no assembly, no build
// tags) that run each op at once, split across the goroutines of a pool
// started once per Backend. Its model results are held to HuggingFace
// transformers by the parity tests (package models), so clarity and
// exactness come before speed. It registers itself as "cpu-ref" with
// kernels.Register; New(threads) makes one directly. Users get the fast
// path, kernels/cpu ("cpu"), which shares this package's storage and
// elementwise ops (kernels/internal/cpubase) and has its own MatMul,
// Attention, RMSNorm and SwiGLU: no edit to it can move the truth.
//
// # Tensors
//
// A Tensor holds its dtype, its shape and one slice:
//
//	F32 activations, norm weights   []float32
//	I32 ids, positions, cells       []int32
//	F16 KV caches                   []uint16 (IEEE half bits)
//	uploaded weights, any dtype     []byte, the rows as the file stores them
//
// Every op sees a tensor as (rows, cols): cols is the last dimension, rows
// the product of the others. Upload does not copy: an uploaded weight is a
// view of the file mapping (tensor.Tensor.Data), so the model must keep its
// tensor.Source open, and the bytes unmodified, while the backend uses the
// weight (models.Model does). It reads every page of it once, so that the
// weight is in memory when Upload returns (load time) rather than faulted
// in by the first forward pass. Upload takes every dtype tensor.Dequantize
// knows (F32, F16, BF16, Q4_0 … Q8_0, the K-quants); another fails with an
// error wrapping *tensor.UnsupportedDTypeError.
//
// # Errors
//
// SetF32, SetI32, GetF32 and GetI32 return an error wrapping ErrMismatch
// for a length or dtype that does not fit and ErrForeign for a tensor this
// package did not make (or one freed). The ops return nothing: a shape or
// dtype that breaks kernels.Backend's contract, or an index (id, cell)
// outside its table, is the caller's bug and panics with a message naming
// the op and the shapes. A panic on one of the pool's helper goroutines
// is raised again in the goroutine that called the op, as a
// *kernels.WorkerPanic with the helper's stack, once no helper is still running
// the op (kernels/internal/cpubase): it never ends the process from a goroutine the
// caller cannot recover in.
//
// # Numerics
//
// MatMul dequantises one weight row at a time into a per-goroutine
// scratch row (never the whole weight) and dots it with every activation
// row. The dot product accumulates in float32 in a fixed order (eight
// partial sums by index mod 8, added pairwise), each product rounded to
// float32 (no fused multiply-add), so an output element depends only on
// its two input rows: it is bitwise the same whatever the batch size, the
// thread count or the machine. The weight rows are split across
// goroutines; which goroutine computes an element never changes it.
//
// Attention uses the same dot for q·k, then float64 for the softmax and
// the weighted sum of V, visiting each token's cells in the order of its
// list (kv.Cache.Visible: by position), so a sequence's results do not
// depend on which cells it occupies.
//
// RMSNorm, RoPE and SwiGLU round to float32 at the steps transformers
// does (see each method), because the goldens are float32 PyTorch:
// RMSNorm's mean of squares is summed in float64 and rounded once; RoPE's
// frequencies are transformers' float32 inv_freq (kernels.RoPE.InvFreq, checked against
// testdata/rope.golden.json), its angles float32 pos·inv_freq, their
// cosine and sine rounded to float32.
package cpuref
