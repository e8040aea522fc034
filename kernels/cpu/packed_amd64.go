//go:build amd64 && !purego

package cpu

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
func dotQ4_1p8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_1p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_0p8x1AVX2(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)

//go:noescape
func dotQ4_0p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)

//go:noescape
func dotQ4_1p8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_1p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ4_Kp8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

//go:noescape
func dotQ8_0p8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)

//go:noescape
func dotQ8_0p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)

// packedVNNI and packedAVX2 return the two sets (packed_amd64.s,
// packed_avx2_amd64.s).
func packedVNNI() packedSet {
	s := packedSet{name: "avx512vnni", q8_0Off: 128}
	s.q8_0x1, s.q8_0x4 = packedNeg(dotQ8_0p8x1VNNI, dotQ8_0p8x4VNNI, 272)
	s.q4_0x1, s.q4_0x4 = packedNeg(dotQ4_0p8x1VNNI, dotQ4_0p8x4VNNI, 144)
	s.q4_1x1, s.q4_1x4 = packedSX(dotQ4_1p8x1VNNI, dotQ4_1p8x4VNNI, 160, 32)
	s.q4_Kx1, s.q4_Kx4 = packedSX(dotQ4_Kp8x1VNNI, dotQ4_Kp8x4VNNI, 1184, 256)
	return s
}

func packedAVX2() packedSet {
	s := packedSet{name: "avx2"}
	s.q8_0x1, s.q8_0x4 = packedSX(dotQ8_0p8x1AVX2, dotQ8_0p8x4AVX2, 272, 32) // s_x passed, not read
	s.q4_0x1, s.q4_0x4 = packedNeg(dotQ4_0p8x1AVX2, dotQ4_0p8x4AVX2, 144)
	s.q4_1x1, s.q4_1x4 = packedSX(dotQ4_1p8x1AVX2, dotQ4_1p8x4AVX2, 160, 32)
	s.q4_Kx1, s.q4_Kx4 = packedSX(dotQ4_Kp8x1AVX2, dotQ4_Kp8x4AVX2, 1184, 256)
	return s
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

// packedNeg wraps the kernels that take neg (Q8_0, Q4_0; blocks of 32
// values in size bytes).
func packedNeg(k1 func(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32),
	k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32), size int) (x1, x4 packedFunc) {
	x1 = func(w []byte, nb int, qx []int8, dx, _ []float32, neg []int32, i int, out *[32]float32) {
		if packedArgs(w, nb, size, 32, qx, dx, nil, neg, i, 1) {
			k1(&w[0], &qx[i*nb*32], &dx[i*nb], &neg[i*nb], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	x4 = func(w []byte, nb int, qx []int8, dx, _ []float32, neg []int32, i int, out *[32]float32) {
		if packedArgs(w, nb, size, 32, qx, dx, nil, neg, i, 4) {
			k4(&w[0], &qx[i*nb*32], nb*32, &dx[i*nb], 4*nb, &neg[i*nb], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	return x1, x4
}

// packedSX wraps the kernels that take s_x (Q4_1: blocks of 32 values in
// 160 bytes; Q4_K: of 256 in 1184) or no neg (AVX2 Q8_0, 272 bytes).
func packedSX(k1 func(w *byte, qx *int8, dx, aux *float32, nb int, out *float32),
	k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32), size, vals int) (x1, x4 packedFunc) {
	x1 = func(w []byte, nb int, qx []int8, dx, sx []float32, _ []int32, i int, out *[32]float32) {
		k, nd := nb*vals, nb*vals/32
		if packedArgs(w, nb, size, vals, qx, dx, sx, nil, i, 1) {
			k1(&w[0], &qx[i*k], &dx[i*nd], &sx[i*nd], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	x4 = func(w []byte, nb int, qx []int8, dx, sx []float32, _ []int32, i int, out *[32]float32) {
		k, nd := nb*vals, nb*vals/32
		if packedArgs(w, nb, size, vals, qx, dx, sx, nil, i, 4) {
			k4(&w[0], &qx[i*k], k, &dx[i*nd], 4*nd, &sx[i*nd], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	return x1, x4
}

// packedArgs bounds-checks a packed kernel's arguments (a group of nb
// blocks of vals values in size bytes, activation rows i … i+rows−1, and
// whichever of sx and neg the kernel reads) and reports whether there is
// anything to compute (nb > 0).
func packedArgs(w []byte, nb, size, vals int, qx []int8, dx, sx []float32, neg []int32, i, rows int) bool {
	if nb == 0 {
		return false
	}
	k := nb * vals
	_, _, _ = w[nb*size-1], qx[(i+rows)*k-1], dx[(i+rows)*k/32-1]
	switch {
	case neg != nil:
		_ = neg[(i+rows)*k/32-1]
	case sx != nil:
		_ = sx[(i+rows)*k/32-1]
	default:
		panic("cpu: packed kernel without its neg or sx")
	}
	return true
}
