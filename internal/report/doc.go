// Package report prints a profile.Profile for people and programs: the
// per-image and per-symbol view of OProfile's opreport and perf report
// (aligned text, JSON or CSV), with perf's sort keys, a percent threshold
// and, from the sampled callchains, children (inclusive) and self
// percentages as perf report --children computes them.
//
// Percentages are of the event's total period, as perf's are: in
// frequency mode the period of each sample differs, and a sample counts
// for the events it stands for.
package report
