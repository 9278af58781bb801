package top

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/uniseg"
)

// help is the key list the UI shows on h and on its last line.
var help = []string{
	"q, Ctrl-C      quit",
	"space, p       pause or resume the display (sampling goes on)",
	"Up, Down, PgUp, PgDn, Home, End   select a row",
	"Enter, a       annotate the selected row: its instructions with their samples (JIT code too)",
	"c              the selected row's callchains as a tree, as report -g prints it (top -g)",
	"t              zoom into the selected row's process, or out",
	"d              zoom into the selected row's image, or out",
	"j              cycle: JIT and native code, JIT code only, native code only",
	"s              cycle the sort keys: dso,sym  sym  comm,dso,sym  pid,comm,sym  dso  comm",
	"z              zero the counts at each refresh, or decay them (perf top's -z)",
	"Esc            leave the annotation or help; else zoom out",
	"h, ?           this help",
}

const footer = "q quit  space pause  Enter annotate  c calls  t process  d image  j JIT/native  s sort  z zero  h help"

// tui is the terminal UI's state.
type tui struct {
	st   *state
	s    tcell.Screen
	view View

	rows   []Row
	stats  Stats
	err    error
	sel    int // the selected row
	top    int // the first row shown
	paused bool
	// text, when set, is shown instead of the rows (an annotation or
	// the help), scrolled to line off.
	text  []string
	title string
	off   int
}

// runTUI runs the terminal UI until the user quits or ctx is done. It
// gives the terminal back as it found it whatever ends it: a return, a
// panic, or a signal (ctx, which the command cancels on SIGINT,
// SIGTERM and SIGHUP; Ctrl-C in the UI is a key).
func runTUI(ctx context.Context, st *state, done <-chan error) (err error) {
	s, err := tcell.NewScreen()
	if err != nil {
		return fmt.Errorf("terminal: %w (give --stdio for a plain report)", err)
	}
	if err := s.Init(); err != nil {
		return fmt.Errorf("terminal: %w (give --stdio for a plain report)", err)
	}
	var once sync.Once
	fini := func() { once.Do(s.Fini) }
	defer fini()
	defer func() {
		if r := recover(); r != nil {
			fini()
			panic(r)
		}
	}()
	u := &tui{st: st, s: s, view: st.o.View}
	events := make(chan tcell.Event, 16)
	quit := make(chan struct{})
	defer close(quit)
	go s.ChannelEvents(events, quit)
	tick := time.NewTicker(st.o.Delay)
	defer tick.Stop()
	u.refresh()
	for {
		u.draw()
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			st.end(err)
			done = nil // the header says it; the view stays until q
			u.refresh()
		case <-tick.C:
			if !u.paused {
				u.refresh()
			}
		case ev := <-events:
			switch ev := ev.(type) {
			case *tcell.EventResize:
				s.Sync()
			case *tcell.EventKey:
				if u.key(ev) {
					return nil
				}
			}
		}
	}
}

func (u *tui) refresh() {
	_, u.rows, u.stats, u.err = u.st.refresh(&u.view)
	u.sel = min(u.sel, max(len(u.rows)-1, 0))
}

// key handles a key, and says whether to quit.
func (u *tui) key(ev *tcell.EventKey) bool {
	_, h := u.s.Size()
	page := max(h-5, 1)
	if ev.Key() == tcell.KeyCtrlC {
		return true
	}
	if ev.Key() == tcell.KeyCtrlZ {
		u.suspend()
		return false
	}
	if u.text != nil {
		switch {
		case ev.Key() == tcell.KeyEscape || ev.Rune() == 'q':
			u.text = nil
		case ev.Key() == tcell.KeyDown:
			u.off = min(u.off+1, max(len(u.text)-1, 0))
		case ev.Key() == tcell.KeyUp:
			u.off = max(u.off-1, 0)
		case ev.Key() == tcell.KeyPgDn || ev.Rune() == ' ':
			u.off = min(u.off+page, max(len(u.text)-1, 0))
		case ev.Key() == tcell.KeyPgUp:
			u.off = max(u.off-page, 0)
		case ev.Key() == tcell.KeyHome:
			u.off = 0
		case ev.Key() == tcell.KeyEnd:
			u.off = max(len(u.text)-page, 0)
		}
		return false
	}
	switch ev.Key() {
	case tcell.KeyDown:
		u.sel = min(u.sel+1, max(len(u.rows)-1, 0))
	case tcell.KeyUp:
		u.sel = max(u.sel-1, 0)
	case tcell.KeyPgDn:
		u.sel = min(u.sel+page, max(len(u.rows)-1, 0))
	case tcell.KeyPgUp:
		u.sel = max(u.sel-page, 0)
	case tcell.KeyHome:
		u.sel = 0
	case tcell.KeyEnd:
		u.sel = max(len(u.rows)-1, 0)
	case tcell.KeyEnter:
		u.annotate()
	case tcell.KeyEscape:
		switch {
		case u.view.DSO != "":
			u.view.DSO = ""
		case u.view.PID >= 0:
			u.view.PID = -1
		case u.view.Code != AllCode:
			u.view.Code = AllCode
		}
		u.refreshZoom()
	case tcell.KeyRune:
		switch ev.Rune() {
		case 'q':
			return true
		case ' ', 'p':
			u.paused = !u.paused
		case 'a':
			u.annotate()
		case 'c':
			u.calls()
		case 't':
			if u.view.PID >= 0 {
				u.view.PID = -1
			} else if r := u.selected(); r != nil {
				u.view.PID = int64(r.PID)
			}
			u.refreshZoom()
		case 'd':
			if u.view.DSO != "" {
				u.view.DSO = ""
			} else if r := u.selected(); r != nil {
				if c := u.view.keyColumn("dso"); c >= 0 {
					u.view.DSO = r.Keys[c]
				}
			}
			u.refreshZoom()
		case 'j':
			u.view.Code = (u.view.Code + 1) % 3
			u.refreshZoom()
		case 's':
			u.view.Keys = nextKeys(u.view.Keys)
			u.refreshZoom()
		case 'z':
			u.st.mu.Lock()
			u.st.o.Zero = !u.st.o.Zero
			u.st.mu.Unlock()
		case 'h', '?':
			u.text, u.title, u.off = help, "Keys", 0
		}
	}
	return false
}

// refreshZoom shows the new zoom at once, from the counts as they are.
func (u *tui) refreshZoom() {
	p := u.st.l.peek()
	u.rows, u.err = u.view.rows(p)
	u.sel, u.top = 0, 0
}

func (u *tui) selected() *Row {
	if u.sel < len(u.rows) {
		return &u.rows[u.sel]
	}
	return nil
}

// calls shows the selected row's callchains.
func (u *tui) calls() {
	r := u.selected()
	if r == nil {
		return
	}
	text, err := u.st.callchains(&u.view, r)
	if err != nil {
		text = "no tree: " + err.Error()
	}
	u.text, u.title, u.off = strings.Split(strings.TrimRight(text, "\n"), "\n"), "Callchains of "+strings.Join(r.Keys, " "), 0
}

func (u *tui) annotate() {
	r := u.selected()
	if r == nil {
		return
	}
	text, err := u.st.annotation(&u.view, r)
	if err != nil {
		text = "cannot annotate: " + err.Error()
	}
	u.text, u.title, u.off = strings.Split(strings.TrimRight(text, "\n"), "\n"), "Annotation of "+strings.Join(r.Keys, " "), 0
}

// suspend gives the terminal back and stops, as Ctrl-Z does to any
// program; fg resumes the UI.
func (u *tui) suspend() {
	if err := u.s.Suspend(); err != nil {
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGTSTP)
	u.s.Resume()
}

var (
	plain    = tcell.StyleDefault
	bold     = tcell.StyleDefault.Bold(true)
	reversed = tcell.StyleDefault.Reverse(true)
)

// draw draws the screen: two header lines, the column titles, the rows
// or the text shown, and the keys.
func (u *tui) draw() {
	s := u.s
	s.Clear()
	w, h := s.Size()
	header := u.st.header(u.stats)
	if u.paused {
		header = "[paused] " + header
	}
	line(s, 0, w, header, bold)
	zoom := "all processes"
	if z := u.view.describe(u.st.comm(u.view.PID, u.rows)); z != "" {
		zoom = "zoomed into " + z + " (Esc: out)"
	}
	line(s, 1, w, zoom, plain)
	line(s, h-1, w, footer, reversed)
	body := h - 4
	if u.text != nil {
		line(s, 2, w, u.title, bold)
		for i := 0; i < body && u.off+i < len(u.text); i++ {
			line(s, 3+i, w, strings.ReplaceAll(u.text[u.off+i], "\t", "    "), plain)
		}
		s.Show()
		return
	}
	if u.sel < u.top {
		u.top = u.sel
	}
	if u.sel >= u.top+body {
		u.top = u.sel - body + 1
	}
	shown := u.rows[min(u.top, len(u.rows)):min(u.top+body, len(u.rows))]
	title, lines := table(&u.view, shown)
	line(s, 2, w, title, bold)
	if u.err != nil {
		line(s, 3, w, "error: "+u.err.Error(), plain)
	}
	for i, l := range lines {
		st := plain
		if u.top+i == u.sel {
			st = reversed
		}
		line(s, 3+i, w, l, st)
	}
	s.Show()
}

// comm is the name of process pid, from the rows.
func (st *state) comm(pid int64, rows []Row) string {
	for _, r := range rows {
		if int64(r.PID) == pid {
			return r.Comm
		}
	}
	return "?"
}

// line writes text on row y, cut to width w; a selected row's style
// fills the row.
func line(s tcell.Screen, y, w int, text string, st tcell.Style) {
	x := 0
	for _, r := range text {
		rw := uniseg.StringWidth(string(r))
		if x+rw > w {
			break
		}
		s.SetContent(x, y, r, nil, st)
		x += max(rw, 1)
	}
	for ; x < w; x++ {
		s.SetContent(x, y, ' ', nil, st)
	}
}
