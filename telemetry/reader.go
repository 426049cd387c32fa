package telemetry

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// DefaultMaxLineBytes bounds one line when Reader.MaxLineBytes is zero.
const DefaultMaxLineBytes = 64 << 20

// CorruptError is a complete line, or a stretch of a compressed segment, that does not hold a valid
// record. Next can be called again to continue after it.
type CorruptError struct {
	Path string
	Line int // 1-based line in the (decompressed) segment
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s:%d: decision log: corrupt record: %v", e.Path, e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// VersionError is a record of a schema version this reader does not know. It is never skipped: a
// log of a newer schema needs a newer reader, not one that reads around it. Next can still be called
// again to continue after it.
type VersionError struct {
	Path    string
	Line    int
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s:%d: decision log: schema version %d, this reader reads versions 1 to %d",
		e.Path, e.Line, e.Version, SchemaVersion)
}

// Reader streams records from decision-log segments, plain or gzipped, in order.
//
// A line without its terminating newline at the end of a segment, and a gzipped segment cut short,
// are what a crash leaves behind: Next skips them and counts them in Torn. Anything else that is not
// a valid record is a *CorruptError naming file and line, unless SkipCorrupt is set, in which case it
// is skipped and counted in Skipped. A record of another schema version is always a *VersionError.
type Reader struct {
	// SkipCorrupt skips corrupt lines (and the rest of a gzipped segment whose data is corrupt)
	// instead of returning an error.
	SkipCorrupt bool
	// MaxLineBytes bounds one line (0 means DefaultMaxLineBytes); a longer line is corrupt.
	MaxLineBytes int

	paths   []string
	open    func(path string) (*lineStream, error) // openLineStream; tests read from memory
	next    int
	cur     *lineStream
	torn    int
	skipped int
}

// NewReader reads the given paths in order. A directory stands for all its segments in sequence
// order (the compressed form when a segment has both); a file is read whether plain or gzipped.
func NewReader(paths ...string) (*Reader, error) {
	files, err := SegmentFiles(paths...)
	if err != nil {
		return nil, err
	}
	return &Reader{open: openLineStream, paths: files}, nil
}

// SegmentFiles expands paths as NewReader does: a directory becomes its segment files in sequence
// order (the compressed form when a segment has both), a file stays as given. Callers that read
// segments in parallel use it to get the same files in the same order.
func SegmentFiles(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("decision log: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		listing, err := listDir(p)
		if err != nil {
			return nil, fmt.Errorf("decision log: %w", err)
		}
		for _, s := range listing.segments {
			out = append(out, s.path(p))
		}
	}
	return out, nil
}

// Torn is the number of torn lines and truncated gzipped segments skipped so far.
func (r *Reader) Torn() int { return r.torn }

// Skipped is the number of corrupt lines or gzipped stretches skipped under SkipCorrupt.
func (r *Reader) Skipped() int { return r.skipped }

// Next returns the next record, or io.EOF after the last one.
func (r *Reader) Next() (*Record, error) {
	for {
		if r.cur == nil {
			if r.next == len(r.paths) {
				return nil, io.EOF
			}
			path := r.paths[r.next]
			r.next++
			s, err := r.open(path)
			if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(path, plainSuffix) {
				// Compressed since NewReader listed the directory.
				s, err = r.open(path + ".gz")
			}
			if err != nil {
				return nil, fmt.Errorf("decision log: %w", err)
			}
			r.cur = s
		}
		rec, err := r.cur.next(r.maxLine())
		switch {
		case err == nil:
			return rec, nil
		case errors.Is(err, io.EOF):
			r.closeCurrent()
		case errors.Is(err, errTorn):
			r.torn++
			r.closeCurrent()
		default:
			var cerr *CorruptError
			corrupt := errors.As(err, &cerr)
			if corrupt && r.SkipCorrupt {
				r.skipped++
				if r.cur.broken {
					r.closeCurrent()
				}
				continue
			}
			if r.cur.broken {
				r.closeCurrent()
			}
			return nil, err
		}
	}
}

func (r *Reader) maxLine() int {
	if r.MaxLineBytes > 0 {
		return r.MaxLineBytes
	}
	return DefaultMaxLineBytes
}

func (r *Reader) closeCurrent() {
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
}

// Close releases the segment being read.
func (r *Reader) Close() error {
	r.closeCurrent()
	r.next = len(r.paths)
	return nil
}

// errTorn marks the end of a segment that a crash cut short.
var errTorn = errors.New("torn")

// gzipMagic starts every gzip stream; a plain segment starts with '{'.
const gzipMagic = "\x1f\x8b"

// lineStream reads the records of one segment.
type lineStream struct {
	path   string
	file   io.Closer
	br     *bufio.Reader
	line   int
	buf    []byte
	broken bool // the stream cannot be read further (corrupt compressed data)
	chains readChains
}

func openLineStream(path string) (*lineStream, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return newLineStream(path, f, f, strings.HasSuffix(path, ".gz")), nil
}

// newLineStream reads src as gzip when gz is set or when it starts with the gzip magic.
func newLineStream(path string, src io.Reader, closer io.Closer, gz bool) *lineStream {
	s := &lineStream{path: path, file: closer}
	raw := bufio.NewReaderSize(src, 64<<10)
	if magic, _ := raw.Peek(len(gzipMagic)); gz || string(magic) == gzipMagic {
		s.br = bufio.NewReaderSize(&lazyGzip{src: raw}, 64<<10)
	} else {
		s.br = raw
	}
	return s
}

func (s *lineStream) close() {
	if s.file != nil {
		s.file.Close()
	}
}

// next decodes the next line. It returns io.EOF at a clean end, errTorn at a torn one.
func (s *lineStream) next(max int) (*Record, error) {
	line, err := s.readLine(max)
	if err != nil {
		return nil, err
	}
	rec, err := decodeRecord(line)
	if err != nil {
		var verr *VersionError
		if errors.As(err, &verr) {
			verr.Path, verr.Line = s.path, s.line
			return nil, verr
		}
		return nil, &CorruptError{Path: s.path, Line: s.line, Err: err}
	}
	if s.chains == nil {
		s.chains = readChains{}
	}
	if err := s.chains.resolve(rec); err != nil {
		return nil, &CorruptError{Path: s.path, Line: s.line, Err: err}
	}
	return rec, nil
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next complete line without its newline. The slice is valid until the next
// call.
func (s *lineStream) readLine(max int) ([]byte, error) {
	s.buf = s.buf[:0]
	tooLong := false
	for {
		chunk, err := s.br.ReadSlice('\n')
		switch {
		case tooLong:
		case len(s.buf)+len(chunk) > max+1:
			tooLong, s.buf = true, s.buf[:0]
		case err == nil && len(s.buf) == 0:
			s.line++
			return chunk[:len(chunk)-1], nil // the common case: no copy
		default:
			s.buf = append(s.buf, chunk...)
		}
		switch {
		case err == nil:
			s.line++
			if tooLong {
				return nil, &CorruptError{Path: s.path, Line: s.line, Err: errLineTooLong}
			}
			return s.buf[:len(s.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(s.buf) == 0 && !tooLong {
				return nil, io.EOF
			}
			return nil, errTorn
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errTorn // a gzipped segment cut short: its complete lines were returned
		default:
			s.broken = true
			return nil, &CorruptError{Path: s.path, Line: s.line + 1, Err: err}
		}
	}
}

// knownVersion reports whether this reader reads schema version v: this one, and version 1.
func knownVersion(v int) bool { return v == SchemaVersion || v == 1 }

// decodeRecord decodes and validates one line.
func decodeRecord(line []byte) (*Record, error) {
	rec := new(Record)
	if err := json.Unmarshal(line, rec); err != nil {
		// A record of another version may not fit this schema: report the version, not the misfit.
		var probe struct {
			V int `json:"v"`
		}
		if json.Unmarshal(line, &probe) == nil && probe.V != 0 && !knownVersion(probe.V) {
			return nil, &VersionError{Version: probe.V}
		}
		return nil, err
	}
	if rec.V == 0 {
		return nil, errors.New(`no "v"`)
	}
	if !knownVersion(rec.V) {
		return nil, &VersionError{Version: rec.V}
	}
	if rec.V < 2 && rec.Master != nil && rec.Master.CutsFrom != 0 {
		return nil, errors.New("a version 1 master record has no cuts_from")
	}
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	return rec, nil
}

// lazyGzip opens the gzip stream on first read, so that a header cut short surfaces as a read error
// that readLine classifies like any other.
type lazyGzip struct {
	src io.Reader
	zr  *gzip.Reader
	err error
}

func (g *lazyGzip) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.src)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the magic was there, so the stream is cut short
			}
			g.err = err
			return 0, err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		g.err = err
	}
	return n, err
}
