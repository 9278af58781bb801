package pypylog

import "strings"

// LogFile is the file a PYPYLOG value names, as RPython's debug_print.c
// reads the variable: "FILE" or "SECTIONS:FILE", "-" standing for
// standard error; "" when it names none. "%d" in it stands for the pid
// of the process that writes it.
func LogFile(value string) string {
	if _, file, ok := strings.Cut(value, ":"); ok {
		value = file
	}
	if value == "-" {
		return ""
	}
	return value
}
