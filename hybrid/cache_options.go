package hybrid

import (
	"errors"
	"fmt"
	"time"

	"strata/admission"
	"strata/blockdev"
	"strata/hybrid/disk"
	"strata/hybrid/memory"
)

// WritePolicy says when an entry is offered to the disk tier.
type WritePolicy string

// Write policies.
const (
	// WriteOnEviction: an entry goes to disk when the memory tier evicts
	// it (the default). Hot entries never cost a disk write.
	WriteOnEviction WritePolicy = "eviction"
	// WriteOnInsertion: an entry goes to disk as soon as it is inserted,
	// as well as into memory. Costs more writes; survives a crash sooner.
	WriteOnInsertion WritePolicy = "insertion"
)

// Defaults of Options' own fields (memory.Default* and disk.Default*
// hold the tiers').
const (
	DefaultWritePolicy = WriteOnEviction
	DefaultPromotion   = PromoteSecondHit
	DefaultWarmRate    = 64 << 20
)

// Options configure a Cache. The zero value plus EnsureDefaults is a
// memory-only cache of memory.DefaultCapacity bytes.
type Options struct {
	// Memory configures the memory tier. Its OnEvict is set by the Cache
	// and must be left nil.
	Memory memory.Options
	// Disk configures the disk engines (one per device, all alike); used
	// only with a device.
	Disk disk.Options
	// Device is the disk tier's device when it has one: the same as
	// Devices holding only it. Set Device or Devices, not both.
	Device blockdev.Device
	// Devices are the disk tier's devices, one disk.Engine each; keys are
	// spread over them by a stable hash (see devices.go for what a change
	// of the list does). Empty, with Device nil: memory only. Open takes
	// ownership of Device and Devices: Close closes them (also when Open
	// fails).
	Devices []blockdev.Device
	// Admission decides what may be written to disk; nil admits
	// everything. The Cache records every hit and insert in it (a
	// frequency filter learns from those) and the engine charges it with
	// the bytes really written.
	Admission admission.Controller
	// WritePolicy: eviction (default) | insertion.
	WritePolicy WritePolicy
	// Promotion says which disk hits are copied into the memory tier:
	// second-hit (default: a key's second recent disk hit) | first-hit |
	// never. See cache_promote.go.
	Promotion Promotion
	// FetchTimeout bounds one GetOrFetch fetch, which runs on a context of
	// its own. Default 30s.
	FetchTimeout time.Duration
	// WarmBytes bounds the key+value bytes Open reads back into the
	// memory tier, in the background, from the hot set the last clean
	// stop recorded (warm.go). Default three quarters of the memory
	// tier's capacity; negative: no warm-up.
	WarmBytes int64
	// WarmRate bounds that read-back in bytes per second. Default
	// DefaultWarmRate (64 MiB/s).
	WarmRate int64
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	o.Memory.EnsureDefaults()
	if len(o.devices()) > 0 {
		o.Disk.EnsureDefaults()
	}
	if o.WritePolicy == "" {
		o.WritePolicy = DefaultWritePolicy
	}
	if o.FetchTimeout == 0 {
		o.FetchTimeout = 30 * time.Second
	}
	if o.Promotion == "" {
		o.Promotion = DefaultPromotion
	}
	if o.WarmBytes == 0 {
		o.WarmBytes = o.Memory.Capacity / 4 * 3
	}
	if o.WarmRate == 0 {
		o.WarmRate = DefaultWarmRate
	}
	return o
}

// Validate reports every problem at once.
func (o *Options) Validate() error {
	var errs []error
	if err := o.Memory.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Memory.OnEvict != nil {
		errs = append(errs, fmt.Errorf("%w: memory.OnEvict is set by the Cache", ErrOptions))
	}
	if len(o.devices()) > 0 {
		if err := o.Disk.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Device != nil && len(o.Devices) > 0 {
		errs = append(errs, fmt.Errorf("%w: both Device and Devices are set", ErrOptions))
	}
	for i, d := range o.Devices {
		if d == nil {
			errs = append(errs, fmt.Errorf("%w: Devices[%d] is nil", ErrOptions, i))
		}
	}
	switch o.WritePolicy {
	case WriteOnEviction, WriteOnInsertion:
	default:
		errs = append(errs, fmt.Errorf("%w: write_policy %q not eviction|insertion", ErrOptions, o.WritePolicy))
	}
	switch o.Promotion {
	case PromoteSecondHit, PromoteFirstHit, PromoteNever:
	default:
		errs = append(errs, fmt.Errorf("%w: promotion %q not second-hit|first-hit|never", ErrOptions, o.Promotion))
	}
	if o.WarmRate < 0 {
		errs = append(errs, fmt.Errorf("%w: warm rate %d is negative", ErrOptions, o.WarmRate))
	}
	if o.FetchTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: fetch_timeout %v is negative", ErrOptions, o.FetchTimeout))
	}
	return errors.Join(errs...)
}

// devices returns the disk tier's devices: Devices, or Device alone.
func (o *Options) devices() []blockdev.Device {
	if o.Device != nil && len(o.Devices) == 0 {
		return []blockdev.Device{o.Device}
	}
	return o.Devices
}
