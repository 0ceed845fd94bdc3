package blockdev

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fallocateFn is unix.Fallocate; tests replace it to simulate a file system
// without fallocate (EOPNOTSUPP).
var fallocateFn = unix.Fallocate

// openFile opens (or creates) a regular file as a cache store:
//   - O_DIRECT unless the file system refuses it or has no device to bypass
//     (tmpfs), in which case buffered I/O and one warning;
//   - flock(LOCK_EX|LOCK_NB), so a second opener (another process, or this
//     one again) fails with ErrBusy instead of corrupting the store;
//   - preallocated to its size with fallocate, so writes never hit ENOSPC
//     or allocate extents on the hot path; never shrunk.
//
// A file it created is removed again if a later step fails.
func openFile(path string, o *Options, create bool) (*Disk, error) {
	if create && o.Size == 0 {
		return nil, fmt.Errorf("blockdev: %s does not exist and Options.Size is 0: a size is needed to create it", path)
	}
	flags := unix.O_RDWR | unix.O_CLOEXEC
	if create {
		flags |= unix.O_CREAT | unix.O_EXCL
	}
	fd, direct, err := openFD(path, flags, 0o644, o)
	if create && errors.Is(err, unix.EEXIST) { // another opener created it first
		return openFile(path, o, false)
	}
	if err != nil {
		return nil, fmt.Errorf("blockdev: open %s: %w", path, err)
	}
	d, err := setupFile(path, fd, direct, o)
	if err != nil {
		unix.Close(fd)
		if create && !errors.Is(err, ErrBusy) {
			os.Remove(path)
		}
		return nil, err
	}
	return d, nil
}

func setupFile(path string, fd int, direct bool, o *Options) (*Disk, error) {
	if err := lockFile(path, fd); err != nil {
		return nil, err
	}
	align := 0
	if direct {
		var err error
		if align, direct, err = checkDirect(path, fd, o); err != nil {
			return nil, err
		}
	}
	bs, err := blockSizeFor(path, align)
	if err != nil {
		return nil, err
	}
	size, err := sizeFile(path, fd, bs, o)
	if err != nil {
		return nil, err
	}
	return &Disk{path: path, h: handle{fd: fd}, size: size, bs: bs, dioAlign: align, direct: direct}, nil
}

func lockFile(path string, fd int) error {
	var err error = unix.EINTR
	for err == unix.EINTR {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s is locked by another opener: %w", ErrBusy, path, err)
	}
	if err != nil {
		return fmt.Errorf("blockdev: flock %s: %w", path, err)
	}
	return nil
}

// checkDirect asks the kernel whether O_DIRECT on this file really goes to
// a device, and its alignment. Since Linux 6.6 tmpfs accepts O_DIRECT at
// open but has no device to bypass; statx (STATX_DIOALIGN, Linux 6.1+)
// reports no direct-I/O support there, and older kernels are recognised by
// the file-system magic. In those cases O_DIRECT is turned off again and
// one warning logged.
func checkDirect(path string, fd int, o *Options) (align int, direct bool, err error) {
	var stx unix.Statx_t
	err = unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &stx)
	if err == nil && stx.Mask&unix.STATX_DIOALIGN != 0 {
		if stx.Dio_offset_align != 0 {
			return int(max(stx.Dio_offset_align, stx.Dio_mem_align)), true, nil
		}
	} else {
		var sf unix.Statfs_t
		if unix.Fstatfs(fd, &sf) != nil || (sf.Type != unix.TMPFS_MAGIC && sf.Type != unix.RAMFS_MAGIC) {
			return 0, true, nil // an older kernel that cannot tell: trust the open
		}
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^unix.O_DIRECT)
	}
	if err != nil {
		return 0, false, fmt.Errorf("blockdev: fcntl %s (clearing O_DIRECT): %w", path, err)
	}
	o.Logger.Warn("blockdev: the file system cannot do direct I/O (tmpfs?); using buffered I/O", "path", path)
	return 0, false, nil
}

// sizeFile settles the file's usable size (see Options.Size) and
// preallocates it.
func sizeFile(path string, fd, bs int, o *Options) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("blockdev: fstat %s: %w", path, err)
	}
	size := o.Size
	switch {
	case size == 0:
		if size = roundDown(st.Size, bs); size == 0 {
			return 0, fmt.Errorf("blockdev: %s holds %d bytes, less than one block, and Options.Size is 0", path, st.Size)
		}
	case size%int64(bs) != 0:
		return 0, fmt.Errorf("blockdev: Options.Size %d is not a multiple of %s's block size %d", size, path, bs)
	case st.Size > size:
		return 0, fmt.Errorf("blockdev: %s is %d bytes, larger than Options.Size %d: refusing to shrink it", path, st.Size, size)
	}
	return size, preallocate(path, fd, size, st.Size, o)
}

// preallocate gives the file real extents for [0, size) and makes its size
// durable. Where fallocate is unsupported the file is only extended with
// ftruncate (sparse: blocks get allocated by the first writes), with one
// warning.
func preallocate(path string, fd int, size, cur int64, o *Options) error {
	var err error = unix.EINTR
	for err == unix.EINTR {
		err = fallocateFn(fd, 0, 0, size)
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		o.Logger.Warn("blockdev: fallocate unsupported; extending with ftruncate (sparse file)", "path", path, "size", size)
		err = nil
		if cur < size {
			err = unix.Ftruncate(fd, size)
		}
	}
	if err != nil {
		return fmt.Errorf("blockdev: preallocate %s to %d bytes: %w", path, size, err)
	}
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("blockdev: fsync %s: %w", path, err)
	}
	return nil
}
