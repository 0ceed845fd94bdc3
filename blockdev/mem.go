package blockdev

import (
	"fmt"
	"sync"
)

// MemDevice is a Device held in memory, for tests. It enforces the same
// alignment and range rules as the real devices, so code that passes on it
// passes on a disk. CrashClone gives the contents a crash would leave.
type MemDevice struct {
	mu        sync.RWMutex
	data      []byte
	blockSize int
	closed    bool
	c         counters
}

var _ Device = (*MemDevice)(nil)

// NewMem returns a zeroed in-memory device of size bytes.
// REQUIRES: blockSize is a power of two >= 512 and size a multiple of it.
func NewMem(size int64, blockSize int) (*MemDevice, error) {
	if blockSize < 512 || blockSize&(blockSize-1) != 0 {
		return nil, fmt.Errorf("blockdev: block size %d is not a power of two >= 512", blockSize)
	}
	if size <= 0 || size%int64(blockSize) != 0 {
		return nil, fmt.Errorf("blockdev: size %d is not a positive multiple of block size %d", size, blockSize)
	}
	return &MemDevice{data: make([]byte, size), blockSize: blockSize}, nil
}

// ReadAt implements Device.
func (m *MemDevice) ReadAt(p []byte, off int64) (int, error) {
	start := monoNow()
	if err := CheckIO(p, off, int64(len(m.data)), m.blockSize); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	n := copy(p, m.data[off:])
	m.c.read(n, start)
	return n, nil
}

// WriteAt implements Device.
func (m *MemDevice) WriteAt(p []byte, off int64) (int, error) {
	start := monoNow()
	if err := CheckIO(p, off, int64(len(m.data)), m.blockSize); err != nil {
		return 0, err
	}
	// A read lock suffices: writers to one range race as they would on a
	// disk, and the slice header itself never changes.
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	n := copy(m.data[off:], p)
	m.c.write(n, start)
	return n, nil
}

// Sync implements Device.
func (m *MemDevice) Sync() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	m.c.syncs.Add(1)
	return nil
}

// Size implements Device.
func (m *MemDevice) Size() int64 { return int64(len(m.data)) }

// BlockSize implements Device.
func (m *MemDevice) BlockSize() int { return m.blockSize }

// Stats implements Device.
func (m *MemDevice) Stats() Stats { return m.c.snapshot() }

// Close implements Device. The contents stay readable through CrashClone.
func (m *MemDevice) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	return nil
}

// CrashClone returns a new open device holding a copy of the current
// contents: what a process killed at this instant would find on restart.
// Writes that completed are in it; writes still in flight may be partly in
// it, as on a real disk. It works on a closed device too (reopen after Close).
func (m *MemDevice) CrashClone() *MemDevice {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := make([]byte, len(m.data))
	copy(d, m.data)
	return &MemDevice{data: d, blockSize: m.blockSize}
}
