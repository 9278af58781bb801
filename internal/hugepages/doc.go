// Package hugepages asks the kernel to back the Go heap with transparent
// huge pages, where the system leaves that to each program
// (/sys/kernel/mm/transparent_hugepage/enabled set to "madvise", the
// default of Debian and most distributions).
//
// Why: a report allocates tens of megabytes it touches once, and each
// fresh 4 KiB page is a page fault. On bare metal a fault costs a
// fraction of a microsecond; in the virtual machines jitprof runs in on
// cloud hosts, where the hypervisor takes part in each one, it costs
// about 14 µs (measured: 64 MiB touched page by page takes 250 ms, the
// same memory in huge pages 4.5 ms). A report of a 600k-sample recording
// took 13,800 faults and 30% more CPU time than with huge pages (2,500
// faults). The Go runtime no longer asks for huge pages itself (Go
// 1.21.1 dropped it), so jitprof does, for the heap it is about to use.
package hugepages
