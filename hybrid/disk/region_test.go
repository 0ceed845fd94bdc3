package disk

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
)

// Tests of region headers at recovery: an unused region is told from a
// damaged one; quiet drops a damaged region's data and says so, strict
// refuses to open.

// logBuffer collects slog text output from concurrent goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// filledRegions writes r0..r(n-1) of 20 KiB across several 1 MiB regions,
// closes the engine and returns the device and each key's region.
func filledRegions(t *testing.T, n int) (*blockdev.MemDevice, map[string]uint32) {
	dev := newMem(t, 8<<20)
	e := openT(t, dev, testOpts())
	insertAll(t, e, "r", n, 1, 20<<10)
	where := map[string]uint32{}
	for i := range n {
		v, ok := e.ix.get(xxhash.Sum64(keyN("r", i)))
		if !ok {
			t.Fatalf("r%d not indexed", i)
		}
		where[string(keyN("r", i))], _, _ = e.lay.unpack(v)
	}
	closeT(t, e)
	return dev, where
}

func openLogged(dev blockdev.Device, mode RecoveryMode) (*Engine, *logBuffer, error) {
	o := testOpts()
	o.Recovery = mode
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e, err := Open(dev, o)
	return e, logs, err
}

// TestCorruptRegionHeader flips one byte of a region header (magic,
// checksum, instance, sequence, version, reserved): strict refuses with
// ErrCorrupt; quiet opens, serves every key of the other regions and none
// of that region, logs the region and the reason, counts it, and zeroes the
// header so that a strict open afterwards succeeds.
func TestCorruptRegionHeader(t *testing.T) {
	dev, where := filledRegions(t, 150)
	const victim = 1
	for _, at := range []int{0, 2, 5, 9, 17, 25, 30} {
		t.Run(fmt.Sprintf("byte%d", at), func(t *testing.T) {
			bad := dev.CrashClone()
			flipByte(t, bad, regionBaseOf(t, bad, victim)+int64(at), 0x21)
			if _, _, err := openLogged(bad.CrashClone(), RecoveryStrict); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("strict opened a damaged region header: %v", err)
			}
			e, logs, err := openLogged(bad, RecoveryQuiet)
			if err != nil {
				t.Fatal(err)
			}
			checkDropped(t, e, where, victim)
			want := fmt.Sprintf("region header damaged; its data is dropped and the region reused\" region=%d reason=", victim)
			if out := logs.String(); !strings.Contains(out, want) || !strings.Contains(out, "damaged_regions=1") {
				t.Fatalf("log lacks the damaged region:\n%s", out)
			}
			closeT(t, e)
			e, _, err = openLogged(bad, RecoveryStrict)
			if err != nil {
				t.Fatalf("strict after quiet dropped the region: %v", err)
			}
			closeT(t, e)
		})
	}
}

// checkDropped: keys of region victim miss, every other key is whole, and
// one damaged region is counted.
func checkDropped(t *testing.T, e *Engine, where map[string]uint32, victim uint32) {
	t.Helper()
	if s := e.Stats(); s.RecoveryDamaged != 1 {
		t.Fatalf("RecoveryDamaged %d, want 1", s.RecoveryDamaged)
	}
	lost := 0
	for k, r := range where {
		v, ok := e.Get([]byte(k), nil)
		switch {
		case r == victim && ok:
			t.Fatalf("%s served from a region whose header is damaged", k)
		case r == victim:
			lost++
		case !ok || !equalVal(k, v):
			t.Fatalf("%s (region %d) lost", k, r)
		}
	}
	if lost == 0 {
		t.Fatalf("no key in region %d", victim)
	}
}

// regionBaseOf is the device offset of region r under testOpts.
func regionBaseOf(t *testing.T, dev blockdev.Device, r uint32) int64 {
	o := testOpts()
	o.EnsureDefaults()
	lay, err := newLayout(dev, &o)
	if err != nil {
		t.Fatal(err)
	}
	return lay.regionBase(r)
}

// TestFormatZeroesRegionHeaders: a device full of foreign bytes is
// formatted, one region is written, and a strict open finds no damage: the
// unused regions' headers were zeroed by the format, not left as they were.
func TestFormatZeroesRegionHeaders(t *testing.T) {
	dev := newMem(t, 8<<20)
	junk := make([]byte, dev.Size())
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	writeRaw(t, dev, 0, junk)
	e := openT(t, dev, testOpts())
	insertAll(t, e, "z", 10, 1, 1000)
	closeT(t, e)
	e, logs, err := openLogged(dev, RecoveryStrict)
	if err != nil {
		t.Fatalf("strict open after format: %v\n%s", err, logs)
	}
	defer closeT(t, e)
	if s := e.Stats(); s.RecoveryDamaged != 0 || s.Recovered != 10 {
		t.Fatalf("damaged %d, recovered %d", s.RecoveryDamaged, s.Recovered)
	}
}
