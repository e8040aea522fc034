// Package cpu is vkllm's CPU backend, what users get on a machine without
// a GPU: SIMD kernels for the matmuls and attention over the storage and
// elementwise ops it shares with the exact reference, kernels/cpuref
// (kernels/internal/cpubase). It registers itself as "cpu" (kernels.CPU)
// with kernels.Register; New(threads) makes one directly. Each op runs at
// once, split across the goroutines of a pool started once per Backend;
// between ops they poll for up to a millisecond before they block, as
// llama.cpp's thread pool spins, so a Backend that just went idle uses
// that much CPU per thread.
//
// # Kernels
//
// SIMD reports the kernels in use, chosen at run time (golang.org/x/sys/cpu):
// "avx2+fma" (Go assembly for amd64 with AVX2, FMA and F16C),
// "avx2+fma+avx512vnni" (plus the AVX-512 VNNI kernels) or "go" (the same
// arithmetic in pure Go: other architectures, CPUs without those features,
// and the purego build tag). MatMul by weight dtype:
//
//   - F32, F16, BF16: float32 dots with fused multiply-adds, read in place.
//     On CPUs with AVX512_BF16 (BF16Activations), BF16 weights instead meet
//     the activations rounded to bfloat16 once per MatMul.
//   - Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, and IQ4_NL, IQ4_XS, Q5_0, Q5_1, Q5_K,
//     Q3_K, Q2_K (dotmore.go): each activation row is quantised once
//     per MatMul to 8 bits per block of 32 with a float32 scale
//     (d = max|x|/127, q = round(x/d)); each block's integer dot is exact
//     and scaled by d_w·d_x in float32. llama.cpp quantises its activations
//     the same way but rounds the scales to fp16 (and takes blocks of 256
//     for the K-quants), so results are close to llama.cpp's, not bitwise.
//     In prefill (four activation rows or more; "avx2+fma" and up) the
//     weight rows of dotmore.go's types and Q6_K are unpacked once per
//     MatMul into the thread's scratch (dotmoretile.go: 4.5 bytes per
//     value, 16 rows a thread) and dotted with four activation rows at a
//     time, each value bitwise the one-row kernel's.
//   - other dtypes (Q8_1, Q8_K, F64): each weight row dequantised, then the
//     F32 dot.
//
// Packed weights. Where SIMD has packed kernels ("avx2+fma" and up), Q8_0,
// Q4_0, Q4_1 and Q4_K weights (with AVX-512 VNNI also Q5_0, Q5_K, Q6_K,
// IQ4_NL and IQ4_XS, which then take neither the one-row kernels nor the
// tiles above) are copied at Upload into groups of eight rows, one vector
// lane per row (packed.go has the layout); with AVX-512 VNNI, prefill of
// all but Q8_0 and Q4_1 takes two groups at a time on 512-bit vectors,
// each lane doing the 256-bit kernels' steps. The copy costs
// the weight's size in memory on top of the file's mapping, which stays
// (GetRows reads it); it lives outside the Go heap, in shared 64 MiB
// mappings on transparent huge pages where Linux gives them. Other weights
// are views of the file mapping, as in kernels/cpuref: the model keeps the
// file open and unmodified (models.Model does).
//
// # Contracts
//
// Every output element is one kernel call on its own inputs in a fixed
// order, so results are bitwise the same whatever the batch size, the
// tiling and the thread count. Attention visits each token's cells in the
// order of its list (kv.Cache.Visible: by position), so a sequence's
// results do not depend on which cells it occupies. Its dots, V sums and
// exp are float32, with a float64 softmax sum. RMSNorm rounds where
// transformers does (its sum of squares in float64); SwiGLU uses a vector
// exp; RoPE, GetRows and the other elementwise ops are kernels/cpuref's.
//
// This backend is not held to transformers as kernels/cpuref is. Its
// truths are in kernels/kerneltest: MatMulQ8 for quantised weights (the
// dequantised weight times the dequantised 8-bit activations, in float64)
// and MatMulBF16Act for BF16 weights with AVX512_BF16; elsewhere the float
// references within float32 rounding. The model parity tests
// (`go test ./models/ -args -vkllm.backend=cpu`) hold it to transformers
// for F32, F16 and BF16 models and skip, naming the reason, the files
// whose truth is the quantised arithmetic.
//
// Errors are cpuref's: SetF32, SetI32, GetF32 and GetI32 wrap ErrMismatch
// or ErrForeign; an op whose operands break kernels.Backend's contract
// panics, raised in the caller's goroutine as a *kernels.WorkerPanic.
package cpu
