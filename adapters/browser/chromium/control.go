//go:build linux

package chromium

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/profilesvc/profilesvc/domain/browserdata"
)

// errConnectionLost is the error of a command whose answer can no longer
// come: the browser closed the control connection.
var errConnectionLost = errors.New("the control connection to the browser is closed")

// control is the runtime's own CDP connection to one browser: the root
// session of the browser's pipe. It makes
// every target of the browser present the profile's fingerprint (browser
// level auto-attach pauses each new target, including the pages a client
// opens, until the overrides are in place), and it reads and writes the
// browser's cookies. Commands to a target carry its flat session id.
type control struct {
	mux *cdpMux
	fp  overrides
	log *slog.Logger

	mu      sync.Mutex
	pending map[int64]chan *cdproto.Message
	// lost is closed when the read loop ends; no answer comes after.
	lost chan struct{}
	// wg counts the goroutines that prepare attached targets.
	wg sync.WaitGroup
}

// newControl starts to route the messages of the pipe's root session.
func newControl(mux *cdpMux, fp overrides, log *slog.Logger) *control {
	c := &control{mux: mux, fp: fp, log: log, pending: map[int64]chan *cdproto.Message{}, lost: make(chan struct{})}
	go c.read()
	return c
}

// read routes answers to their callers and prepares each target the
// browser attaches, until the connection ends.
func (c *control) read() {
	defer func() {
		c.mu.Lock()
		close(c.lost)
		c.mu.Unlock()
	}()
	for {
		raw, err := c.mux.root.Receive(context.Background())
		if err != nil {
			return
		}
		msg := new(cdproto.Message)
		if err := jsonv2.Unmarshal(raw, msg, chromedp.DefaultUnmarshalOptions); err != nil {
			c.log.Warn("browser: unreadable CDP message", "error", err)
			continue
		}
		if msg.ID != 0 {
			c.mu.Lock()
			ch := c.pending[msg.ID]
			delete(c.pending, msg.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
			continue
		}
		if msg.Method == cdproto.MethodType(target.AttachedToTarget.Method) {
			var ev target.EventAttachedToTarget
			if err := jsonv2.Unmarshal(msg.Params, &ev, chromedp.DefaultUnmarshalOptions); err != nil {
				c.log.Warn("browser: unreadable attach event", "error", err)
				continue
			}
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.prepare(&ev)
			}()
		}
	}
}

// call sends one command, to the browser when session is "", and waits for
// its answer.
func call[P, R any](ctx context.Context, c *control, session target.SessionID, cmd cdp.Command[P, R], params P) (R, error) {
	return send(ctx, c, session, cmd, params)()
}

// send sends one command and returns what waits for its answer: commands
// to a target that does not answer before it runs (a service worker
// waiting for its debugger) are all sent before the one that lets it run.
func send[P, R any](ctx context.Context, c *control, session target.SessionID, cmd cdp.Command[P, R], params P) func() (R, error) {
	var res R
	fail := func(err error) func() (R, error) { return func() (R, error) { return res, err } }
	buf, err := jsonv2.Marshal(params, chromedp.DefaultMarshalOptions)
	if err != nil {
		return fail(err)
	}
	id := c.mux.ids.Add(1)
	ch := make(chan *cdproto.Message, 1)
	c.mu.Lock()
	select {
	case <-c.lost:
		c.mu.Unlock()
		return fail(errConnectionLost)
	default:
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	raw, err := jsonv2.Marshal(&cdproto.Message{ID: id, SessionID: session, Method: cdproto.MethodType(cmd.Method), Params: buf}, chromedp.DefaultMarshalOptions)
	if err != nil {
		forget()
		return fail(err)
	}
	if err := c.mux.write(raw); err != nil {
		forget()
		return fail(fmt.Errorf("%s: %w", cmd.Method, err))
	}
	return func() (R, error) { return await[R](ctx, c, cmd.Method, id, ch, forget) }
}

// await waits for the answer of command id.
func await[R any](ctx context.Context, c *control, method string, id int64, ch chan *cdproto.Message, forget func()) (R, error) {
	var res R
	select {
	case <-ctx.Done():
		forget()
		return res, ctx.Err()
	case <-c.lost:
		forget()
		return res, fmt.Errorf("%s: %w", method, errConnectionLost)
	case answer := <-ch:
		if answer.Error != nil {
			return res, fmt.Errorf("%s: %w", method, answer.Error)
		}
		if err := jsonv2.Unmarshal(answer.Result, &res, chromedp.DefaultUnmarshalOptions); err != nil {
			return res, fmt.Errorf("%s: %w", method, err)
		}
		return res, nil
	}
}

// watch asks the browser to attach every target, present and future, and
// to hold each new one until it is prepared.
func (c *control) watch(ctx context.Context) error {
	if _, err := call(ctx, c, "", target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true}); err != nil {
		return err
	}
	return c.autoAttach(ctx, "")
}

func (c *control) autoAttach(ctx context.Context, session target.SessionID) error {
	flatten := true
	_, err := call(ctx, c, session, target.SetAutoAttach, target.SetAutoAttachParams{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: &flatten})
	return err
}

// prepare puts the fingerprint's overrides on an attached target and lets
// it run. navigator.platform is also set by a script: Chromium keeps the
// platform of Emulation.setUserAgentOverride as a setting of the whole
// page, which the next client to attach (Playwright, chromedp) resets,
// while a script added by this session stays for every document. Frames also auto-attach their own children (out-of-process
// iframes, dedicated workers), which the browser-level auto-attach does
// not reach. Workers support only part of the overrides; what they refuse
// is of no consequence, so only a page's refusals are logged.
func (c *control) prepare(ev *target.EventAttachedToTarget) {
	ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
	defer cancel()
	if ev.TargetInfo != nil {
		// Whatever happened, a client that waits for this target waits
		// no longer.
		defer c.mux.prepared(string(ev.TargetInfo.TargetID))
	}
	s := ev.SessionID
	kind := ""
	if ev.TargetInfo != nil {
		kind = ev.TargetInfo.Type
	}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch kind {
	case "page", "iframe":
		_, err := call(ctx, c, s, emulation.SetUserAgentOverride, c.fp.userAgent)
		note(err)
		_, err = call(ctx, c, s, emulation.SetTimezoneOverride, c.fp.timezone)
		note(err)
		_, err = call(ctx, c, s, emulation.SetLocaleOverride, c.fp.locale)
		note(err)
		if kind == "page" && c.fp.metrics != nil {
			_, err = call(ctx, c, s, emulation.SetDeviceMetricsOverride, *c.fp.metrics)
			note(err)
			_, err = call(ctx, c, s, emulation.SetTouchEmulationEnabled, *c.fp.touch)
			note(err)
		}
		// The page agent runs added scripts only while it is enabled.
		_, err = call(ctx, c, s, page.Enable, page.EnableParams{})
		note(err)
		now := true
		_, err = call(ctx, c, s, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: c.fp.script, RunImmediately: &now})
		note(err)
		note(c.autoAttach(ctx, s))
	case "worker", "shared_worker", "service_worker":
		// A service worker answers nothing before it runs, and runs what
		// it was sent first in order: everything is sent, then it is let
		// run, then the answers are read.
		flatten := true
		answers := []func() error{
			ignore(send(ctx, c, s, emulation.SetUserAgentOverride, c.fp.userAgent)),
			ignore(send(ctx, c, s, runtime.Evaluate, runtime.EvaluateParams{Expression: c.fp.script})),
			ignore(send(ctx, c, s, emulation.SetTimezoneOverride, c.fp.timezone)),
			ignore(send(ctx, c, s, emulation.SetLocaleOverride, c.fp.locale)),
			ignore(send(ctx, c, s, target.SetAutoAttach, target.SetAutoAttachParams{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: &flatten})),
		}
		if ev.WaitingForDebugger {
			_, err := call(ctx, c, s, runtime.RunIfWaitingForDebugger, cdp.Empty{})
			note(err)
		}
		// Workers take part of the overrides only; what they refuse is of
		// no consequence.
		for _, answer := range answers {
			_ = answer()
		}
		ev.WaitingForDebugger = false
	}
	if ev.WaitingForDebugger {
		_, err := call(ctx, c, s, runtime.RunIfWaitingForDebugger, cdp.Empty{})
		note(err)
	}
	if err := errors.Join(errs...); err != nil {
		select {
		case <-c.lost: // the browser went away while the target was prepared
		default:
			c.log.Warn("browser: fingerprint overrides incomplete", "target", kind, "error", err)
		}
	}
}

// setCookies puts cookies into the browser. A batch the browser refuses
// as a whole is retried one cookie at a time, so that one cookie it does
// not accept (a SameSite=None cookie without Secure, say) does not keep
// the others out.
func (c *control) setCookies(ctx context.Context, cookies []browserdata.Cookie) error {
	if len(cookies) == 0 {
		return nil
	}
	params := make([]*network.CookieParam, 0, len(cookies))
	for _, ck := range cookies {
		params = append(params, toCDPCookie(ck))
	}
	_, err := call(ctx, c, "", storage.SetCookies, storage.SetCookiesParams{Cookies: params})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	refused := 0
	for _, p := range params {
		if _, err := call(ctx, c, "", storage.SetCookies, storage.SetCookiesParams{Cookies: []*network.CookieParam{p}}); err != nil {
			if ctx.Err() != nil {
				return err
			}
			refused++
		}
	}
	if refused > 0 {
		c.log.Warn("browser: cookies refused", "refused", refused, "of", len(params))
	}
	return nil
}

func (c *control) cookies(ctx context.Context) ([]browserdata.Cookie, error) {
	res, err := call(ctx, c, "", storage.GetCookies, storage.GetCookiesParams{})
	if err != nil {
		return nil, err
	}
	out := make([]browserdata.Cookie, 0, len(res.Cookies))
	for _, ck := range res.Cookies {
		out = append(out, fromCDPCookie(ck))
	}
	return out, nil
}

// closeBrowser asks the browser to close itself, which lets it write its
// state to disk. The browser may drop the connection before it answers.
func (c *control) closeBrowser(ctx context.Context) error {
	_, err := call(ctx, c, "", browser.Close, cdp.Empty{})
	if errors.Is(err, errConnectionLost) {
		return nil
	}
	return err
}

// close ends the pipe and waits for the goroutines the control started.
func (c *control) close() {
	c.mux.close()
	<-c.lost
	c.wg.Wait()
}

func toCDPCookie(ck browserdata.Cookie) *network.CookieParam {
	p := &network.CookieParam{
		Name: ck.Name, Value: ck.Value, Domain: ck.Domain, Path: ck.Path,
		Secure: ck.Secure, HTTPOnly: ck.HTTPOnly,
	}
	switch ck.SameSite {
	case browserdata.SameSiteStrict:
		p.SameSite = network.CookieSameSiteStrict
	case browserdata.SameSiteNone:
		p.SameSite = network.CookieSameSiteNone
	default:
		p.SameSite = network.CookieSameSiteLax
	}
	if ck.Expires >= 0 {
		p.Expires = cdp.TimeSinceEpoch(ck.Expires)
	}
	return p
}

func fromCDPCookie(ck *network.Cookie) browserdata.Cookie {
	out := browserdata.Cookie{
		Name: ck.Name, Value: ck.Value, Domain: ck.Domain, Path: ck.Path,
		Expires: ck.Expires, HTTPOnly: ck.HTTPOnly, Secure: ck.Secure,
	}
	if ck.Session || ck.Expires < 0 {
		out.Expires = -1
	}
	switch ck.SameSite {
	case network.CookieSameSiteStrict:
		out.SameSite = browserdata.SameSiteStrict
	case network.CookieSameSiteNone:
		out.SameSite = browserdata.SameSiteNone
	default:
		out.SameSite = browserdata.SameSiteLax
	}
	return out
}

// ignore turns a wait for an answer into a wait for its end.
func ignore[R any](wait func() (R, error)) func() error {
	return func() error {
		_, err := wait()
		return err
	}
}
