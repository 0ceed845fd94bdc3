//go:build !linux

package blockdev

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Off Linux, Open serves regular files only, with buffered I/O through
// os.File (no O_DIRECT, no preallocation, no lock against a second opener):
// enough to develop and test on, not to run a cache on.

type handle struct{ f *os.File }

func (h handle) pread(p []byte, off int64) (int, error)  { return h.f.ReadAt(p, off) }
func (h handle) pwrite(p []byte, off int64) (int, error) { return h.f.WriteAt(p, off) }
func (h handle) sync() error                             { return h.f.Sync() }
func (h handle) close() error                            { return h.f.Close() }

// useRing: io_uring is Linux's.
func (h *handle) useRing(int) error {
	return fmt.Errorf("%w: io_uring needs Linux", ErrUnsupported)
}

func openDisk(path string, o *Options) (*Disk, error) {
	fi, err := os.Stat(path)
	create := errors.Is(err, fs.ErrNotExist)
	switch {
	case create && o.Size == 0:
		return nil, fmt.Errorf("blockdev: %s does not exist and Options.Size is 0: a size is needed to create it", path)
	case create:
	case err != nil:
		return nil, fmt.Errorf("blockdev: stat %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%w: %s is not a regular file (block devices need Linux)", ErrUnsupported, path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("blockdev: open %s: %w", path, err)
	}
	size, err := sizeOther(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Disk{path: path, h: handle{f}, size: size, bs: MinBlockSize}, nil
}

func sizeOther(f *os.File, o *Options) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("blockdev: stat %s: %w", f.Name(), err)
	}
	switch size := o.Size; {
	case size == 0:
		if size = roundDown(fi.Size(), MinBlockSize); size == 0 {
			return 0, fmt.Errorf("blockdev: %s holds %d bytes, less than one block, and Options.Size is 0", f.Name(), fi.Size())
		}
		return size, nil
	case fi.Size() > size:
		return 0, fmt.Errorf("blockdev: %s is %d bytes, larger than Options.Size %d: refusing to shrink it", f.Name(), fi.Size(), size)
	default:
		if err := f.Truncate(size); err != nil {
			return 0, fmt.Errorf("blockdev: extend %s to %d bytes: %w", f.Name(), size, err)
		}
		return size, nil
	}
}
