package web

import (
	"errors"
	"os"
	"os/exec"
	"strings"
)

// OpenBrowser asks the desktop to show url: with $BROWSER if set, else
// with the first of xdg-open, x-www-browser and sensible-browser that
// starts. It does not wait for the browser.
func OpenBrowser(url string) error {
	var tries [][]string
	if b := strings.Fields(os.Getenv("BROWSER")); len(b) > 0 {
		tries = append(tries, b)
	}
	tries = append(tries, []string{"xdg-open"}, []string{"x-www-browser"}, []string{"sensible-browser"})
	for _, t := range tries {
		cmd := exec.Command(t[0], append(t[1:], url)...)
		if err := cmd.Start(); err == nil {
			go cmd.Wait()
			return nil
		}
	}
	return errors.New("found no browser to open (set BROWSER, or open the address by hand)")
}
