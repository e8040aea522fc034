package tensor

import (
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Dequantize converts len(dst) elements of type dt stored in src to float32.
// src must hold exactly dt.Bytes(len(dst)) bytes.
func Dequantize(dt DType, src []byte, dst []float32) error {
	want, err := dt.Bytes(int64(len(dst)))
	if err != nil {
		return err
	}
	if int64(len(src)) != want {
		return fmt.Errorf("tensor: dequantize %v: %d bytes for %d elements, want %d", dt, len(src), len(dst), want)
	}
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = float16.Frombits(le16(src[2*i:])).Float32()
		}
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(le16(src[2*i:])) << 16)
		}
	default:
		return &UnsupportedDTypeError{Format: "dequantize", DType: dt.String()}
	}
	return nil
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
