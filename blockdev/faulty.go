package blockdev

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Op is a set of Device operations a Fault applies to.
type Op uint8

const (
	OpRead Op = 1 << iota
	OpWrite
	OpSync
)

// Action is what a firing Fault does.
type Action uint8

const (
	// Fail returns the fault's error without touching the inner device.
	Fail Action = iota
	// Tear (writes only) writes the first Keep blocks of the I/O to the
	// inner device, then returns the fault's error: a write cut by a crash
	// or a failing device.
	Tear
	// Flip (reads only) does the read, then inverts bits in what it
	// returns, and reports success: silent corruption.
	Flip
	// Hang blocks the operation until the fault is removed (Remove or
	// Clear), then lets it through to the inner device: a device that
	// stops answering, and later answers again. Hanging counts the
	// operations held.
	Hang
)

// Fault is one injection rule of a Faulty device. An operation is
// eligible if its kind is in Op and Match (if set) accepts it; each
// eligible operation counts as seen, and the fault fires on it if every
// condition set below holds. The zero values of the conditions mean "no
// restriction".
type Fault struct {
	Op     Op
	Action Action

	Match func(off int64, n int) bool // on the I/O's range (0, 0 for Sync)
	Nth   uint64                      // fire only on the Nth eligible op (1-based)
	After uint64                      // fire only after the first After eligible ops
	Prob  float64                     // fire with this probability (seeded source)
	Limit uint64                      // fire at most Limit times

	Err    error   // Fail and Tear return it, wrapped; nil means ErrInjected
	Keep   int     // Tear: blocks written, clamped below the I/O's; < 0: seeded random
	FlipAt []int64 // Flip: device offsets whose byte gets bit 0 inverted; empty: one seeded random bit
}

// FaultID names an injected Fault for Remove.
type FaultID uint64

// Faulty wraps a Device and injects faults into its operations, as
// pebble's errorfs does for files: fail the Nth write or every write after
// N or in a range, tear writes, fail reads or syncs, flip bits in what
// reads return, hold operations until the test lets them go.
//
// Faults are evaluated in the order they were injected; the first that
// fires takes effect, and every eligible fault counts the operation as
// seen. Evaluation is under one mutex with one seeded random source, so a
// single-goroutine test replays exactly; concurrent callers get a
// consistent (if interleaving-dependent) order. Faults may be added and
// removed at any time. Alignment and range errors are returned before
// faults are considered, as the real devices do. Stats are the inner
// device's, with injected failures added to Errors.
type Faulty struct {
	inner Device

	mu     sync.Mutex
	rng    *rand.Rand
	faults []*faultState
	nextID FaultID

	fired    atomic.Uint64
	injected atomic.Uint64 // fired faults that returned an error
	hanging  atomic.Int64  // operations a Hang fault holds right now
}

type faultState struct {
	Fault
	id      FaultID
	seen    uint64
	fired   uint64
	release chan struct{} // Hang: closed when the fault is removed
}

// decision is what one operation must suffer, drawn under the mutex.
type decision struct {
	action  Action
	err     error
	keep    int           // Tear: bytes to write
	flipAt  []int64       // Flip
	bit     int           // Flip with no FlipAt: the random bit index
	release chan struct{} // Hang: the operation waits for it to close
}

var _ Device = (*Faulty)(nil)

// NewFaulty wraps inner; seed drives Prob, random Keep and random flips.
func NewFaulty(inner Device, seed uint64) *Faulty {
	return &Faulty{inner: inner, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Inject adds f and returns its id. It panics on a Fault that can never
// make sense (no Op, Tear on anything but writes, Flip on anything but
// reads): a bug in the test that wrote it.
func (f *Faulty) Inject(fl Fault) FaultID {
	switch {
	case fl.Op == 0 || fl.Op&^(OpRead|OpWrite|OpSync) != 0:
		panic(fmt.Sprintf("blockdev: Fault with bad Op %#x", fl.Op))
	case fl.Action == Tear && fl.Op != OpWrite:
		panic("blockdev: a Tear fault applies to OpWrite only")
	case fl.Action == Flip && fl.Op != OpRead:
		panic("blockdev: a Flip fault applies to OpRead only")
	case fl.Action > Hang:
		panic(fmt.Sprintf("blockdev: Fault with bad Action %d", fl.Action))
	}
	s := &faultState{Fault: fl}
	if fl.Action == Hang {
		s.release = make(chan struct{})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	s.id = f.nextID
	f.faults = append(f.faults, s)
	return f.nextID
}

// Remove deletes the fault with id, if present, and lets the operations
// it holds (Hang) through.
func (f *Faulty) Remove(id FaultID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.faults {
		if s.id == id {
			f.faults = append(f.faults[:i], f.faults[i+1:]...)
			s.free()
			return
		}
	}
}

// Clear deletes every fault: the device behaves as the inner one again,
// and operations held by Hang faults go through.
func (f *Faulty) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.faults {
		s.free()
	}
	f.faults = nil
}

// free releases what a removed fault holds.
func (s *faultState) free() {
	if s.release != nil {
		close(s.release)
	}
}

// Fired is how many times any fault has fired.
func (f *Faulty) Fired() uint64 { return f.fired.Load() }

// Hanging is how many operations Hang faults hold right now.
func (f *Faulty) Hanging() int { return int(f.hanging.Load()) }

// Inner returns the wrapped device.
func (f *Faulty) Inner() Device { return f.inner }

// Direct reports whether the inner device does direct I/O.
func (f *Faulty) Direct() bool { return IsDirect(f.inner) }

// decide evaluates the faults for one operation; ok is false if none fired.
func (f *Faulty) decide(op Op, off int64, n int) (d decision, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var chosen *faultState
	for _, s := range f.faults {
		if s.Op&op == 0 || (s.Match != nil && !s.Match(off, n)) {
			continue
		}
		s.seen++
		if chosen == nil && f.fires(s) {
			chosen = s
		}
	}
	if chosen == nil {
		return d, false
	}
	chosen.fired++
	f.fired.Add(1)
	return f.draw(chosen, n), true
}

func (f *Faulty) fires(s *faultState) bool {
	switch {
	case s.Nth != 0 && s.seen != s.Nth,
		s.seen <= s.After,
		s.Limit != 0 && s.fired >= s.Limit:
		return false
	}
	return s.Prob == 0 || f.rng.Float64() < s.Prob
}

func (f *Faulty) draw(s *faultState, n int) decision {
	d := decision{action: s.Action, err: s.Err, flipAt: s.FlipAt, release: s.release}
	if d.err == nil {
		d.err = ErrInjected
	}
	switch {
	case s.Action == Tear:
		blocks := n / f.inner.BlockSize()
		keep := s.Keep
		if keep < 0 && blocks > 0 {
			keep = f.rng.IntN(blocks)
		}
		d.keep = min(max(keep, 0), max(blocks-1, 0)) * f.inner.BlockSize()
	case s.Action == Flip && len(s.FlipAt) == 0 && n > 0:
		d.bit = f.rng.IntN(n * 8)
	}
	return d
}
