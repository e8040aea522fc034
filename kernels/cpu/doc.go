// Package cpu is vkllm's reference backend: plain Go loops that run each op
// at once, split across the goroutines of a pool started once per Backend.
// It registers itself as "cpu" with kernels.Register; New(threads) makes
// one directly. It is the oracle the faster backends are checked against
// (package kernels/kerneltest), so clarity and exactness come before
// speed. The same package has a fast path, registered as "cpu-fast" and
// made by NewWith(Options{Fast: true}); see "Fast path" below.
//
// Between ops the pool's goroutines poll for up to a millisecond before
// they block (pool.go), as llama.cpp's thread pool spins: a decode step
// is hundreds of ops of tens of microseconds, and a futex wake-up per op
// cost two threads a third of their decode speed. An idle Backend uses
// no CPU after that millisecond.
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
// in by the first forward pass. (The fast path's packed weights are
// copies, below.) Upload takes every dtype tensor.Dequantize
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
// the op (pool.go): it never ends the process from a goroutine the
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
// the weighted sum of V, visiting visible cells in index order and
// skipping masked ones. Softmax runs in float64 and rounds once.
//
// RMSNorm, RoPE and SwiGLU round to float32 at the steps transformers
// does (see each method), because the goldens are float32 PyTorch:
// RMSNorm's mean of squares is summed in float64 and rounded once; RoPE's
// frequencies are transformers' float32 inv_freq (InvFreq, checked against
// testdata/rope.golden.json), its angles float32 pos·inv_freq, their
// cosine and sine rounded to float32.
//
// # Fast path
//
// With Options.Fast, MatMul, Attention and SwiGLU take other kernels
// (fast.go, dot.go; Go assembly in dot_amd64.s for AVX2 + FMA + F16C,
// chosen at run time with golang.org/x/sys/cpu, and the same kernels in
// pure Go under the purego build tag, on other architectures and on CPUs
// without those features; SIMD reports which):
//
//   - F32, F16 and BF16 weights: float32 dots with fused multiply-adds in
//     eight lanes (four accumulators), read in place. With AVX512_BF16,
//     BF16 weights instead meet activations rounded to bfloat16 once per
//     MatMul (to nearest even), one VDPBF16PS accumulator per pair
//     (bf16act.go, tilebf16_amd64.s), as llama.cpp does: its truth is
//     kerneltest.MatMulBF16Act, and BF16Activations reports it.
//   - Q8_0, Q4_0, Q4_1, Q4_K and Q6_K weights: each activation row is
//     quantised once per MatMul to 8 bits per block of 32 (quantizeQ8: d =
//     max|x|/127 in float32, q = round(x/d)), and every block's integer dot
//     is exact (vpmaddubsw/vpmaddwd), scaled by d_w·d_x in float32. This is
//     llama.cpp's arithmetic (its Q8_0/Q8_1 vec_dots; per 32 also for the
//     K-quants, where llama.cpp uses 256), not the reference's: its truth
//     is kerneltest.MatMulQ8 (the dequantised weight times the dequantised
//     activations, in float64).
//   - other dtypes: the row dequantised once per tile, then the F32 dot.
//   - Q8_0, Q4_0, Q4_1 and Q4_K with AVX2 or AVX-512 VNNI: the weight is
//     copied at Upload into groups of eight rows (packed.go), so that one
//     vector lane is one weight row and eight vpdpbusd (VNNI,
//     packed_amd64.s) or vpmaddubsw/vpmaddwd (AVX2,
//     packed_avx2_amd64.s: Q8_0 by |w| against x with w's sign) give a
//     block's exact integer sum for eight rows at once, as llama.cpp's
//     repacked Q4_0 kernels do; both sets give the same values. Per (row, activation row) and block, in
//     block order: acc = fma(float(sum), d_w·d_x, acc) (Q4_1: plus
//     m_w·s_x into a second sum; Q4_K per sub-block of 32 with
//     (d·sc)·d_x, minus (dmin·m)·s_x summed apart); the one-activation-row and
//     four-activation-row kernels do the same steps. The copy costs the
//     weight's size in memory (the file's mapping stays, for GetRows); it
//     lives outside the Go heap on transparent huge pages where Linux
//     gives them (MADV_HUGEPAGE), which made decode 10–25 % faster; the
//     weights share a few 64 MiB mappings (internal/mmap.Arena), so that
//     the small ones (a Qwen2.5-0.5B layer's attention weights) and the
//     tails of the others are on 2 MiB pages too.
//   - prefill: the weight rows of a task are dotted with tiles of 64
//     activation rows while in cache: packed groups by four activation
//     rows, one AVX2 call running all the tile's quads of a group and
//     storing into the output rows themselves (at the output's row
//     stride; a weight's short last group by scratch), so that a small
//     model's short rows (SmolLM2's 576 values: 18 blocks a quad) do not
//     pay a Go call and a copy per quad; without AVX2 (or with the purego tag), quantised weights by
//     four-row calls of the one-row kernels. F16 and BF16 weights go by
//     4x4 tiles with AVX-512 F/VL/BW on 512-bit vectors (F16, two of
//     the one-row kernel's accumulators to a vector; tilehalf_amd64.s:
//     one pass per accumulator of the one-row kernel, so that each
//     pair's float steps are dotF16's or dotBF16's), with AVX2 only by
//     3x4 tiles (three weight rows, four activation rows: twelve
//     accumulators, three conversions and four loads per twelve FMAs);
//     without AVX2, one-row calls. On AVX2 without AVX-512, dotF16 and
//     dotBF16 and their tiles keep one eight-lane accumulator per pair
//     instead of four (tilehalf_avx2_amd64.s: a 4x4 tile with four per
//     pair does not fit 16 registers, and one made of passes ran at half
//     the speed). Rows of a multiple of 256 values are first copied four
//     at a time into rows 64 bytes off a 4 KiB multiple apart, which
//     would share L1 cache sets.
//   - decode: packed groups one activation row at a time, one AVX2 call
//     per task running all its groups, four at once from four quarters
//     of the task (groups g, q+g, 2q+g, 3q+g), so that the weight is read
//     as four sequential streams (MatMulDecode at one thread: Q8_0 +32 %,
//     Q4_0 +15–29 %; one core has more of the memory's bandwidth with
//     four streams in flight than with one; the AVX-512 VNNI kernels
//     still take one group a call, unmeasured on such a CPU); F16 (and BF16
//     with AVX512_BF16, or on AVX2 alone) four weight rows at once, taken from four
//     quarters of a task so that the weight is read as four sequential
//     streams. Each
//     thread takes its own contiguous part of the weight rows by tasks of
//     about 1 MiB (decodeTaskBytes); for packed weights the tasks shrink
//     to 64 KiB at a part's end (pool.runRangesGuided), so the threads
//     finish together. MatMuls (kernels.MultiMatMul) runs weights
//     packed alike (a layer's Q, K, V; gate and up) as one pool job over
//     all their groups, the activations quantised once.
//   - Attention: float32 dots and V accumulation, a vector exp; SwiGLU:
//     silu·u with the vector exp. A head's scores and weighted sum are
//     one assembly call each over an F32 or F16 cache (attention_amd64.s): the
//     scores eight cells at a time (each cell's dot in eight lanes,
//     reduced in one fixed order, the same wherever the cell is among the
//     visible ones), the sum bitwise per-cell axpyF32. Over an F16 cache
//     the query heads of one KV head go two or three at once
//     (attnScoresF16Heads, attnAccF16Heads: four cells at a time for
//     the scores, each K and V chunk converted once for the heads, rows
//     16 cells ahead prefetched), each value bitwise the one-head
//     kernels'. The softmax step between them (subtract the maximum, exp,
//     sum in float64 by four lanes) is one pass (expSubSum). Each thread
//     starts on its own contiguous run of (token, KV head, heads) tasks,
//     so two threads do not miss on the same K and V rows at once.
//
// Every output element is still one kernel call on its own inputs in a
// fixed order, so results are bitwise independent of the batch size, the
// tiling and the thread count. They differ from the reference's by float32
// rounding (float types) or by the activation quantisation (quantised
// types): the model parity tests pass against transformers on the fast
// path for F32, F16 and BF16 models, not for quantised GGUFs (1e-4 of the
// largest logit is below the error of 8-bit activations), which is why
// "cpu" stays the exact path.
package cpu
