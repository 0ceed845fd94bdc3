package blockdev

import (
	"bytes"
	"errors"
	"testing"
)

func TestMemDeviceRules(t *testing.T) {
	d, err := NewMem(64<<10, 4096)
	if err != nil {
		t.Fatal(err)
	}
	buf := AlignedBuffer(8192, 4096)
	for i := range buf {
		buf[i] = byte(i)
	}
	tests := []struct {
		name string
		p    []byte
		off  int64
		want error
	}{
		{"ok", buf, 4096, nil},
		{"misaligned offset", buf, 100, ErrMisaligned},
		{"misaligned length", buf[:100], 0, ErrMisaligned},
		{"misaligned address", AlignedBuffer(8192+4096, 4096)[1 : 1+4096], 0, ErrMisaligned},
		{"past end", buf, 60 << 10, ErrOutOfRange},
		{"negative", buf, -4096, ErrOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.WriteAt(tc.p, tc.off); !errors.Is(err, tc.want) {
				t.Fatalf("WriteAt: got %v, want %v", err, tc.want)
			}
			if _, err := d.ReadAt(tc.p, tc.off); !errors.Is(err, tc.want) {
				t.Fatalf("ReadAt: got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMemDeviceCrashClone(t *testing.T) {
	d, err := NewMem(16<<10, 512)
	if err != nil {
		t.Fatal(err)
	}
	w := AlignedBuffer(512, 512)
	copy(w, "hello")
	if _, err := d.WriteAt(w, 1024); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadAt(w, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	c := d.CrashClone()
	r := AlignedBuffer(512, 512)
	if _, err := c.ReadAt(r, 1024); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r, w) {
		t.Fatal("clone lost a completed write")
	}
	if s := c.Stats(); s.Reads != 1 || s.ReadBytes != 512 {
		t.Fatalf("stats %+v", s)
	}
}
