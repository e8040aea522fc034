//go:build amd64 && !purego

package cpu

// Implemented in dotmore_amd64.s; the wrappers check lengths (the
// assembly trusts them).

//go:noescape
func dotIQ4_NLAVX2(w *byte, qx *int8, dx *float32, nb int) float32

//go:noescape
func dotIQ4_XSAVX2(w *byte, qx *int8, dx *float32, nsb int) float32

//go:noescape
func dotQ5_0AVX2(w *byte, qx *int8, dx *float32, nb int) float32

//go:noescape
func dotQ5_1AVX2(w *byte, qx *int8, dx, sx *float32, nb int) float32

//go:noescape
func dotQ5_KAVX2(w *byte, qx *int8, dx, sx *float32, nsb int) float32

//go:noescape
func dotQ3_KAVX2(w *byte, qx *int8, dx *float32, nsb int) float32

//go:noescape
func dotQ2_KAVX2(w *byte, qx *int8, dx *float32, nsb int) float32

func init() {
	if hasAVX2 {
		dotIQ4_NL, dotIQ4_XS = dotIQ4_NLAsm, dotIQ4_XSAsm
		dotQ5_0, dotQ5_1, dotQ5_K = dotQ5_0Asm, dotQ5_1Asm, dotQ5_KAsm
		dotQ3_K, dotQ2_K = superAsm(110, dotQ3_KAVX2), superAsm(84, dotQ2_KAVX2)
	}
}

// blocks32 is the number of 32-value blocks of w (bb bytes each) the
// kernel may read: checked against qx and dx (and sx when given).
func blocks32(w []byte, bb int, qx []int8, dx, sx []float32) int {
	nb := len(w) / bb
	if nb > 0 {
		_, _ = qx[nb*32-1], dx[nb-1]
		if sx != nil {
			_ = sx[nb-1]
		}
	}
	return nb
}

func dotIQ4_NLAsm(w []byte, qx []int8, dx, _ []float32) float32 {
	nb := blocks32(w, 18, qx, dx, nil)
	if nb == 0 {
		return 0
	}
	return dotIQ4_NLAVX2(&w[0], &qx[0], &dx[0], nb)
}

func dotQ5_0Asm(w []byte, qx []int8, dx, _ []float32) float32 {
	nb := blocks32(w, 22, qx, dx, nil)
	if nb == 0 {
		return 0
	}
	return dotQ5_0AVX2(&w[0], &qx[0], &dx[0], nb)
}

func dotQ5_1Asm(w []byte, qx []int8, dx, sx []float32) float32 {
	nb := blocks32(w, 24, qx, dx, sx)
	if nb == 0 {
		return 0
	}
	return dotQ5_1AVX2(&w[0], &qx[0], &dx[0], &sx[0], nb)
}

func dotIQ4_XSAsm(w []byte, qx []int8, dx, _ []float32) float32 {
	nsb := len(w) / 136
	if nsb == 0 {
		return 0
	}
	_, _ = qx[nsb*256-1], dx[nsb*8-1]
	return dotIQ4_XSAVX2(&w[0], &qx[0], &dx[0], nsb)
}

func dotQ5_KAsm(w []byte, qx []int8, dx, sx []float32) float32 {
	nsb := len(w) / 176
	if nsb == 0 {
		return 0
	}
	_, _, _ = qx[nsb*256-1], dx[nsb*8-1], sx[nsb*8-1]
	return dotQ5_KAVX2(&w[0], &qx[0], &dx[0], &sx[0], nsb)
}

// superAsm wraps a kernel of 256-value super-blocks of bb bytes that
// reads qx and dx only.
func superAsm(bb int, kernel func(w *byte, qx *int8, dx *float32, nsb int) float32) func(w []byte, qx []int8, dx, _ []float32) float32 {
	return func(w []byte, qx []int8, dx, _ []float32) float32 {
		nsb := len(w) / bb
		if nsb == 0 {
			return 0
		}
		_, _ = qx[nsb*256-1], dx[nsb*8-1]
		return kernel(&w[0], &qx[0], &dx[0], nsb)
	}
}
