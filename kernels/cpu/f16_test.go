package cpu

import "github.com/x448/float16"

func f16bits(v float32) uint16 { return float16.Fromfloat32(v).Bits() }
func f16val(h uint16) float32  { return float16.Frombits(h).Float32() }
