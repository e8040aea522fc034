package mmap

import (
	"slices"
	"sync"
	"testing"
	"unsafe"
)

// countingAnon is Anon that records the mappings made and released.
type countingAnon struct {
	mu       sync.Mutex
	sizes    []int
	released int
}

func (c *countingAnon) anon(size int) ([]byte, func() error) {
	b, release := Anon(size)
	c.mu.Lock()
	c.sizes = append(c.sizes, size)
	c.mu.Unlock()
	return b, func() error {
		c.mu.Lock()
		c.released++
		c.mu.Unlock()
		return release()
	}
}

func (c *countingAnon) counts() (made, released int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sizes), c.released
}

// Pieces are zeroed, aligned, disjoint and share mappings; a piece larger
// than a region gets a mapping of its own size; a mapping is released
// with its last piece and not before; giving a piece back twice counts
// once.
func TestArena(t *testing.T) {
	const mib = 1 << 20
	c := &countingAnon{}
	a := NewArena(3 * mib) // rounded up to 4 MiB
	a.anon = c.anon
	sizes := []int{1, 5000, mib + 3, 3 * mib, 9 * mib, 100}
	pieces := make([][]byte, len(sizes))
	frees := make([]func() error, len(sizes))
	for i, n := range sizes {
		pieces[i], frees[i] = a.Alloc(n)
		p := pieces[i]
		if len(p) != n || cap(p) != n {
			t.Fatalf("piece %d: len %d cap %d, want %d", i, len(p), cap(p), n)
		}
		if off := uintptr(unsafe.Pointer(&p[0])) - uintptr(unsafe.Pointer(&c.lastMem(t, a)[0])); off%PieceAlign != 0 {
			t.Fatalf("piece %d at offset %d in its mapping, not %d-aligned", i, off, PieceAlign)
		}
		for j := range p {
			if p[j] != 0 {
				t.Fatalf("piece %d: byte %d is %d", i, j, p[j])
			}
			p[j] = byte(i + 1)
		}
	}
	for i, p := range pieces {
		for j := range p {
			if p[j] != byte(i+1) {
				t.Fatalf("piece %d: byte %d reads %d: pieces overlap", i, j, p[j])
			}
		}
	}
	// 1, 5000 and 1 MiB+3 share the first 4 MiB; 3 MiB does not fit in
	// what is left and starts the second; 9 MiB gets its own 10 MiB; 100
	// fits in what that has left.
	if want := []int{4 * mib, 4 * mib, 10 * mib}; !slices.Equal(c.sizes, want) {
		t.Fatalf("mappings %v, want %v", c.sizes, want)
	}
	for _, i := range []int{0, 1} {
		if err := frees[i](); err != nil {
			t.Fatal(err)
		}
	}
	if _, rel := c.counts(); rel != 0 {
		t.Fatalf("%d mappings released with a piece still in the first", rel)
	}
	if err := frees[2](); err != nil {
		t.Fatal(err)
	}
	if err := frees[2](); err != nil { // twice: no second count
		t.Fatal(err)
	}
	if _, rel := c.counts(); rel != 1 {
		t.Fatalf("%d mappings released, want 1 (the first)", rel)
	}
	for _, f := range frees[3:] {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if made, rel := c.counts(); rel != made {
		t.Fatalf("%d of %d mappings released after every piece was given back", rel, made)
	}
	// The arena starts a new mapping after its current one was released.
	p, free := a.Alloc(10)
	if len(p) != 10 {
		t.Fatal(len(p))
	}
	_ = free()
	if made, rel := c.counts(); made != 4 || rel != 4 {
		t.Fatalf("after a new piece: %d mappings made, %d released; want 4, 4", made, rel)
	}
	if p, free := a.Alloc(0); len(p) != 0 || free() != nil {
		t.Fatal("Alloc(0)")
	}
}

// lastMem returns the mapping the arena's most recent piece came from.
func (c *countingAnon) lastMem(t *testing.T, a *Arena) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur == nil {
		t.Fatal("no current mapping")
	}
	return a.cur.mem
}

// Concurrent pieces and give-backs (run with -race): every mapping is
// released at the end.
func TestArenaConcurrent(t *testing.T) {
	c := &countingAnon{}
	a := NewArena(1 << 20)
	a.anon = c.anon
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p, free := a.Alloc(1 + (g*977+i*131)%300000)
				p[0], p[len(p)-1] = 1, 2
				if err := free(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if made, rel := c.counts(); made == 0 || rel != made {
		t.Fatalf("%d of %d mappings released", rel, made)
	}
}
