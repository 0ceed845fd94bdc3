package hybrid

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"strata/blockdev"
)

// fileDev is a minimal file-backed Device for the crash test (buffered
// I/O; SIGKILL keeps what reached the page cache, as a power cut keeps
// what reached the disk).
type fileDev struct {
	f    *os.File
	size int64
}

var _ blockdev.Device = (*fileDev)(nil)

func openFileDev(path string, size int64) (*fileDev, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	return &fileDev{f: f, size: size}, nil
}

func (d *fileDev) ReadAt(p []byte, off int64) (int, error) {
	if err := blockdev.CheckIO(p, off, d.size, 512); err != nil {
		return 0, err
	}
	return d.f.ReadAt(p, off)
}

func (d *fileDev) WriteAt(p []byte, off int64) (int, error) {
	if err := blockdev.CheckIO(p, off, d.size, 512); err != nil {
		return 0, err
	}
	return d.f.WriteAt(p, off)
}

func (d *fileDev) Sync() error           { return nil } // the page cache survives SIGKILL
func (d *fileDev) Size() int64           { return d.size }
func (d *fileDev) BlockSize() int        { return 512 }
func (d *fileDev) Stats() blockdev.Stats { return blockdev.Stats{} }
func (d *fileDev) Close() error          { return d.f.Close() }

const crashDevSize = 48 << 20

// crashChild runs in the child process: it inserts unique keys (and
// overwrites a few hot keys) until killed. Every 200 keys it waits until
// everything is written and prints "settled N": keys below N were
// committed to the device.
func crashChild() {
	dev, err := openFileDev(os.Getenv(crashChildEnv), crashDevSize)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	o := testOpts()
	o.FlushDelay = 100 * time.Microsecond
	e, err := OpenEngine(dev, o)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		k := []byte(fmt.Sprintf("u%d", i))
		for !e.Insert(k, mval(k, uint64(i), 500+i%1500), time.Time{}) {
			time.Sleep(100 * time.Microsecond)
		}
		hk := []byte(fmt.Sprintf("hot%d", i%10))
		e.Insert(hk, mval(hk, uint64(i), 64+i%3000), time.Time{})
		if i%200 == 199 {
			for e.queued.Load() != 0 || e.pending.len() != 0 {
				time.Sleep(50 * time.Microsecond)
			}
			fmt.Println("settled", i+1)
		}
	}
}

// TestEngineCrash kills a child process mid-write with SIGKILL, several
// times at different moments, and reopens the device in quiet and strict
// mode: every settled key must be served whole, every hit must be a whole
// value of its key.
func TestEngineCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	for round, target := range []int{2, 9, 20} {
		path := filepath.Join(t.TempDir(), "dev")
		settled := runCrashChild(t, path, target)
		for _, mode := range []RecoveryMode{RecoveryQuiet, RecoveryStrict} {
			dev, err := openFileDev(path, crashDevSize)
			if err != nil {
				t.Fatal(err)
			}
			o := testOpts()
			o.Recovery = mode
			e, err := OpenEngine(dev, o)
			if err != nil {
				t.Fatalf("round %d %s: open: %v", round, mode, err)
			}
			checkCrashed(t, e, settled)
			closeT(t, e)
			dev.Close()
		}
	}
}

// runCrashChild starts the child, lets it settle target times plus a
// moment, kills it and returns the last settled count.
func runCrashChild(t *testing.T, path string, target int) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	settled, seen := 0, 0
	sc := bufio.NewScanner(out)
	for seen < target && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "settled" {
			settled, _ = strconv.Atoi(f[1])
			seen++
		} else {
			t.Logf("child: %s", sc.Text())
		}
	}
	time.Sleep(time.Duration(target) * time.Millisecond) // land the kill mid-write
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended by %v, not SIGKILL (settled %d)", err, settled)
	}
	if settled == 0 {
		t.Fatal("child never settled")
	}
	return settled
}

func checkCrashed(t *testing.T, e *Engine, settled int) {
	t.Helper()
	extra := 0
	for i := 0; i < settled+2000; i++ {
		k := []byte(fmt.Sprintf("u%d", i))
		v, ok := e.Get(k, nil)
		if !ok {
			if i < settled {
				t.Fatalf("settled key %s lost (settled %d)", k, settled)
			}
			continue
		}
		if ver, whole := checkWhole(k, v); !whole || ver != uint64(i) {
			t.Fatalf("key %s: bad value (version %d)", k, ver)
		}
		if i >= settled {
			extra++
		}
	}
	for i := range 10 {
		k := []byte(fmt.Sprintf("hot%d", i))
		if v, ok := e.Get(k, nil); ok {
			if _, whole := checkWhole(k, v); !whole {
				t.Fatalf("hot key %s: bad value", k)
			}
		} else {
			t.Fatalf("hot key %s lost", k)
		}
	}
	t.Logf("settled %d, %d more keys recovered, torn tails %d", settled, extra, e.Stats().RecoveryTornTails)
}
