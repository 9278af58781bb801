package ingest

import (
	"github.com/jitprof/jitprof/internal/process"
	"github.com/jitprof/jitprof/internal/record"
	"github.com/jitprof/jitprof/internal/unwind"
	"github.com/jitprof/jitprof/perfdata"
)

// A round is what the daemon drained of its rings at once, or what a
// recording holds between two FINISHED_ROUNDs (the recorder's drains):
// its records are handed to Handle as they come, and Round counts it.

// kept are the samples of a round, kept until the round is in (the
// mapping a sample hit, and the JIT data of its code, may come later in
// the round from another CPU's ring): copies of their callchains, user
// registers and stacks, in arenas reused round after round. Past
// maxKeptStacks of stacks, a sample is unwound as it comes instead and
// only its chain kept.
type kept struct {
	samples []keptSample
	words   []uint64 // callchains, then user registers
	stacks  []byte
}

type keptSample struct {
	s               perfdata.Sample
	chain, regs, to int // s.Callchain is words[chain:regs], s.RegsUser words[regs:to]
	stack, stackEnd int
}

// Handle takes a record of the round: a sample is kept until the round
// is counted (Round), a lost record counted, a side-band record followed
// (Take). The live daemon hands it each record its rings held, Import
// each of a recording's.
func (in *Ingest) Handle(rec perfdata.Record) {
	switch r := rec.(type) {
	case *perfdata.Sample:
		in.Keep(r)
	case *perfdata.Lost:
		in.Lost += r.Lost
		in.db.AddLost(0, r.Lost)
	case *perfdata.LostSamples:
		in.Lost += r.Lost
		in.db.AddLost(0, r.Lost)
	default:
		in.Take(rec)
	}
}

// Keep keeps a decoded sample, whose slices may be the decoder's, until
// the round is counted (Round).
func (in *Ingest) Keep(s *perfdata.Sample) {
	k := &in.kept
	ks := keptSample{s: *s, chain: len(k.words)}
	chain := s.Callchain
	stack := unwind.HasStack(s) && in.Unwind && in.CallGraph
	if stack && len(k.stacks)+int(min(s.StackDyn, uint64(len(s.StackUser)))) > maxKeptStacks {
		chain, stack = in.unwindChain(s), false
		in.UnwoundEarly++
	}
	k.words = append(k.words, chain...)
	ks.regs = len(k.words)
	if stack {
		k.words = append(k.words, s.RegsUser...)
	}
	ks.to, ks.stack = len(k.words), len(k.stacks)
	if stack {
		// Only the bytes the kernel copied (dyn_size), not the size
		// asked for.
		k.stacks = append(k.stacks, s.StackUser[:min(s.StackDyn, uint64(len(s.StackUser)))]...)
	}
	ks.stackEnd = len(k.stacks)
	ks.s.Callchain, ks.s.RegsUser, ks.s.StackUser = nil, nil, nil
	if !stack {
		ks.s.RegsUserABI = 0
	}
	k.samples = append(k.samples, ks)
}

// keptSamples calls add with each sample kept, its slices in the
// arenas, and empties the arenas.
func (in *Ingest) keptSamples(add func(*perfdata.Sample)) {
	k := &in.kept
	for i := range k.samples {
		ks := &k.samples[i]
		s := &ks.s
		s.Callchain = k.words[ks.chain:ks.regs:ks.regs]
		s.RegsUser = k.words[ks.regs:ks.to:ks.to]
		s.StackUser = k.stacks[ks.stack:ks.stackEnd:ks.stackEnd]
		s.StackDyn = uint64(len(s.StackUser))
		add(s)
	}
	clear(k.samples) // the samples' Attr pointers
	k.samples, k.words, k.stacks = k.samples[:0], k.words[:0], k.stacks[:0]
}

// Round counts the samples kept in the round that ended, as the daemon
// counts a round: the JIT data of their processes read first
// (BeginRound), then the samples, then the processes that exited let go
// of (EndRound). then, unless nil, sees each sample after it was
// counted, its Callchain the one whose arcs were (unwound from the user
// stack with Unwind), valid only during the call, and the mapping its
// address fell in (nil in the kernel or in none): the daemon's OTLP
// push takes its samples there, so its stacks are the session's, and
// does not look their mappings up again.
//
// The live daemon calls it at the end of each drain (a record.Sink's
// EndRound), Import at each of a recording's FINISHED_ROUNDs; a
// recording's JIT data is applied first as far as the daemon would have
// read it by then: what was written by the round's last sample and a
// poll after.
func (in *Ingest) Round(then func(*perfdata.Sample, *process.Mapping)) {
	lastPID, lastTime := ^uint32(0), uint64(0)
	for i := range in.kept.samples {
		s := &in.kept.samples[i].s
		if s.PID != lastPID {
			in.Sampled(s.PID)
			lastPID = s.PID
		}
		lastTime = max(lastTime, s.Time)
	}
	if in.embedded != nil {
		in.feedTo(lastTime + uint64(record.PollInterval))
	}
	in.BeginRound()
	in.keptSamples(func(s *perfdata.Sample) {
		chain, m := in.add(s)
		if then != nil {
			s.Callchain = chain
			then(s, m)
		}
	})
	in.EndRound()
}
