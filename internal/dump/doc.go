// Package dump prints a perf.data file for people and tests: the header,
// attrs, feature sections and every record, in the spirit of
// perf report -D, and per-type record counts like perf report --stats.
package dump
