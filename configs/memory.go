package configs

import (
	"fmt"
	"math/bits"
)

// Budget is how strata spends limits.memory, its bound on resident
// memory. The memory tier takes its capacity; what every other part may
// hold follows from the config:
//
//	runtime   32 MiB + capacity/16      Go runtime and binary, metrics, memory-tier tables
//	disk      devices · ((2·flushers + reclaimers) · buffer_size   write buffers, reclaim scans
//	            + 2·flushers · buffer_size                     write queue: what the buffers mirror
//	            + read_workers · pow2(slice_size + 64 KiB))       read buffers
//	          + total disk size / 1024                      index (≈24 B per entry of ≥ 24 KiB)
//	conns     limits.max_conns · (max_header_bytes + 8 KiB)   client connections
//	          + Σ origins[].max_conns · (max_header_bytes + 8 KiB)  origin connections
//	work      the rest, at least 32 MiB (64 MiB when limits.memory is derived):
//	          1/8 more disk write queue, shared by the devices (pooled items up to twice that),
//	          1/4 large fills, 1/8 small fills, 1/4 buffers of responses
//	          streaming stored sliced bodies, the rest other responses in
//	          flight and garbage not yet collected.
//
// limits.memory left 0 is the memory cgroup's limit less a tenth (at least
// 16 MiB) for the kernel's share, or, outside a cgroup, the sum of the
// terms above with 64 MiB of work. The Go heap's soft limit
// (debug.SetMemoryLimit) is the budget less the memory tier less 16 MiB
// for what the runtime does not manage.
type Budget struct {
	Total   int64 // limits.memory as resolved
	Tier    int64 // cache.memory.capacity
	Runtime int64
	Disk    int64
	Conns   int64
	Work    int64
	Source  string // "limits.memory", "cgroup" or "derived"
}

// Budget terms that are constants.
const (
	budgetRuntime  = 32 * MiB
	budgetConnBase = 8 * KiB
	budgetWorkMin  = 32 * MiB
	budgetWorkAuto = 64 * MiB
	budgetNonHeap  = 16 * MiB
	budgetIndexDiv = 1024
	largeFillMin   = 64 * KiB // proxy: a fill is large from this declared length
	// originHeaderDefault is proxy's default origins[].max_header_bytes:
	// each origin connection reads through a buffer of that size.
	originHeaderDefault = 64 * KiB
)

// budget resolves limits.memory for c and checks that it holds the fixed
// terms plus the least working memory.
func (c *Config) budget(ps *problems) Budget {
	b := Budget{Tier: c.Cache.Memory.Capacity.Bytes(), Runtime: budgetRuntime + c.Cache.Memory.Capacity.Bytes()/16}
	b.Disk = c.diskBudget()
	b.Conns = int64(c.Limits.MaxConns) * (c.Limits.MaxHeaderBytes.Bytes() + budgetConnBase)
	for _, o := range c.Origins {
		hdr := o.MaxHeaderBytes.Bytes()
		if hdr == 0 {
			hdr = originHeaderDefault
		}
		b.Conns += int64(o.MaxConns) * (hdr + budgetConnBase)
	}
	fixed := b.Tier + b.Runtime + b.Disk + b.Conns
	switch {
	case c.Limits.Memory > 0:
		b.Total, b.Source = c.Limits.Memory.Bytes(), "limits.memory"
	case c.cgroupLimit > 0:
		b.Total, b.Source = c.cgroupLimit-max(16*MiB, c.cgroupLimit/10), "cgroup"
	default:
		b.Total, b.Source = fixed+budgetWorkAuto, "derived"
	}
	b.Work = b.Total - fixed
	if b.Work < budgetWorkMin && b.Source != "cgroup" { // a cgroup too small is logged (Short), not refused
		ps.add("limits.memory", "%s leaves %s for work, want %s: the memory tier takes %s, the runtime %s, disk buffers and index %s, connections %s; raise it, or lower cache.memory.capacity or limits.max_conns",
			mib(b.Total), mib(max(b.Work, 0)), mib(budgetWorkMin), mib(b.Tier), mib(b.Runtime), mib(b.Disk), mib(b.Conns))
	}
	return b
}

// diskBudget is the disk tier's fixed memory: 0 without a disk. Each
// device's engine has its own buffers; the index grows with the devices'
// total size.
func (c *Config) diskBudget() int64 {
	d := &c.Cache.Disk
	devs := d.List()
	if len(devs) == 0 {
		return 0
	}
	buf := d.BufferSize.Bytes()
	var size int64
	for _, dev := range devs {
		size += dev.Size.Bytes()
	}
	perDevice := int64(2*d.Flushers+d.Reclaimers)*buf + queueFloor(d.Flushers, buf) + c.readBufferBytes()
	return int64(len(devs))*perDevice + size/budgetIndexDiv
}

// readBufferBytes is each device's read buffers: read_workers reads of a
// slice and its key and headers, rounded up to a power of two: at least
// the disk engine's buffer for it. The engine holds its reads in flight to it
// (disk.Options.ReadBufferBytes), however deep its read pool.
func (c *Config) readBufferBytes() int64 {
	read := int64(1) << bits.Len64(uint64(c.Cache.SliceSize.Bytes()+64*KiB-1))
	return int64(c.Cache.Disk.ReadWorkers) * read
}

// queueFloor is the part of each device's write queue the disk term
// holds: what its flushers' buffers take in one cycle (each fills one
// buffer while it writes the other). The queue counts an entry until it
// is written, so a bound below this leaves a flusher waiting on the
// device with the queue full: entries are dropped (reason "queue") or,
// while a fresh device fills, refused by admission, whose fill stops at
// half the queue, although the device is writing as fast as it can. With
// the default config and a derived budget the queue was 8 MiB, half the
// flushers' 16 MiB.
func queueFloor(flushers int, bufferSize int64) int64 {
	return 2 * int64(flushers) * bufferSize
}

// Short reports a budget (from a memory cgroup) that leaves less than the
// least working memory; the pools are then sized as if it did not.
func (b *Budget) Short() bool { return b.Work < budgetWorkMin }

// work is the working memory the pools are sized from.
func (b *Budget) work() int64 { return max(b.Work, budgetWorkMin) }

// QueueBytes is each of n devices' disk write queue bound: the flushers'
// cycle (queueFloor, held in the disk term) plus its share of an eighth
// of work.
func (b *Budget) QueueBytes(flushers int, bufferSize int64, n int) int64 {
	return queueFloor(flushers, bufferSize) + b.work()/8/int64(max(n, 1))
}

// MaxLargeFills is how many large fills a quarter of work holds (each
// keeps up to window slices), capped by the configured value.
func (b *Budget) MaxLargeFills(configured int, window, sliceSize int64) int {
	return capCount(configured, b.work()/4/(window*(sliceSize+KiB)))
}

// MaxFills is how many small fills (up to largeFillMin each) an eighth of
// work holds, capped by the configured value.
func (b *Budget) MaxFills(configured int) int {
	return capCount(configured, b.work()/8/largeFillMin)
}

func capCount(configured int, n int64) int { return int(max(1, min(int64(configured), n))) }

// StreamBytes bounds the buffers of responses streaming stored sliced
// bodies: a quarter of work.
func (b *Budget) StreamBytes() int64 { return b.work() / 4 }

// HeapLimit is the Go heap's soft limit.
func (b *Budget) HeapLimit() int64 { return max(b.Total-b.Tier-budgetNonHeap, budgetWorkMin) }

// String renders b for the start-up log.
func (b Budget) String() string {
	return fmt.Sprintf("total=%s (%s) tier=%s runtime=%s disk=%s conns=%s work=%s",
		mib(b.Total), b.Source, mib(b.Tier), mib(b.Runtime), mib(b.Disk), mib(b.Conns), mib(b.Work))
}

// mib renders n bytes in MiB with one decimal.
func mib(n int64) string { return fmt.Sprintf("%.1fMiB", float64(n)/float64(MiB)) }

// applyBudget sizes the disk write queue and the proxy's fill bounds from
// p.Memory. REQUIRES: EnsureDefaults ran on p's parts.
func (p *Parts) applyBudget() {
	b := &p.Memory
	if n := len(p.Devices); n > 0 {
		p.Cache.Disk.QueueBytes = b.QueueBytes(p.Cache.Disk.Flushers, int64(p.Cache.Disk.BufferSize), n)
	}
	px := &p.Proxy
	px.MaxLargeFills = b.MaxLargeFills(px.MaxLargeFills, int64(px.FillWindow), int64(px.SliceSize))
	px.MaxFills = b.MaxFills(px.MaxFills)
	px.MaxStreamBytes = b.StreamBytes()
}
