package disk

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// openFileDev opens path as a blockdev.Open device of size bytes: a
// preallocated file with O_DIRECT where the file system allows it (what a
// process writes reaches the device, so SIGKILL is a crash).
func openFileDev(path string, size int64) (blockdev.Device, error) {
	return blockdev.Open(path, blockdev.Options{Size: size, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

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
	e, err := Open(dev, o)
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

// TestCrash kills a child process mid-write with SIGKILL, several
// times at different moments, and reopens the device in quiet and strict
// mode: every settled key must be served whole, every hit must be a whole
// value of its key.
func TestCrash(t *testing.T) {
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
			e, err := Open(dev, o)
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
