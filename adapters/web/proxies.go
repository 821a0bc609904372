package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/team"
)

// proxyRoutes are the team's proxies: list, add, test, check.
func (c *Console) proxyRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	return []route{
		{get, Prefix + "/proxies", c.signedIn(c.proxyList)},
		{get, Prefix + "/proxies/new", c.signedIn(c.proxyNew)},
		{post, Prefix + "/proxies/new", c.signedIn(c.proxyAdd)},
		{post, Prefix + "/proxies/test", c.signedIn(c.proxyTest)},
		{get, Prefix + "/proxies/{id}", c.signedIn(c.proxyShow)},
		{post, Prefix + "/proxies/{id}/check", c.signedIn(c.proxyCheck)},
		{get, Prefix + "/proxies/{id}/edit", c.signedIn(c.proxyEdit)},
		{post, Prefix + "/proxies/{id}/edit", c.signedIn(c.proxyUpdate)},
		{get, Prefix + "/proxies/{id}/delete", c.signedIn(c.proxyDeleteForm)},
		{post, Prefix + "/proxies/{id}/delete", c.signedIn(c.proxyDelete)},
	}
}

// proxyTypes are the types a proxy may have.
var proxyTypes = []string{string(proxy.TypeHTTP), string(proxy.TypeHTTPS), string(proxy.TypeSOCKS5)}

// proxyListPage is the team's proxies with the status filter and the link
// to the next page.
type proxyListPage struct {
	Items    []proxy.Proxy
	Status   string
	Statuses []string
	Next     string
}

func (c *Console) proxyList(q *request) error {
	v := q.r.URL.Query()
	status := v.Get("status")
	page, err := c.svc.Proxies.List(q.r.Context(), q.actor, status, v.Get("cursor"), 25)
	if err != nil {
		return err
	}
	data := proxyListPage{Items: page.Items, Status: status,
		Statuses: []string{string(proxy.StatusUnknown), string(proxy.StatusOK), string(proxy.StatusFailed)}}
	if page.NextCursor != "" {
		next := url.Values{"cursor": {page.NextCursor}}
		if status != "" {
			next.Set("status", status)
		}
		data.Next = Prefix + "/proxies?" + next.Encode()
	}
	return c.render(q, http.StatusOK, "proxies", "Proxies", data)
}

// proxyForm is the add, test and edit form as sent, shown again: never
// with a password, not even in the short form's url.
type proxyForm struct {
	ID, URL, Name, Type, Host, Port, Username string
	Types                                     []string
	// PasswordDropped: the form held a password, which is not shown
	// again; it must be typed again to be sent.
	PasswordDropped bool
	// HasPassword: the stored proxy has a password (edit).
	HasPassword bool
	// Result is the answer of a test, and Tested what was tested.
	Result *proxy.Check
	Tested string
}

// readProxyForm reads the add and test form into the service's input, as
// the API's handler reads its JSON body: the short form url, or the
// fields, not both (a field counts as given when it is not empty).
func readProxyForm(q *request) (proxies.Input, proxyForm, error) {
	v, err := form(q)
	if err != nil {
		return proxies.Input{}, proxyForm{}, err
	}
	f := proxyForm{URL: strings.TrimSpace(v.Get("url")), Name: v.Get("name"), Type: v.Get("type"),
		Host: strings.TrimSpace(v.Get("host")), Port: strings.TrimSpace(v.Get("port")), Username: v.Get("username")}
	password := v.Get("password")
	in := proxies.Input{URL: f.URL, Name: f.Name, Type: f.Type, Host: f.Host, Username: f.Username, Password: password}
	// The url is shown again only without its password.
	if f.URL != "" {
		if u, perr := url.Parse(f.URL); perr == nil && u.User != nil {
			if _, set := u.User.Password(); set {
				f.URL, f.PasswordDropped = "", true
			}
		} else if perr != nil && strings.Contains(f.URL, "@") {
			f.URL, f.PasswordDropped = "", true
		}
	}
	f.PasswordDropped = f.PasswordDropped || password != ""
	if in.URL != "" && (in.Type != "" || in.Host != "" || f.Port != "" || in.Username != "" || password != "") {
		return in, f, domain.Invalid("url", "give either url or type, host and port, not both")
	}
	if f.Port != "" {
		if in.Port, err = strconv.Atoi(f.Port); err != nil {
			return in, f, domain.Invalid("port", "must be a number from 1 to 65535")
		}
	}
	return in, f, nil
}

func (c *Console) proxyNew(q *request) error {
	if err := q.actor.Require(team.ActWrite); err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "proxy_form", "Add a proxy", proxyForm{Types: proxyTypes})
}

func (c *Console) proxyAdd(q *request) error {
	in, f, err := readProxyForm(q)
	f.Types = proxyTypes
	if err != nil {
		return c.renderWith(q, 0, "proxy_form", "Add a proxy", f, err)
	}
	p, err := c.svc.Proxies.Add(q.r.Context(), q.actor, in)
	if err != nil {
		if domain.IsKind(err, domain.KindForbidden) {
			return err
		}
		return c.renderWith(q, 0, "proxy_form", "Add a proxy", f, err)
	}
	return c.redirect(q, Prefix+"/proxies/"+url.PathEscape(p.ID), "Proxy "+p.Name+" added. Check it to see where it leads.")
}

// proxyTest probes the proxy of the form without storing it, and answers
// with the form and what the probe saw.
func (c *Console) proxyTest(q *request) error {
	in, f, err := readProxyForm(q)
	f.Types = proxyTypes
	if err != nil {
		return c.renderWith(q, 0, "proxy_form", "Add a proxy", f, err)
	}
	res, err := c.svc.Proxies.Test(q.r.Context(), q.actor, in)
	if err != nil {
		if domain.IsKind(err, domain.KindForbidden) {
			return err
		}
		return c.renderWith(q, 0, "proxy_form", "Add a proxy", f, err)
	}
	f.Result = &res
	if in.URL != "" {
		if sp, perr := proxy.ParseURL(in.URL); perr == nil {
			f.Tested = sp.Type + "://" + hostPort(sp.Host, sp.Port)
		}
	} else {
		f.Tested = strings.ToLower(strings.TrimSpace(in.Type)) + "://" + hostPort(in.Host, in.Port)
	}
	return c.render(q, http.StatusOK, "proxy_form", "Add a proxy", f)
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// proxyPage is one stored proxy.
type proxyPage struct {
	Proxy   proxy.Proxy
	Address string
}

func (c *Console) proxyPage(q *request) (proxyPage, error) {
	p, err := c.svc.Proxies.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return proxyPage{}, err
	}
	return proxyPage{Proxy: p, Address: hostPort(p.Host, p.Port)}, nil
}

func (c *Console) proxyShow(q *request) error {
	page, err := c.proxyPage(q)
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "proxy", page.Proxy.Name, page)
}

// proxyCheck probes a stored proxy; the service keeps the result as its
// last check, which the proxy's page shows.
func (c *Console) proxyCheck(q *request) error {
	id := mux.Vars(q.r)["id"]
	if _, err := form(q); err != nil {
		return err
	}
	res, err := c.svc.Proxies.Check(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	msg := "Check failed: " + res.Error + "."
	if res.OK {
		msg = "Check passed in " + strconv.FormatInt(res.LatencyMs, 10) + " ms: the proxy leads out at " + res.ExitIP
		if place := strings.Trim(res.City+", "+res.Country, ", "); place != "" {
			msg += " (" + place + ")"
		}
		msg += "."
	}
	return c.redirect(q, Prefix+"/proxies/"+url.PathEscape(id), msg)
}

func (c *Console) proxyEdit(q *request) error {
	page, err := c.proxyPage(q)
	if err == nil {
		// The form is offered only to whom may send it.
		err = q.actor.Require(team.ActWrite)
	}
	if err != nil {
		return err
	}
	p := page.Proxy
	f := proxyForm{ID: p.ID, Name: p.Name, Type: string(p.Type), Host: p.Host, Port: strconv.Itoa(p.Port),
		Username: p.Username, HasPassword: p.HasPassword(), Types: proxyTypes}
	return c.render(q, http.StatusOK, "proxy_edit", "Edit "+p.Name, f)
}

func (c *Console) proxyUpdate(q *request) error {
	id := mux.Vars(q.r)["id"]
	v, err := form(q)
	if err != nil {
		return err
	}
	cur, err := c.svc.Proxies.Get(q.r.Context(), q.actor, id)
	if err != nil {
		return err
	}
	f := proxyForm{ID: id, Name: v.Get("name"), Type: v.Get("type"), Host: strings.TrimSpace(v.Get("host")),
		Port: strings.TrimSpace(v.Get("port")), Username: v.Get("username"), HasPassword: cur.HasPassword(), Types: proxyTypes}
	in := proxies.UpdateInput{Name: &f.Name, Type: &f.Type, Host: &f.Host, Username: &f.Username}
	port, perr := strconv.Atoi(f.Port)
	if perr != nil {
		return c.renderWith(q, 0, "proxy_edit", "Edit "+cur.Name, f, domain.Invalid("port", "must be a number from 1 to 65535"))
	}
	in.Port = &port
	// An empty password field keeps the password; the box removes it.
	if pw := v.Get("password"); pw != "" {
		in.Password = &pw
		f.PasswordDropped = true
	} else if v.Get("clear_password") == "on" {
		in.Password = &pw
	}
	p, err := c.svc.Proxies.Update(q.r.Context(), q.actor, id, in)
	if err != nil {
		if domain.IsKind(err, domain.KindForbidden) || domain.IsKind(err, domain.KindNotFound) {
			return err
		}
		return c.renderWith(q, 0, "proxy_edit", "Edit "+cur.Name, f, err)
	}
	return c.redirect(q, Prefix+"/proxies/"+url.PathEscape(p.ID), "Proxy saved.")
}

func (c *Console) proxyDeleteForm(q *request) error {
	page, err := c.proxyPage(q)
	if err == nil {
		err = q.actor.Require(team.ActDelete)
	}
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "proxy_delete", "Delete "+page.Proxy.Name, page)
}

func (c *Console) proxyDelete(q *request) error {
	if _, err := form(q); err != nil {
		return err
	}
	page, err := c.proxyPage(q)
	if err != nil {
		return err
	}
	if err := c.svc.Proxies.Delete(q.r.Context(), q.actor, page.Proxy.ID); err != nil {
		if domain.IsKind(err, domain.KindConflict) {
			return c.renderWith(q, 0, "proxy_delete", "Delete "+page.Proxy.Name, page, err)
		}
		return err
	}
	return c.redirect(q, Prefix+"/proxies", "Proxy "+page.Proxy.Name+" deleted.")
}
