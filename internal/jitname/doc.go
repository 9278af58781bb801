// Package jitname bounds the names JIT data gives to code. jitdump and
// jitlog records may carry names of up to 64 MiB and an external handler's
// of up to 64 KiB; a report keeps every name and prints it with every row,
// so one hostile name would cost memory and time out of all proportion.
// Names are cut at Max bytes, as Linux perf's perf-map reader cuts its
// lines at 4 KiB, with a marker that says how long the name was, so the cut
// is visible and a truncated name never passes for a real one.
package jitname
