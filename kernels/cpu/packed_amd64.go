//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/vkllm/vkllm/tensor"
)

// Implemented in packed_amd64.s.

//go:noescape
func dotQ8_0p8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotQ8_0p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotQ4_0p8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotQ4_0p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotQ4_0p16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ4_0p16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ4_Kp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_0p8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotQ5_0p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotQ5_0p16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_0p16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ6_Kp8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotQ6_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotQ6_Kp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ6_Kp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_1p8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ5_1p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ5_1p16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_1p16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_Kp8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ5_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_Kp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ5_Kp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)

//go:noescape
func dotIQ4_NLp8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotIQ4_NLp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotIQ4_NLp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotIQ4_NLp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotIQ4_XSp8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotIQ4_XSp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotIQ4_XSp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotIQ4_XSp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)

//go:noescape
func dotQ4_1p8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_1p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_0p8x1AVX2(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32, ng int)

//go:noescape
func dotQ4_0p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, os, nq int)

//go:noescape
func dotQ4_1p8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int)

//go:noescape
func dotQ4_1p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int)

//go:noescape
func dotQ4_Kp8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int)

//go:noescape
func dotQ4_Kp8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int)

//go:noescape
func dotQ8_0p8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int)

//go:noescape
func dotQ8_0p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int)

// packedVNNI and packedAVX2 return the two sets (packed_amd64.s,
// packed_avx2_amd64.s). The AVX2 kernels take several groups (one-row
// kernels) or quads of activation rows with an output stride (four-row
// kernels); the VNNI ones one group and one quad, which their wrappers
// call once for each.
func packedVNNI() packedSet {
	return packedSet{name: "avx512vnni", q8_0Off: 128, by: map[tensor.DType]packedKinds{
		tensor.Q8_0: packedNeg(tensor.Q8_0, groupsOf(dotQ8_0p8x1VNNI, 272), quadsOf(dotQ8_0p8x4VNNI)),
		tensor.Q4_0: packedNeg(tensor.Q4_0, groupsOf(dotQ4_0p8x1VNNI, 144), quadsOf(dotQ4_0p8x4VNNI)).
			with(pairsNeg(tensor.Q4_0, dotQ4_0p16x8VNNI, dotQ4_0p16x4VNNI)),
		tensor.Q5_0: packedNeg(tensor.Q5_0, groupsOf(dotQ5_0p8x1VNNI, 176), quadsOf(dotQ5_0p8x4VNNI)).
			with(pairsNeg(tensor.Q5_0, dotQ5_0p16x8VNNI, dotQ5_0p16x4VNNI)),
		tensor.Q6_K: packedNeg(tensor.Q6_K, groupsOf(dotQ6_Kp8x1VNNI, 1680), quadsOfAux(dotQ6_Kp8x4VNNI, 2)).
			with(pairsNeg(tensor.Q6_K, dotQ6_Kp16x8VNNI, dotQ6_Kp16x4VNNI)),
		tensor.IQ4_NL: packedNeg(tensor.IQ4_NL, groupsOf(dotIQ4_NLp8x1VNNI, 144), quadsOf(dotIQ4_NLp8x4VNNI)).
			with(pairsNeg(tensor.IQ4_NL, dotIQ4_NLp16x8VNNI, dotIQ4_NLp16x4VNNI)),
		tensor.IQ4_XS: packedNeg(tensor.IQ4_XS, groupsOf(dotIQ4_XSp8x1VNNI, 1104), quadsOf(dotIQ4_XSp8x4VNNI)).
			with(pairsNeg(tensor.IQ4_XS, dotIQ4_XSp16x8VNNI, dotIQ4_XSp16x4VNNI)),
		tensor.Q4_1: packedSX(groupsOf(dotQ4_1p8x1VNNI, 160), quadsOf(dotQ4_1p8x4VNNI), 160, 32),
		tensor.Q4_K: packedSX(groupsOf(dotQ4_Kp8x1VNNI, 1184), quadsOf(dotQ4_Kp8x4VNNI), 1184, 256).
			with(pairsSX(dotQ4_Kp16x8VNNI, dotQ4_Kp16x4VNNI, 1184, 256)),
		tensor.Q5_1: packedSX(groupsOf(dotQ5_1p8x1VNNI, 192), quadsOf(dotQ5_1p8x4VNNI), 192, 32).
			with(pairsSX(dotQ5_1p16x8VNNI, dotQ5_1p16x4VNNI, 192, 32)),
		tensor.Q5_K: packedSX(groupsOf(dotQ5_Kp8x1VNNI, 1440), quadsOf(dotQ5_Kp8x4VNNI), 1440, 256).
			with(pairsSX(dotQ5_Kp16x8VNNI, dotQ5_Kp16x4VNNI, 1440, 256)),
	}}
}

func packedAVX2() packedSet {
	return packedSet{name: "avx2", by: map[tensor.DType]packedKinds{
		tensor.Q8_0: packedSX(dotQ8_0p8x1AVX2, dotQ8_0p8x4AVX2, 272, 32), // s_x passed, not read
		tensor.Q4_0: packedNeg(tensor.Q4_0, dotQ4_0p8x1AVX2, dotQ4_0p8x4AVX2),
		tensor.Q4_1: packedSX(dotQ4_1p8x1AVX2, dotQ4_1p8x4AVX2, 160, 32),
		tensor.Q4_K: packedSX(dotQ4_Kp8x1AVX2, dotQ4_Kp8x4AVX2, 1184, 256),
	}}
}

// packedSets lists the sets this CPU can run (for the tests).
func packedSets() []packedSet {
	var sets []packedSet
	if hasVNNI {
		sets = append(sets, packedVNNI())
	}
	if hasAVX2 {
		sets = append(sets, packedAVX2())
	}
	return sets
}

// quadsOf makes a one-quad kernel (out[8c+r]) a quads kernel: it runs
// once per quad, each into a scratch tile copied to out's rows (os in
// bytes, as the AVX2 kernels take it).
func quadsOf[A int32 | float32](k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *A, nb int, out *float32)) func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *A, nb int, out *float32, os, nq int) {
	return quadsOfAux(k4, 1)
}

// quadsOfAux is quadsOf for a kernel whose aux rows are as times dx's
// stride apart (Q6_K's neg: 2).
func quadsOfAux[A int32 | float32](k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *A, nb int, out *float32), as int) func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *A, nb int, out *float32, os, nq int) {
	return func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *A, nb int, out *float32, os, nq int) {
		var tile [32]float32
		for q := range nq {
			k4(w, (*int8)(unsafe.Add(unsafe.Pointer(qx), 4*q*xs)), xs,
				(*float32)(unsafe.Add(unsafe.Pointer(dx), 4*q*ds)), ds,
				(*A)(unsafe.Add(unsafe.Pointer(aux), 4*q*ds*as)), nb, &tile[0])
			for c := range 4 {
				row := (*[8]float32)(unsafe.Add(unsafe.Pointer(out), (4*q+c)*os))
				*row = [8]float32(tile[8*c : 8*c+8])
			}
		}
	}
}

// groupsOf makes a one-group kernel a groups kernel: it runs once per
// group (size bytes per block, nb blocks).
func groupsOf[A int32 | float32](k1 func(w *byte, qx *int8, dx *float32, aux *A, nb int, out *float32), size int) func(w *byte, qx *int8, dx *float32, aux *A, nb int, out *float32, ng int) {
	return func(w *byte, qx *int8, dx *float32, aux *A, nb int, out *float32, ng int) {
		for g := range ng {
			k1((*byte)(unsafe.Add(unsafe.Pointer(w), g*nb*size)), qx, dx, aux, nb, (*float32)(unsafe.Add(unsafe.Pointer(out), 32*g)))
		}
	}
}

// packedNeg wraps dt's kernels that take neg (Q8_0, Q4_0, Q5_0, IQ4_NL:
// blocks of 32 values; IQ4_XS, Q6_K: of 256), one per negValues(dt)
// values: the kernels step through neg rows of k/negValues values (Q6_K:
// at twice dx's stride).
func packedNeg(dt tensor.DType, k1 func(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32, ng int),
	k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, os, nq int)) packedKinds {
	size, vals, nv := packBlockBytes(dt), packValues(dt), negValues(dt)
	x1 := func(w []byte, nb int, qx []int8, dx, _ []float32, neg []int32, i, ng int, out []float32) {
		if !packedGroupsArgs(w, nb, size, vals, qx, dx, nil, neg, i, ng, out) {
			return
		}
		k, nd := nb*vals, nb*vals/32
		_ = neg[(i+1)*k/nv-1]
		k1(&w[0], &qx[i*k], &dx[i*nd], &neg[i*k/nv], nb, &out[0], ng)
	}
	x4 := func(w []byte, nb int, qx []int8, dx, _ []float32, neg []int32, i, n int, out []float32, os int) {
		if !packedArgs(w, nb, size, vals, qx, dx, nil, neg, i, n, out, os) {
			return
		}
		checkQuads(n)
		k, nd := nb*vals, nb*vals/32
		_ = neg[(i+n)*k/nv-1]
		k4(&w[0], &qx[i*k], k, &dx[i*nd], 4*nd, &neg[i*k/nv], nb, &out[0], 4*os, n/4)
	}
	return packedKinds{x1: x1, x4: x4}
}

// packedSX wraps the kernels that take s_x (Q4_1, Q5_1: blocks of 32
// values in 160, 192 bytes; Q4_K, Q5_K: of 256 in 1184, 1440) or no neg (AVX2 Q8_0, 272 bytes).
func packedSX(k1 func(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int),
	k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int), size, vals int) packedKinds {
	x1 := func(w []byte, nb int, qx []int8, dx, sx []float32, _ []int32, i, ng int, out []float32) {
		if !packedGroupsArgs(w, nb, size, vals, qx, dx, sx, nil, i, ng, out) {
			return
		}
		k, nd := nb*vals, nb*vals/32
		k1(&w[0], &qx[i*k], &dx[i*nd], &sx[i*nd], nb, &out[0], ng)
	}
	x4 := func(w []byte, nb int, qx []int8, dx, sx []float32, _ []int32, i, n int, out []float32, os int) {
		if !packedArgs(w, nb, size, vals, qx, dx, sx, nil, i, n, out, os) {
			return
		}
		checkQuads(n)
		k, nd := nb*vals, nb*vals/32
		k4(&w[0], &qx[i*k], k, &dx[i*nd], 4*nd, &sx[i*nd], nb, &out[0], 4*os, n/4)
	}
	return packedKinds{x1: x1, x4: x4}
}

// pairsNeg wraps dt's two-group kernels that take neg (as packedNeg): k8
// once per eight activation rows, then k4 for the last four, if any.
func pairsNeg(dt tensor.DType, k8, k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)) packedPairs {
	size, vals, nv := packBlockBytes(dt), packValues(dt), negValues(dt)
	return func(w []byte, gb, nb int, qx []int8, dx, _ []float32, neg []int32, i, n int, out []float32, os int) {
		if !pairArgs(w, gb, nb, size, vals, qx, dx, nil, neg, i, n, out, os) {
			return
		}
		k, nd := nb*vals, nb*vals/32
		_ = neg[(i+n)*k/nv-1]
		for q := 0; q < n; {
			kq, step := k4, 4
			if n-q >= 8 {
				kq, step = k8, 8
			}
			kq(&w[0], &qx[(i+q)*k], k, &dx[(i+q)*nd], 4*nd, &neg[(i+q)*k/nv], nb, &out[q*os], gb, 4*os)
			q += step
		}
	}
}

// pairsSX wraps two-group kernels that take s_x (Q5_1: blocks of 32
// values; Q4_K, Q5_K: of 256; in size bytes): k8 once per eight activation rows, then k4
// for the last four, if any.
func pairsSX(k8, k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int), size, vals int) packedPairs {
	return func(w []byte, gb, nb int, qx []int8, dx, sx []float32, _ []int32, i, n int, out []float32, os int) {
		if !pairArgs(w, gb, nb, size, vals, qx, dx, sx, nil, i, n, out, os) {
			return
		}
		k, nd := nb*vals, nb*vals/32
		for q := 0; q < n; {
			kq, step := k4, 4
			if n-q >= 8 {
				kq, step = k8, 8
			}
			kq(&w[0], &qx[(i+q)*k], k, &dx[(i+q)*nd], 4*nd, &sx[(i+q)*nd], nb, &out[q*os], gb, 4*os)
			q += step
		}
	}
}

// pairArgs bounds-checks a two-group kernel's arguments as packedArgs
// does for each group (gb bytes apart, each of nb blocks of size bytes,
// its outputs at out and out[8:]).
func pairArgs(w []byte, gb, nb, size, vals int, qx []int8, dx, sx []float32, neg []int32, i, n int, out []float32, os int) bool {
	if os < 16 || gb < nb*size {
		panic("cpu: two-group packed kernel's groups or output rows overlap")
	}
	if n > 0 {
		checkQuads(n)
	}
	ok := packedArgs(w, nb, size, vals, qx, dx, sx, neg, i, n, out, os)
	return packedArgs(w[gb:], nb, size, vals, qx, dx, sx, neg, i, n, out[8:], os) && ok
}

// checkQuads panics unless n, a four-row kernel's row count, is a
// multiple of four (the caller's bug otherwise).
func checkQuads(n int) {
	if n%4 != 0 {
		panic("cpu: four-row packed kernel on a row count not a multiple of four")
	}
}

// packedGroupsArgs bounds-checks a one-row kernel's arguments: ng groups
// of nb blocks at w, activation row i, 8·ng outputs; as packedArgs.
func packedGroupsArgs(w []byte, nb, size, vals int, qx []int8, dx, sx []float32, neg []int32, i, ng int, out []float32) bool {
	if ng <= 0 {
		return false
	}
	_ = out[8*ng-1]
	if nb == 0 {
		clear(out[:8*ng])
		return false
	}
	_ = w[ng*nb*size-1]
	return packedArgs(w, nb, size, vals, qx, dx, sx, neg, i, 1, out, 8)
}

// packedArgs bounds-checks a packed kernel's arguments (a group of nb
// blocks of vals values in size bytes, activation rows i … i+n−1,
// whichever of sx and neg the kernel reads, and the n output rows of
// eight at stride os) and reports whether there is anything to compute:
// with nb = 0 it zeroes the outputs and reports false, as with n = 0.
func packedArgs(w []byte, nb, size, vals int, qx []int8, dx, sx []float32, neg []int32, i, n int, out []float32, os int) bool {
	if n <= 0 {
		return false
	}
	_ = out[(n-1)*os+7]
	if os < 8 {
		panic("cpu: packed kernel output rows overlap")
	}
	if nb == 0 {
		for c := range n {
			clear(out[c*os : c*os+8])
		}
		return false
	}
	k := nb * vals
	_, _, _ = w[nb*size-1], qx[(i+n)*k-1], dx[(i+n)*k/32-1]
	switch {
	case neg != nil:
		_ = neg[(i+n)*k/32-1]
	case sx != nil:
		_ = sx[(i+n)*k/32-1]
	default:
		panic("cpu: packed kernel without its neg or sx")
	}
	return true
}
