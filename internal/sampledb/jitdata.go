package sampledb

// JITManifest is what a session keeps of a process's JIT data, in
// jit/PID/process.json beside the copies (docs/sample-files.md): who the
// process was, which source numbered its code, and which file is which.
type JITManifest struct {
	PID       int    `json:"pid"`
	NSPID     int    `json:"nspid,omitempty"`
	UID       int    `json:"uid"`
	StartTime uint64 `json:"start_time,omitempty"`
	Comm      string `json:"comm,omitempty"`
	// Handler is the source whose sequence numbers the process's
	// {jit:HANDLER} sample files keep.
	Handler string    `json:"handler"`
	Files   []JITFile `json:"files"`
}

// JITFile is one copied file: the path the JIT wrote it at, its kind (a
// handler's name, or anon.PerfmapSeq), and its name in jit/PID/.
type JITFile struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// JITManifestName is the manifest's name in jit/PID/.
const JITManifestName = "process.json"
