package grammar

// completion is the fewest bytes that finish the document from s (0: it
// may end here): the sum of each frame's rest, a frame's rest counting
// what it needs once the value above it is finished. Each is the exact
// minimum, so a byte on a shortest way lowers it by one; every byte
// exists as a one-byte token in a byte-level vocabulary.
func (s *state) completion() int {
	if s.done() {
		return 0
	}
	total := 0
	for i := 1; i < s.depth; i++ {
		total += rest(&s.frames[i])
		if total >= inf {
			return inf
		}
	}
	return total
}

func rest(f *frame) int {
	n := f.n
	if f.st == stStart && n.kind != kNumber {
		return n.min
	}
	switch n.kind {
	case kObject:
		switch f.st {
		case osOpen:
			return closeCost(n, f.seen, f.count)
		case osComma:
			return nextKeyCost(n, f)
		case osKey:
			return keyRest(n, f)
		case osColon:
			v := n.additional
			if f.key >= 0 {
				v = n.props[f.key]
			}
			return 1 + v.min + closeCost(n, f.seen, f.count+1)
		case osValue:
			return closeCost(n, f.seen, f.count+1)
		case osAfter:
			return closeCost(n, f.seen, f.count)
		}
	case kArray:
		c := int(f.count)
		switch f.st {
		case asOpen:
			if n.minItems == 0 {
				return 1
			}
			return n.minItems*(n.items.min+1) - 1 + 1
		case asValue:
			c++
		}
		return max(0, n.minItems-c)*(1+n.items.min) + 1
	case kString:
		return pending(f) + strRest(n, f) + 1
	case kNumber:
		return numRest(n, f)
	case kLit:
		best := inf
		for _, t := range n.texts[f.lo:f.hi] {
			best = min(best, len(t)-int(f.pos))
		}
		return best
	}
	return n.min
}

// pending is the bytes that finish the character being read.
func pending(f *frame) int {
	switch f.lx {
	case lxUTF, lxHex:
		return int(f.more)
	case lxEsc:
		return 1
	}
	return 0
}

// strRest is the fewest bytes of characters still due in a string once
// the one being read is finished (the closing quote apart).
func strRest(n *node, f *frame) int {
	if n.pat == nil {
		return max(0, n.minLen-int(f.count))
	}
	if f.lx == lxChar {
		return n.pat.dist[f.dfa]
	}
	// the character begun: the best way to finish it
	lo, hi := runeSpan(f)
	d := n.pat
	best := inf
	for s, r := range d.starts {
		end := rune(0x10FFFF)
		if s+1 < len(d.starts) {
			end = d.starts[s+1] - 1
		}
		if end >= lo && r <= hi {
			if t := d.next[f.dfa][s]; t >= 0 {
				best = min(best, d.dist[t])
			}
		}
	}
	return best
}

// closeCost is the fewest bytes that close an object with seen
// properties, count written: the required ones left, then '}'.
func closeCost(n *node, seen uint64, count int32) int {
	c, k := 1, 0
	for i := range n.names {
		if n.required&^seen&(1<<i) != 0 {
			c += n.quoted[i] + n.props[i].min
			k++
		}
	}
	if k > 0 {
		c += k
		if count == 0 {
			c--
		}
	}
	return c
}

// nextKeyCost is the rest of an object after ',': one more property
// (the best one), then the close.
func nextKeyCost(n *node, f *frame) int {
	best := inf
	for i := range n.names {
		if f.seen&(1<<i) == 0 {
			best = min(best, n.quoted[i]+n.props[i].min+closeCost(n, f.seen|1<<i, f.count+1))
		}
	}
	if n.additional != nil {
		best = min(best, len(otherKey(n))+3+n.additional.min+closeCost(n, f.seen, f.count+1))
	}
	return best
}

// otherKey is the shortest key that is not a property name.
func otherKey(n *node) string {
	for _, k := range []string{"", "a", "b", "c"} {
		if _, found := searchNames(n.names, k); !found {
			return k
		}
	}
	for c := 'd'; ; c++ {
		if _, found := searchNames(n.names, string(c)); !found {
			return string(c)
		}
	}
}

func searchNames(names []string, k string) (int, bool) {
	for i, x := range names {
		if x == k {
			return i, true
		}
	}
	return 0, false
}

// keyRest is the rest of an object inside a key: finish it as one of the
// names still matching, or as another key.
func keyRest(n *node, f *frame) int {
	best := inf
	if !f.other {
		for i := f.lo; i < f.hi; i++ {
			if f.seen&(1<<i) == 0 {
				best = min(best, len(n.names[i])-int(f.pos)+2+n.props[i].min+closeCost(n, f.seen|1<<i, f.count+1))
			}
		}
	}
	if n.additional != nil {
		extra := pending(f)
		if !f.other && f.lx == lxChar && f.lo < f.hi && len(n.names[f.lo]) == int(f.pos) {
			extra++ // the key is a name: it needs one more character to be another
		}
		best = min(best, extra+2+n.additional.min+closeCost(n, f.seen, f.count+1))
	}
	return best
}
