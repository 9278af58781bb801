// Package termtext makes text that other users wrote safe to show on a
// terminal. A perf map's names, a process's comm and executable path, a
// JIT's source lines are chosen by whoever ran the process, and jitprof
// prints them to root's terminal, where ESC and BEL start sequences that
// set the window's title (OSC 0), fill the clipboard (OSC 52) or clear
// the screen (CSI 2J), and a newline or carriage return forges a row.
//
// Escape is the one rule: control bytes (C0 and DEL), C1 controls,
// Unicode's bidirectional controls and bytes that are not UTF-8 are
// written as escapes (\x1b, \u009b, \u202e), everything else as it is.
// Every text output (report rows, trees, CSV and folded stacks,
// annotate, dump, pathtime, pypy loops, jitlog dump, daemon status) uses
// it on each name it prints, and Writer applies it to whole streams of
// text, stderr's notes and errors among them, keeping the newlines and
// tabs of jitprof's own layout. HTML, JSON and DOT have escaping of
// their own and do not use it.
package termtext
