// Package kv keeps the metadata of a unified-cell KV cache with llama.cpp's
// semantics (src/llama-kv-cells.h, llama-kv-cache.cpp). It is pure Go and
// touches no device: the K/V storage lives on a backend, owned by
// models.Context, which asks this package which cells to write and which
// cells each token may see.
//
// # Cells
//
// The cache is a row of Size() cells; cell j is row j of every layer's K
// and V tensors. A cell is empty, or holds one token: its position (Pos)
// and the set of sequences (SeqID, a bitset of [0, SeqMax()), at most
// MaxSeqs) that share it. Sharing is how a common prefix costs nothing:
// SeqCp adds a sequence to the cells of another, and both see them. A
// cell's position is the cell's, not a sequence's, so moving it (SeqAdd,
// SeqDiv) moves it for every sequence that shares it.
//
// Derived counters are kept up to date, never scanned on a query: Used
// (non-empty cells), UsedMax (1 + the highest non-empty cell: attention
// need look no further), SeqPosMin/SeqPosMax per sequence (-1 when the
// sequence has no cell). A sequence may hold a position twice after
// SeqCp, SeqAdd or SeqDiv (as in llama.cpp, whose per-sequence position
// set became a multiset for this reason); only a new batch is refused one.
//
// # The visibility rule
//
// Token i of a batch may attend to cell j iff cell j is not empty, shares
// a sequence with token i, and pos(j) ≤ Pos[i]. Visible writes, per
// token, the list of those cells in ascending position (the order in
// which attention sums them, so that a sequence's results do not depend
// on where its cells sit), padded with -1. A token in several sequences sees the union of their
// cells (llama.cpp looks at the first one only, having required coupled
// sequences to hold the same cells; see CheckConsecutive).
//
// # Writing a batch: prepare → apply → rollback
//
//	slot, err := c.Prepare(b)        // validate, choose cells; changes nothing
//	// errors.Is(err, ErrNoSlot): too few empty cells; ErrBadArg: bad batch
//	c.Apply(slot)                    // write positions and sequences
//	vis, w, err := c.Visible(b, vis) // (len(b.Pos), w) cells each token attends to
//	// write K/V rows to slot.Cells(), run the forward pass; if it fails:
//	c.Rollback(slot)                 // the cache is bit for bit as before Apply
//
// Prepare rejects a malformed batch and any (sequence, position) pair that
// is twice in the batch or already in the cache. It chooses cells first
// fit: the lowest empty cells in ascending order, one per token in batch
// order, not necessarily contiguous, so one sequence decoded alone fills
// cells in position order whatever the batch split. The cache never evicts
// on its own. llama.cpp's stricter order rule (each sequence continues at
// SeqPosMax+1 by one) is CheckConsecutive, for the caller to use.
//
// Every state of the cache has a name that changes with each change; a
// Slot remembers the one Prepare saw, and Apply refuses (ErrStaleSlot) a
// slot whose state is gone, as Rollback refuses one when anything but
// that Apply happened since. So Rollback never guesses: it restores the
// exact earlier state, name included.
//
// # Shifts
//
// Keys are stored rotated (RoPE) at their positions. SeqAdd and SeqDiv
// change positions, so each moved cell accumulates its change (new − old;
// several moves add up, as llama.cpp's shift array). TakeShifts returns
// and clears them; the owner re-rotates those keys by delta
// (backend.KVShift) before the next forward pass. A cell that is emptied
// forgets its shift.
//
// # Ranges and errors
//
// Position ranges are half-open, [p0, p1): p0 < 0 means 0 and p1 < 0 means
// no upper bound. SeqRm takes seq < 0 for every sequence. Every operation
// checks its arguments first and on an invalid one (a sequence id outside
// [0, SeqMax()), a divisor < 1, a shift past math.MaxInt32, …) returns an
// error wrapping ErrBadArg and changes nothing. SeqRm returns no bool:
// llama.cpp's false means "partial removal impossible", which only
// recurrent state can say; a unified-cell cache can always remove a range.
//
// A Cache is not safe for concurrent use; one goroutine owns it.
package kv
