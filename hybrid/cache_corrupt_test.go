package hybrid

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// TestOpenRefusesDamagedRegion: strict refusal reaches a Cache's caller
// as ErrCorrupt, the engine's sentinel seen through hybrid.
func TestOpenRefusesDamagedRegion(t *testing.T) {
	dev, err := blockdev.NewMem(8<<20, 512)
	if err != nil {
		t.Fatal(err)
	}
	o := disk.Options{RegionSize: 1 << 20, BufferSize: 64 << 10, FlushDelay: -1, ErrorLimit: -1}
	e, err := disk.Open(dev, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		e.Insert(fmt.Appendf(nil, "r%d", i), make([]byte, 20<<10), time.Time{})
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Region 0 starts at the superblock's data start (bytes 32..40);
	// byte 12 of its header is inside the instance id, under the checksum.
	blk := blockdev.AlignedBuffer(512, 512)
	if _, err := dev.ReadAt(blk, 0); err != nil {
		t.Fatal(err)
	}
	base := int64(binary.LittleEndian.Uint64(blk[32:40]))
	if _, err := dev.ReadAt(blk, base); err != nil {
		t.Fatal(err)
	}
	blk[12] ^= 0x04
	if _, err := dev.WriteAt(blk, base); err != nil {
		t.Fatal(err)
	}
	o.Recovery = disk.RecoveryStrict
	_, err = Open(Options{Memory: memory.Options{Capacity: 1 << 20}, Disk: o, Device: dev})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "region 0 header") {
		t.Fatalf("Open: %v", err)
	}
}
