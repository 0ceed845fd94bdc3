package proxy

// Read-ahead of large objects. A client that reads a sliced object in
// order (a video player, an edge's slice-sized Range requests, a whole
// GET served from a partial record) would otherwise meet a cold slice
// every FillWindow slices and wait a whole origin round trip for it. So
// when a sliceSource moves on to slice idx and the read looks sequential
// (it read slice idx-1 itself: read ahead within its range; or its range
// starts where slice idx starts and the store holds idx-1, an earlier
// request's: read ahead past its range, for the next request), the next
// Options.ReadAhead slices are made to be in the store or in flight: each
// one missing starts a slice fetch (the ordinary kind: coalesced with
// clients' fetches, stored as it arrives). Random reads, unaligned or
// after a slice the store lacks, read nothing ahead.
//
// Bounds: per object, ReadAhead slices past the one being read, rounded
// up to a whole run of FillWindow slices (one origin request); overall,
// no read-ahead starts while MaxLargeFills fills and fetches run, so
// read-ahead memory stays under MaxLargeFills × FillWindow × SliceSize
// like large fills'. A reader that stops wastes at most ReadAhead slices
// and a run of origin traffic, so a sequential read of a cold object of n
// slices fetches at most n + ReadAhead + FillWindow - 1 (1 GiB in 1 MiB
// slices, ReadAhead and FillWindow 4: 1.007×). Only objects with a strong validator read ahead: a fetched
// slice then joins the record without checks, and an object without one
// is refetched slice by slice against its digests (slice_digest.go).

// readAhead starts the fetches ahead of slice idx (see above). prev is
// the slice r had loaded before idx (-1 none), end the end of the range
// being read; aligned says the request's range starts at idx's first
// byte. Within one request (prev == idx-1) it reads ahead no further
// than end; a request starting where a slice starts after a stored slice
// (one of a series in order) reads ahead past end, from its first slice
// to its last, so that the next request's first slices are on their way.
func (r *sliceSource) readAhead(prev, idx int, end int64, aligned bool) {
	s := r.s
	if s.opts.ReadAhead <= 0 || !r.fetchable || !hasValidator(&r.obj) || s.closed.Load() {
		return
	}
	limit := r.obj.slices() - 1 // the last slice a fetch may ask for
	if aligned && idx > 0 && r.stored(idx-1) {
		r.ahead = true // for the rest of this request too
	}
	if !r.ahead {
		if prev != idx-1 {
			return
		}
		limit = min(limit, int((end-1)/int64(r.obj.SliceSize)))
	}
	last := min(idx+s.opts.ReadAhead, limit) // the window kept stored or in flight
	for j := idx + 1; j <= last; j++ {
		if _, _, held := r.leased(j); held || r.stored(j) {
			continue // held by this response since before its status line, or stored
		}
		if cur := s.fetches.join(r.key, j, nil); cur != nil { // in flight already
			j = max(j, cur.last)
			cur.release()
			continue
		}
		if s.nfills.Load() >= int64(s.cfg().MaxLargeFills) {
			return
		}
		// A whole run (FillWindow slices) from the first one missing: one
		// origin request per run, not one per slice read.
		sf := s.acquireFetch(r.key, j, limit, &r.fr, &r.buf)
		if sf == nil {
			continue // stored meanwhile
		}
		if sf.first == j {
			s.readAheads.Add(uint64(sf.last - sf.first + 1)) // (a fetch that won a race by a hair counts too)
		}
		j = max(j, sf.last)
		sf.release()
	}
}

// stored reports whether the store holds slice i (of some generation:
// a hint, not a promise).
func (r *sliceSource) stored(i int) bool {
	if i < 0 {
		return false
	}
	r.kbuf = sliceKey(r.kbuf[:0], r.key, i)
	return r.s.store.Contains(r.kbuf)
}
