package pypylog

import "strings"

// LogFile is the file a PYPYLOG value names, as RPython's debug_print.c
// reads the variable, when PyPy writes the loops' addresses there (its
// jit-backend-addr sections, which name them); "" otherwise. "%d" in it
// stands for the pid of the process that writes it (the first "%d" only).
//
// "SECTIONS:FILE" logs the sections whose names start with one of the
// comma-separated SECTIONS (none given, every section); "-" as FILE is
// standard error. "FILE" without a colon, or "+FILE" (then FILE may hold
// colons), is the profiling mode, which logs when sections start and
// end but none of their text, so no addresses.
func LogFile(value string) string {
	if strings.HasPrefix(value, "+") {
		return ""
	}
	prefixes, file, ok := strings.Cut(value, ":")
	if !ok || file == "-" || file == "" {
		return ""
	}
	for p := range strings.SplitSeq(prefixes, ",") {
		if strings.HasPrefix(SectionAddr, p) {
			return file
		}
	}
	return ""
}
