package blockdev

import (
	"errors"
	"fmt"
	"log/slog"
)

// MinBlockSize is the smallest BlockSize a Device opened by Open reports:
// the page size, and the physical sector of nearly every SSD, so aligned
// I/O never makes the device read-modify-write a 512-byte-emulated sector.
const MinBlockSize = 4096

// Options configure Open. The zero value, after EnsureDefaults, opens an
// existing file or block device with direct I/O.
type Options struct {
	// Size is the usable size in bytes, a multiple of 4096.
	// For a file: required when the file does not exist; an existing
	// smaller file is grown (preallocated) to Size; an existing larger file
	// is an error (Open never shrinks); 0 means the file's current size.
	// For a block device: 0 means the whole device; otherwise only the
	// first Size bytes are used (an error if the device is smaller).
	// Default 0.
	Size int64
	// Direct asks for O_DIRECT. Where the file system refuses or cannot
	// honour it (tmpfs), Open falls back to buffered I/O and logs one
	// warning; IsDirect tells which one a device got. Default true; set
	// it with new(false) to force buffered I/O.
	Direct *bool
	// Logger receives Open's warnings (buffered fallback, ftruncate
	// instead of fallocate). Default slog.Default().
	Logger *slog.Logger
}

// EnsureDefaults fills unset fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Direct == nil {
		o.Direct = new(true)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every problem with o, joined; nil if o is usable.
func (o *Options) Validate() error {
	var errs []error
	if o.Size < 0 {
		errs = append(errs, fmt.Errorf("blockdev: Options.Size %d is negative", o.Size))
	} else if o.Size%MinBlockSize != 0 {
		errs = append(errs, fmt.Errorf("blockdev: Options.Size %d is not a multiple of %d", o.Size, MinBlockSize))
	}
	if o.Direct == nil {
		errs = append(errs, errors.New("blockdev: Options.Direct is unset (call EnsureDefaults)"))
	}
	if o.Logger == nil {
		errs = append(errs, errors.New("blockdev: Options.Logger is unset (call EnsureDefaults)"))
	}
	return errors.Join(errs...)
}
