//go:build !unix

package hub

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"
)

// lockFile makes path exclusively (O_EXCL), waiting while another process
// holds it, until ctx is done; unlock deletes it. (A process killed while
// holding it leaves the file; delete it by hand.)
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// diskFree is unknown here (-1): the space check is skipped.
func diskFree(dir string) int64 { return -1 }
