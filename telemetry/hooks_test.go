package telemetry

import (
	"sync"
)

// fileHooks makes the writer's segment files block or fail on demand, so tests can put the writer
// goroutine in a known state without sleeping.
type fileHooks struct {
	mu       sync.Mutex
	block    chan struct{} // while set, Write signals entered and waits for it to be closed
	entered  chan struct{}
	writeErr error         // while set, Write writes half the line and fails with it
	truncErr error         // while set, Truncate fails with it
	syncErr  error         // while set, Sync fails with it
	openErr  error         // while set, opening a segment fails with it
	wrote    chan struct{} // if set, receives one value after each Write
	syncs    int
	writes   int
}

func (h *fileHooks) opener() fileOpener {
	return func(path string) (segmentFile, int64, error) {
		h.mu.Lock()
		err := h.openErr
		h.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		f, size, err := openSegmentFile(path)
		if err != nil {
			return nil, 0, err
		}
		return &hookedFile{segmentFile: f, h: h}, size, nil
	}
}

// blockWrites makes the next Write block until unblock.
func (h *fileHooks) blockWrites() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.block = make(chan struct{})
	h.entered = make(chan struct{}, 1)
}

func (h *fileHooks) unblock() {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.block)
	h.block = nil
}

func (h *fileHooks) set(f func(h *fileHooks)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *fileHooks) counts() (writes, syncs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes, h.syncs
}

type hookedFile struct {
	segmentFile
	h *fileHooks
}

func (f *hookedFile) Write(p []byte) (int, error) {
	f.h.mu.Lock()
	block, entered, err, wrote := f.h.block, f.h.entered, f.h.writeErr, f.h.wrote
	f.h.writes++
	f.h.mu.Unlock()
	if block != nil {
		entered <- struct{}{}
		<-block
	}
	if wrote != nil {
		defer func() { wrote <- struct{}{} }()
	}
	if err != nil {
		n, _ := f.segmentFile.Write(p[:len(p)/2])
		return n, err
	}
	return f.segmentFile.Write(p)
}

func (f *hookedFile) Truncate(size int64) error {
	f.h.mu.Lock()
	err := f.h.truncErr
	f.h.mu.Unlock()
	if err != nil {
		return err
	}
	return f.segmentFile.Truncate(size)
}

func (f *hookedFile) Sync() error {
	f.h.mu.Lock()
	err := f.h.syncErr
	f.h.syncs++
	f.h.mu.Unlock()
	if err != nil {
		return err
	}
	return f.segmentFile.Sync()
}
