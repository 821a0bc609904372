// Command proxy is a SOCKS5 proxy to try profilesvc's proxies on one
// machine. It asks for a user name and a password (PROXY_PASSWORD), carries
// connections to loopback addresses only, and serves a small site at
// http://walkthrough.test/, a name that only this proxy resolves: a page
// that loads from there came through it. It prints a line for each
// connection it carries.
//
//	PROXY_PASSWORD=... proxy -addr 127.0.0.1:1080 -user walkthrough
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"

	socks5 "github.com/armon/go-socks5"
)

// siteName is the host name of the site the proxy serves itself.
const siteName = "walkthrough.test"

const page = `<!doctype html>
<title>walkthrough.test</title>
<h1>Served through the walkthrough's proxy</h1>
`

func main() {
	addr := flag.String("addr", "127.0.0.1:1080", "address to listen on")
	user := flag.String("user", "walkthrough", "user name clients must give")
	flag.Parse()
	password := os.Getenv("PROXY_PASSWORD")
	if password == "" {
		log.Fatal("set PROXY_PASSWORD to the password clients must give")
	}

	// The site listens on a loopback port of its own; the proxy sends
	// connections to walkthrough.test:80 there.
	site, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		log.Fatal(http.Serve(site, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, page)
		})))
	}()

	server, err := socks5.New(&socks5.Config{
		Credentials: socks5.StaticCredentials{*user: password},
		Resolver:    resolver{},
		Rewriter:    rewriter{site: site.Addr().(*net.TCPAddr)},
		Rules:       loopbackOnly{},
		Logger:      log.New(os.Stderr, "socks5: ", log.LstdFlags),
	})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("SOCKS5 proxy on %s for user %s; it serves http://%s/", *addr, *user, siteName)
	log.Fatal(server.ListenAndServe("tcp", *addr))
}

// resolver knows walkthrough.test and localhost, no other name: the
// proxy never looks anything up elsewhere.
type resolver struct{}

func (resolver) Resolve(ctx context.Context, name string) (context.Context, net.IP, error) {
	if name == siteName || name == "localhost" {
		return ctx, net.IPv4(127, 0, 0, 1), nil
	}
	return ctx, nil, errors.New("this proxy resolves only " + siteName + " and localhost")
}

// rewriter sends connections to walkthrough.test:80 to the site.
type rewriter struct{ site *net.TCPAddr }

func (r rewriter) Rewrite(ctx context.Context, req *socks5.Request) (context.Context, *socks5.AddrSpec) {
	if req.DestAddr.FQDN == siteName && req.DestAddr.Port == 80 {
		return ctx, &socks5.AddrSpec{IP: r.site.IP, Port: r.site.Port}
	}
	return ctx, req.DestAddr
}

// loopbackOnly allows connections to loopback addresses, and prints each.
type loopbackOnly struct{}

func (loopbackOnly) Allow(ctx context.Context, req *socks5.Request) (context.Context, bool) {
	dest := req.DestAddr.FQDN
	if dest == "" {
		dest = req.DestAddr.IP.String()
	}
	dest = net.JoinHostPort(dest, strconv.Itoa(req.DestAddr.Port))
	if req.Command != socks5.ConnectCommand || !req.DestAddr.IP.IsLoopback() {
		log.Printf("refused %s: this proxy carries connections to loopback only", dest)
		return ctx, false
	}
	log.Printf("carrying a connection to %s for %s", dest, req.AuthContext.Payload["Username"])
	return ctx, true
}
