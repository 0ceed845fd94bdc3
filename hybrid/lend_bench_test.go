package hybrid

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
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

// BenchmarkPromotionMix: 64 KiB values, a working set of 4x the memory
// tier, read by Lend with keys drawn uniformly or by Zipf (s 1.1: the
// hottest 10% of keys take about 70% of reads), under the default
// second-hit and never promotion. Reports memory hits and promotions per
// read: a promotion is a 64 KiB copy and an eviction, worth it only if it
// raises the memory hits. Measured (200,000 reads): uniform 0.245 memory
// hits a read with or without promotion, 0.282 promotions a read with one
// slot per 16 KiB for every size, 0.160 with the filter sized by value;
// Zipf 0.875 memory hits either way with 0.047 and 0.030 promotions, and
// 0.020 memory hits with promotion never (the hot keys stay on disk).
func BenchmarkPromotionMix(b *testing.B) {
	const n, size = 4096, 64 << 10 // 64 MiB of memory: the filter narrows for 64 KiB
	for _, run := range []struct {
		dist string
		p    Promotion
	}{{"uniform", PromoteSecondHit}, {"uniform", PromoteNever}, {"zipf", PromoteSecondHit}, {"zipf", PromoteNever}} {
		dist := run.dist
		b.Run(dist+"/"+string(run.p), func(b *testing.B) {
			c := openPromotionBench(b, 2*n*size, n*size/4, run.p)
			keys := insertKept(c, "key", n, size)
			rng := rand.New(rand.NewPCG(1, 2))
			zipf := rand.NewZipf(rng, 1.1, 1, n-1)
			pick := func() int {
				if dist == "zipf" {
					return int(zipf.Uint64())
				}
				return rng.IntN(n)
			}
			var v Value
			var mem int
			p0 := c.Stats().Promotions
			for b.Loop() {
				if tier, _ := c.Lend(keys[pick()], &v); tier == TierMemory {
					mem++
				}
				v.Release()
			}
			b.ReportMetric(float64(mem)/float64(b.N), "mem-hits/op")
			b.ReportMetric(float64(c.Stats().Promotions-p0)/float64(b.N), "promotions/op")
		})
	}
}

// BenchmarkPromotionShift: the memory tier full of entries an earlier
// workload hit often (in S3-FIFO's main queue with hit counts), then a
// uniform working set of 4x the memory tier in 64 KiB values, read by Lend
// (run with -benchtime 16384x: four reads a key). Reports memory hits and
// promotions per read of the new set: what the tier gives a workload that
// replaces another, as peerbench's scenario 7 replaces scenario 6's.
//
// Measured (16,384 reads): second-hit 0.116 memory hits a read (0.243 on
// a fresh tier, BenchmarkPromotionMix), never 0.043. The old entries sit in
// S3-FIFO's main queue, which is evicted from only when the small queue
// is within its tenth, while promotions land in the small queue: a new
// set keeps about a tenth of the tier. Promoting second hits into main
// instead (memory.Cache.SetWarm, as a ghost hit enters) gave 0.193 here
// and raised scenario 7's memory hits from 4% to 11% (6,7 run alone, four
// pairs), but scenario 6 then lost 1.5-2 points of hit ratio: its fills,
// left a tenth of the tier, were evicted before the disk's rate limit
// admitted them, and dropped. Not adopted; a fix must not cost fills.
func BenchmarkPromotionShift(b *testing.B) {
	const n, size = 4096, 64 << 10
	for _, p := range []Promotion{PromoteSecondHit, PromoteNever} {
		b.Run(string(p), func(b *testing.B) {
			c := openPromotionBench(b, 4*n*size, n*size/4, p)
			var v Value
			// The earlier workload: a set that fits, each key hit often
			// enough to reach main with a full hit count.
			old := insertKept(c, "old", n/5, size)
			for range 4 {
				for _, k := range old {
					c.Lend(k, &v)
					v.Release()
				}
			}
			keys := insertKept(c, "new", n, size)
			rng := rand.New(rand.NewPCG(1, 2))
			var mem int
			p0 := c.Stats().Promotions
			for b.Loop() {
				if tier, _ := c.Lend(keys[rng.IntN(n)], &v); tier == TierMemory {
					mem++
				}
				v.Release()
			}
			b.ReportMetric(float64(mem)/float64(b.N), "mem-hits/op")
			b.ReportMetric(float64(c.Stats().Promotions-p0)/float64(b.N), "promotions/op")
		})
	}
}

// openPromotionBench opens a Cache of mem bytes of memory in front of a
// device of dev bytes, under promotion policy p, closed when b ends.
func openPromotionBench(b *testing.B, dev, mem int64, p Promotion) *Cache {
	d, err := blockdev.NewMem(dev, 4096)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(Options{
		Memory: memory.Options{Capacity: mem, Shards: 4},
		Disk: disk.Options{RegionSize: 16 << 20, QueueBytes: 64 << 20,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Device:    d,
		Promotion: p,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// insertKept inserts count values of size bytes under prefix-0, prefix-1,
// ..., waiting while the disk's queue is deep so that every eviction
// reaches the disk, and returns the keys.
func insertKept(c *Cache, prefix string, count, size int) [][]byte {
	keys := make([][]byte, count)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
		c.Insert(keys[i], bytes.Repeat([]byte{byte(i)}, size), time.Time{})
		for c.Stats().Disk.QueuedBytes > 32<<20 {
			time.Sleep(time.Millisecond)
		}
	}
	return keys
}
