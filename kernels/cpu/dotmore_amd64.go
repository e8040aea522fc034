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

// Implemented in dotmoretile_amd64.s.

//go:noescape
func q8Tile4AVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)

//go:noescape
func q8Tile4UAVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)

//go:noescape
func q8Tile4MAVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32, m, sx4 *float32)

//go:noescape
func q8Tile4SVNNI(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)

//go:noescape
func q8Tile4MVNNI(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32, m, sx4 *float32)

//go:noescape
func minsK8x4AVX2(m, dmin, sx *float32, nsb, ds int, out *[4]float32)

func init() {
	if hasAVX2 {
		dotIQ4_NL, dotIQ4_XS = dotIQ4_NLAsm, dotIQ4_XSAsm
		dotQ5_0, dotQ5_1, dotQ5_K = dotQ5_0Asm, dotQ5_1Asm, dotQ5_KAsm
		dotQ3_K, dotQ2_K = superAsm(110, dotQ3_KAVX2), superAsm(84, dotQ2_KAVX2)
		moreTilesAVX2()
		if hasVNNI {
			q8Tile4Ones, q8Tile4M = q8Tile4Asm(q8Tile4SVNNI), q8Tile4MAsm(q8Tile4MVNNI)
		}
	}
}

// moreTilesAVX2 sets dotmoretile.go's kernels to the AVX2 ones (no
// VNNI).
func moreTilesAVX2() {
	q8Tile4, q8Tile4U, q8Tile4M = q8Tile4Asm(q8Tile4AVX2), q8Tile4Asm(q8Tile4UAVX2), q8Tile4MAsm(q8Tile4MAVX2)
	q8Tile4Ones, minsK8x4 = q8Tile4, minsK8x4Asm
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

// q8Tile4Asm wraps a tile kernel with a check that the four activation
// rows (xs values, ds scales apart) hold the unpacked row's blocks.
func q8Tile4Asm(kernel func(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)) func(u []byte, ud []float32, qx []int8, xs int, dx []float32, ds int, out *[4]float32) {
	return func(u []byte, ud []float32, qx []int8, xs int, dx []float32, ds int, out *[4]float32) {
		nb := len(ud)
		if nb == 0 {
			*out = [4]float32{}
			return
		}
		_, _, _ = u[64*nb-1], qx[3*xs+32*nb-1], dx[3*ds+nb-1]
		kernel(&u[0], &ud[0], nb, &qx[0], xs, &dx[0], ds, out)
	}
}

// q8Tile4MAsm wraps a kernel of q8Tile4M's as q8Tile4Asm does.
func q8Tile4MAsm(kernel func(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32, m, sx4 *float32)) func(u []byte, ud []float32, qx []int8, xs int, dx []float32, ds int, out *[4]float32, m, sx4 []float32) {
	return func(u []byte, ud []float32, qx []int8, xs int, dx []float32, ds int, out *[4]float32, m, sx4 []float32) {
		nb := len(ud)
		if nb == 0 {
			*out = [4]float32{}
			return
		}
		_, _, _, _, _ = u[64*nb-1], qx[3*xs+32*nb-1], dx[3*ds+nb-1], m[nb-1], sx4[4*nb-1]
		kernel(&u[0], &ud[0], nb, &qx[0], xs, &dx[0], ds, out, &m[0], &sx4[0])
	}
}

func minsK8x4Asm(m, dmin, sx []float32, ds int, out *[4]float32) {
	nsb := len(dmin)
	if nsb == 0 {
		*out = [4]float32{}
		return
	}
	_, _ = m[8*nsb-1], sx[3*ds+8*nsb-1]
	minsK8x4AVX2(&m[0], &dmin[0], &sx[0], nsb, ds, out)
}
