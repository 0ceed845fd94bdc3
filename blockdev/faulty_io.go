package blockdev

import "fmt"

// ReadAt implements Device.
func (f *Faulty) ReadAt(p []byte, off int64) (int, error) {
	if err := CheckIO(p, off, f.inner.Size(), f.inner.BlockSize()); err != nil {
		return 0, err
	}
	d, ok := f.decide(OpRead, off, len(p))
	ok = ok && !f.hang(d)
	if ok && d.action == Fail {
		return 0, f.fail("read", off, d.err)
	}
	n, err := f.inner.ReadAt(p, off)
	if ok && err == nil {
		flip(p[:n], off, d)
	}
	return n, err
}

// WriteAt implements Device.
func (f *Faulty) WriteAt(p []byte, off int64) (int, error) {
	if err := CheckIO(p, off, f.inner.Size(), f.inner.BlockSize()); err != nil {
		return 0, err
	}
	d, ok := f.decide(OpWrite, off, len(p))
	if !ok || f.hang(d) {
		return f.inner.WriteAt(p, off)
	}
	if d.action == Tear && d.keep > 0 {
		if n, err := f.inner.WriteAt(p[:d.keep], off); err != nil {
			return n, err
		}
	}
	return d.keep, f.fail("write", off+int64(d.keep), d.err)
}

// Sync implements Device.
func (f *Faulty) Sync() error {
	if d, ok := f.decide(OpSync, 0, 0); ok && !f.hang(d) {
		return f.fail("sync", 0, d.err)
	}
	return f.inner.Sync()
}

// Size implements Device.
func (f *Faulty) Size() int64 { return f.inner.Size() }

// BlockSize implements Device.
func (f *Faulty) BlockSize() int { return f.inner.BlockSize() }

// Stats implements Device: the inner device's counters, with injected
// failures added to Errors.
func (f *Faulty) Stats() Stats {
	s := f.inner.Stats()
	s.Errors += f.injected.Load()
	return s
}

// Close implements Device: it closes the inner device.
func (f *Faulty) Close() error { return f.inner.Close() }

// hang holds the operation while d is a Hang, and reports whether it was
// one (the operation then proceeds as if no fault had fired).
func (f *Faulty) hang(d decision) bool {
	if d.action != Hang {
		return false
	}
	f.hanging.Add(1)
	defer f.hanging.Add(-1)
	<-d.release
	return true
}

func (f *Faulty) fail(op string, off int64, err error) error {
	f.injected.Add(1)
	return fmt.Errorf("blockdev: injected %s fault at %d: %w", op, off, err)
}

// flip corrupts p, which was read at device offset off, as d says.
func flip(p []byte, off int64, d decision) {
	if len(d.flipAt) == 0 {
		if len(p) > 0 {
			p[d.bit/8%len(p)] ^= 1 << (d.bit % 8)
		}
		return
	}
	for _, at := range d.flipAt {
		if at >= off && at < off+int64(len(p)) {
			p[at-off] ^= 1
		}
	}
}
