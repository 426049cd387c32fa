package controller

import (
	"net"
	"sync"
	"testing"
)

// tcpProxy sits between the daemon and a broker so a test can break the network in two ways.
//
// cut closes every connection and refuses new ones until resume: the daemon notices at once and the
// broker sends its Last Will. Killing the client on the broker instead races the daemon's immediate
// reconnection against the broker's own notice of the dead connection.
//
// partition is silent, as a pulled cable or a dropped route: nothing is closed, bytes simply stop
// arriving both ways (they are held) and new connections hang, so each side learns of it only from
// its keep-alive. heal delivers what was held and lets bytes flow again, except on a connection the
// broker closed meanwhile: that one is reset on the client's side and what was held for it is
// dropped, as a real TCP stack answers the client's retransmissions to a socket that no longer
// exists.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	// toClient, if set, sees every chunk forwarded from the broker to a client, after it was
	// written (tests use it to act just after the daemon received something).
	toClient func([]byte)
	pairs    []*proxyPair
	paused   bool
	gate     chan struct{} // non-nil while partitioned; closed by heal
	wg       sync.WaitGroup
}

// proxyPair is one client connection and its connection to the broker.
type proxyPair struct {
	client, broker net.Conn
	up, down       proxyDir // client → broker, broker → client
	brokerGone     bool     // the broker closed its side during a partition (under tcpProxy.mu)
}

// proxyDir is one direction of a pair: its writes, and what a partition holds back.
type proxyDir struct {
	mu    sync.Mutex
	held  [][]byte
	ended bool // its source closed during a partition
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
		paused, gate := p.paused, p.gate
		p.mu.Unlock()
		if paused {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if gate != nil { // a connection attempt during a partition hangs until it heals
				<-gate
			}
			b, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			pair := &proxyPair{client: c, broker: b}
			p.mu.Lock()
			p.pairs = append(p.pairs, pair)
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pump(pair, &pair.up, c, b, false)
			go p.pump(pair, &pair.down, b, c, true)
		}()
	}
}

// pump copies src to dst, holding what arrives while the network is partitioned.
func (p *tcpProxy) pump(pair *proxyPair, d *proxyDir, src, dst net.Conn, toClient bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		d.mu.Lock()
		p.mu.Lock()
		parted, gone := p.gate != nil, pair.brokerGone
		if parted && err != nil {
			d.ended = true
			if toClient {
				pair.brokerGone = true
			}
		}
		p.mu.Unlock()
		switch {
		case gone:
			d.mu.Unlock()
			return
		case parted:
			if n > 0 {
				d.held = append(d.held, append([]byte(nil), buf[:n]...))
			}
			d.mu.Unlock()
			if err != nil {
				return // heal finishes the pair
			}
			continue
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				d.mu.Unlock()
				src.Close()
				return
			}
		}
		d.mu.Unlock()
		if n > 0 && toClient {
			p.mu.Lock()
			see := p.toClient
			p.mu.Unlock()
			if see != nil {
				see(buf[:n])
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// cut closes every proxied connection and refuses new ones until resume.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	p.paused = true
	for _, pair := range p.pairs {
		pair.client.Close()
		pair.broker.Close()
	}
	p.pairs = nil
	p.mu.Unlock()
}

func (p *tcpProxy) resume() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
}

// watch sets the toClient hook (nil: none).
func (p *tcpProxy) watch(f func([]byte)) {
	p.mu.Lock()
	p.toClient = f
	p.mu.Unlock()
}

// partition stops every byte in both directions without closing anything.
func (p *tcpProxy) partition() {
	p.mu.Lock()
	if p.gate == nil {
		p.gate = make(chan struct{})
	}
	p.mu.Unlock()
}

// heal ends a partition (see tcpProxy).
func (p *tcpProxy) heal() {
	p.mu.Lock()
	pairs := append([]*proxyPair(nil), p.pairs...)
	p.mu.Unlock()
	// Hold every direction's writes while the held bytes go out, so nothing overtakes them.
	for _, pair := range pairs {
		pair.up.mu.Lock()
		pair.down.mu.Lock()
	}
	p.mu.Lock()
	gate := p.gate
	p.gate = nil
	keep := p.pairs[:0]
	for _, pair := range p.pairs {
		if !pair.brokerGone {
			keep = append(keep, pair)
		}
	}
	p.pairs = keep
	p.mu.Unlock()
	for _, pair := range pairs {
		if pair.brokerGone {
			if tc, ok := pair.client.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with a reset
			}
			pair.client.Close()
			pair.broker.Close()
		} else {
			flushHeld(&pair.up, pair.broker)
			flushHeld(&pair.down, pair.client)
		}
		pair.down.mu.Unlock()
		pair.up.mu.Unlock()
	}
	if gate != nil {
		close(gate)
	}
}

func flushHeld(d *proxyDir, dst net.Conn) {
	for _, b := range d.held {
		if _, err := dst.Write(b); err != nil {
			break
		}
	}
	d.held = nil
	if d.ended {
		dst.Close()
	}
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.heal()
	p.cut()
	p.wg.Wait()
}
