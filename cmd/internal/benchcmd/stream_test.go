package benchcmd

import "testing"

// The probe's readers read every byte: each XORs the buffer's 8-byte
// words into the same word, whatever the length (multiples of 256).
func TestReadAll(t *testing.T) {
	for _, n := range []int{0, 256, 512, 1024, 256 * 37, 1 << 20} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*131 + i>>8)
		}
		want := readAllGo(b)
		if got := readAll(b); got != want {
			t.Errorf("n=%d: readAll %#x, readAllGo %#x", n, got, want)
		}
		if got := readAll4(b); got != want {
			t.Errorf("n=%d: readAll4 %#x, readAllGo %#x", n, got, want)
		}
		if n > 0 {
			b[n-1] ^= 0x5a // the last byte counts
			if readAll4(b) == want {
				t.Errorf("n=%d: readAll4 misses the last byte", n)
			}
		}
	}
}
