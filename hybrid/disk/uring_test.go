package disk

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"strata/blockdev"
)

// ringSpy is a device that offers UseRing (as blockdev.Disk does) and
// records its calls, failing them with err.
type ringSpy struct {
	blockdev.Device
	mu     sync.Mutex
	depths []int
	err    error
}

func (s *ringSpy) UseRing(depth int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.depths = append(s.depths, depth)
	return s.err
}

// TestUringAsksForRing: RuntimeUring asks a device that offers a ring for
// one as deep as the read pool with a ring (ringFanout × ReadWorkers),
// once, at Open; the other runtimes never
// do. A device that cannot (no io_uring) is logged and still serves, on
// pread.
func TestUringAsksForRing(t *testing.T) {
	for _, tc := range []struct {
		mode RuntimeMode
		err  error
		want []int
	}{
		{RuntimeUring, nil, []int{96}},
		{RuntimeUring, errors.New("io_uring_setup: operation not permitted"), []int{96}},
		{RuntimeSeparated, nil, nil},
		{RuntimeUnified, nil, nil},
		{RuntimeDisabled, nil, nil},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			spy := &ringSpy{Device: newMem(t, 16<<20), err: tc.err}
			var logs logBuffer
			o := testOpts()
			o.Runtime, o.ReadWorkers = tc.mode, 6
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			e := openT(t, spy, o)
			insertAll(t, e, "r", 20, 1, 3000)
			settle(t, e)
			for i := range 20 {
				if _, ok := e.Get(keyN("r", i), nil); !ok {
					t.Fatalf("r%d: miss", i)
				}
			}
			closeT(t, e)
			if !slices.Equal(spy.depths, tc.want) {
				t.Errorf("UseRing calls %v, want %v", spy.depths, tc.want)
			}
			if warned := strings.Contains(logs.String(), "io_uring is not available"); warned != (tc.err != nil) {
				t.Errorf("warning logged: %v, want %v; log:\n%s", warned, tc.err != nil, logs.String())
			}
		})
	}
}

// TestUringOnDisk runs the engine with RuntimeUring on a real O_DIRECT
// file: values written, read back through the ring, intact; a reopened
// engine recovers and serves them too.
func TestUringOnDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache")
	dev, err := blockdev.Open(path, blockdev.Options{Size: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	o := testOpts()
	o.Runtime = RuntimeUring
	e := openT(t, dev, o)
	const n = 300
	insertAll(t, e, "u", n, 1, 5000)
	settle(t, e)
	check := func(e *Engine) {
		t.Helper()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := g; i < n; i += 8 {
					k := keyN("u", i)
					got, ok := e.Get(k, nil)
					if want := mval(k, 1, 5000); !ok || !bytes.Equal(got, want) {
						t.Errorf("%s: ok=%v, len %d", k, ok, len(got))
					}
				}
			})
		}
		wg.Wait()
	}
	check(e)
	if s := e.Stats(); s.ReadTimeouts != 0 || s.IOErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
	closeT(t, e)
	e = openT(t, dev, o) // UseRing again: the device already has its ring
	check(e)
	closeT(t, e)
	if s := dev.Stats(); s.Errors != 0 || s.Reads == 0 {
		t.Fatalf("device stats %+v", s)
	}
}
