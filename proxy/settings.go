package proxy

// Reloadable settings.
//
// A Server's Options split in two. What a reload may change (the origins
// and their routing, the cache key, the HTTP policy, fill limits and
// timeouts, client timeouts, the purge token: see reloadable) lives in an
// immutable settings snapshot behind an atomic pointer; Reload builds a
// new snapshot, with new origin objects (connection pools included), and
// swaps it in. Everything else (slice size, buffers, listeners' limits,
// purge state, logger, metrics) is fixed at New and read from s.opts.
//
// The hot path pays one atomic load per request and allocates nothing for
// it. A request loads the snapshot once (handler) and keeps it in its
// reqState: its origin, cache key and freshness verdict come from that
// snapshot even when a reload lands while it runs; the origin object it
// picked (and its connection pool) stays usable until the request ends.
// Reads made later in a fill's life that have no request at hand (whether
// a response may be stored, a fill's deadline) use the snapshot current at
// that moment (Server.cfg).
//
// A replaced router's idle origin connections are closed at the swap;
// those still in use close when their requests end (idle timeout) or at
// Close.

// settings is one immutable snapshot of the reloadable settings.
type settings struct {
	opts   Options // a whole copy; only reloadable fields are read from it
	router *router
	token  []byte // opts.PurgeToken
}

// reloadable copies the fields of src a reload may change into dst.
// Keep it in step with configs' list of keys that need a restart
// (configs/diff.go): a field not copied here is fixed at New.
func reloadable(dst, src *Options) {
	dst.Origins = append([]OriginOptions(nil), src.Origins...)
	dst.Policy = src.Policy
	dst.Key = src.Key
	dst.MaxVariants = src.MaxVariants
	dst.MaxFills = src.MaxFills
	dst.MaxLargeFills = src.MaxLargeFills
	dst.FillTimeout = src.FillTimeout
	dst.FillLagWait = src.FillLagWait
	dst.RevalidateKeep = src.RevalidateKeep
	dst.StaleIfUnreachable = src.StaleIfUnreachable
	dst.ReadTimeout = src.ReadTimeout
	dst.WriteTimeout = src.WriteTimeout
	dst.ClientIdleTimeout = src.ClientIdleTimeout
	dst.PurgeToken = src.PurgeToken
}

// newSettings builds a snapshot from opts (defaults filled, valid); its
// S3 origins count into c.
func newSettings(opts Options, c *s3Counters) (*settings, error) {
	r, err := newRouter(opts.Origins)
	if err != nil {
		return nil, err
	}
	for _, o := range r.all {
		if o.s3 != nil {
			o.s3.c = c // not yet shared: the snapshot is not published
		}
	}
	return &settings{opts: opts, router: r, token: []byte(opts.PurgeToken)}, nil
}

// cfg returns the current settings' Options. Read only the reloadable
// fields through it (the others are in s.opts); a request at hand reads
// its own snapshot (reqState.set) instead.
func (s *Server) cfg() *Options { return &s.set.Load().opts }

// Reload replaces the reloadable settings (see reloadable) with those of
// opts; opts' other fields are ignored (the binary refuses changes to
// them before calling). opts is validated first: on error nothing
// changes. Requests in flight finish with the snapshot they started
// with. Safe for concurrent use with serving; reloads themselves are
// serialised.
func (s *Server) Reload(opts Options) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	next := s.opts
	reloadable(&next, &opts)
	next.EnsureDefaults()
	if err := next.Validate(); err != nil {
		return err
	}
	set, err := newSettings(next, s.s3c)
	if err != nil {
		return err
	}
	old := s.set.Swap(set)
	s.deadlines.setTimeouts(next.ReadTimeout, next.ClientIdleTimeout, next.WriteTimeout)
	old.router.close()
	if len(s.retired) == maxRetired {
		// Its requests have had maxRetired reloads to end; those that
		// have not keep it alive and finish with it all the same.
		s.retired[0].close()
		s.retired = append(s.retired[:0], s.retired[1:]...)
	}
	s.retired = append(s.retired, old.router)
	return nil
}

// maxRetired bounds the replaced routers kept to be closed again at Close
// (their connections in use at the swap go idle later): without it, every
// reload kept one for the life of the process.
const maxRetired = 8

// closeRouters closes the current router and every replaced one.
func (s *Server) closeRouters() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.set.Load().router.close()
	for _, r := range s.retired {
		r.close()
	}
	s.retired = nil
}
