package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// scanChunk is how much of a segment validEnd reads at a time while looking backwards for a newline.
const scanChunk = 64 << 10

// validEnd returns the offset just past the last complete line of r (of the given size) that is a
// JSON object. Everything after it is the remains of an interrupted write: an unterminated
// fragment, or after a power loss lines of garbage the file system never had written. It reads each
// byte at most twice, however much garbage there is.
func validEnd(r io.ReaderAt, size int64) (int64, error) {
	sc := backScanner{r: r, buf: make([]byte, scanChunk)}
	end := size
	for end > 0 {
		nl, err := sc.lastNewline(end)
		if err != nil {
			return 0, err
		}
		if nl != end-1 { // an unterminated fragment
			end = nl + 1
			continue
		}
		prev, err := sc.lastNewline(end - 1)
		if err != nil {
			return 0, err
		}
		start := prev + 1
		line := make([]byte, end-1-start)
		if err := readFullAt(r, line, start); err != nil {
			return 0, err
		}
		if isJSONObject(line) {
			return end, nil
		}
		end = start
	}
	return 0, nil
}

func isJSONObject(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r")
	return len(t) > 0 && t[0] == '{' && json.Valid(line)
}

// backScanner finds newlines going backwards through a file, reading each chunk once as long as
// the offsets it is asked about never increase.
type backScanner struct {
	r     io.ReaderAt
	buf   []byte
	start int64 // file offset of buf[0]
	n     int   // bytes of buf holding data
}

// lastNewline returns the offset of the last '\n' before end, or -1.
func (s *backScanner) lastNewline(end int64) (int64, error) {
	for end > 0 {
		if end <= s.start || end > s.start+int64(s.n) {
			n := min(end, int64(len(s.buf)))
			s.start, s.n = end-n, int(n)
			if err := readFullAt(s.r, s.buf[:n], s.start); err != nil {
				s.n = 0
				return 0, err
			}
		}
		if i := bytes.LastIndexByte(s.buf[:end-s.start], '\n'); i >= 0 {
			return s.start + int64(i), nil
		}
		end = s.start
	}
	return -1, nil
}

func readFullAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// repairTail makes the segment at path end with a complete record, so that appending to it yields a
// valid file, and returns how many bytes it cut. Before cutting it keeps a durable byte-for-byte copy
// of the whole segment as <path>.torn-<unixms>, returned as copyPath. On error the segment must not be
// appended to: the caller starts a new one and leaves this one to the reader, which skips a torn last
// line.
func repairTail(path string, nowMs int64, fsync bool) (cut int64, copyPath string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	end, err := validEnd(f, st.Size())
	if err != nil {
		return 0, "", err
	}
	if end == st.Size() {
		return 0, "", nil
	}
	copyPath, err = copyTorn(f, path, nowMs)
	if err != nil {
		return 0, "", fmt.Errorf("keeping a copy of the torn segment: %w", err)
	}
	if err := f.Truncate(end); err != nil {
		return 0, copyPath, err
	}
	if fsync {
		if err := f.Sync(); err != nil {
			return 0, copyPath, err
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			return 0, copyPath, err
		}
	}
	return st.Size() - end, copyPath, nil
}

// copyTorn copies all of src to a fresh <path>.torn-<nowMs>[-n] and fsyncs it: the copy must be
// durable before the original is cut.
func copyTorn(src *os.File, path string, nowMs int64) (string, error) {
	base := path + tornInfix + strconv.FormatInt(nowMs, 10)
	name := base
	var dst *os.File
	for i := 1; ; i++ {
		var err error
		dst, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", err
		}
		name = base + "-" + strconv.Itoa(i)
	}
	_, err := io.Copy(dst, io.NewSectionReader(src, 0, 1<<62))
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}
