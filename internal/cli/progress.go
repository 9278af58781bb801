package cli

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// ProgressBar returns a progress callback that draws on w when w is a
// terminal, and nil otherwise, so pipes and files stay clean.
func ProgressBar(w *os.File) func(done, total int64) {
	st, err := w.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	last := -1
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		pc := int(done * 100 / total)
		if pc == last {
			return
		}
		last = pc
		n := pc / 4
		fmt.Fprintf(w, "\r[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", 25-n), pc)
		if done >= total {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
