package hybrid

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/cespare/xxhash/v2"

	"strata/blockdev"
	"strata/hybrid/disk"
)

// devices is the disk tier: one disk.Engine per device, each with its own
// flushers, read pool and health (one failing device is taken out of
// service while the others keep serving). Every key lives on one engine,
// picked by jump consistent hash (Lamping and Veach, "A Fast, Minimal
// Memory, Consistent Hash Algorithm", arXiv:1406.2294) of the key's
// xxhash: stable across restarts, so each engine recovers the keys it
// will be asked for.
//
// Changing the device list moves keys. Appending a device moves about
// 1/n of them to it; removing or reordering moves more. A moved key is a
// miss on its new engine and its old copy is never read again (it ages out
// by reclaim). No wrong bytes can be served: an engine checks the stored
// key of every entry it reads, so a key is only ever answered by an entry
// written for it.
//
// The slices are set by Open and never change; all methods are safe for
// concurrent use.
type devices struct {
	devs []blockdev.Device
	engs []*disk.Engine
}

// jump maps h to a bucket in [0, n) such that growing n to n+1 moves only
// 1/(n+1) of the hashes (to the new bucket).
func jump(h uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		h = h*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((h>>33)+1)))
	}
	return int(b)
}

// of returns the engine of key.
func (d *devices) of(key []byte) *disk.Engine {
	if len(d.engs) == 1 {
		return d.engs[0]
	}
	return d.engs[jump(xxhash.Sum64(key), len(d.engs))]
}

// kick wakes every engine's flushers (disk.Engine.Kick): an eviction from
// the memory tier may have queued a write on any of them.
func (d *devices) kick() {
	for _, e := range d.engs {
		e.Kick()
	}
}

// openEngines opens one engine per device with the same options,
// concurrently: each formats or recovers its own device, and start-up
// takes as long as the slowest, not the sum. With several devices each
// engine's log lines carry device=<index>. On failure it closes the
// engines it opened (not the devices: the caller does) and returns every
// device's error.
func openEngines(devs []blockdev.Device, opts disk.Options) (*devices, error) {
	d := &devices{devs: devs, engs: make([]*disk.Engine, len(devs))}
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, dev := range devs {
		o := opts
		if len(devs) > 1 && o.Logger != nil {
			o.Logger = o.Logger.With("device", i)
		}
		wg.Go(func() {
			d.engs[i], errs[i] = disk.Open(dev, o)
			if errs[i] != nil && len(devs) > 1 {
				errs[i] = fmt.Errorf("hybrid: device %d: %w", i, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		d.closeEngines(context.Background())
		return nil, err
	}
	return d, nil
}

// closeEngines closes the engines that are open, concurrently: a device
// that never answers must not use up the time of the others' flushes.
func (d *devices) closeEngines(ctx context.Context) {
	var wg sync.WaitGroup
	for _, e := range d.engs {
		if e != nil {
			wg.Go(func() { _ = e.Close(ctx) })
		}
	}
	wg.Wait()
}

// close closes every engine, then its device, concurrently, all within ctx
// (and the grace disk.Engine.Close and disk.CloseDevice allow). A device
// its engine gave up on is left open (its Close would wait for the I/O it
// never ends).
func (d *devices) close(ctx context.Context) error {
	errs := make([]error, len(d.engs))
	var wg sync.WaitGroup
	for i, e := range d.engs {
		wg.Go(func() {
			err := e.Close(ctx)
			if !errors.Is(err, ErrDeviceTimeout) {
				err = errors.Join(err, disk.CloseDevice(ctx, d.devs[i]))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stats sums the engines' and the devices' snapshots (counters and
// gauges alike; Online is true only when every engine is online, and
// RecoveryDuration is the longest, as the engines recover at once) and
// returns each engine's Online.
func (d *devices) stats() (disk.Stats, blockdev.Stats, []bool) {
	var es disk.Stats
	var ds blockdev.Stats
	online := make([]bool, len(d.engs))
	for i, e := range d.engs {
		s := e.Stats()
		online[i] = s.Online
		if i == 0 {
			es, ds = s, d.devs[i].Stats()
			continue
		}
		rec := max(es.RecoveryDuration, s.RecoveryDuration)
		sumInto(&es, &s)
		es.RecoveryDuration = rec
		dv := d.devs[i].Stats()
		sumInto(&ds, &dv)
	}
	return es, ds, online
}

// sumInto adds each integer field of *src to *dst's and ANDs each bool
// field: every field of disk.Stats and blockdev.Stats is a count, a gauge
// that adds up over devices, or a flag true when all are.
func sumInto[T any](dst, src *T) {
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range dv.NumField() {
		f, g := dv.Field(i), sv.Field(i)
		switch f.Kind() {
		case reflect.Uint64, reflect.Uint32, reflect.Uint:
			f.SetUint(f.Uint() + g.Uint())
		case reflect.Int64, reflect.Int32, reflect.Int:
			f.SetInt(f.Int() + g.Int())
		case reflect.Bool:
			f.SetBool(f.Bool() && g.Bool())
		}
	}
}
