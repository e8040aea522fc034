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

func usePacked() {
	packedQ8_0x1, packedQ8_0x4 = packedNeg(dotQ8_0p8x1VNNI, dotQ8_0p8x4VNNI, 272)
	packedQ4_0x1, packedQ4_0x4 = packedNeg(dotQ4_0p8x1VNNI, dotQ4_0p8x4VNNI, 144)
	packedQ4_1x1 = func(w []byte, nb int, qx []int8, dx, sx []float32, _ []int32, i int, out *[32]float32) {
		if packedArgs(w, nb, 160, qx, dx, nil, i, 1) {
			_ = sx[(i+1)*nb-1]
			dotQ4_1p8x1VNNI(&w[0], &qx[i*nb*32], &dx[i*nb], &sx[i*nb], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	packedQ4_1x4 = func(w []byte, nb int, qx []int8, dx, sx []float32, _ []int32, i int, out *[32]float32) {
		if packedArgs(w, nb, 160, qx, dx, nil, i, 4) {
			_ = sx[(i+4)*nb-1]
			dotQ4_1p8x4VNNI(&w[0], &qx[i*nb*32], nb*32, &dx[i*nb], 4*nb, &sx[i*nb], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
}

// packedNeg wraps the kernels that take neg (Q8_0, Q4_0; blocks of size
// bytes).
func packedNeg(k1 func(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32),
	k4 func(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32), size int) (x1, x4 packedFunc) {
	x1 = func(w []byte, nb int, qx []int8, dx, _ []float32, neg []int32, i int, out *[32]float32) {
		if packedArgs(w, nb, size, qx, dx, neg, i, 1) {
			k1(&w[0], &qx[i*nb*32], &dx[i*nb], &neg[i*nb], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	x4 = func(w []byte, nb int, qx []int8, dx, _ []float32, neg []int32, i int, out *[32]float32) {
		if packedArgs(w, nb, size, qx, dx, neg, i, 4) {
			k4(&w[0], &qx[i*nb*32], nb*32, &dx[i*nb], 4*nb, &neg[i*nb], nb, &out[0])
		} else {
			*out = [32]float32{}
		}
	}
	return x1, x4
}

// packedArgs bounds-checks a packed kernel's arguments (a group of nb
// blocks of size bytes, activation rows i … i+rows−1) and reports whether
// there is anything to compute (nb > 0).
func packedArgs(w []byte, nb, size int, qx []int8, dx []float32, neg []int32, i, rows int) bool {
	if nb == 0 {
		return false
	}
	_, _, _ = w[nb*size-1], qx[(i+rows)*nb*32-1], dx[(i+rows)*nb-1]
	if neg != nil {
		_ = neg[(i+rows)*nb-1]
	} else if size != 160 {
		panic("cpu: packed Q8_0 or Q4_0 kernel without neg")
	}
	return true
}
