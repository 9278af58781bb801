package symbolize

import (
	"bytes"

	"github.com/jitprof/jitprof/internal/linux"
)

// LoadVDSO loads the vDSO of the running process. The kernel maps one vDSO
// image per boot and ABI into every process, so this copy symbolizes the
// [vdso] mapping of any profiled process of the same ABI.
func LoadVDSO(opts LoadOptions) (*Image, error) {
	b, err := linux.VDSO()
	if err != nil {
		return nil, err
	}
	return LoadReader(VDSOPath, bytes.NewReader(b), opts)
}
