package cpu

import (
	"unsafe"

	"github.com/vkllm/vkllm/tensor"
)

// fastScratch holds the fast path's buffers, grown on demand and reused
// by every op of a Backend (which one goroutine uses at a time).
type fastScratch struct {
	qx     []int8    // (n·k) activations quantised by quantizeQ8
	dx, sx []float32 // (n·k/32) their block scales and scaled block sums
	neg    []int32   // (n·k/32) −off·Σqx per block, for packed Q8_0 and Q4_0
	xb     []uint16  // (n·k) activations rounded to bfloat16, for BF16 weights
	work   [][]float32
	rows   []unpackedRow // per worker: dotmoretile.go's unpacked weight row
	// MatMuls' and matMulPacked's operands for matMulPackedMulti, and
	// its weights' first groups
	mds, mws []*Tensor
	pd, pw   [1]*Tensor
	first    []int
}

// buf returns worker w's scratch of at least n float32s.
func (s *fastScratch) buf(threads, w, n int) []float32 {
	if len(s.work) < threads {
		s.work = append(s.work, make([][]float32, threads-len(s.work))...)
	}
	if cap(s.work[w]) < n {
		s.work[w] = make([]float32, n)
	}
	return s.work[w][:n]
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// littleEndian: the fast path reads F32, F16 and BF16 weights in place
// as []float32 and []uint16, which needs the file's byte order.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

func f32view(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// i8bytes views x as bytes.
func i8bytes(x []int8) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), len(x))
}

func u16view(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// Tiling of the fast MatMul: a task is a run of weight rows (taken by
// pool.runRanges, each thread streaming through its own part of the
// weight); inside it the activation rows go by tiles of xTile, and each
// weight row of the task is dotted with a whole tile while in cache.
const (
	xTile       = 64
	rowsPerTask = 16

	// decodeTaskBytes: in decode (n = 1) a thread's part of the weight
	// goes by tasks of about this many bytes.
	decodeTaskBytes = 1 << 20

	// prefillTaskBytes: the weight bytes of a packed prefill task
	// (matMulPackedMulti). Against tasks of one group pair, on the loaded
	// 2-core machine (GFLOP per CPU-second, one thread, best of 3):
	// IQ4_NL 896×4864 546 → 566, 4864×896 579 → 617, Q4_K 2048×8192
	// 512 → 557, 8192×2048 526 → 609 (n = 512).
	prefillTaskBytes = 256 << 10

	// decodeLeastBytes: the smallest decode task, which a thread's part
	// shrinks to at its end (pool.runRangesGuided), so that the threads
	// finish an op together.
	decodeLeastBytes = 64 << 10
)

// matMulFast is MatMul on the fast path. Every dst element is one call
// of one kernel on (its weight row, its activation row), so it does not
// depend on n, the tiling or the thread count.
//
//	Q8_0, Q4_0, Q4_1, Q4_K;    matMulPacked (packed.go), where packed
//	with AVX-512 VNNI also     (elsewhere the rows below)
//	Q5_0, Q5_K, Q6_K, IQ4_NL,
//	IQ4_XS
//	Q8_0, Q4_0, Q4_1,          x quantised by quantizeQ8 once per call,
//	Q4_K, Q6_K                 then dotQ8_0 / dotQ4_0 / dotQ4_1 /
//	                           dotQ4_K / dotQ6_K (Q6_K: in prefill
//	                           by moreTile's tiles, as the next row)
//	IQ4_NL, IQ4_XS, Q5_0,      the same, then q8Dot's kernel
//	Q5_1, Q5_K, Q3_K, Q2_K     (dotmore.go); for n ≥ 4 by moreTile's
//	                           tiles (dotmoretile.go) where SIMD has them
//	F32, F16, BF16 weights     dotF32 / dotF16 / dotBF16 on x, in place
//	                           (F16, BF16: by tiles where SIMD has
//	                           them, tileF16 / tileBF16)
//	other dtypes               the row dequantised (tensor.Dequantize)
//	                           into scratch, then dotF32
func (b *Backend) matMulFast(d, xs, wt *Tensor) {
	n, k, m := xs.Rows, xs.Cols, wt.Rows
	if n == 0 || m == 0 {
		return
	}
	if wt.Packed != nil {
		b.matMulPacked(d, xs, wt)
		return
	}
	if wt.Weight && wt.DT == tensor.BF16 && bf16Act != nil && littleEndian && k > 0 {
		b.matMulBF16(d, xs, wt)
		return
	}
	x := xs.F32
	var rowDot func(w, j, i int) float32 // dst[i, j] on worker w
	var th halfTile                      // F16 or BF16 weights: their tile, if any
	var mt moreTileKind                  // dotmore.go's types in prefill: their tile, if any
	var hw []uint16                      // and the weight, (m, k)
	switch {
	case !wt.Weight && wt.DT == tensor.F32:
		rowDot = func(_, j, i int) float32 { return dotF32(wt.F32[j*k:(j+1)*k], x[i*k:(i+1)*k]) }
	case !wt.Weight && wt.DT == tensor.F16:
		rowDot = func(_, j, i int) float32 { return dotF16(wt.F16[j*k:(j+1)*k], x[i*k:(i+1)*k]) }
	case wt.DT == tensor.F32 && littleEndian:
		w := f32view(wt.Raw)
		rowDot = func(_, j, i int) float32 { return dotF32(w[j*k:(j+1)*k], x[i*k:(i+1)*k]) }
	case wt.DT == tensor.F16 && littleEndian:
		w := u16view(wt.Raw)
		rowDot = func(_, j, i int) float32 { return dotF16(w[j*k:(j+1)*k], x[i*k:(i+1)*k]) }
		th, hw = tileF16, w
	case wt.DT == tensor.BF16 && littleEndian:
		w := u16view(wt.Raw)
		rowDot = func(_, j, i int) float32 { return dotBF16(w[j*k:(j+1)*k], x[i*k:(i+1)*k]) }
		th, hw = tileBF16, w
	case wt.DT == tensor.Q8_0, wt.DT == tensor.Q4_0, wt.DT == tensor.Q4_1, wt.DT == tensor.Q4_K, wt.DT == tensor.Q6_K:
		qx, dx, sx := b.quantizeActivations(xs)
		nb, rb := k/32, wt.RowBytes
		switch wt.DT {
		case tensor.Q8_0:
			rowDot = func(_, j, i int) float32 {
				return dotQ8_0(wt.Raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb])
			}
		case tensor.Q4_0:
			rowDot = func(_, j, i int) float32 {
				return dotQ4_0(wt.Raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb])
			}
		case tensor.Q6_K:
			rowDot = func(_, j, i int) float32 {
				return dotQ6_K(wt.Raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], nil)
			}
		case tensor.Q4_K:
			rowDot = func(_, j, i int) float32 {
				return dotQ4_K(wt.Raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
			}
		default:
			rowDot = func(_, j, i int) float32 {
				return dotQ4_1(wt.Raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
			}
		}
	case q8Dot(wt.DT) != nil: // dotmore.go's types
		qx, dx, sx := b.quantizeActivations(xs)
		nb, rb, dot := k/32, wt.RowBytes, q8Dot(wt.DT)
		rowDot = func(_, j, i int) float32 {
			return dot(wt.Raw[j*rb:(j+1)*rb], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
		}
	default:
		b.matMulDequant(d, xs, wt)
		return
	}
	if tk, ok := moreTile(wt.DT); ok && wt.Weight && n >= 4 {
		mt = tk
		b.scratch.carveRows(b.Threads, k)
	}
	// Tiles of four weight rows (Q8_0, Q4_0, Q4_1, Q4_K where they are
	// not packed, i.e. without AVX2, made of the one-row kernels):
	// against four activation rows at a time, then one at a time for
	// the rest; each value bitwise the one-row kernel's, like rowDot's.
	// In decode (n < 4) Q8_0 keeps its one-row kernel.
	var t4, t1 tileFunc
	decodeTiles := true
	if wt.Weight {
		switch wt.DT {
		case tensor.Q8_0:
			t4, t1, decodeTiles = tileQ8_0x4, tileQ8_0x1, false
		case tensor.Q4_0:
			t4, t1 = tileQ4_0x4, tileQ4_0x1
		case tensor.Q4_1:
			t4, t1 = tileQ4_1x4, tileQ4_1x1
		case tensor.Q4_K:
			t4, t1 = tileQ4_Kx4, tileQ4_Kx1
		}
	}
	per := rowsPerTask
	if th.fn != nil {
		per = 16 * th.rows
	}
	if n == 1 {
		// Decode: each thread's part of the weight (contiguous, as
		// runRanges splits it) goes by tasks of about decodeTaskBytes,
		// so the threads claim the shared counters a few times per op,
		// and a 4x1 tile's four streams are a quarter of a task each.
		// Tasks of 128 rows streamed Q4_0 and Q4_1 17% slower, at one
		// thread and two (BenchmarkMatMulDecode); one task per part
		// decoded Llama-3.2-1B Q4_K a third slower at two threads (a
		// thread held up a moment holds its whole part).
		rb := wt.RowBytes
		if !wt.Weight {
			rb = 4 * k // F32 or F16 activations (rowBytes is the weights')
		}
		part := (m + b.Threads - 1) / b.Threads
		chunks := max(1, (part*rb+decodeTaskBytes-1)/decodeTaskBytes)
		per = max(4, (part+chunks-1)/chunks+3) &^ 3
	}
	padded := th.fn != nil && n >= 4 && k%256 == 0
	// F16 prefill: eight activation rows a tile where there is one
	// (tileF16x8), each weight row read from L2 once for the eight: a
	// MatMul of n = 64 ran 7–15 % faster than by tiles of four (CPU time,
	// one thread, 4864x896, 896x4864, 896x896; loaded 2-core machine).
	var t8 func(w []uint16, ws int, x []float32, xs, k int, out *[32]float32)
	if th.fn != nil && wt.DT == tensor.F16 && n >= 8 && th.rows == 4 {
		t8 = tileF16x8
	}
	if t4 != nil || th.fn != nil {
		size := 16
		if padded {
			size += 4 * (k + 16) // four activation rows, padded
		}
		if t8 != nil {
			size = 32 + 8*(k+16) // the 4x8 tile's out, eight rows padded
		}
		for w := range b.Threads { // the tiles' outputs (the kernels are called through func values, so a local array would escape)
			b.scratch.buf(b.Threads, w, size)
		}
	}
	b.Pool.RunRanges(m, per, func(w, j0, j1 int) {
		if mt.unpack != nil { // each weight row unpacked once (dotmoretile.go)
			s := &b.scratch
			mt.tileRows(d.F32, m, wt.Raw, wt.RowBytes, k, s.qx[:n*k], s.dx[:n*k/32], s.sx[:n*k/32],
				j0, j1, n, s.rows[w*rowsPerTask:(w+1)*rowsPerTask])
			return
		}
		var out *[16]float32
		if t4 != nil || th.fn != nil {
			out = (*[16]float32)(b.scratch.work[w][:16])
		}
		for i0 := 0; i0 < n; i0 += xTile {
			i1 := min(i0+xTile, n)
			j := j0
			if t41 := halfDecodeTile(wt.DT); th.fn != nil && t41 != nil && n < 4 {
				// F16 (BF16) decode, each value bitwise dotF16 (dotBF16).
				j = decodeQuarters(d.F32, m, i0, i1, j0, j1, out, func(j, q, i int) {
					t41(hw[j*k:], q*k, x[i*k:(i+1)*k], k, out)
				})
			}
			if t1 != nil && decodeTiles && n < 4 {
				qx, dx, sx, rb, nb := b.scratch.qx[:n*k], b.scratch.dx[:n*k/32], b.scratch.sx[:n*k/32], wt.RowBytes, k/32
				j = decodeQuarters(d.F32, m, i0, i1, j0, j1, out, func(j, q, i int) {
					t1(wt.Raw[j*rb:], q*rb, nb, qx, dx, sx, i, out)
				})
			}
			if t4 != nil && n >= 4 {
				qx, dx, sx, rb, nb := b.scratch.qx[:n*k], b.scratch.dx[:n*k/32], b.scratch.sx[:n*k/32], wt.RowBytes, k/32
				for ; j+4 <= j1; j += 4 {
					wj := wt.Raw[j*rb:]
					i := i0
					for ; i+4 <= i1; i += 4 {
						t4(wj, rb, nb, qx, dx, sx, i, out)
						putTile(d.F32, m, i, j, out)
					}
					for ; i < i1; i++ {
						t1(wj, rb, nb, qx, dx, sx, i, out)
						copy(d.F32[i*m+j:][:4], out[:4])
					}
				}
			}
			if th.fn != nil && n >= 4 {
				// F16, BF16: tiles of th.rows weight rows by four
				// activation rows, then one pair at a time for the
				// activation rows left (bitwise the same values).
				// Activation rows outside: four of them stay in cache
				// while the task's weight rows (16·th.rows · k halves,
				// in L2 for k up to 2048) pass by; with weight rows
				// outside, the tile's 64 activation rows (256·k bytes)
				// would be read again from L3 for every tile.
				//
				// Rows of a multiple of 256 values put activation rows
				// a multiple of 1 KiB apart, and those 4 KiB apart share
				// their L1 cache sets with each other (and with the
				// weight rows at the same offsets): a tile then ran at
				// 40 GFLOP/s on k = 2048 against 70 on k = 896. So the
				// four are first copied into scratch rows k+16 values
				// apart (each 64 bytes past the last one's set).
				tr := th.rows
				jEnd := j + (j1-j)/tr*tr
				i := i0
				for ; t8 != nil && i+8 <= i1; i += 8 {
					out8 := (*[32]float32)(b.scratch.work[w][:32])
					xq, xs := x[i*k:], k
					if padded {
						xq, xs = b.scratch.work[w][32:32+8*(k+16)], k+16
						for c := range 8 {
							copy(xq[c*xs:c*xs+k], x[(i+c)*k:(i+c+1)*k])
						}
					}
					for jj := j; jj < jEnd; jj += 4 {
						t8(hw[jj*k:], k, xq, xs, k, out8)
						putTile(d.F32, m, i, jj, (*[16]float32)(out8[:16]))
						putTile(d.F32, m, i+4, jj, (*[16]float32)(out8[16:]))
					}
				}
				for ; i+4 <= i1; i += 4 {
					xq, xs := x[i*k:], k // the activation rows i…i+3, their stride
					if padded {
						xq, xs = b.scratch.work[w][16:16+4*(k+16)], k+16
						for c := range 4 {
							copy(xq[c*xs:c*xs+k], x[(i+c)*k:(i+c+1)*k])
						}
					}
					for jj := j; jj < jEnd; jj += tr {
						th.fn(hw[jj*k:], k, xq, xs, k, out)
						putTileRows(d.F32, m, i, jj, tr, out)
					}
				}
				for ; i < i1; i++ {
					for jj := j; jj < jEnd; jj++ {
						d.F32[i*m+jj] = rowDot(w, jj, i)
					}
				}
				j = jEnd
			}
			for ; j < j1; j++ {
				for i := i0; i < i1; i++ {
					d.F32[i*m+j] = rowDot(w, j, i)
				}
			}
		}
	})
}

// halfDecodeTile is dt's four-row decode tile (tileF16x1, tileBF16x1),
// nil where there is none.
func halfDecodeTile(dt tensor.DType) func(w []uint16, ws int, x []float32, k int, out *[16]float32) {
	switch dt {
	case tensor.F16:
		return tileF16x1
	case tensor.BF16:
		return tileBF16x1
	}
	return nil
}

// matMulDequant: each weight row of a task is dequantised into the
// worker's scratch once per tile of activation rows, then dotted.
func (b *Backend) matMulDequant(d, xs, wt *Tensor) {
	n, k, m := xs.Rows, xs.Cols, wt.Rows
	x := xs.F32
	per := rowsPerTask
	if n == 1 {
		per = max(1, min(rowsPerTask, m/(8*b.Threads)))
	}
	b.scratch.buf(b.Threads, 0, k) // grow the worker table before the workers index it
	for w := range b.Threads {
		b.scratch.buf(b.Threads, w, k)
	}
	b.Pool.RunRanges(m, per, func(w, j0, j1 int) {
		wrow := b.scratch.work[w][:k]
		for i0 := 0; i0 < n; i0 += xTile {
			i1 := min(i0+xTile, n)
			for j := j0; j < j1; j++ {
				wt.Row(j, wrow)
				for i := i0; i < i1; i++ {
					d.F32[i*m+j] = dotF32(wrow, x[i*k:(i+1)*k])
				}
			}
		}
	})
}

// decodeQuarters runs a four-weight-row decode tile over the rows
// [j0, j1) of a task: tile(j, q, i) sets out[r] for weight row j + r·q
// (r < 4) and activation row i, the four rows taken from the four
// quarters of the task so that the weight is read as four sequential
// streams. It stores the values into dst (n, m) for activation rows
// [i0, i1) and returns the first row it left (the task's last j1 − j0
// mod 4 rows).
func decodeQuarters(dst []float32, m, i0, i1, j0, j1 int, out *[16]float32, tile func(j, q, i int)) int {
	q := (j1 - j0) / 4
	for t := range q {
		for i := i0; i < i1; i++ {
			tile(j0+t, q, i)
			for r := range 4 {
				dst[i*m+j0+t+r*q] = out[r]
			}
		}
	}
	return j0 + 4*q
}

// putTile stores a 4x4 tile's out (weight row r, activation row c at
// out[4r+c]) into dst (n, m) at activation rows i… and columns j….
func putTile(dst []float32, m, i, j int, out *[16]float32) {
	for c := range 4 {
		row := dst[(i+c)*m+j:][:4]
		row[0], row[1], row[2], row[3] = out[c], out[4+c], out[8+c], out[12+c]
	}
}

// putTileRows stores a tile of rows weight rows (halfTile.Rows: 4, or
// 3, out[4r+c] for r < 3) as putTile does a 4x4 one.
func putTileRows(dst []float32, m, i, j, rows int, out *[16]float32) {
	if rows == 4 {
		putTile(dst, m, i, j, out)
		return
	}
	for c := range 4 {
		row := dst[(i+c)*m+j:][:3]
		row[0], row[1], row[2] = out[c], out[4+c], out[8+c]
	}
}

// quantizeActivations quantises every row of xs (n, k) with quantizeQ8
// into the backend's scratch.
func (b *Backend) quantizeActivations(xs *Tensor) ([]int8, []float32, []float32) {
	n, k := xs.Rows, xs.Cols
	s := &b.scratch
	s.qx, s.dx, s.sx = grow(s.qx, n*k), grow(s.dx, n*k/32), grow(s.sx, n*k/32)
	qx, dx, sx := s.qx, s.dx, s.sx // assigned once: the closure copies them, nothing moves to the heap
	nb := k / 32
	b.Parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			quantizeQ8(xs.F32[i*k:(i+1)*k], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
		}
	})
	return qx, dx, sx
}

// attentionFast is Attention on the fast path. For each (token, head):
// q·k with dotF32/dotF16 (the cache's dtype), the softmax weights
// p_j = exp(s_j − max) in float32 (the vector exp), and out = Σ p_j·v_j
// accumulated in float32 with axpyF32/axpyF16 over the token's cells in
// its list's order, divided by Σ p_j (summed in float64, sumF64) at the
// end.
//
// A task is a token and a run of the query heads that share one KV head
// (all of them when there are enough tasks for the threads). Each head's
// scores and sum are one attnScoresF32 and one attnAccF32 call over the
// token's list (for an F16 cache one attnScoresF16Heads and one
// attnAccF16Heads call for the run's heads, which convert each K and V
// row once for two or three of them). Each head's arithmetic is the same
// whatever the run, so the split never changes a value.
func (b *Backend) attentionFast(d, qs, ks, vs *Tensor, lists [][]int32, heads, kvHeads int, scale float32) {
	n, hd, cells := qs.Rows, qs.Cols/heads, ks.Rows
	group := heads / kvHeads
	run := group // heads per task
	for run > 1 && n*kvHeads*((group+run-1)/run) < 2*b.Threads {
		run = (run + 1) / 2
	}
	perGroup := (group + run - 1) / run // tasks per KV head and token
	size := run * (cells + hd)          // per head scores and acc
	for w := range b.Threads {
		b.scratch.buf(b.Threads, w, size)
	}
	// Each thread starts on its own contiguous run of tasks (runRanges):
	// a KV head's parts then run one after the other on one thread, the
	// second reading its rows from that core's cache, while the other
	// thread streams another KV head (or token) — rather than two threads
	// missing on the same rows at once.
	p := attnPlan{d: d, qs: qs, ks: ks, vs: vs, lists: lists, kvHeads: kvHeads, group: group, run: run,
		perGroup: perGroup, hd: hd, cells: cells, size: size, scale: scale}
	b.Pool.RunRanges(n*kvHeads*perGroup, 1, func(w, lo, hi int) {
		for task := lo; task < hi; task++ {
			p.task(&b.scratch, w, task)
		}
	})
}

// attnPlan is one attentionFast call's operands and split: tasks of at
// most run query heads, perGroup of them per KV head and token.
type attnPlan struct {
	d, qs, ks, vs                     *Tensor
	lists                             [][]int32 // each token's cells, in summation order
	kvHeads, group, run, perGroup, hd int       // group: query heads per KV head
	cells, size                       int       // cache rows; scratch per worker (scores and acc of run heads)
	scale                             float32
}

// task runs task number task: token t, KV head g, its part-th run of
// query heads, in worker w's scratch.
func (p attnPlan) task(s *fastScratch, w, task int) {
	d, qs, ks, vs, kvHeads, perGroup := p.d, p.qs, p.ks, p.vs, p.kvHeads, p.perGroup
	hd, cells, group, run, scale := p.hd, p.cells, p.group, p.run, p.scale
	buf := s.work[w][:p.size]
	t, g, part := task/(kvHeads*perGroup), task/perGroup%kvHeads, task%perGroup
	h0, h1 := g*group+part*run, min(g*group+(part+1)*run, (g+1)*group)
	off := g * hd      // the KV head's columns
	seen := p.lists[t] // the cells t attends to
	nv := len(seen)
	if nv == 0 {
		clear(d.F32[t*d.Cols+h0*hd : t*d.Cols+h1*hd])
		return
	}
	scores := func(h int) []float32 { return buf[(h-h0)*cells:][:nv] }
	acc := func(h int) []float32 { return buf[run*cells+(h-h0)*hd:][:hd] }
	q := func(h int) []float32 { return qs.F32[t*qs.Cols+h*hd : t*qs.Cols+(h+1)*hd] }
	if ks.DT == tensor.F32 {
		for h := h0; h < h1; h++ {
			attnScoresF32(q(h), ks.F32[off:], seen[:nv], ks.Cols, scale, scores(h))
		}
	} else {
		// the run's heads at once (each K row converted once)
		attnScoresF16Heads(h1-h0, qs.F32[t*qs.Cols+h0*hd:t*qs.Cols+h1*hd], hd, ks.F16[off:], seen, ks.Cols, scale, buf[:run*cells], cells)
	}
	var sumsBuf [16]float64 // one per head of the run (fewer than 16 in every model here)
	sums := sumsBuf[:0]
	for h := h0; h < h1; h++ {
		sc := scores(h)
		sums = append(sums, expSubSum(sc, maxF32(sc)))
		clear(acc(h))
	}
	if vs.DT == tensor.F32 {
		for h := h0; h < h1; h++ {
			attnAccF32(vs.F32[off:], seen[:nv], scores(h), vs.Cols, acc(h))
		}
	} else {
		attnAccF16Heads(h1-h0, vs.F16[off:], seen, buf[:run*cells], cells, vs.Cols, buf[run*cells:run*(cells+hd)], hd, hd)
	}
	for h := h0; h < h1; h++ {
		out, a := d.F32[t*d.Cols+h*hd:t*d.Cols+(h+1)*hd], acc(h)
		inv := float32(1 / sums[h-h0])
		for e := range out {
			out[e] = a[e] * inv
		}
	}
}

// sumSquaresF64 is Σ v² over s in float64 (each square exact) by four
// partial sums, as sumF64: RMSNorm's sum on the fast path, a fixed order
// four times as fast as one running sum (whose additions wait on each
// other).
func sumSquaresF64(s []float32) float64 {
	var s0, s1, s2, s3 float64
	n := len(s) &^ 3
	for i := 0; i < n; i += 4 {
		v := s[i : i+4 : i+4]
		a, b, c, d := float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for _, v := range s[n:] {
		s0 += float64(v) * float64(v)
	}
	return (s0 + s1) + (s2 + s3)
}

// sumF64 sums s in float64 by four partial sums (element i into sum
// i mod 4 of the whole fours, the rest into the first), added
// (s0+s1)+(s2+s3): a fixed order, four times as many additions in flight
// as one running sum.
func sumF64(s []float32) float64 { return sumF64From([4]float64{}, s) }

// sumF64From is sumF64 continued from the partial sums p of the values
// before s (a multiple of four of them, so element i of s goes on into
// p[i mod 4]).
func sumF64From(p [4]float64, s []float32) float64 {
	s0, s1, s2, s3 := p[0], p[1], p[2], p[3]
	n := len(s) &^ 3
	for i := 0; i < n; i += 4 {
		v := s[i : i+4 : i+4]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
	}
	for _, v := range s[n:] {
		s0 += float64(v)
	}
	return (s0 + s1) + (s2 + s3)
}
