// Package admission decides what may be written to strata's disk tier. It
// knows nothing of caches or HTTP: it sees 64-bit key hashes, entry sizes
// and device bytes, and imports only the standard library.
//
// # Why
//
// Every byte written to the disk tier costs device bandwidth that reads
// need, and SSD endurance. Two questions decide a write: is the entry worth
// it (will it be read again?), and can the device afford it now? "No" to
// either skips the disk write and never fails or delays a request.
//
// # Controllers
//
// A Controller answers Admit(hash, size) with a Decision, learns of
// accesses through Record(hash) and of real device writes through
// Charge(n). Controller's documentation says which part of hybrid calls
// which method. The package provides:
//
//   - RateLimiter: a token bucket in bytes per second with a burst (default
//     one second's worth). It admits while tokens remain and is debited by
//     the bytes really written (headers, alignment padding and
//     reinsertions included), reported by the flushers after each write.
//     Admission is optimistic, so an entry never waits and the long-run
//     rate is exact; the overshoot is bounded by what is admitted but not
//     yet written when the bucket runs dry. Admit is two atomic loads while
//     tokens remain and one clock read more when they may not.
//   - FrequencyFilter: TinyLFU, a count-min sketch of 4-bit counters behind
//     a doorkeeper Bloom filter, halved every window. It admits keys
//     accessed at least MinFrequency times (default 2) in the recent
//     window, so one-hit wonders stay off the disk; it only works if the
//     memory tier feeds it accesses through Record.
//   - Filler: work-conserving admission. The RateLimiter for the steady
//     state; past its rate, an entry bound for a device with write
//     bandwidth to spare (room: never-written space, or reclaimers that
//     keep up; a short write queue; no read waiting: the Device
//     interface) is admitted as Fill, under an endurance budget of drive
//     writes per day (default 1, a week's worth held, a day's plus one
//     fill of the device at start), else OverBudget. A cold working set
//     thus reaches the disk at device speed.
//   - Chain: all members must admit. New(Options) builds the default
//     chain: frequency filter first (its "no" is Rejected: cold), then the
//     rate limiter, a Filler when it knows the device's size (its "no" is
//     Throttled: over the rate, or OverBudget: over the endurance budget).
//
// A DeviceController (Filler, and any Chain) also answers AdmitTo(dev,
// hash, size): hybrid's disk engine passes itself as the Device.
//
// # Concurrency and cost
//
// Every Controller here is safe for concurrent use, lock-free on its hot
// paths, allocation-free in Admit, Record and Charge, and starts no
// goroutine (nothing to Close). Time comes from a Clock: MonotonicClock by
// default (no goroutine; about 45 ns a reading here), a CoarseClock (one
// atomic load a reading, refreshed by a goroutine that its creator owns and
// Closes), or a ManualClock in tests, so that seconds of traffic are
// simulated in microseconds. The rate limiter reads its clock only when the
// bucket may be empty, so the choice matters when writes are throttled.
//
// Not here (yet): a tuned admit probability that spreads the daily budget
// over the day (CacheLib's DynamicRandomAP), size-based admission, and
// expiry-based rejection; each would be one more Controller in the chain.
package admission
