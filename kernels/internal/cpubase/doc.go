// Package cpubase is what kernels/cpu (the fast path) and kernels/cpuref
// (the exact oracle) share: the host tensor and its storage, the worker
// pool, and the ops whose arithmetic the two paths do the same way
// (GetRows, Add, RoPE, KVShift, KVWrite), as the methods of Base, which
// both backends embed. It is pure Go, with no assembly and no build tags. The ops where the paths differ (MatMul,
// Attention, RMSNorm, SwiGLU) live in each backend's own package, so no
// edit to the fast path can change the oracle.
//
// The layout and numerics are those kernels/cpuref documents.
package cpubase
