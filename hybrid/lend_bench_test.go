package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// BenchmarkCacheDiskHit: disk hits of 64 KiB values on a MemDevice
// (promotion off, so every hit reads the device), by Get (a copy into the
// caller's buffer) and by Lend (the read buffer lent, then released).
// cpu-ns/op is the process's CPU per hit, the read workers' included.
func BenchmarkCacheDiskHit(b *testing.B) {
	const n, size = 512, 64 << 10
	dev, err := blockdev.NewMem(128<<20, 4096)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(Options{
		Memory:    memory.Options{Capacity: 1 << 20, Shards: 4},
		Disk:      disk.Options{RegionSize: 4 << 20, QueueBytes: 64 << 20},
		Device:    dev,
		Promotion: PromoteNever,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", i)
		c.Insert(keys[i], bytes.Repeat([]byte{byte(i)}, size), time.Time{})
	}
	for s := c.Stats().Disk; s.QueuedBytes != 0 || s.PendingKeys != 0; s = c.Stats().Disk {
		time.Sleep(time.Millisecond)
	}
	for _, mode := range []string{"get", "lend"} {
		b.Run(mode, func(b *testing.B) {
			var next, hits atomic.Uint64
			b.SetBytes(size)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]byte, 0, size)
				var v Value
				i := next.Add(7919)
				for pb.Next() {
					i++
					k := keys[i%n]
					var tier Tier
					if mode == "get" {
						dst, tier, _ = c.Get(k, dst[:0])
					} else {
						tier, _ = c.Lend(k, &v)
						v.Release()
					}
					if tier == TierDisk {
						hits.Add(1)
					}
				}
			})
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(hits.Load())/float64(b.N), "disk-hits/op")
		})
	}
}
