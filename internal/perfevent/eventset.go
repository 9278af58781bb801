package perfevent

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jitprof/jitprof/internal/linux"
)

// DefaultSampleType is what OpenEvents samples unless told otherwise.
// It is perf record's IP|TID|TIME|PERIOD, plus:
//   - CPU always, since rings are per CPU and the sample database can
//     separate by CPU (perf adds it only for -a and -C);
//   - IDENTIFIER instead of ID: the event id at a fixed place (first in a
//     sample, last in every other record's sample_id_all trailer) lets a
//     reader find the attr of any record without decoding it, which perf
//     also does as soon as a session has more than one event.
const DefaultSampleType = unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID |
	unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD

// DWARFRegsMask is the sample_regs_user perf record --call-graph dwarf
// asks of x86-64: every general register, IP, SP, flags, CS and SS; not
// DS, ES, FS, GS.
const DWARFRegsMask = 0xff0fff

// Call-graph stack sizes as perf takes them (--call-graph dwarf,SIZE):
// 8192 by default, a multiple of 8, at most USHRT_MAX rounded down to 8.
const (
	DefaultUserStack = 8192
	MaxUserStack     = 65528
)

// Defaults that match perf record.
const (
	DefaultFreq     = 4000
	DefaultPages    = 128 // 512 KiB with 4 KiB pages, per CPU
	DefaultMaxStack = 127
)

// Options says how to sample. The zero value (after Event is set) samples
// at DefaultFreq with DefaultSampleType.
type Options struct {
	Event     Event
	Freq      uint64 // samples per second (-F); used when Period is 0
	Period    uint64 // events per sample (-c); both 0: DefaultFreq, or 1 for a tracepoint
	Callchain bool   // -g: adds PERF_SAMPLE_CALLCHAIN
	MaxStack  uint16 // callchain depth; 0 means DefaultMaxStack
	// UserStack, when not 0, samples the user registers (DWARFRegsMask)
	// and this many bytes of the user stack, as perf record --call-graph
	// dwarf does: the kernel's callchain then stops at the user part,
	// which is unwound from the copy afterwards (internal/unwind).
	UserStack    uint32
	SampleType   uint64 // 0 means DefaultSampleType
	NoInherit    bool   // do not follow children and new threads of task targets
	EnableOnExec bool   // start counting when the target execs (see StartCommand)
	// ClockID is the clock of sample times. The zero value means
	// CLOCK_MONOTONIC, the clock every JIT source uses, so CLOCK_REALTIME,
	// which jumps, cannot be chosen.
	ClockID int32
	Pages   int // data pages per ring, a power of two (-m); 0 means DefaultPages
	// Wake a poller after this many samples, or, if WakeupWatermark is
	// set, after that many bytes. Both zero lets the kernel wake at half
	// the ring.
	WakeupEvents    uint32
	WakeupWatermark uint32
	// ExcludeKernel samples user space only, as an unprivileged user must
	// when perf_event_paranoid is 2 or more.
	ExcludeKernel bool
}

// Target says what to profile. Exactly one of SystemWide, PIDs and TIDs is
// set; CPUs restricts any of them (-C) and is all online CPUs when empty.
type Target struct {
	CPUs       []int
	PIDs       []int // processes: every thread that exists at open
	TIDs       []int // threads
	SystemWide bool
}

// OpenedEvent is one event file descriptor of an EventSet.
type OpenedEvent struct {
	CPU int
	PID int // thread id, or -1 for a whole CPU
	ID  uint64
}

// EventSet is the open events of one Options on one Target, with one ring
// per CPU into which all of that CPU's events write. Events start disabled.
type EventSet struct {
	attr   unix.PerfEventAttr
	events []OpenedEvent
	fds    []int
	rings  []*Ring
	epfd   int
	// live counts task-bound fds that have not hung up; when it reaches 0
	// every target and all its children have exited.
	live     int
	taskMode bool
	pollBuf  []unix.EpollEvent
}

// buildAttr turns Options into the attr perf record would use.
func buildAttr(o Options, taskMode bool) unix.PerfEventAttr {
	a := unix.PerfEventAttr{
		Type:        o.Event.Type,
		Config:      o.Event.Config,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample_type: o.SampleType,
		Read_format: unix.PERF_FORMAT_ID,
		Clockid:     o.ClockID,
		Wakeup:      o.WakeupEvents,
	}
	if a.Sample_type == 0 {
		a.Sample_type = DefaultSampleType
	}
	if a.Clockid == 0 {
		a.Clockid = unix.CLOCK_MONOTONIC
	}
	a.Bits = unix.PerfBitDisabled | unix.PerfBitSampleIDAll | unix.PerfBitUseClockID |
		// Side-band records the recorder needs to name addresses; mmap2
		// makes the kernel write MMAP2 (with inode and prot) instead of MMAP.
		unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec | unix.PerfBitTask
	tracepoint := o.Event.Type == unix.PERF_TYPE_TRACEPOINT
	if tracepoint {
		// The tracepoint's fields are the raw data, which perf
		// decodes with the format in the file's TRACING_DATA.
		a.Sample_type |= unix.PERF_SAMPLE_RAW
	}
	switch {
	case o.Period != 0:
		a.Sample = o.Period
	case tracepoint && o.Freq == 0:
		// Every hit a sample, as perf record samples tracepoints
		// unless told -F or -c: they are events, not a clock.
		a.Sample = 1
	default:
		a.Bits |= unix.PerfBitFreq
		a.Sample = o.Freq
		if a.Sample == 0 {
			a.Sample = DefaultFreq
		}
	}
	if o.UserStack != 0 {
		a.Sample_type |= unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER
		a.Sample_regs_user = DWARFRegsMask
		a.Sample_stack_user = o.UserStack
		// Data mappings too: perf's unwinder reads .eh_frame_hdr in the
		// read-only segment where the process mapped it.
		a.Bits |= unix.PerfBitExcludeCallchainUser | unix.PerfBitMmapData
		o.Callchain = true // the kernel's part of each chain
	}
	if o.Callchain {
		a.Sample_type |= unix.PERF_SAMPLE_CALLCHAIN
		a.Sample_max_stack = o.MaxStack
		if a.Sample_max_stack == 0 {
			a.Sample_max_stack = DefaultMaxStack
		}
	}
	if taskMode && !o.NoInherit {
		a.Bits |= unix.PerfBitInherit
	}
	if o.EnableOnExec {
		a.Bits |= unix.PerfBitEnableOnExec
	}
	if o.WakeupWatermark != 0 {
		a.Bits |= unix.PerfBitWatermark
		a.Wakeup = o.WakeupWatermark
	}
	ev := o.Event
	if ev.ExcludeUser {
		a.Bits |= unix.PerfBitExcludeUser
	}
	if ev.ExcludeKernel || o.ExcludeKernel {
		a.Bits |= unix.PerfBitExcludeKernel | unix.PerfBitExcludeCallchainKernel
	}
	if ev.ExcludeHV || o.ExcludeKernel {
		a.Bits |= unix.PerfBitExcludeHv
	}
	a.Bits |= uint64(ev.PreciseIP&3) << 15 // precise_ip:2 follows watermark
	return a
}

// OpenEvents opens o.Event on every CPU of t and, for task targets, on every
// thread of t, redirecting each CPU's events into one ring (as perf record
// does; the kernel does not allow mmap of inherited per-thread events).
// The events are disabled until Enable, or until exec with EnableOnExec.
func OpenEvents(o Options, t Target) (_ *EventSet, err error) {
	modes := 0
	for _, set := range []bool{t.SystemWide, len(t.PIDs) > 0, len(t.TIDs) > 0} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return nil, errors.New("open events: target needs exactly one of system-wide, pids or tids")
	}
	pages := o.Pages
	if pages == 0 {
		pages = DefaultPages
	}
	if pages < 0 || pages&(pages-1) != 0 {
		return nil, fmt.Errorf("open events: %d ring pages is not a power of two", pages)
	}
	cpus, err := targetCPUs(t.CPUs)
	if err != nil {
		return nil, fmt.Errorf("open events: %w", err)
	}
	tids := []int{-1}
	switch {
	case len(t.TIDs) > 0:
		tids = t.TIDs
	case len(t.PIDs) > 0:
		tids = nil
		for _, pid := range t.PIDs {
			ts, err := linux.Host.TaskIDs(pid)
			if err != nil {
				return nil, fmt.Errorf("open events: pid %d: %w", pid, err)
			}
			tids = append(tids, ts...)
		}
	}
	s := &EventSet{attr: buildAttr(o, !t.SystemWide), epfd: -1, taskMode: !t.SystemWide}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
		}
	}()
	if s.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("open events: epoll: %w", err)
	}
	gone := map[int]bool{}
	for _, cpu := range cpus {
		owner := -1
		for _, tid := range tids {
			if gone[tid] {
				continue
			}
			fd, err := perfEventOpen(&s.attr, o.Event, tid, cpu)
			if errors.Is(err, unix.ESRCH) && tid != -1 {
				gone[tid] = true // the thread exited since we listed it
				continue
			}
			if err != nil {
				return nil, err
			}
			s.fds = append(s.fds, fd)
			if err := s.attach(fd, owner, cpu, pages); err != nil {
				return nil, fmt.Errorf("open events: cpu %d: %w", cpu, err)
			}
			if owner == -1 {
				owner = fd
			}
			id, err := eventID(fd)
			if err != nil {
				return nil, fmt.Errorf("open events: cpu %d: %w", cpu, err)
			}
			s.events = append(s.events, OpenedEvent{CPU: cpu, PID: tid, ID: id})
		}
	}
	if len(s.fds) == 0 {
		return nil, fmt.Errorf("open events: every target thread has exited: %w", unix.ESRCH)
	}
	s.pollBuf = make([]unix.EpollEvent, len(s.fds))
	return s, nil
}

// attach maps a ring for fd, or redirects fd into owner's ring, and polls it.
func (s *EventSet) attach(fd, owner, cpu, pages int) error {
	if owner == -1 {
		r, err := mapRing(fd, cpu, pages)
		if err != nil {
			return err
		}
		s.rings = append(s.rings, r)
	} else if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, owner); err != nil {
		return fmt.Errorf("redirect output: %w", err)
	}
	// Every fd is polled, not only ring owners: each reports its own
	// hang-up when its thread and all the thread's children have exited.
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	if s.taskMode {
		s.live++
	}
	return nil
}

func eventID(fd int) (uint64, error) {
	var id uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id)))
	if errno != 0 {
		return 0, fmt.Errorf("event id: %w", errno)
	}
	return id, nil
}

func targetCPUs(want []int) ([]int, error) {
	online, err := linux.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	if len(want) == 0 {
		return online, nil
	}
	for _, c := range want {
		if !slices.Contains(online, c) {
			return nil, fmt.Errorf("cpu %d is not online (online: %v)", c, online)
		}
	}
	return want, nil
}

// Attr returns the attr the events were opened with.
func (s *EventSet) Attr() unix.PerfEventAttr { return s.attr }

// AttrBytes returns the attr as the kernel read it, Size bytes in host byte
// order: what a perf.data attrs section holds.
func (s *EventSet) AttrBytes() []byte {
	return slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&s.attr)), unsafe.Sizeof(s.attr)))
}

// Events returns every opened event with its kernel-assigned id.
func (s *EventSet) Events() []OpenedEvent { return s.events }

// Rings returns the set's rings, one per CPU, for callers that drain them
// separately (one goroutine each; a Ring is not safe for concurrent
// Reads); Drain and Lost cover them all.
func (s *EventSet) Rings() []*Ring { return s.rings }

// Enable starts counting on every event.
func (s *EventSet) Enable() error { return s.ioctlAll(unix.PERF_EVENT_IOC_ENABLE, "enable") }

// Disable stops counting on every event; records already written stay in
// the rings for Drain.
func (s *EventSet) Disable() error { return s.ioctlAll(unix.PERF_EVENT_IOC_DISABLE, "disable") }

func (s *EventSet) ioctlAll(req uint, what string) error {
	for _, fd := range s.fds {
		if err := unix.IoctlSetInt(fd, req, 0); err != nil {
			return fmt.Errorf("%s events: %w", what, err)
		}
	}
	return nil
}

// Poll waits up to timeout (negative: forever) until a ring has data to
// drain or every target has exited. done reports the latter: after it, one
// last Drain empties the rings. System-wide sets are never done.
func (s *EventSet) Poll(timeout time.Duration) (done bool, err error) {
	if s.taskMode && s.live == 0 {
		return true, nil
	}
	msec := -1
	if timeout >= 0 {
		msec = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	n, err := unix.EpollWait(s.epfd, s.pollBuf, msec)
	if errors.Is(err, unix.EINTR) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("poll events: %w", err)
	}
	for _, ev := range s.pollBuf[:n] {
		if ev.Events&(unix.EPOLLHUP|unix.EPOLLERR) == 0 {
			continue
		}
		// Level-triggered HUP would wake us forever; stop watching it.
		if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, int(ev.Fd), nil); err != nil {
			return false, fmt.Errorf("poll events: %w", err)
		}
		if s.taskMode {
			s.live--
		}
	}
	return s.taskMode && s.live == 0, nil
}

// Drain hands fn every record waiting in every ring; rec is valid only
// during the call. It returns the number of records. A corrupt ring is
// reported after the other rings have been drained.
func (s *EventSet) Drain(fn func(rec []byte)) (int, error) {
	total := 0
	var errs []error
	for _, r := range s.rings {
		n, err := r.Read(fn)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// Lost returns how many records the kernel dropped because a ring was full.
func (s *EventSet) Lost() uint64 {
	var n uint64
	for _, r := range s.rings {
		n += r.Lost()
	}
	return n
}

// Close unmaps the rings and closes every descriptor.
func (s *EventSet) Close() error {
	var errs []error
	for _, r := range s.rings {
		errs = append(errs, r.close())
	}
	for _, fd := range s.fds {
		errs = append(errs, unix.Close(fd))
	}
	if s.epfd >= 0 {
		errs = append(errs, unix.Close(s.epfd))
	}
	s.rings, s.fds, s.epfd = nil, nil, -1
	return errors.Join(errs...)
}
