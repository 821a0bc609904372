package web

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/application/webhooks"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
)

// settingsRoutes are the Settings pages: API keys, webhook endpoints and the failed deliveries.
func (c *Console) settingsRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	return []route{
		{get, Prefix + "/settings", http.RedirectHandler(Prefix+"/settings/api-keys", http.StatusFound)},
		{get, Prefix + "/settings/api-keys", c.signedIn(c.apiKeyList)},
		{post, Prefix + "/settings/api-keys", c.signedIn(c.apiKeyCreate)},
		{get, Prefix + "/settings/api-keys/{id}/revoke", c.signedIn(c.apiKeyRevokeForm)},
		{post, Prefix + "/settings/api-keys/{id}/revoke", c.signedIn(c.apiKeyRevoke)},
		{get, Prefix + "/settings/webhooks", c.signedIn(c.webhookList)},
		{get, Prefix + "/settings/webhooks/new", c.signedIn(c.webhookNew)},
		{post, Prefix + "/settings/webhooks/new", c.signedIn(c.webhookCreate)},
		{get, Prefix + "/settings/webhooks/failed", c.signedIn(c.failedDeliveries)},
		{post, Prefix + "/settings/webhooks/{id}/enabled", c.signedIn(c.webhookEnable)},
		{post, Prefix + "/settings/webhooks/{id}/test", c.signedIn(c.webhookTest)},
		{get, Prefix + "/settings/webhooks/{id}/delete", c.signedIn(c.webhookDeleteForm)},
		{post, Prefix + "/settings/webhooks/{id}/delete", c.signedIn(c.webhookDelete)},
		{post, Prefix + "/settings/webhooks/{id}/deliveries/{delivery}/retry", c.signedIn(c.deliveryRetry)},
	}
}

// API keys. Every role may hold keys of its own (the API's rule), so every
// signed-in user sees the list of their own keys in the team, the form and
// the revoke buttons.

// apiKeysPage is the user's keys in the team and the create form as sent.
type apiKeysPage struct {
	Keys []account.APIKey
	Next string
	Name string
}

func (c *Console) apiKeysPage(q *request, cursor, name string) (apiKeysPage, error) {
	page, err := c.svc.Auth.ListAPIKeys(q.r.Context(), q.actor, paging.DefaultLimit, cursor)
	if err != nil {
		return apiKeysPage{}, err
	}
	data := apiKeysPage{Keys: page.Items, Name: name}
	if page.NextCursor != "" {
		data.Next = Prefix + "/settings/api-keys?" + url.Values{"cursor": {page.NextCursor}}.Encode()
	}
	return data, nil
}

func (c *Console) apiKeyList(q *request) error {
	data, err := c.apiKeysPage(q, q.r.URL.Query().Get("cursor"), "")
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "settings_api_keys", "API keys", data)
}

// apiKeyCreated is the answer to a create: the only page that shows the key.
type apiKeyCreated struct {
	Key    account.APIKey
	Secret string
}

func (c *Console) apiKeyCreate(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	name := v.Get("name")
	k, err := c.svc.Auth.CreateAPIKey(q.r.Context(), q.actor, name)
	if err != nil {
		data, lerr := c.apiKeysPage(q, "", name)
		if lerr != nil {
			return lerr
		}
		return c.renderWith(q, 0, "settings_api_keys", "API keys", data, err)
	}
	return c.render(q, http.StatusOK, "settings_api_key_created", "API key created", apiKeyCreated{Key: k.APIKey, Secret: k.Key})
}

// ownKey is the user's key id in the team, read from their list (the
// service reads no single key): another's, or another team's, is not found.
func (c *Console) ownKey(q *request, id string) (account.APIKey, error) {
	cursor := ""
	for range 100 {
		page, err := c.svc.Auth.ListAPIKeys(q.r.Context(), q.actor, paging.MaxLimit, cursor)
		if err != nil {
			return account.APIKey{}, err
		}
		if i := slices.IndexFunc(page.Items, func(k account.APIKey) bool { return k.ID == id }); i >= 0 {
			return page.Items[i], nil
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return account.APIKey{}, domain.NotFound("api key")
}

func (c *Console) apiKeyRevokeForm(q *request) error {
	k, err := c.ownKey(q, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "settings_api_key_revoke", "Revoke "+k.Name, k)
}

func (c *Console) apiKeyRevoke(q *request) error {
	if _, err := form(q); err != nil {
		return err
	}
	if err := c.svc.Auth.DeleteAPIKey(q.r.Context(), q.actor, mux.Vars(q.r)["id"]); err != nil {
		return err
	}
	return c.redirect(q, Prefix+"/settings/api-keys", "API key revoked: requests that present it are refused from now on.")
}

// Webhook endpoints: the API lets only admins and owners read or change
// them, so the pages tell the other roles whom to ask.

// webhooksPage is the team's endpoints, or, for a role that may not read
// them, why they are not shown.
type webhooksPage struct {
	Endpoints  []webhook.Endpoint
	Next       string
	NeedAdmin  bool
	EventTypes []event.Type
	// Attempts is how many attempts a delivery gets before it fails.
	Attempts int
}

// needAdmin renders page with the words that the user's role may not read
// it, when err is the service's refusal; it returns err otherwise.
func (c *Console) needAdmin(q *request, err error, page, title string, data any) error {
	if !domain.IsKind(err, domain.KindForbidden) {
		return err
	}
	return c.render(q, http.StatusForbidden, page, title, data)
}

func (c *Console) webhookList(q *request) error {
	page, err := c.svc.Webhooks.List(q.r.Context(), q.actor, q.r.URL.Query().Get("cursor"), paging.DefaultLimit)
	if err != nil {
		return c.needAdmin(q, err, "settings_webhooks", "Webhooks", webhooksPage{NeedAdmin: true})
	}
	data := webhooksPage{Endpoints: page.Items, EventTypes: event.Types, Attempts: c.opts.WebhookAttempts}
	if page.NextCursor != "" {
		data.Next = Prefix + "/settings/webhooks?" + url.Values{"cursor": {page.NextCursor}}.Encode()
	}
	return c.render(q, http.StatusOK, "settings_webhooks", "Webhooks", data)
}

// webhookForm is the create form as sent (without its secret, which is
// never sent back to the browser unasked).
type webhookForm struct {
	URL        string
	Events     []string
	EventTypes []event.Type
	All        string
}

func newWebhookForm() webhookForm {
	return webhookForm{EventTypes: event.Types, All: webhook.AllEvents}
}

// Checked reports whether the form has the event type e ticked.
func (f webhookForm) Checked(e string) bool { return slices.Contains(f.Events, e) }

func (c *Console) webhookNew(q *request) error {
	if err := q.actor.Require(team.ActAdminister); err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "settings_webhook_form", "New webhook endpoint", newWebhookForm())
}

// webhookCreated is the answer to a create: the only page that shows the
// endpoint's signing secret.
type webhookCreated struct {
	Endpoint webhook.Endpoint
	Secret   string
}

// newSigningSecret is a secret for an endpoint created without one: 32
// random bytes, hex-encoded with a prefix that says what it is.
func newSigningSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

func (c *Console) webhookCreate(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	f := newWebhookForm()
	f.URL, f.Events = v.Get("url"), v["events"]
	secret := v.Get("secret")
	if secret == "" {
		secret = newSigningSecret()
	}
	ep, err := c.svc.Webhooks.Create(q.r.Context(), q.actor, webhooks.CreateInput{URL: f.URL, Events: f.Events, Secret: secret})
	if err != nil {
		return c.renderWith(q, 0, "settings_webhook_form", "New webhook endpoint", f, err)
	}
	return c.render(q, http.StatusOK, "settings_webhook_created", "Webhook endpoint created", webhookCreated{Endpoint: ep, Secret: secret})
}

func (c *Console) webhookEnable(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	enabled, err := strconv.ParseBool(v.Get("enabled"))
	if err != nil {
		return domain.Invalid("enabled", "must be true or false")
	}
	ep, err := c.svc.Webhooks.Update(q.r.Context(), q.actor, mux.Vars(q.r)["id"], webhooks.UpdateInput{Enabled: &enabled})
	if err != nil {
		return err
	}
	msg := "Endpoint " + ep.URL + " disabled: its events are no longer delivered."
	if ep.Enabled {
		msg = "Endpoint " + ep.URL + " enabled."
	}
	return c.redirect(q, Prefix+"/settings/webhooks", msg)
}

func (c *Console) webhookTest(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	id, typ := mux.Vars(q.r)["id"], v.Get("event_type")
	ctx := q.r.Context()
	deliveryID, err := c.svc.Webhooks.Test(ctx, q.actor, id, typ)
	if err != nil {
		return err
	}
	// The test answers its delivery; the event it carries is read from the
	// endpoint's newest deliveries, where it is.
	msg := "Test event " + typ + " queued (delivery " + deliveryID + ")."
	if page, err := c.svc.Webhooks.ListDeliveries(ctx, q.actor, id, "", "", paging.MaxLimit); err == nil {
		if i := slices.IndexFunc(page.Items, func(d webhook.Delivery) bool { return d.ID == deliveryID }); i >= 0 {
			msg = "Test event " + page.Items[i].EventID + " (" + typ + ") queued for delivery " + deliveryID + "."
		}
	}
	return c.redirect(q, Prefix+"/settings/webhooks", msg)
}

func (c *Console) webhookDeleteForm(q *request) error {
	ep, err := c.svc.Webhooks.Get(q.r.Context(), q.actor, mux.Vars(q.r)["id"])
	if err != nil {
		return err
	}
	return c.render(q, http.StatusOK, "settings_webhook_delete", "Delete webhook endpoint", ep)
}

func (c *Console) webhookDelete(q *request) error {
	if _, err := form(q); err != nil {
		return err
	}
	if err := c.svc.Webhooks.Delete(q.r.Context(), q.actor, mux.Vars(q.r)["id"]); err != nil {
		return err
	}
	return c.redirect(q, Prefix+"/settings/webhooks", "Webhook endpoint deleted, with its deliveries.")
}

// Failed deliveries (SPEC: "Settings > Webhooks > Failed Deliveries").

// failedPerEndpoint is how many failed deliveries of each endpoint the
// page shows; failedPerPage is how many one endpoint's own pages show.
const (
	failedPerEndpoint = 10
	failedPerPage     = 25
	// excerptRunes bounds the words of an attempt's error the page shows.
	excerptRunes = 300
)

// attemptView is one attempt as the page shows it.
type attemptView struct {
	N         int
	At        time.Time
	Outcome   string
	LatencyMs int64
	// Answer is the start of what the receiver answered.
	Answer string
}

// failedDelivery is one failed delivery with its attempts.
type failedDelivery struct {
	ID, EventID string
	EventType   event.Type
	CreatedAt   time.Time
	Attempts    []attemptView
}

// failedGroup is one endpoint's failed deliveries; More is the page of its
// older ones.
type failedGroup struct {
	Endpoint   webhook.Endpoint
	Deliveries []failedDelivery
	More       string
}

type failedPage struct {
	Groups    []failedGroup
	NeedAdmin bool
	// Endpoint is set when the page shows one endpoint's deliveries.
	Endpoint string
	Total    int
	// Attempts is how many attempts a delivery gets before it fails.
	Attempts int
}

func excerpt(s string) string {
	if utf8.RuneCountInString(s) <= excerptRunes {
		return s
	}
	r := []rune(s)
	return string(r[:excerptRunes]) + "…"
}

func toFailed(d webhook.Delivery) failedDelivery {
	out := failedDelivery{ID: d.ID, EventID: d.EventID, EventType: d.EventType, CreatedAt: d.CreatedAt}
	for _, a := range d.Attempts {
		v := attemptView{N: a.N, At: a.At, LatencyMs: a.LatencyMs, Answer: a.Answer}
		switch {
		case a.Error != "" && a.StatusCode != 0:
			v.Outcome = "HTTP " + strconv.Itoa(a.StatusCode) + ": " + excerpt(a.Error)
		case a.Error != "":
			v.Outcome = excerpt(a.Error)
		default:
			v.Outcome = "HTTP " + strconv.Itoa(a.StatusCode) + " " + http.StatusText(a.StatusCode)
		}
		out.Attempts = append(out.Attempts, v)
	}
	return out
}

// failedOf is the group of ep's failed deliveries from cursor on.
func (c *Console) failedOf(q *request, ep webhook.Endpoint, cursor string, limit int) (failedGroup, error) {
	page, err := c.svc.Webhooks.ListDeliveries(q.r.Context(), q.actor, ep.ID, string(webhook.StatusFailed), cursor, limit)
	if err != nil {
		return failedGroup{}, err
	}
	g := failedGroup{Endpoint: ep}
	for _, d := range page.Items {
		g.Deliveries = append(g.Deliveries, toFailed(d))
	}
	if page.NextCursor != "" {
		g.More = Prefix + "/settings/webhooks/failed?" + url.Values{"endpoint": {ep.ID}, "cursor": {page.NextCursor}}.Encode()
	}
	return g, nil
}

// failedDeliveries shows the failed deliveries of every endpoint of the
// team, a few of each with a link to the rest; with ?endpoint=, one
// endpoint's, a page at a time.
func (c *Console) failedDeliveries(q *request) error {
	ctx := q.r.Context()
	query := q.r.URL.Query()
	data := failedPage{Endpoint: query.Get("endpoint"), Attempts: c.opts.WebhookAttempts}
	if data.Endpoint != "" {
		ep, err := c.svc.Webhooks.Get(ctx, q.actor, data.Endpoint)
		if err != nil {
			return c.needAdmin(q, err, "settings_failed", "Failed deliveries", failedPage{NeedAdmin: true})
		}
		g, err := c.failedOf(q, ep, query.Get("cursor"), failedPerPage)
		if err != nil {
			return err
		}
		data.Groups, data.Total = []failedGroup{g}, len(g.Deliveries)
		return c.render(q, http.StatusOK, "settings_failed", "Failed deliveries", data)
	}
	// A team's endpoints are bounded by its quota: a few pages at most.
	cursor := ""
	for range 20 {
		page, err := c.svc.Webhooks.List(ctx, q.actor, cursor, paging.MaxLimit)
		if err != nil {
			return c.needAdmin(q, err, "settings_failed", "Failed deliveries", failedPage{NeedAdmin: true})
		}
		for _, ep := range page.Items {
			g, err := c.failedOf(q, ep, "", failedPerEndpoint)
			if err != nil {
				return err
			}
			if len(g.Deliveries) > 0 {
				data.Groups = append(data.Groups, g)
				data.Total += len(g.Deliveries)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return c.render(q, http.StatusOK, "settings_failed", "Failed deliveries", data)
}

func (c *Console) deliveryRetry(q *request) error {
	v, err := form(q)
	if err != nil {
		return err
	}
	vars := mux.Vars(q.r)
	d, err := c.svc.Webhooks.Retry(q.r.Context(), q.actor, vars["id"], vars["delivery"])
	if err != nil {
		return err
	}
	back := Prefix + "/settings/webhooks/failed"
	if v.Get("endpoint") == vars["id"] {
		back += "?" + url.Values{"endpoint": {vars["id"]}}.Encode()
	}
	return c.redirect(q, back, "Delivery of event "+d.EventID+" ("+string(d.EventType)+") queued again: it is attempted now, on a fresh round of the schedule.")
}
