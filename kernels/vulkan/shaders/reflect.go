package shaders

import (
	"encoding/binary"
	"fmt"
)

// Layout is what a variant's SPIR-V declares: its storage-buffer bindings
// (all in set 0) and the byte size of its push-constant block.
type Layout struct {
	Bindings int
	PushSize int
	// Writable[i] reports that binding i is not declared readonly: the
	// backend orders a dispatch after earlier ones that touch what it
	// writes.
	Writable []bool
}

// Reflect reads the Layout of the named variant from its SPIR-V. The
// push-constant block must hold only 32-bit scalars.
func Reflect(name string) (Layout, error) {
	code, err := SPIRV(name)
	if err != nil {
		return Layout{}, err
	}
	return reflectSPIRV(code)
}

// SPIR-V opcodes and decorations used below.
const (
	opTypeInt         = 21
	opTypeFloat       = 22
	opTypeStruct      = 30
	opTypePointer     = 32
	opVariable        = 59
	opDecorate        = 71
	opMemberDecorate  = 72
	decBinding        = 33
	decOffset         = 35
	decNonWritable    = 24
	storagePushConst  = 9
	storageBuffer     = 12
	storageUniform    = 2
	spirvMagic        = 0x07230203
	spirvHeaderLength = 5
)

func reflectSPIRV(code []byte) (Layout, error) {
	if len(code)%4 != 0 || len(code) < 20 || binary.LittleEndian.Uint32(code) != spirvMagic {
		return Layout{}, fmt.Errorf("shaders: not SPIR-V")
	}
	w := make([]uint32, len(code)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	scalarBits := map[uint32]uint32{} // type id → width of an int or float
	members := map[uint32][]uint32{}  // struct id → member type ids
	offsets := map[[2]uint32]uint32{} // (struct, member) → offset
	pointee := map[uint32]uint32{}    // pointer type → pointee
	bindings := map[uint32]uint32{}   // variable → its Binding
	readonly := map[uint32]bool{}     // NonWritable variables and structs
	type buffer struct{ ptr, v uint32 }
	var buffers []buffer // storage-buffer variables
	var push []uint32    // push-constant variables' pointer types
	for i := spirvHeaderLength; i < len(w); {
		n, op := int(w[i]>>16), w[i]&0xFFFF
		if n == 0 || i+n > len(w) {
			return Layout{}, fmt.Errorf("shaders: bad instruction at word %d", i)
		}
		a := w[i+1 : i+n]
		switch op {
		case opTypeInt, opTypeFloat:
			scalarBits[a[0]] = a[1]
		case opTypeStruct:
			members[a[0]] = append([]uint32(nil), a[1:]...)
		case opTypePointer:
			pointee[a[0]] = a[2]
		case opMemberDecorate:
			switch a[2] {
			case decOffset:
				offsets[[2]uint32{a[0], a[1]}] = a[3]
			case decNonWritable:
				readonly[a[0]] = true
			}
		case opDecorate:
			switch a[1] {
			case decBinding:
				bindings[a[0]] = a[2]
			case decNonWritable:
				readonly[a[0]] = true
			}
		case opVariable:
			switch a[2] {
			case storagePushConst:
				push = append(push, a[0])
			case storageBuffer, storageUniform:
				if _, ok := bindings[a[1]]; ok {
					buffers = append(buffers, buffer{a[0], a[1]})
				}
			}
		}
		i += n
	}
	// Several variables may alias one binding (weights.glsl's W and W4):
	// a binding counts once, writable if any of its variables is.
	seen := map[uint32]bool{}
	for _, b := range buffers {
		seen[bindings[b.v]] = true
	}
	l := Layout{Bindings: len(seen), Writable: make([]bool, len(seen))}
	for _, b := range buffers {
		n := bindings[b.v]
		if int(n) >= len(seen) {
			return Layout{}, fmt.Errorf("shaders: binding %d of %d buffers", n, len(seen))
		}
		l.Writable[n] = l.Writable[n] || !readonly[b.v] && !readonly[pointee[b.ptr]]
	}
	for _, pt := range push {
		st := pointee[pt]
		for m, ty := range members[st] {
			bits, ok := scalarBits[ty]
			if !ok || bits != 32 {
				return Layout{}, fmt.Errorf("shaders: push-constant member %d is not a 32-bit scalar", m)
			}
			l.PushSize = max(l.PushSize, int(offsets[[2]uint32{st, uint32(m)}])+4)
		}
	}
	return l, nil
}
