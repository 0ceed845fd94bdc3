package main

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// TestSdNotify: the datagram reaches a unixgram socket named by path and
// by abstract name; without NOTIFY_SOCKET nothing is sent and nothing
// fails; a relative name is refused.
func TestSdNotify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen func(t *testing.T) (env string, addr *net.UnixAddr)
	}{
		{"path", func(t *testing.T) (string, *net.UnixAddr) {
			p := filepath.Join(t.TempDir(), "notify.sock")
			return p, &net.UnixAddr{Name: p, Net: "unixgram"}
		}},
		{"abstract", func(t *testing.T) (string, *net.UnixAddr) {
			n := "strata-test-" + t.Name() + time.Now().Format("150405.000000000")
			return "@" + n, &net.UnixAddr{Name: "\x00" + n, Net: "unixgram"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, addr := tc.listen(t)
			c, err := net.ListenUnixgram("unixgram", addr)
			if err != nil {
				t.Skipf("no unixgram socket here: %v", err)
			}
			defer c.Close()
			t.Setenv("NOTIFY_SOCKET", env)
			if err := sdNotify("READY=1\nSTATUS=serving"); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 256)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(buf[:n]); got != "READY=1\nSTATUS=serving" {
				t.Fatalf("received %q", got)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", "")
		if err := sdNotify("READY=1"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("relative", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", "notify.sock")
		if err := sdNotify("READY=1"); err == nil {
			t.Fatal("a relative socket name was accepted")
		}
	})
	t.Run("nobody listening", func(t *testing.T) {
		t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
		if err := sdNotify("READY=1"); err == nil {
			t.Fatal("no error without a socket")
		}
	})
}
