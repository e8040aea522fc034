package mmap

import "sync"

// Arena hands out pieces of a few large Anon mappings, so that many
// weights of a few hundred KiB to a few MiB share 2 MiB pages instead of
// each starting its own mapping: a mapping of its own puts a piece's tail
// past the last whole 2 MiB on 4 KiB pages, and a piece under 2 MiB
// entirely (Qwen2.5-0.5B's attention weights, and a quarter of its
// decoder's packed bytes, were on 4 KiB pages that way).
//
// A piece is aligned to PieceAlign. A mapping is released when every piece
// in it has been given back, so an Arena needs no closing. It is safe for
// concurrent use.
type Arena struct {
	mu     sync.Mutex
	region int     // bytes of a new mapping (at least; more for a larger piece)
	cur    *region // the mapping new pieces come from, nil before the first
	anon   func(int) ([]byte, func() error)
}

// PieceAlign is the alignment of every piece an Arena hands out within
// its mapping (whose start is 2 MiB-aligned where Anon maps).
const PieceAlign = 4096

// region is one mapping and the count of its pieces not yet given back.
type region struct {
	mem     []byte
	used    int
	pieces  int
	release func() error
}

// NewArena returns an Arena that maps regionBytes (rounded up to 2 MiB)
// at a time.
func NewArena(regionBytes int) *Arena {
	return &Arena{region: roundUp(max(regionBytes, 1), 2<<20), anon: Anon}
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// Alloc returns size zeroed bytes and the function that gives them back;
// it is to be called once (the memory must not be used afterwards). A
// piece that does not fit in what is left of the current mapping starts a
// new one, of the arena's size or the piece's, whichever is larger; what
// the old one had left is not used (nor, never touched, resident).
func (a *Arena) Alloc(size int) ([]byte, func() error) {
	if size <= 0 {
		return []byte{}, func() error { return nil }
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.cur
	if r == nil || roundUp(r.used, PieceAlign)+size > len(r.mem) {
		mem, release := a.anon(max(a.region, roundUp(size, 2<<20)))
		r = &region{mem: mem, release: release}
		a.cur = r
	}
	off := roundUp(r.used, PieceAlign)
	r.used = off + size
	r.pieces++
	return r.mem[off : off+size : off+size], sync.OnceValue(func() error { return a.giveBack(r) })
}

// giveBack counts one piece of r given back and releases r with its last.
func (a *Arena) giveBack(r *region) error {
	a.mu.Lock()
	r.pieces--
	last := r.pieces == 0
	if last && a.cur == r {
		a.cur = nil
	}
	a.mu.Unlock()
	if !last {
		return nil
	}
	return r.release()
}
