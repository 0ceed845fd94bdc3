package hybrid

import (
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// Stats is a snapshot of a Cache's counters, for the proxy's metrics.
// Counters are cumulative, gauges current.
type Stats struct {
	Memory memory.Stats
	// Disk is the engines' snapshots summed (Online: every engine is in
	// service); zero when the cache is memory only.
	Disk disk.Stats
	// Device is the disk devices' I/O counters summed; zero when memory
	// only.
	Device      blockdev.Stats
	DiskEnabled bool
	// DeviceOnline says, for each device in Options order, whether its
	// engine is in service; nil when memory only.
	DeviceOnline []bool

	Promotions    uint64 // disk hits copied into memory
	EvictedToDisk uint64 // memory evictions queued for a disk write
	DirectToDisk  uint64 // inserts the memory tier refused, sent to disk
	Fetches       uint64 // GetOrFetch fetches started
	FetchWaits    uint64 // GetOrFetch callers that joined a running fetch
	FetchErrors   uint64 // fetches that failed

	// Admission's decisions on disk writes (Options.Admission), by kind:
	// admitted within the rate (or with no rate limit), admitted past it to
	// fill a device's free space; refused as cold (Rejected: the frequency
	// filter), over the rate with no room to fill (Throttled), over the
	// endurance budget with room to fill (OverBudget).
	AdmittedRate, AdmittedFill                       uint64
	RefusedCold, RefusedThrottled, RefusedOverBudget uint64
}

// Hits returns memory and disk hits; Misses the lookups neither tier
// answered.
func (s *Stats) Hits() (memory, disk uint64) { return s.Memory.Hits, s.Disk.Hits }

// Misses is the number of Gets that neither tier answered.
func (s *Stats) Misses() uint64 {
	if !s.DiskEnabled {
		return s.Memory.Misses
	}
	return s.Disk.Gets - s.Disk.Hits
}

// Stats returns a snapshot.
func (c *Cache) Stats() Stats {
	s := Stats{
		Memory:        c.mem.Stats(),
		Promotions:    c.c.promotions.Load(),
		EvictedToDisk: c.c.evictedToDisk.Load(),
		DirectToDisk:  c.c.directToDisk.Load(),
		Fetches:       c.c.fetches.Load(),
		FetchWaits:    c.c.fetchWaits.Load(),
		FetchErrors:   c.c.fetchErrors.Load(),

		AdmittedRate: c.c.admitRate.Load(), AdmittedFill: c.c.admitFill.Load(),
		RefusedCold: c.c.refuseCold.Load(), RefusedThrottled: c.c.refuseRate.Load(),
		RefusedOverBudget: c.c.refuseBudget.Load(),
	}
	if c.disks != nil {
		s.DiskEnabled = true
		s.Disk, s.Device, s.DeviceOnline = c.disks.stats()
	}
	return s
}
