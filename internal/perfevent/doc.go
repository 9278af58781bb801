// Package perfevent is jitprof's only door to the kernel's performance
// events: it opens events with perf_event_open(2), reads their mmap ring
// buffers, and starts a command stopped until its events are enabled.
// What /proc and /sys say (the processes a recorder synthesizes records
// for, CPUs, sysctls) is read by internal/linux.
//
// It implements the ABI of include/uapi/linux/perf_event.h: struct
// perf_event_attr (as golang.org/x/sys/unix.PerfEventAttr), the ioctls
// PERF_EVENT_IOC_{ENABLE,DISABLE,ID,SET_OUTPUT}, and struct
// perf_event_mmap_page, whose data_head is read with acquire ordering and
// whose data_tail is written with release ordering after the records have
// been consumed, as the comment above those fields requires.
//
// Records leave a [Ring] as the raw bytes the kernel wrote (a
// perf_event_header followed by its body): exactly what goes into a
// perf.data file, so this package does not decode them.
//
// Importing this package installs an init hook used by [StartCommand]: when
// the process was started with the environment variable named by shimEnv it
// waits for its parent's go-ahead and then executes the real command. See
// command.go for why this must run in an init function.
package perfevent
