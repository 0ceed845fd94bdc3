package main

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"strata/hybrid"
)

// cacheCollector exposes every hybrid.Cache statistic: each scrape takes
// one Stats snapshot and emits it as const metrics, so the cache keeps
// its own counters and pays nothing per request for Prometheus. Names
// are strata_cache_* for the cache and its memory tier, strata_disk_* for
// the disk engine and device; counters end in _total, sizes in _bytes,
// times in _seconds. Disk metrics are left out of a memory-only cache.
// With several devices, strata_disk_* sum them (strata_disk_online is 1
// only while all are in service) and strata_disk_device_online has one
// series per device.
type cacheCollector struct {
	cache  *hybrid.Cache
	stats  []cacheStat
	online *prometheus.Desc // strata_disk_device_online{device="i"}
}

// cacheStat is one metric: its descriptor, its type, and how to read it
// from a snapshot.
type cacheStat struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	disk bool // only with a disk tier
	get  func(s *hybrid.Stats) float64
}

func newCacheCollector(c *hybrid.Cache) *cacheCollector {
	cc := &cacheCollector{cache: c, online: prometheus.NewDesc("strata_disk_device_online",
		"1 while the device (its index in the config's list, from 0) is in service, 0 while it is out of service after repeated failures.",
		[]string{"device"}, nil)}
	for _, d := range cacheStatDefs {
		cc.stats = append(cc.stats, cacheStat{
			desc: prometheus.NewDesc(d.name, d.help, nil, d.labels),
			typ:  d.typ, disk: d.disk, get: d.get,
		})
	}
	return cc
}

// Describe implements prometheus.Collector.
func (cc *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range cc.stats {
		ch <- s.desc
	}
	ch <- cc.online
}

// Collect implements prometheus.Collector.
func (cc *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := cc.cache.Stats()
	for _, st := range cc.stats {
		if st.disk && !s.DiskEnabled {
			continue
		}
		ch <- prometheus.MustNewConstMetric(st.desc, st.typ, st.get(&s))
	}
	for i, on := range s.DeviceOnline {
		ch <- prometheus.MustNewConstMetric(cc.online, prometheus.GaugeValue, boolGauge(on), strconv.Itoa(i))
	}
}

type statDef struct {
	name, help string
	typ        prometheus.ValueType
	disk       bool
	labels     prometheus.Labels
	get        func(s *hybrid.Stats) float64
}

func counter(name, help string, get func(s *hybrid.Stats) uint64) statDef {
	return statDef{name: name, help: help, typ: prometheus.CounterValue,
		get: func(s *hybrid.Stats) float64 { return float64(get(s)) }}
}

func gauge(name, help string, get func(s *hybrid.Stats) float64) statDef {
	return statDef{name: name, help: help, typ: prometheus.GaugeValue, get: get}
}

// onDisk marks defs as disk-tier metrics.
func onDisk(defs ...statDef) []statDef {
	for i := range defs {
		defs[i].disk = true
	}
	return defs
}

// dropped is strata_disk_dropped_total for one reason.
// The reasons: too_large (bigger than a flush buffer), expired (already),
// admission (refused), queue (write queue full), aborted (queued, then
// dropped by a shutdown out of time), offline (the disk was out of
// service).
func dropped(reason string, get func(s *hybrid.Stats) uint64) statDef {
	d := counter("strata_disk_dropped_total", "Entries not written to disk, by reason.", get)
	d.labels = prometheus.Labels{"reason": reason}
	return d
}

// admitted is strata_disk_admitted_total for one reason: rate (within
// the admission rate, or with none), fill (past it, into a device with
// write bandwidth to spare: see disk.Engine.Filling).
func admitted(reason string, get func(s *hybrid.Stats) uint64) statDef {
	d := counter("strata_disk_admitted_total", "Entries admission let through to the disk write queue, by reason.", get)
	d.labels = prometheus.Labels{"reason": reason}
	return d
}

// refused is strata_disk_admission_refused_total for one reason: cold
// (the frequency filter), rate (over the admission rate, no room to
// fill), endurance (room to fill, but the day's endurance budget spent).
// Both count reclaim's reinsertions too; a refused insert is also
// strata_disk_dropped_total{reason="admission"}.
func refused(reason string, get func(s *hybrid.Stats) uint64) statDef {
	d := counter("strata_disk_admission_refused_total", "Entries admission kept off the disk, by reason.", get)
	d.labels = prometheus.Labels{"reason": reason}
	return d
}

const nanos = 1e-9

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var cacheStatDefs = append(memoryStatDefs, append(engineStatDefs, deviceStatDefs...)...)

var memoryStatDefs = []statDef{
	counter("strata_cache_memory_hits_total", "Memory tier lookups that found a live entry.", func(s *hybrid.Stats) uint64 { return s.Memory.Hits }),
	counter("strata_cache_memory_misses_total", "Memory tier lookups that found nothing (or a collision or an expired entry).", func(s *hybrid.Stats) uint64 { return s.Memory.Misses }),
	counter("strata_cache_memory_sets_total", "Entries stored in the memory tier.", func(s *hybrid.Stats) uint64 { return s.Memory.Sets }),
	counter("strata_cache_memory_refused_total", "Entries the memory tier refused (too big, already expired).", func(s *hybrid.Stats) uint64 { return s.Memory.Refused }),
	counter("strata_cache_memory_evictions_total", "Entries the memory tier evicted to make room.", func(s *hybrid.Stats) uint64 { return s.Memory.Evictions }),
	counter("strata_cache_memory_expirations_total", "Expired entries the memory tier dropped.", func(s *hybrid.Stats) uint64 { return s.Memory.Expirations }),
	gauge("strata_cache_memory_entries", "Live entries in the memory tier.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Entries) }),
	gauge("strata_cache_memory_used_bytes", "Bytes charged to the memory tier's entries.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Bytes) }),
	gauge("strata_cache_memory_capacity_bytes", "The memory tier's configured capacity.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Capacity) }),
	counter("strata_cache_memory_copied_bytes_total", "Value bytes memory hits copied out: small values, and large ones stored in pieces when joined (large ones are lent).", func(s *hybrid.Stats) uint64 { return s.Memory.Copied }),
	gauge("strata_cache_memory_lent_values", "Memory tier values lent to responses and not yet released.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Borrowed) }),
	gauge("strata_cache_memory_lent_bytes", "Bytes still charged for entries removed from the memory tier while lent.", func(s *hybrid.Stats) float64 { return float64(s.Memory.Lent) }),
	counter("strata_cache_misses_total", "Lookups neither tier answered.", func(s *hybrid.Stats) uint64 { return s.Misses() }),
	counter("strata_cache_promotions_total", "Disk hits copied into the memory tier.", func(s *hybrid.Stats) uint64 { return s.Promotions }),
	counter("strata_cache_evicted_to_disk_total", "Memory evictions queued for a disk write.", func(s *hybrid.Stats) uint64 { return s.EvictedToDisk }),
	counter("strata_cache_direct_to_disk_total", "Inserts the memory tier refused, sent to disk instead.", func(s *hybrid.Stats) uint64 { return s.DirectToDisk }),
	counter("strata_cache_fetches_total", "GetOrFetch fetches started.", func(s *hybrid.Stats) uint64 { return s.Fetches }),
	counter("strata_cache_fetch_waits_total", "GetOrFetch callers that joined a running fetch.", func(s *hybrid.Stats) uint64 { return s.FetchWaits }),
	counter("strata_cache_fetch_errors_total", "GetOrFetch fetches that failed.", func(s *hybrid.Stats) uint64 { return s.FetchErrors }),
}

var engineStatDefs = onDisk(
	counter("strata_disk_inserts_total", "Entries offered to the disk engine.", func(s *hybrid.Stats) uint64 { return s.Disk.Inserts }),
	dropped("too_large", func(s *hybrid.Stats) uint64 { return s.Disk.DropTooLarge }),
	dropped("expired", func(s *hybrid.Stats) uint64 { return s.Disk.DropExpired }),
	dropped("admission", func(s *hybrid.Stats) uint64 { return s.Disk.DropAdmission }),
	dropped("queue", func(s *hybrid.Stats) uint64 { return s.Disk.DropQueue }),
	admitted("rate", func(s *hybrid.Stats) uint64 { return s.AdmittedRate }),
	admitted("fill", func(s *hybrid.Stats) uint64 { return s.AdmittedFill }),
	refused("cold", func(s *hybrid.Stats) uint64 { return s.RefusedCold }),
	refused("rate", func(s *hybrid.Stats) uint64 { return s.RefusedThrottled }),
	refused("endurance", func(s *hybrid.Stats) uint64 { return s.RefusedOverBudget }),
	gauge("strata_disk_filling", "Devices taking writes past the admission rate now: room (never-written space beyond the reclaimers' reserve, or reclaimers that keep it), a short write queue, no read waiting.", func(s *hybrid.Stats) float64 { return float64(s.Disk.Filling) }),
	dropped("aborted", func(s *hybrid.Stats) uint64 { return s.Disk.DropAborted }),
	dropped("offline", func(s *hybrid.Stats) uint64 { return s.Disk.DropOffline }),
	counter("strata_disk_removes_total", "Removes (tombstones) sent to the disk engine.", func(s *hybrid.Stats) uint64 { return s.Disk.Removes }),
	counter("strata_disk_gets_total", "Disk engine lookups.", func(s *hybrid.Stats) uint64 { return s.Disk.Gets }),
	counter("strata_disk_hits_total", "Disk engine hits, pending ones included.", func(s *hybrid.Stats) uint64 { return s.Disk.Hits }),
	counter("strata_disk_pending_hits_total", "Disk hits served from entries not yet written.", func(s *hybrid.Stats) uint64 { return s.Disk.PendingHits }),
	counter("strata_disk_read_queue_full_total", "Disk lookups turned into misses because the read queue was full.", func(s *hybrid.Stats) uint64 { return s.Disk.ReadQueueFull }),
	counter("strata_disk_read_timeouts_total", "Disk lookups turned into misses because the read passed the read timeout.", func(s *hybrid.Stats) uint64 { return s.Disk.ReadTimeouts }),
	gauge("strata_disk_abandoned_reads", "Disk reads whose lookup timed out, still held by the device or the read queue.", func(s *hybrid.Stats) float64 { return float64(s.Disk.AbandonedReads) }),
	gauge("strata_disk_online", "1 while the disk tier is in service (every device), 0 while it (or one of its devices: strata_disk_device_online says which) is out of service after repeated failures.", func(s *hybrid.Stats) float64 { return boolGauge(s.Disk.Online) }),
	counter("strata_disk_out_of_service_total", "Times the disk tier was taken out of service.", func(s *hybrid.Stats) uint64 { return s.Disk.OutOfService }),
	counter("strata_disk_offline_gets_total", "Disk lookups skipped because the disk tier was out of service.", func(s *hybrid.Stats) uint64 { return s.Disk.OfflineGets }),
	counter("strata_disk_corruptions_total", "Disk entries that failed their checks when read.", func(s *hybrid.Stats) uint64 { return s.Disk.Corruptions }),
	counter("strata_disk_hash_collisions_total", "Disk lookups whose index hash matched another key.", func(s *hybrid.Stats) uint64 { return s.Disk.HashCollisions }),
	counter("strata_disk_expired_on_read_total", "Disk hits turned into misses by expiry.", func(s *hybrid.Stats) uint64 { return s.Disk.ExpiredOnRead }),
	counter("strata_disk_io_errors_total", "Failed device reads and writes.", func(s *hybrid.Stats) uint64 { return s.Disk.IOErrors }),
	counter("strata_disk_batches_total", "Flush writes that succeeded.", func(s *hybrid.Stats) uint64 { return s.Disk.Batches }),
	counter("strata_disk_entries_written_total", "Entries and tombstones written.", func(s *hybrid.Stats) uint64 { return s.Disk.EntriesWritten }),
	counter("strata_disk_written_bytes_total", "Device bytes of the flush writes.", func(s *hybrid.Stats) uint64 { return s.Disk.BytesWritten }),
	counter("strata_disk_payload_written_bytes_total", "Key and value bytes of the entries written.", func(s *hybrid.Stats) uint64 { return s.Disk.PayloadWritten }),
	counter("strata_disk_write_failed_total", "Entries lost to failed writes.", func(s *hybrid.Stats) uint64 { return s.Disk.WriteFailed }),
	counter("strata_disk_superseded_total", "Written entries whose key changed meanwhile.", func(s *hybrid.Stats) uint64 { return s.Disk.Superseded }),
	counter("strata_disk_reclaims_total", "Regions reclaimed.", func(s *hybrid.Stats) uint64 { return s.Disk.Reclaims }),
	counter("strata_disk_evictions_total", "Index entries dropped by reclaim.", func(s *hybrid.Stats) uint64 { return s.Disk.Evictions }),
	counter("strata_disk_reinsertions_total", "Entries rewritten by reclaim.", func(s *hybrid.Stats) uint64 { return s.Disk.Reinsertions }),
	gauge("strata_disk_recovered_entries", "Index entries rebuilt when the cache opened.", func(s *hybrid.Stats) float64 { return float64(s.Disk.Recovered) }),
	gauge("strata_disk_recovered_batches", "Write batches read back when the cache opened.", func(s *hybrid.Stats) float64 { return float64(s.Disk.RecoveredBatches) }),
	gauge("strata_disk_recovery_skipped", "Damaged batches or entries skipped when the cache opened.", func(s *hybrid.Stats) float64 { return float64(s.Disk.RecoverySkipped) }),
	gauge("strata_disk_recovery_torn_tails", "Regions whose last batch was torn when the cache opened.", func(s *hybrid.Stats) float64 { return float64(s.Disk.RecoveryTornTails) }),
	gauge("strata_disk_recovery_damaged_regions", "Regions whose header was damaged when the cache opened (quiet recovery dropped their data).", func(s *hybrid.Stats) float64 { return float64(s.Disk.RecoveryDamaged) }),
	gauge("strata_disk_recovery_duration_seconds", "How long recovery took when the cache opened.", func(s *hybrid.Stats) float64 { return s.Disk.RecoveryDuration.Seconds() }),
	gauge("strata_disk_entries", "Entries in the disk index.", func(s *hybrid.Stats) float64 { return float64(s.Disk.Entries) }),
	gauge("strata_disk_pending_keys", "Keys with a queued disk operation.", func(s *hybrid.Stats) float64 { return float64(s.Disk.PendingKeys) }),
	gauge("strata_disk_queued_bytes", "Bytes accepted for writing, not yet written.", func(s *hybrid.Stats) float64 { return float64(s.Disk.QueuedBytes) }),
	gauge("strata_disk_clean_regions", "Regions ready to be written.", func(s *hybrid.Stats) float64 { return float64(s.Disk.CleanRegions) }),
	gauge("strata_disk_sealed_regions", "Regions written and sealed.", func(s *hybrid.Stats) float64 { return float64(s.Disk.SealedRegions) }),
	gauge("strata_disk_regions", "Regions of the device.", func(s *hybrid.Stats) float64 { return float64(s.Disk.Regions) }),
)

var deviceStatDefs = onDisk(
	counter("strata_disk_device_reads_total", "Device reads that succeeded.", func(s *hybrid.Stats) uint64 { return s.Device.Reads }),
	counter("strata_disk_device_writes_total", "Device writes that succeeded.", func(s *hybrid.Stats) uint64 { return s.Device.Writes }),
	counter("strata_disk_device_read_bytes_total", "Bytes read from the device.", func(s *hybrid.Stats) uint64 { return s.Device.ReadBytes }),
	counter("strata_disk_device_written_bytes_total", "Bytes written to the device.", func(s *hybrid.Stats) uint64 { return s.Device.WriteBytes }),
	statDef{name: "strata_disk_device_read_seconds_total", help: "Time spent in successful device reads.", typ: prometheus.CounterValue,
		get: func(s *hybrid.Stats) float64 { return float64(s.Device.ReadNanos) * nanos }},
	statDef{name: "strata_disk_device_write_seconds_total", help: "Time spent in successful device writes.", typ: prometheus.CounterValue,
		get: func(s *hybrid.Stats) float64 { return float64(s.Device.WriteNanos) * nanos }},
	counter("strata_disk_device_syncs_total", "Device syncs.", func(s *hybrid.Stats) uint64 { return s.Device.Syncs }),
	counter("strata_disk_device_errors_total", "Device calls that failed.", func(s *hybrid.Stats) uint64 { return s.Device.Errors }),
)
