// Package kv keeps the metadata of a unified-cell KV cache with llama.cpp's
// semantics, apart from the K/V storage (which lives on a backend and is
// owned by models.Context).
//
// The cache is a row of cells. A cell is empty, or holds one token: its
// position and the set of sequences that share it. A token of a batch may
// attend to cell j only if the cell is not empty, shares a sequence with
// the token, and its position is not after the token's position (Mask).
// So a common prefix costs nothing: SeqCp adds a sequence to the cells of
// another, and both see them.
//
// Writing a batch is prepare → apply → (rollback): Prepare validates the
// batch and finds one empty cell per token (first fit, ascending, in batch
// order) without changing anything, failing with an error wrapping
// ErrNoSlot when there are too few; Apply writes the tokens' positions and
// sequences into those cells; Rollback empties them again if the forward
// pass that followed failed. The cache never evicts on its own.
//
// SeqAdd and SeqDiv move positions. Keys were rotated (RoPE) at their old
// positions, so every moved cell accumulates its position delta, and the
// owner re-rotates those keys (TakeShifts) before the next forward pass.
// A moved cell moves for every sequence that shares it, as in llama.cpp.
//
// Positions are half-open ranges [p0, p1): p0 < 0 means 0 and p1 < 0 means
// no upper bound. Sequence ids lie in [0, nSeqMax); a negative id given to
// SeqRm means every sequence.
package kv
