// Package perftest runs Linux perf and small C workloads for tests that
// check jitprof against the real tool: recording reference files, reading
// perf report --stats and perf script output. It also runs node on a
// small script (Node) for the tests that read real V8 JIT data, builds
// the smallest JIT, a loop copied into anonymous executable memory
// (AnonJIT), and writes small perf.data files of given records
// (WriteData, OpenData).
//
// Linux perf is the reference the project is measured against, so on CI
// (CI set in the environment) a missing perf or compiler fails the test
// instead of skipping it.
package perftest
