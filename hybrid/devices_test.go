package hybrid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// Tests of a disk tier of several devices (devices.go).

// twoDeviceOpts is a small memory tier over two in-memory devices wrapped
// in fault injectors; a disk is taken out after 5 failures and probed
// every 20 ms. Disk hits are never promoted, so a key read twice is read
// from disk twice.
func twoDeviceOpts(t *testing.T, log *syncBuffer) (Options, []*blockdev.Faulty) {
	t.Helper()
	var faulty []*blockdev.Faulty
	var devs []blockdev.Device
	for i := range 2 {
		m, err := blockdev.NewMem(16<<20, 4096)
		if err != nil {
			t.Fatal(err)
		}
		f := blockdev.NewFaulty(m, uint64(i+1))
		faulty, devs = append(faulty, f), append(devs, f)
	}
	return Options{
		Memory: memory.Options{Capacity: 64 << 10, Shards: 1},
		Disk: disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10, FlushDelay: -1,
			ErrorLimit: 5, ErrorWindow: 10 * time.Second, ProbeInterval: 20 * time.Millisecond,
			ReadTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(log, nil))},
		Devices:   devs,
		Promotion: PromoteNever,
	}, faulty
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the logged lines containing every one of subs.
func (s *syncBuffer) lines(subs ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
next:
	for _, l := range strings.Split(s.b.String(), "\n") {
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

func hashOf(key []byte) uint64 { return xxhash.Sum64(key) }

func devKey(i int) []byte { return fmt.Appendf(nil, "key-%d", i) }
func devValue(i int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "<%d>", i), 100)
}

// openFilled opens a Cache and inserts n keys (most are evicted from the
// small memory tier to disk), then waits for every queued write. The
// caller closes the cache.
func openFilled(t *testing.T, o Options, n int) *Cache {
	t.Helper()
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.Insert(devKey(i), devValue(i), time.Time{})
	}
	deadline := time.Now().Add(20 * time.Second)
	for s := c.Stats().Disk; s.QueuedBytes != 0 || s.PendingKeys != 0; s = c.Stats().Disk {
		if time.Now().After(deadline) {
			t.Fatalf("writes not done: queued=%d pending=%d", s.QueuedBytes, s.PendingKeys)
		}
		time.Sleep(time.Millisecond)
	}
	return c
}

// TestDevicesSpreadKeys: keys spread over both devices (each holds a fair
// share), a key is only ever on the engine its hash picks, the cache's
// disk statistics are the engines' summed, and after a restart on the
// same devices every key is read back from the engine it was written to.
func TestDevicesSpreadKeys(t *testing.T) {
	var log syncBuffer
	o, faulty := twoDeviceOpts(t, &log)
	const n = 600
	c := openFilled(t, o, n)
	var perEngine [2]int
	for i := range n {
		k := devKey(i)
		e := c.disks.of(k)
		other := c.disks.engs[0]
		if e == other {
			other = c.disks.engs[1]
		}
		if _, ok := other.Get(k, nil); ok {
			t.Fatalf("%s found on the engine its hash does not pick", k)
		}
		if v, ok := e.Get(k, nil); ok {
			perEngine[jump(hashOf(k), 2)]++
			if !bytes.Equal(v, devValue(i)) {
				t.Fatalf("%s: wrong bytes", k)
			}
		}
	}
	onDisk := perEngine[0] + perEngine[1]
	if onDisk < n/2 || perEngine[0] < onDisk/3 || perEngine[1] < onDisk/3 {
		t.Fatalf("on disk per device %v of %d keys: want most keys, spread", perEngine, n)
	}
	s := c.Stats()
	e0, e1 := c.disks.engs[0].Stats(), c.disks.engs[1].Stats()
	if s.Disk.Entries != e0.Entries+e1.Entries || s.Disk.Hits != e0.Hits+e1.Hits ||
		s.Device.Writes != faulty[0].Stats().Writes+faulty[1].Stats().Writes ||
		!s.Disk.Online || len(s.DeviceOnline) != 2 {
		t.Fatalf("stats %+v not the sum of %+v and %+v", s.Disk, e0, e1)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Reopen on copies of both devices, same order: every key is
	// recovered by its own engine and served from disk.
	mem := func(f *blockdev.Faulty) blockdev.Device { return f.Inner().(*blockdev.MemDevice).CrashClone() }
	o.Devices = []blockdev.Device{mem(faulty[0]), mem(faulty[1])}
	c, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	hits := 0
	for i := range n {
		v, tier, ok := c.Get(devKey(i), nil)
		if ok {
			hits++
			if tier != TierDisk || !bytes.Equal(v, devValue(i)) {
				t.Fatalf("after restart %s: tier %v, bytes ok %v", devKey(i), tier, bytes.Equal(v, devValue(i)))
			}
		}
	}
	if hits != onDisk {
		t.Fatalf("after restart %d disk hits, want the %d keys on disk before", hits, onDisk)
	}
}

// TestDevicesOneFails: reads of one device fail (EIO): its keys become
// misses, never wrong bytes; it is taken out of service, logged once with
// its index, while keys on the other device keep hitting disk; once it
// answers again the probe brings it back.
func TestDevicesOneFails(t *testing.T) {
	var log syncBuffer
	o, faulty := twoDeviceOpts(t, &log)
	const n = 600
	c := openFilled(t, o, n)
	defer c.Close(context.Background())
	id := faulty[1].Inject(blockdev.Fault{Op: blockdev.OpRead, Action: blockdev.Fail, Err: syscall.EIO})
	var hits [2]int
	for range 2 { // the second round runs with device 1 out of service
		for i := range n {
			k := devKey(i)
			v, tier, ok := c.Get(k, nil)
			d := jump(hashOf(k), 2)
			switch {
			case ok && !bytes.Equal(v, devValue(i)):
				t.Fatalf("%s: wrong bytes", k)
			case ok && tier == TierDisk:
				hits[d]++
			}
		}
	}
	s := c.Stats()
	if hits[0] == 0 || hits[1] != 0 || s.Disk.Online || !s.DeviceOnline[0] || s.DeviceOnline[1] ||
		s.Disk.OutOfService != 1 || s.Disk.OfflineGets == 0 {
		t.Fatalf("disk hits per device %v, online %v %v, stats %+v", hits, s.Disk.Online, s.DeviceOnline, s.Disk)
	}
	if out := log.lines("disk taken out of service"); len(out) != 1 || !strings.Contains(out[0], "device=1") {
		t.Fatalf("out-of-service lines %q, want one for device=1", out)
	}
	faulty[1].Remove(id)
	deadline := time.Now().Add(10 * time.Second)
	for !c.Stats().Disk.Online {
		if time.Now().After(deadline) {
			t.Fatal("device 1 not back in service")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if back := log.lines("disk back in service", "device=1"); len(back) != 1 {
		t.Fatalf("back-in-service lines %q, want one for device=1", back)
	}
}

// TestDevicesOptions: Device and Devices together, or a nil device, are
// refused, and Open closes the devices it was given.
func TestDevicesOptions(t *testing.T) {
	a, _ := blockdev.NewMem(4<<20, 4096)
	b, _ := blockdev.NewMem(4<<20, 4096)
	_, err := Open(Options{Device: a, Devices: []blockdev.Device{b, nil}})
	if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "both Device and Devices") ||
		!strings.Contains(err.Error(), "Devices[1] is nil") {
		t.Fatalf("err %v", err)
	}
	if a.Close() == nil || b.Close() == nil {
		t.Fatal("devices left open after a failed Open")
	}
}

// TestDevicesOpenFails: a device the engine cannot use fails Open with
// its index; the engine opened on the other is closed (goleak checks its
// goroutines are gone) and both devices are closed.
func TestDevicesOpenFails(t *testing.T) {
	good, _ := blockdev.NewMem(16<<20, 4096)
	small, _ := blockdev.NewMem(2<<20, 4096) // too few 1 MiB regions
	_, err := Open(Options{Memory: memory.Options{Capacity: 1 << 20},
		Disk:    disk.Options{RegionSize: 1 << 20, BufferSize: 256 << 10},
		Devices: []blockdev.Device{good, small}})
	if err == nil || !strings.Contains(err.Error(), "hybrid: device 1: ") {
		t.Fatalf("err %v, want one naming device 1", err)
	}
	if good.Close() == nil || small.Close() == nil {
		t.Fatal("devices left open after a failed Open")
	}
}

// TestJump: jump is stable and balanced, and growing 2 buckets to 3 moves
// only keys to the new bucket, about a third of them.
func TestJump(t *testing.T) {
	const n = 30000
	var per [3]int
	moved := 0
	for i := range n {
		h := hashOf(devKey(i))
		two, three := jump(h, 2), jump(h, 3)
		if jump(h, 1) != 0 || two != jump(h, 2) {
			t.Fatal("jump not stable")
		}
		if two != three {
			moved++
			if three != 2 {
				t.Fatalf("key moved from %d to %d, not to the new bucket", two, three)
			}
		}
		per[three]++
	}
	for b, k := range per {
		if k < n/3-n/30 || k > n/3+n/30 {
			t.Fatalf("bucket %d holds %d of %d", b, k, n)
		}
	}
	if moved < n/3-n/30 || moved > n/3+n/30 {
		t.Fatalf("%d of %d moved", moved, n)
	}
}
