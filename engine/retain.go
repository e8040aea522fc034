package engine

import (
	"hash/maphash"

	"github.com/vkllm/vkllm/models"
)

// BlockSize is the granularity of the prefix cache: a cached prompt is
// reused in whole blocks of this many tokens (vLLM's block_size).
const BlockSize = 16

// retained is a KV sequence kept after its request ended: a cached
// prefix (found by block hashes) or an idle session's conversation
// (found by name). Its sequence id holds the K/V of tokens at positions
// 0..len(tokens)-1.
type retained struct {
	seqID   int32
	tokens  []int32
	session string           // "" for a prefix-cache entry
	adapter models.AdapterID // the LoRA adapter its K/V were computed with
	scope   string           // the cache scope of the request that computed it
	hashes  []uint64         // chain hash of each whole block (prefix entries)
	lastUse uint64
}

// pool is the set of retained sequences. Eviction takes prefix entries
// before idle sessions, least recently used first. Running requests are
// never in the pool, so nothing a request is using can be evicted.
type pool struct {
	seed     maphash.Seed
	tick     uint64
	entries  map[int32]*retained  // by sequence id
	blocks   map[uint64]*retained // chain hash of a block → the newest entry holding it
	sessions map[string]*retained
}

func newPool() *pool {
	return &pool{seed: maphash.MakeSeed(), entries: map[int32]*retained{},
		blocks: map[uint64]*retained{}, sessions: map[string]*retained{}}
}

// blockHashes chains a hash over the adapter and each whole block of
// toks: hash i covers the adapter and toks[:(i+1)*BlockSize], so equal
// hashes mean equal prefixes computed with the same adapter (up to 64-bit
// collisions, which match() rules out by comparing both).
func (p *pool) blockHashes(adapter models.AdapterID, scope string, toks []int32) []uint64 {
	n := len(toks) / BlockSize
	hs := make([]uint64, n)
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.WriteString(scope) // the scope and adapter open the chain
	h.WriteByte(0)
	var buf [4 * BlockSize]byte
	buf[0], buf[1], buf[2], buf[3] = byte(adapter), byte(adapter>>8), byte(adapter>>16), byte(adapter>>24)
	h.Write(buf[:4])
	for b := range n {
		for i, t := range toks[b*BlockSize : (b+1)*BlockSize] {
			buf[4*i], buf[4*i+1], buf[4*i+2], buf[4*i+3] = byte(t), byte(t>>8), byte(t>>16), byte(t>>24)
		}
		h.Write(buf[:])
		hs[b] = h.Sum64() // Sum64 does not reset: the chain goes on
	}
	return hs
}

// match finds the prefix entry of adapter sharing the most whole leading
// blocks with toks, leaving at least one token of toks to compute (its
// logits are needed). It returns the entry and the number of tokens it
// covers.
func (p *pool) match(adapter models.AdapterID, scope string, toks []int32) (*retained, int) {
	limit := (len(toks) - 1) / BlockSize
	if limit <= 0 || len(p.blocks) == 0 {
		return nil, 0
	}
	hs := p.blockHashes(adapter, scope, toks[:limit*BlockSize])
	for b := limit - 1; b >= 0; b-- { // longest first
		r := p.blocks[hs[b]]
		if r == nil || r.adapter != adapter || r.scope != scope || len(r.hashes) <= b || r.hashes[b] != hs[b] {
			continue
		}
		n := (b + 1) * BlockSize
		if !equalTokens(r.tokens[:n], toks[:n]) {
			continue // a hash collision: no reuse
		}
		return r, n
	}
	return nil, 0
}

func equalTokens(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// addPrefix retains seq as a prefix entry for toks (its K/V, computed
// with adapter).
func (p *pool) addPrefix(seq int32, adapter models.AdapterID, scope string, toks []int32) {
	r := &retained{seqID: seq, tokens: toks, adapter: adapter, scope: scope, hashes: p.blockHashes(adapter, scope, toks)}
	p.touch(r)
	p.entries[seq] = r
	for _, h := range r.hashes {
		p.blocks[h] = r
	}
}

// addSession retains seq as the idle state of session name (its K/V,
// computed with adapter).
func (p *pool) addSession(name string, seq int32, adapter models.AdapterID, toks []int32) {
	r := &retained{seqID: seq, tokens: toks, session: name, adapter: adapter}
	p.touch(r)
	p.entries[seq] = r
	p.sessions[name] = r
}

func (p *pool) touch(r *retained) {
	p.tick++
	r.lastUse = p.tick
}

// remove forgets r (the caller frees or takes over its sequence).
func (p *pool) remove(r *retained) {
	delete(p.entries, r.seqID)
	if r.session != "" {
		delete(p.sessions, r.session)
		return
	}
	for _, h := range r.hashes {
		if p.blocks[h] == r {
			delete(p.blocks, h)
		}
	}
}

// victim is the entry to evict next, other than keep: the least recently
// used prefix entry, else the least recently used idle session.
func (p *pool) victim(keep *retained) *retained {
	var best *retained
	for _, r := range p.entries {
		if r == keep {
			continue
		}
		if best == nil || (r.session == "") != (best.session == "") && r.session == "" ||
			(r.session == "") == (best.session == "") && r.lastUse < best.lastUse {
			best = r
		}
	}
	return best
}
