package cpu

import (
	"fmt"
	"math"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/x448/float16"
)

// row writes row r of t (any dtype) into dst as float32.
func (t *Tensor) row(r int, dst []float32) {
	switch {
	case t.f32 != nil:
		copy(dst, t.f32[r*t.cols():(r+1)*t.cols()])
	case t.f16 != nil:
		for i, h := range t.f16[r*t.cols() : (r+1)*t.cols()] {
			dst[i] = float16.Frombits(h).Float32()
		}
	case t.raw != nil:
		if err := tensor.Dequantize(t.dt, t.raw[r*t.rowBytes:(r+1)*t.rowBytes], dst); err != nil {
			panic("cpu: " + err.Error()) // Upload checked the dtype and sizes
		}
	default:
		panic("cpu: row of a non-float tensor")
	}
}

func (b *Backend) GetRows(dst, table, ids kernels.Tensor) {
	d, tb, id := f32(dst), table.(*Tensor), i32(ids)
	n, cols := len(id.i32), tb.cols()
	must(d.rows() == n && d.cols() == cols, "GetRows: dst %v, table %v, %d ids", d.shape, tb.shape, n)
	for i, r := range id.i32 {
		must(r >= 0 && int(r) < tb.rows(), "GetRows: id %d outside %d rows", r, tb.rows())
		tb.row(int(r), d.f32[i*cols:(i+1)*cols])
	}
}

// dot is the one dot product of the backend: 8 partial sums in a fixed
// order, so a result never depends on anything but its two inputs.
func dot(a, b []float32) float32 {
	var s [8]float32
	n := len(a) &^ 7
	for i := 0; i < n; i += 8 {
		s[0] += a[i] * b[i]
		s[1] += a[i+1] * b[i+1]
		s[2] += a[i+2] * b[i+2]
		s[3] += a[i+3] * b[i+3]
		s[4] += a[i+4] * b[i+4]
		s[5] += a[i+5] * b[i+5]
		s[6] += a[i+6] * b[i+6]
		s[7] += a[i+7] * b[i+7]
	}
	for i := n; i < len(a); i++ {
		s[i-n] += a[i] * b[i]
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

func (b *Backend) MatMul(dst, x, w kernels.Tensor) {
	d, xs, wt := f32(dst), f32(x), w.(*Tensor)
	n, k, m := xs.rows(), xs.cols(), wt.rows()
	must(wt.cols() == k && d.rows() == n && d.cols() == m, "MatMul: dst %v, x %v, w %v", d.shape, xs.shape, wt.shape)
	b.parallel(m, func(lo, hi int) {
		scratch := make([]float32, k)
		for j := lo; j < hi; j++ {
			wt.row(j, scratch)
			for i := 0; i < n; i++ {
				d.f32[i*m+j] = dot(xs.f32[i*k:(i+1)*k], scratch)
			}
		}
	})
}

// broadcast applies op over a (n, m) and b of (n, m) or (m).
func broadcast(dst, a, bt kernels.Tensor, op func(x, y float32) float32) {
	d, x, y := f32(dst), f32(a), f32(bt)
	must(len(d.f32) == len(x.f32), "elementwise: dst %v, a %v", d.shape, x.shape)
	switch {
	case len(y.f32) == len(x.f32):
		for i := range d.f32 {
			d.f32[i] = op(x.f32[i], y.f32[i])
		}
	case len(y.f32) == x.cols():
		m := x.cols()
		for i := range d.f32 {
			d.f32[i] = op(x.f32[i], y.f32[i%m])
		}
	default:
		panic("cpu: elementwise: b " + shapeString(y.shape) + " fits neither a " + shapeString(x.shape) + " nor its rows")
	}
}

func (b *Backend) Add(dst, a, c kernels.Tensor) {
	broadcast(dst, a, c, func(x, y float32) float32 { return x + y })
}

func (b *Backend) Mul(dst, a, c kernels.Tensor) {
	broadcast(dst, a, c, func(x, y float32) float32 { return x * y })
}

func (b *Backend) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	d, xs, ws := f32(dst), f32(x), f32(w)
	n, dim := xs.rows(), xs.cols()
	must(len(ws.f32) == dim && len(d.f32) == len(xs.f32), "RMSNorm: dst %v, x %v, w %v", d.shape, xs.shape, ws.shape)
	for i := 0; i < n; i++ {
		row := xs.f32[i*dim : (i+1)*dim]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		// As HF: x * rsqrt(mean(x²) + eps) in float32, then weight * that.
		inv := float32(1 / math.Sqrt(float64(float32(ss/float64(dim))+eps)))
		out := d.f32[i*dim : (i+1)*dim]
		for j, v := range row {
			out[j] = ws.f32[j] * (v * inv)
		}
	}
}

func (b *Backend) SwiGLU(dst, gate, up kernels.Tensor) {
	d, g, u := f32(dst), f32(gate), f32(up)
	must(len(d.f32) == len(g.f32) && len(g.f32) == len(u.f32), "SwiGLU: dst %v, gate %v, up %v", d.shape, g.shape, u.shape)
	for i, x := range g.f32 {
		silu := x / (1 + float32(math.Exp(float64(-x))))
		d.f32[i] = silu * u.f32[i]
	}
}

func (b *Backend) Softmax(x kernels.Tensor) {
	t := f32(x)
	n, m := t.rows(), t.cols()
	for i := 0; i < n; i++ {
		softmaxRow(t.f32[i*m : (i+1)*m])
	}
}

func softmaxRow(row []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range row {
		mx = max(mx, v)
	}
	if math.IsInf(float64(mx), -1) {
		clear(row)
		return
	}
	var sum float64
	for j, v := range row {
		e := math.Exp(float64(v - mx))
		row[j] = float32(e)
		sum += e
	}
	for j := range row {
		row[j] = float32(float64(row[j]) / sum)
	}
}

func (b *Backend) Argmax(dst, x kernels.Tensor) {
	d, t := i32(dst), f32(x)
	n, m := t.rows(), t.cols()
	must(len(d.i32) == n, "Argmax: dst %v, x %v", d.shape, t.shape)
	for i := 0; i < n; i++ {
		row := t.f32[i*m : (i+1)*m]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		d.i32[i] = int32(best)
	}
}

func (b *Backend) KVWrite(cache, src, cells kernels.Tensor) {
	c, s, cl := cache.(*Tensor), f32(src), i32(cells)
	dim := s.cols()
	must(c.cols() == dim && len(cl.i32) == s.rows(), "KVWrite: cache %v, src %v, %d cells", c.shape, s.shape, len(cl.i32))
	for i, ci := range cl.i32 {
		must(ci >= 0 && int(ci) < c.rows(), "KVWrite: cell %d outside %d", ci, c.rows())
		row := s.f32[i*dim : (i+1)*dim]
		switch c.dt {
		case tensor.F32:
			copy(c.f32[int(ci)*dim:], row)
		case tensor.F16:
			for j, v := range row {
				c.f16[int(ci)*dim+j] = float16.Fromfloat32(v).Bits()
			}
		default:
			panic("cpu: KVWrite: cache must be F32 or F16")
		}
	}
}

func (b *Backend) Attention(dst, q, k, v, mask kernels.Tensor, heads, kvHeads int, scale float32) {
	d, qs, ks, vs, ms := f32(dst), f32(q), k.(*Tensor), v.(*Tensor), f32(mask)
	n := qs.rows()
	must(heads > 0 && kvHeads > 0 && heads%kvHeads == 0, "Attention: %d heads, %d kv heads", heads, kvHeads)
	hd := qs.cols() / heads
	cells := ms.cols()
	must(qs.cols() == heads*hd && ks.cols() == kvHeads*hd && vs.cols() == kvHeads*hd && ks.rows() >= cells && vs.rows() >= cells &&
		ms.rows() == n && len(d.f32) == len(qs.f32), "Attention: dst %v q %v k %v v %v mask %v", d.shape, qs.shape, ks.shape, vs.shape, ms.shape)
	group := heads / kvHeads
	b.parallel(n*heads, func(lo, hi int) {
		kr := make([]float32, ks.cols())
		vr := make([]float32, vs.cols())
		scores := make([]float32, cells)
		acc := make([]float64, hd)
		for th := lo; th < hi; th++ {
			t, h := th/heads, th%heads
			kvh := h / group
			qv := qs.f32[t*qs.cols()+h*hd : t*qs.cols()+(h+1)*hd]
			mrow := ms.f32[t*cells : (t+1)*cells]
			mx := float32(math.Inf(-1))
			for j := 0; j < cells; j++ {
				if mrow[j] != 0 {
					continue
				}
				ks.row(j, kr)
				s := dot(qv, kr[kvh*hd:(kvh+1)*hd]) * scale
				scores[j] = s
				mx = max(mx, s)
			}
			out := d.f32[t*qs.cols()+h*hd : t*qs.cols()+(h+1)*hd]
			if math.IsInf(float64(mx), -1) {
				clear(out)
				continue
			}
			clear(acc)
			var sum float64
			for j := 0; j < cells; j++ {
				if mrow[j] != 0 {
					continue
				}
				p := math.Exp(float64(scores[j] - mx))
				sum += p
				vs.row(j, vr)
				for e, x := range vr[kvh*hd : (kvh+1)*hd] {
					acc[e] += p * float64(x)
				}
			}
			for e := range out {
				out[e] = float32(acc[e] / sum)
			}
		}
	})
}

func shapeString(s []int) string { return fmt.Sprint(s) }
