package hybrid

// Tier says where a cache lookup was answered.
type Tier uint8

const (
	// TierMiss: neither tier held a live entry.
	TierMiss Tier = iota
	// TierMemory: the memory tier answered.
	TierMemory
	// TierDisk: the disk tier answered (including entries still queued
	// for a flush, which are read from memory).
	TierDisk
)

// String returns "miss", "memory" or "disk".
func (t Tier) String() string {
	switch t {
	case TierMemory:
		return "memory"
	case TierDisk:
		return "disk"
	default:
		return "miss"
	}
}
