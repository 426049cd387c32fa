package controller

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy sits between the daemon and a broker so a test can cut the network: the broker then sees
// the daemon's connection die (and sends its Last Will) while the daemon cannot reconnect until the
// test resumes the proxy. Killing the client on the broker instead races the daemon's immediate
// reconnection against the broker's own notice of the dead connection.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	paused bool
	wg     sync.WaitGroup
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		paused := p.paused
		p.mu.Unlock()
		if paused {
			c.Close()
			continue
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, b)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(b, c); b.Close() }()
		go func() { defer p.wg.Done(); _, _ = io.Copy(c, b); c.Close() }()
	}
}

// cut closes every proxied connection and refuses new ones until resume.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	p.paused = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
}

func (p *tcpProxy) resume() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}
