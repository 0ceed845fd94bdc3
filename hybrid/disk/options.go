package disk

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"time"
)

// RuntimeMode says which goroutines do the engine's disk I/O.
type RuntimeMode string

// Runtime modes.
const (
	// RuntimeDisabled: a Get reads in the caller's goroutine, a flusher
	// writes in its own goroutine.
	RuntimeDisabled RuntimeMode = "disabled"
	// RuntimeUnified: one pool of ReadWorkers goroutines does reads and
	// writes.
	RuntimeUnified RuntimeMode = "unified"
	// RuntimeSeparated: ReadWorkers goroutines read, WriteWorkers write, so
	// small reads never queue behind multi-MiB writes.
	RuntimeSeparated RuntimeMode = "separated"
	// RuntimeUring: as RuntimeSeparated, and the device's reads go
	// through an io_uring ring of ReadWorkers entries when the device
	// offers one (blockdev.Disk.UseRing): a read worker waiting for the
	// device parks, as a goroutine waiting on a socket does, and holds no
	// P. Where io_uring is not available (logged once at Open) reads stay
	// on pread, as with RuntimeSeparated.
	RuntimeUring RuntimeMode = "uring"
)

// RecoveryMode says what Open does with what the device holds.
type RecoveryMode string

// Recovery modes.
const (
	// RecoveryNone formats the device and starts empty.
	RecoveryNone RecoveryMode = "none"
	// RecoveryQuiet rebuilds the index and skips what fails its checks.
	RecoveryQuiet RecoveryMode = "quiet"
	// RecoveryStrict rebuilds the index, verifies every entry's checksum
	// and refuses to open (ErrCorrupt) if committed data is damaged. A torn
	// tail of a region (the crash case) is not damage.
	RecoveryStrict RecoveryMode = "strict"
)

// PickerMode chooses the region a reclaimer empties.
type PickerMode string

// Pickers.
const (
	PickerFIFO     PickerMode = "fifo"     // oldest sealed region first
	PickerEmptiest PickerMode = "emptiest" // fewest live bytes first
)

// Admitter decides whether an entry may be written to disk. It is the
// subset of admission.Controller the engine uses; nil admits everything.
type Admitter interface {
	// Admit says whether an entry of size bytes with this key hash may
	// be queued for writing. It must not block.
	Admit(hash uint64, size int) bool
	// Written reports bytes really written to the device (aligned
	// batches, headers, reinsertions included), after each write.
	Written(bytes int)
}

// FillAdmitter is an Admitter that weighs whether the device is filling
// (admission's work-conserving Filler, through hybrid). When
// Options.Admission implements it, Insert asks AdmitTo with the Engine
// itself, whose Filling says whether the device can take the write
// without costing live data or reads. Reinsertion, which happens only
// once the device is full, still asks Admit.
type FillAdmitter interface {
	Admitter
	// AdmitTo is Admit for an entry bound for dev. It must not block.
	AdmitTo(dev interface{ Filling() bool }, hash uint64, size int) bool
}

// Defaults of the engine's fault handling (Options).
const (
	// DefaultReadTimeout is the disk read deadline. A healthy SSD answers
	// a 1 MiB read in 1–5 ms and a disk seek takes about 10 ms, so a read
	// queued behind a full pool of others still finishes far inside it;
	// a device past it is in trouble, and a quarter second added to a
	// miss served from the origin goes unnoticed next to the client's own
	// round trips.
	DefaultReadTimeout = 250 * time.Millisecond
	// DefaultRegionSize, DefaultBufferSize, DefaultFlushers,
	// DefaultReclaimers, DefaultRuntime, DefaultReadWorkers and
	// DefaultRecovery are the fields' defaults (WriteWorkers defaults to
	// Flushers).
	DefaultRegionSize  = 16 << 20
	DefaultBufferSize  = 4 << 20
	DefaultFlushers    = 2
	DefaultReclaimers  = 1
	DefaultRuntime     = RuntimeUring
	DefaultReadWorkers = 8
	DefaultRecovery    = RecoveryQuiet
	// DefaultErrorLimit failures in DefaultErrorWindow take the disk out
	// of service.
	DefaultErrorLimit  = 10
	DefaultErrorWindow = 10 * time.Second
	// DefaultProbeInterval is the first wait before probing a disk out of
	// service.
	DefaultProbeInterval = 2 * time.Second
)

// Options configure an Engine. The zero value plus EnsureDefaults is
// a working configuration.
type Options struct {
	// RegionSize is the unit of allocation and reclaim. Default 16 MiB;
	// at least 1 MiB, at most 1 GiB, a multiple of the device block size.
	RegionSize int64
	// BufferSize is each flusher buffer (two per flusher). An entry
	// larger than a buffer less its headers is refused at Insert. Default
	// 4 MiB, at most RegionSize.
	BufferSize int
	// Flushers is the number of flusher goroutines. Default 2.
	Flushers int
	// Reclaimers is the number of reclaimer goroutines. Default 1.
	Reclaimers int
	// CleanRegions is how many clean regions reclaimers keep ready.
	// Default Flushers + 1.
	CleanRegions int
	// QueueBytes bounds the bytes of entries accepted but not yet written
	// (queue + buffers); over it Insert drops. Default 64 MiB.
	QueueBytes int64
	// FlushDelay is how long a partly filled buffer waits for more entries
	// before it is written anyway. Default 10ms; negative = write at once.
	// Each write costs a syscall, a hand-off to the write worker and back,
	// a commit pass and a padded last block, whatever it holds: at 2ms a
	// stream of 1 KiB evictions (one per miss) went out in 8–16 KiB
	// writes, and the flusher and write worker took 8% of a miss's CPU
	// (5% at 10ms). Entries wait in the buffer, served from there, so the
	// delay costs readers nothing; a crash loses at most the delay's worth
	// of inserts.
	FlushDelay time.Duration
	// Runtime: disabled | unified | separated | uring. Default uring.
	Runtime RuntimeMode
	// ReadWorkers is the read pool size (unified: the whole pool). With
	// an io_uring ring (RuntimeUring on a device that has one) the pool
	// and the ring are 16 times as deep, at most 512 (or ReadWorkers if
	// more), bounded by ReadBufferBytes instead: a read waiting on a ring
	// holds no thread. Default 8.
	ReadWorkers int
	// ReadBufferBytes bounds the bytes of read buffers (each a size class
	// of blocks, at most a quarter over the read) that pooled reads hold
	// at once, from before a read takes its buffer until the read is
	// delivered, given back or skipped; a read waits for room, within
	// ReadTimeout. A read larger than the bound runs alone. Default
	// ReadWorkers × BufferSize rounded up to a power of two (ReadWorkers
	// reads of the largest entry).
	ReadBufferBytes int64
	// WriteWorkers is the write pool size in separated and uring mode.
	// Default Flushers.
	WriteWorkers int
	// ReadQueue bounds reads waiting for a worker; a read that finds it
	// full is a miss, counted. Default 32 × ReadWorkers: every waiting
	// read is a request already parked on it, bounded in time by
	// ReadTimeout, and a miss costs an origin fetch. At 4 × ReadWorkers,
	// 64 clients reading 256 KiB objects from a loaded disk found it full
	// on 6% of their disk hits.
	ReadQueue int
	// ReadTimeout is how long a Get waits for its disk read, counted from
	// when it is queued for a worker. Past it the Get is a miss (counted in
	// ReadTimeouts, and toward ErrorLimit when the device holds an I/O for
	// 4 × ReadTimeout, at least 1s); the read completes, or is
	// skipped, on its worker with nobody waiting, and never touches the
	// caller's buffer. Default 250ms (DefaultReadTimeout). The deadline
	// needs a read pool: with RuntimeDisabled the read runs in the caller's
	// goroutine, where a pread cannot be abandoned, so it does not apply.
	ReadTimeout time.Duration
	// ErrorLimit device errors (failed reads and writes) and read
	// timeouts within ErrorWindow take the disk out of service: Gets skip
	// it (misses, counted in OfflineGets), Inserts are dropped (counted in
	// DropOffline), until a probe read answers again. Default 10
	// (DefaultErrorLimit); negative: never taken out of service.
	ErrorLimit int
	// ErrorWindow is the span (on the Now clock) in which ErrorLimit
	// failures take the disk out of service. Default 10s
	// (DefaultErrorWindow).
	ErrorWindow time.Duration
	// ProbeInterval is how long after being taken out of service the disk
	// is probed (a read of the superblock, with ReadTimeout) to bring it
	// back; each failed probe doubles the wait, up to 30s or
	// ProbeInterval if longer. Default 2s (DefaultProbeInterval).
	ProbeInterval time.Duration
	// Recovery: none | quiet | strict. Default quiet.
	Recovery RecoveryMode
	// RecoveryConcurrency is how many regions are scanned at once on open.
	// Default 4.
	RecoveryConcurrency int
	// Picker: fifo | emptiest. Default fifo.
	Picker PickerMode
	// Reinsertion rewrites entries that were read since they were written
	// when their region is reclaimed (through admission again). Default off.
	Reinsertion bool
	// Admission decides what is written; nil admits everything.
	Admission Admitter
	// Now is the clock used for expiry. Default time.Now.
	Now func() time.Time
	// Logger receives recovery and error reports. Default slog.Default().
	Logger *slog.Logger
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	if o.RegionSize == 0 {
		o.RegionSize = DefaultRegionSize
	}
	def(&o.BufferSize, DefaultBufferSize)
	def(&o.Flushers, DefaultFlushers)
	def(&o.Reclaimers, DefaultReclaimers)
	def(&o.CleanRegions, o.Flushers+1)
	if o.QueueBytes == 0 {
		o.QueueBytes = 64 << 20
	}
	if o.FlushDelay == 0 {
		o.FlushDelay = 10 * time.Millisecond
	}
	if o.Runtime == "" {
		o.Runtime = DefaultRuntime
	}
	def(&o.ReadWorkers, DefaultReadWorkers)
	def(&o.WriteWorkers, o.Flushers)
	def(&o.ReadQueue, 32*o.ReadWorkers)
	if o.ReadBufferBytes == 0 {
		o.ReadBufferBytes = int64(o.ReadWorkers) << bits.Len(uint(max(o.BufferSize, 1)-1))
	}
	setDur(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.ErrorLimit, DefaultErrorLimit)
	setDur(&o.ErrorWindow, DefaultErrorWindow)
	setDur(&o.ProbeInterval, DefaultProbeInterval)
	if o.Recovery == "" {
		o.Recovery = DefaultRecovery
	}
	def(&o.RecoveryConcurrency, 4)
	if o.Picker == "" {
		o.Picker = PickerFIFO
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func setDur(p *time.Duration, v time.Duration) {
	if *p == 0 {
		*p = v
	}
}

// Validate reports every problem at once, each wrapping ErrOptions.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrOptions}, args...)...))
	}
	if o.RegionSize < 1<<20 || o.RegionSize > 1<<30 {
		bad("region_size %d not in [1 MiB, 1 GiB]", o.RegionSize)
	}
	if o.BufferSize < 64<<10 || int64(o.BufferSize) > o.RegionSize {
		bad("buffer_size %d not in [64 KiB, region_size]", o.BufferSize)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"flushers", o.Flushers}, {"reclaimers", o.Reclaimers}, {"clean_regions", o.CleanRegions},
		{"read_workers", o.ReadWorkers}, {"write_workers", o.WriteWorkers}, {"read_queue", o.ReadQueue},
		{"recovery_concurrency", o.RecoveryConcurrency}} {
		if f.v < 1 || f.v > 1024 {
			bad("%s %d not in [1, 1024]", f.name, f.v)
		}
	}
	for _, d := range []struct {
		name      string
		v, lo, hi time.Duration
	}{{"read_timeout", o.ReadTimeout, time.Millisecond, time.Minute},
		{"error_window", o.ErrorWindow, time.Millisecond, 24 * time.Hour},
		{"probe_interval", o.ProbeInterval, time.Millisecond, time.Hour}} {
		if d.v < d.lo || d.v > d.hi {
			bad("%s %v not in [%v, %v]", d.name, d.v, d.lo, d.hi)
		}
	}
	if o.ErrorLimit > 1<<20 {
		bad("error_limit %d over %d", o.ErrorLimit, 1<<20)
	}
	if o.ReadBufferBytes < 1 {
		bad("read_buffer_bytes %d not positive", o.ReadBufferBytes)
	}
	if o.QueueBytes < int64(o.BufferSize) {
		bad("queue_bytes %d smaller than buffer_size %d", o.QueueBytes, o.BufferSize)
	}
	switch o.Runtime {
	case RuntimeDisabled, RuntimeUnified, RuntimeSeparated, RuntimeUring:
	default:
		bad("runtime %q not disabled|unified|separated|uring", o.Runtime)
	}
	switch o.Recovery {
	case RecoveryNone, RecoveryQuiet, RecoveryStrict:
	default:
		bad("recovery %q not none|quiet|strict", o.Recovery)
	}
	switch o.Picker {
	case PickerFIFO, PickerEmptiest:
	default:
		bad("picker %q not fifo|emptiest", o.Picker)
	}
	if o.Now == nil || o.Logger == nil {
		bad("now and logger must be set (call EnsureDefaults)")
	}
	return errors.Join(errs...)
}
