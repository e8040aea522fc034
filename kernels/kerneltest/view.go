package kerneltest

import (
	"math"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// View checks Backend.View: a view reads and writes the first elements of
// its tensor in its own shape, and every op run on views of larger
// tensors (the first n rows of an activation, an (n, w) visibility list
// inside an (N, W) one) gives bitwise what it gives on tensors of exactly
// that shape, writing nothing past the view.
func View(t *testing.T, b kernels.Backend) {
	t.Run("memory", func(t *testing.T) { viewMemory(t, b) })
	t.Run("ops", func(t *testing.T) { viewOps(t, b) })
}

func viewMemory(t *testing.T, b kernels.Backend) {
	// (4, 5) F32 seen as (2, 5), then as (3, 3), then a view of a view.
	all := make([]float32, 20)
	for i := range all {
		all[i] = float32(i)
	}
	p := newF32(t, b, all, 4, 5)
	v := b.View(p, 2, 5)
	if got := v.Shape(); !slices.Equal(got, []int{2, 5}) || v.DType() != tensor.F32 {
		t.Fatalf("view: %v %v, want F32 [2 5]", v.DType(), got)
	}
	if got := read(t, b, v, 10); !slices.Equal(got, all[:10]) {
		t.Fatalf("view (2, 5) reads %v, want %v", got, all[:10])
	}
	if got := read(t, b, b.View(p, 3, 3), 9); !slices.Equal(got, all[:9]) {
		t.Fatalf("view (3, 3) reads %v, want %v", got, all[:9])
	}
	if got := read(t, b, b.View(b.View(p, 3, 3), 7), 7); !slices.Equal(got, all[:7]) {
		t.Fatalf("view (7) of a view reads %v, want %v", got, all[:7])
	}
	// A write through the view changes the parent's first elements only.
	if err := b.SetF32(v, make([]float32, 10)); err != nil {
		t.Fatal(err)
	}
	want := append(make([]float32, 10), all[10:]...)
	if got := read(t, b, p, 20); !slices.Equal(got, want) {
		t.Fatalf("after SetF32 of zeros into the view, parent %v, want %v", got, want)
	}
	// A wrong length for the view fails as for any tensor.
	if err := b.SetF32(v, make([]float32, 20)); err == nil {
		t.Errorf("SetF32 of 20 values into a (2, 5) view: no error")
	}

	// I32, and F16 where the backend has it.
	ip := newI32(t, b, []int32{1, 2, 3, 4, 5, 6})
	iv := b.View(ip, 2, 2)
	got := make([]int32, 4)
	if err := b.GetI32(iv, got); err != nil || !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Fatalf("I32 view reads %v (%v), want [1 2 3 4]", got, err)
	}
	if err := b.SetI32(b.View(ip, 3), []int32{-1, -2, -3}); err != nil {
		t.Fatal(err)
	}
	got = make([]int32, 6)
	if err := b.GetI32(ip, got); err != nil || !slices.Equal(got, []int32{-1, -2, -3, 4, 5, 6}) {
		t.Fatalf("after SetI32 through a view, parent %v (%v)", got, err)
	}
	if hp, err := b.NewTensor(tensor.F16, 3, 4); err == nil {
		t.Cleanup(func() { b.Free(hp) })
		vals := []float32{0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6}
		if err := b.SetF32(hp, vals); err != nil {
			t.Fatal(err)
		}
		if got := read(t, b, b.View(hp, 5), 5); !slices.Equal(got, vals[:5]) {
			t.Fatalf("F16 view (5) reads %v, want %v", got, vals[:5])
		}
	} else if !unsupported(err) {
		t.Fatal(err)
	}

	// Freeing a view leaves its parent alone; freeing the parent ends
	// the view.
	q := newF32(t, b, all, 4, 5)
	qv := b.View(q, 1, 5)
	b.Free(qv)
	if got := read(t, b, q, 20); !slices.Equal(got, all) {
		t.Fatalf("parent after freeing its view: %v", got)
	}
	b.Free(q)
	if err := b.GetF32(qv, make([]float32, 5)); err == nil {
		t.Errorf("GetF32 of a view of a freed tensor: no error")
	}

	// Misuse panics, as an op's bad shape does.
	for name, f := range map[string]func(){
		"too many elements": func() { b.View(p, 5, 5) },
		"a weight":          func() { w, _ := RandomWeight(t, b, tensor.F32, 2, 32); b.View(w, 1, 32) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("View of %s did not panic", name)
				}
			}()
			f()
		}()
	}
}

// viewSentinel fills the part of a parent past its view, which no op on
// the view may change.
const viewSentinel = 12345

// viewMaker makes tensors of a shape holding data: exactly that shape, or
// views of the first elements of larger tensors, which it remembers to
// check that nothing past the view changed.
type viewMaker struct {
	t       *testing.T
	b       kernels.Backend
	view    bool
	parents []viewParent
}

type viewParent struct {
	t    kernels.Tensor
	used int // elements inside the view
	dt   tensor.DType
}

func (m *viewMaker) make(dt tensor.DType, f32 []float32, i32 []int32, shape ...int) kernels.Tensor {
	t, b := m.t, m.b
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	var x kernels.Tensor
	if m.view {
		// One more row, and a wider last dimension: the view's rows
		// do not line up with the parent's.
		big := slices.Clone(shape)
		big[0]++
		big[len(big)-1] += 3
		p, err := b.NewTensor(dt, big...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free(p) })
		total := 1
		for _, d := range big {
			total *= d
		}
		if dt == tensor.I32 {
			err = b.SetI32(p, slices.Repeat([]int32{viewSentinel}, total))
		} else {
			err = b.SetF32(p, slices.Repeat([]float32{viewSentinel}, total))
		}
		if err != nil {
			t.Fatal(err)
		}
		m.parents = append(m.parents, viewParent{p, n, dt})
		x = b.View(p, shape...)
	} else {
		var err error
		x, err = b.NewTensor(dt, shape...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free(x) })
	}
	var err error
	switch {
	case f32 != nil:
		err = b.SetF32(x, f32)
	case i32 != nil:
		err = b.SetI32(x, i32)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (m *viewMaker) f32(data []float32, shape ...int) kernels.Tensor {
	return m.make(tensor.F32, data, nil, shape...)
}

func (m *viewMaker) i32(data []int32, shape ...int) kernels.Tensor {
	return m.make(tensor.I32, nil, data, shape...)
}

// checkTails fails unless every parent still holds the sentinel past its
// view.
func (m *viewMaker) checkTails(op string) {
	t, b := m.t, m.b
	t.Helper()
	for _, p := range m.parents {
		shape := p.t.Shape()
		total := 1
		for _, d := range shape {
			total *= d
		}
		var tail []float64
		if p.dt == tensor.I32 {
			v := make([]int32, total)
			if err := b.GetI32(p.t, v); err != nil {
				t.Fatal(err)
			}
			for _, x := range v[p.used:] {
				tail = append(tail, float64(x))
			}
		} else {
			for _, x := range read(t, b, p.t, total)[p.used:] {
				tail = append(tail, float64(x))
			}
		}
		for i, x := range tail {
			if x != viewSentinel {
				t.Errorf("%s wrote element %d of a %v parent, past its view of %d", op, p.used+i, shape, p.used)
				break
			}
		}
	}
}

// viewOps runs each op on exact tensors and on views and compares the
// results bitwise.
func viewOps(t *testing.T, b kernels.Backend) {
	const (
		n, k, m       = 5, 64, 24 // tokens, MatMul's row length and rows
		heads, kvh    = 4, 2
		hd            = 8
		cells, width  = 11, 6
		table, shifts = 9, 3
	)
	r := rng(90)
	w, _ := weight(t, b, r, tensor.F32, m, k)
	wq := []kernels.Tensor{w, w}
	wq[0], _ = weight(t, b, r, tensor.Q8_0, m, k)
	wq[1], _ = weight(t, b, r, tensor.Q8_0, m, k)
	tbl := newF32(t, b, randn(r, table*k, 1), table, k)
	norm := newF32(t, b, randn(r, k, 1), k)
	bias := newF32(t, b, randn(r, k, 1), k)
	kc := newF32(t, b, randn(r, cells*kvh*hd, 1), cells, kvh*hd)
	vc := newF32(t, b, randn(r, cells*kvh*hd, 1), cells, kvh*hd)
	rope := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: hd, Theta: 10000}

	x := randn(r, n*k, 1)
	y := randn(r, n*k, 1)
	q := randn(r, n*heads*hd, 1)
	src := randn(r, n*kvh*hd, 1)
	ids := []int32{3, 0, 8, 3, 5}
	pos := []int32{0, 7, 2, 40, 3}
	where := []int32{10, 2, 6, 0, 4}
	vis := []int32{ // (n, width), -1 padded
		0, 1, 2, -1, -1, -1,
		5, 3, 9, 10, 1, 0,
		7, -1, -1, -1, -1, -1,
		2, 4, 6, 8, -1, -1,
		-1, -1, -1, -1, -1, -1,
	}
	shiftCells, delta := []int32{1, 9, 4}, []int32{3, -2, 5}

	type result struct {
		f32 []float32
		i32 []int32
	}
	for _, c := range []struct {
		name string
		run  func(mk *viewMaker) result
	}{
		{"GetRows", func(mk *viewMaker) result {
			d := mk.f32(nil, n, k)
			b.GetRows(d, tbl, mk.i32(ids, n))
			return result{f32: read(mk.t, b, d, n*k)}
		}},
		{"MatMul", func(mk *viewMaker) result {
			d := mk.f32(nil, n, m)
			b.MatMul(d, mk.f32(x, n, k), w)
			return result{f32: read(mk.t, b, d, n*m)}
		}},
		{"MatMuls", func(mk *viewMaker) result {
			d := []kernels.Tensor{mk.f32(nil, n, m), mk.f32(nil, n, m)}
			kernels.MatMuls(b, d, mk.f32(x, n, k), wq)
			return result{f32: append(read(mk.t, b, d[0], n*m), read(mk.t, b, d[1], n*m)...)}
		}},
		{"Add", func(mk *viewMaker) result {
			a := mk.f32(x, n, k)
			b.Add(a, a, mk.f32(y, n, k))
			b.Add(a, a, bias)
			return result{f32: read(mk.t, b, a, n*k)}
		}},
		{"RMSNorm", func(mk *viewMaker) result {
			d := mk.f32(nil, n, k)
			b.RMSNorm(d, mk.f32(x, n, k), norm, 1e-6)
			return result{f32: read(mk.t, b, d, n*k)}
		}},
		{"RoPE", func(mk *viewMaker) result {
			a := mk.f32(q, n, heads*hd)
			b.RoPE(a, mk.i32(pos, n), rope)
			return result{f32: read(mk.t, b, a, n*heads*hd)}
		}},
		{"SwiGLU", func(mk *viewMaker) result {
			g := mk.f32(x, n, k)
			b.SwiGLU(g, g, mk.f32(y, n, k))
			return result{f32: read(mk.t, b, g, n*k)}
		}},
		{"KVWrite", func(mk *viewMaker) result {
			c := newF32(mk.t, b, make([]float32, cells*kvh*hd), cells, kvh*hd)
			b.KVWrite(c, mk.f32(src, n, kvh*hd), mk.i32(where, n))
			return result{f32: read(mk.t, b, c, cells*kvh*hd)}
		}},
		{"KVShift", func(mk *viewMaker) result {
			c := newF32(mk.t, b, read(mk.t, b, kc, cells*kvh*hd), cells, kvh*hd)
			b.KVShift(c, mk.i32(shiftCells, shifts), mk.i32(delta, shifts), rope)
			return result{f32: read(mk.t, b, c, cells*kvh*hd)}
		}},
		{"Attention", func(mk *viewMaker) result {
			d := mk.f32(nil, n, heads*hd)
			b.Attention(d, mk.f32(q, n, heads*hd), kc, vc, mk.i32(vis, n, width), heads, kvh, 0.3)
			return result{f32: read(mk.t, b, d, n*heads*hd)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			exact := c.run(&viewMaker{t: t, b: b})
			mk := &viewMaker{t: t, b: b, view: true}
			viewed := c.run(mk)
			mk.checkTails(c.name)
			if !slices.Equal(exact.i32, viewed.i32) {
				t.Fatalf("on views %v, on exact tensors %v", viewed.i32, exact.i32)
			}
			if len(exact.f32) != len(viewed.f32) {
				t.Fatalf("%d values on views, %d on exact tensors", len(viewed.f32), len(exact.f32))
			}
			for i, v := range viewed.f32 {
				if math.Float32bits(v) != math.Float32bits(exact.f32[i]) {
					t.Fatalf("element %d: %v on views, %v on exact tensors", i, v, exact.f32[i])
				}
			}
		})
	}
}
