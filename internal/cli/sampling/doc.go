// Package sampling is the command line's flag group for what to sample
// and how often (-e, -F, -c, -a, -p, -t, -C, -m), shared by jitprof
// record, jitprof top and the daemon. It lives apart from internal/cli
// because it links the recorder and perf_event_open (internal/record),
// which the commands that only read, jitprof-web among them, must not.
package sampling
