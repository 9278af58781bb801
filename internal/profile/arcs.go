package profile

// Arc is a call-graph arc without the stack it came from: Caller called
// Callee in samples of Event, as a sample database's {cg} files count
// them (OProfile's opreport --callgraph reads the same). A sample adds
// one to each arc of its callchain: the counts are not calls.
type Arc struct {
	Caller, Callee int32 // frames, indexes in Profile.Frames
	Event          int32
	Value
}
