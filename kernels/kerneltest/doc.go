// Package kerneltest is the conformance suite every kernels.Backend must
// pass, in the style of gonum's blas/testblas and llama.cpp's
// test-backend-ops. Each exported function tests one op of the Backend on
// random inputs of odd sizes (and every weight dtype for MatMul and
// GetRows), comparing the backend with plain reference loops written here,
// in float64 where it matters, by normalised mean squared error:
//
//	NMSE = Σ(got − want)² / Σ want²
//
// A backend package runs them all from its tests:
//
//	func TestConformance(t *testing.T) { kerneltest.All(t, cpu.New(0)) }
//
// # Thresholds
//
// Each limit is set from what a correct float32 implementation can lose
// against the float64 reference, with a wide margin, and far below what a
// wrong element (an NMSE of order 1/len) gives:
//
//	LimitExact   1e-12  Add, GetRows, KVWrite to F32: at most one
//	                    float32 rounding per element (NMSE ≤ 2^-48 ≈ 4e-15).
//	LimitF16     2^-22  KVWrite to F16: one rounding to half precision,
//	                    relative error ≤ 2^-11 per element.
//	LimitMath    1e-10  RMSNorm, SwiGLU: a few roundings and an
//	                    exp or sqrt within a few ulp (a GPU's exp may be
//	                    ~10 ulp off): NMSE ≲ 1e-12.
//	LimitRoPE    1e-6   RoPE, KVShift: the angle pos·θᵢ is a float32, as in
//	                    transformers and llama.cpp, so it is off by up to
//	                    half an ulp of itself (1.2e-4 rad at position 3000),
//	                    and a backend may form θᵢ as llama.cpp does
//	                    (repeated float32 products): NMSE ~1e-8 at these
//	                    positions. 1e-6 is the suite's element-wise ceiling.
//	LimitF32Dot  1e-9   MatMul with F32 weights, Attention with F32 caches:
//	                    float32 dot products of up to 768 terms, any
//	                    summation order: NMSE ≲ 1e-11.
//	LimitQuant   5e-4   MatMul with F16, BF16 or quantised weights,
//	                    Attention with F16 caches: test-backend-ops' limit.
//	                    The reference uses the exactly dequantised weights,
//	                    but a backend may round the activations too: to f16,
//	                    or to 8 bits per block of 32 as llama.cpp's Q8_1
//	                    paths do (NMSE ≈ 3e-5 for Gaussian data).
//
// MatMulStrict and AttentionStrict apply LimitF32Dot to every dtype: they
// are for a backend that keeps activations in float32 and dequantises
// exactly (the CPU reference), and are not part of All.
//
// MatMul also checks batch invariance bitwise: a row's result alone equals
// the same row's inside a batch of 17.
//
// Weights are random: F32, F16, BF16 and the 32-element quants through
// tensor.Quantize; K-quants as random blocks with small finite f16
// scales. A dtype that tensor.Quantize or tensor.Dequantize does not know
// yet, or that the backend's Upload rejects with *tensor.UnsupportedDTypeError,
// skips its subtest with a message naming it.
package kerneltest
