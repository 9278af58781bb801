package resolve

// Frame resolves the sampled address of s alone, as Add resolves a
// sample's leaf (JIT code by s.Seq when s.BySeq), and returns its frame
// without adding a sample: a sample database's call-graph arcs have two
// such places and no stack.
func (r *Resolver) Frame(s *Sample) int32 {
	if r.procs.Version() != r.version {
		r.reset()
	}
	return r.frame(s.PID, s.IP, s.Time, s.Mode, false, s)
}
