package jitlog

import "fmt"

// Line is one record as a line of text, "kind field=value ...", as
// jitprof jitlog dump prints it: times in CLOCK_MONOTONIC ns (TSC stamps
// already converted by the reader), code, files, lines and bytecode by
// their sizes.
func Line(r Record) string {
	switch r := r.(type) {
	case *Header:
		return fmt.Sprintf("header version=%d pid=%d start=%d created=%d clock=%d max=%d loggers=%d seq=%d",
			r.Version, r.PID, r.StartTime, r.Created, r.ClockID, r.MaxSize, r.Loggers, r.Seq)
	case *OpenRecord:
		return fmt.Sprintf("logger-open time=%d logger=%d name=%q", r.Time, r.Logger, r.Name)
	case *CloseRecord:
		return fmt.Sprintf("logger-close time=%d logger=%d", r.Time, r.Logger)
	case *ClockRecord:
		return fmt.Sprintf("clock time=%d tsc=%d logger=%d", r.Time, r.TSC, r.Logger)
	case *LoadRecord:
		return fmt.Sprintf("code-load seq=%d time=%d addr=%#x size=%d logger=%d name=%q code=%d files=%d lines=%d bytecode=%d",
			r.Seq, r.Time, r.Addr, r.Size, r.Logger, r.Name, len(r.Code), len(r.Files), len(r.Lines), len(r.Bytecode))
	case *MoveRecord:
		return fmt.Sprintf("code-move seq=%d time=%d from=%#x to=%#x logger=%d", r.Seq, r.Time, r.OldAddr, r.NewAddr, r.Logger)
	case *UnloadRecord:
		return fmt.Sprintf("code-unload seq=%d time=%d logger=%d", r.Seq, r.Time, r.Logger)
	case *EnterRecord:
		return fmt.Sprintf("region-enter seq=%d time=%d tid=%d logger=%d", r.Seq, r.Time, r.TID, r.Logger)
	case *ExitRecord:
		return fmt.Sprintf("region-exit time=%d tid=%d logger=%d", r.Time, r.TID, r.Logger)
	case *UnwindRecord:
		return fmt.Sprintf("code-unwind seq=%d logger=%d eh_frame=%d", r.Seq, r.Logger, len(r.EHFrame))
	case *UnknownRecord:
		return fmt.Sprintf("%v bytes=%d", r.Type, len(r.Data))
	}
	return fmt.Sprintf("%v", r.Kind())
}
