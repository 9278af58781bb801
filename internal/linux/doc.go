// Package linux is where jitprof reads what the running Linux says of
// itself and of its processes: /proc/PID (status, stat, comm, task,
// maps), /proc/kallsyms and /proc/modules, /sys/kernel/notes, the CPU
// lists and sysctls under /proc/sys and /sys/devices/system, and this
// process's vDSO. Every other package asks here, as cilium/ebpf keeps its
// OS wrappers in one internal package; the parsers are fuzzed.
//
// The perf_event_open system call and its ring buffers are not here but
// in internal/perfevent; files other users wrote are opened through
// internal/trust.
package linux
