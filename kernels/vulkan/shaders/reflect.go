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
	bindings := map[uint32]bool{}     // variables with a Binding
	var push []uint32                 // push-constant variables' pointer types
	var storage int
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
			if a[2] == decOffset {
				offsets[[2]uint32{a[0], a[1]}] = a[3]
			}
		case opDecorate:
			if a[1] == decBinding {
				bindings[a[0]] = true
			}
		case opVariable:
			switch a[2] {
			case storagePushConst:
				push = append(push, a[0])
			case storageBuffer, storageUniform:
				if bindings[a[1]] {
					storage++
				}
			}
		}
		i += n
	}
	l := Layout{Bindings: storage}
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
