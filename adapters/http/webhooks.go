package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/webhooks"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
)

// WebhookHandlers serves webhook endpoints and their deliveries (SPEC's
// /v1/webhooks paths).
type WebhookHandlers struct{ svc *webhooks.Service }

// NewWebhookHandlers returns the webhook endpoints of svc.
func NewWebhookHandlers(svc *webhooks.Service) *WebhookHandlers { return &WebhookHandlers{svc: svc} }

// Routes lists the webhook endpoints.
func (h *WebhookHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/v1/webhooks", Handler: h.create, Name: "webhooks.create"},
		{Method: http.MethodGet, Path: "/v1/webhooks", Handler: h.list, Name: "webhooks.list"},
		{Method: http.MethodGet, Path: "/v1/webhooks/{id}", Handler: h.get, Name: "webhooks.read"},
		{Method: http.MethodPatch, Path: "/v1/webhooks/{id}", Handler: h.update, Name: "webhooks.update"},
		{Method: http.MethodDelete, Path: "/v1/webhooks/{id}", Handler: h.delete, Name: "webhooks.delete"},
		{Method: http.MethodPost, Path: "/v1/webhooks/{id}/test", Handler: h.test, Name: "webhooks.test"},
		{Method: http.MethodGet, Path: "/v1/webhooks/{id}/deliveries", Handler: h.deliveries, Name: "webhooks.deliveries.list"},
		{Method: http.MethodPost, Path: "/v1/webhooks/{id}/deliveries/{deliveryId}/retry", Handler: h.retry, Name: "webhooks.deliveries.retry"},
	}
}

type webhookDTO struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Enabled     bool     `json:"enabled"`
	MaxInFlight int      `json:"maxInFlight"`
	RateLimit   *int     `json:"rateLimit"`
	CreatedAt   int64    `json:"createdAt"`
	UpdatedAt   int64    `json:"updatedAt"`
}

// toWebhookDTO leaves the secret out: it is write-only. No rate limit is
// null.
func toWebhookDTO(e webhook.Endpoint) webhookDTO {
	out := webhookDTO{ID: e.ID, URL: e.URL, Events: e.Events, Enabled: e.Enabled, MaxInFlight: e.MaxInFlight,
		CreatedAt: e.CreatedAt.UnixMilli(), UpdatedAt: e.UpdatedAt.UnixMilli()}
	if e.RateLimit > 0 {
		out.RateLimit = &e.RateLimit
	}
	return out
}

// nullableInt is a field of a partial update where null means "none" and
// absence means "keep": set is false when the field was left out.
type nullableInt struct {
	set   bool
	value int
}

// UnmarshalJSON reads the rateLimit field of a PATCH, its only use, so a
// value of another type is that field's 422.
func (n *nullableInt) UnmarshalJSON(b []byte) error {
	n.set = true
	if string(b) == "null" {
		n.value = 0
		return nil
	}
	if err := json.Unmarshal(b, &n.value); err != nil {
		return domain.Invalid("rateLimit", "must be an integer or null")
	}
	return nil
}

// ptr is the value to change to, nil to keep.
func (n nullableInt) ptr() *int {
	if !n.set {
		return nil
	}
	return &n.value
}

type attemptDTO struct {
	N          int     `json:"n"`
	At         int64   `json:"at"`
	StatusCode *int    `json:"statusCode"`
	LatencyMs  int64   `json:"latencyMs"`
	Error      *string `json:"error"`
}

type deliveryDTO struct {
	ID            string       `json:"id"`
	EndpointID    string       `json:"endpointId"`
	EventID       string       `json:"eventId"`
	EventType     string       `json:"eventType"`
	Status        string       `json:"status"`
	Attempts      []attemptDTO `json:"attempts"`
	NextAttemptAt *int64       `json:"nextAttemptAt"`
	CreatedAt     int64        `json:"createdAt"`
	UpdatedAt     int64        `json:"updatedAt"`
}

func toDeliveryDTO(d webhook.Delivery) deliveryDTO {
	out := deliveryDTO{
		ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: string(d.EventType), Status: string(d.Status),
		Attempts: make([]attemptDTO, 0, len(d.Attempts)), CreatedAt: d.CreatedAt.UnixMilli(), UpdatedAt: d.UpdatedAt.UnixMilli(),
	}
	for _, a := range d.Attempts {
		dto := attemptDTO{N: a.N, At: a.At.UnixMilli(), LatencyMs: a.LatencyMs}
		if a.StatusCode != 0 {
			dto.StatusCode = &a.StatusCode
		}
		if a.Error != "" {
			dto.Error = &a.Error
		}
		out.Attempts = append(out.Attempts, dto)
	}
	if d.Status == webhook.StatusPending {
		ms := d.NextAttemptAt.UnixMilli()
		out.NextAttemptAt = &ms
	}
	return out
}

type createWebhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Secret      string   `json:"secret"`
	MaxInFlight *int     `json:"maxInFlight"`
	RateLimit   *int     `json:"rateLimit"`
}

func (h *WebhookHandlers) create(w http.ResponseWriter, r *http.Request) error {
	var in createWebhookRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	ep, err := h.svc.Create(r.Context(), actorFrom(r.Context()), webhooks.CreateInput(in))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toWebhookDTO(ep))
	return nil
}

func (h *WebhookHandlers) list(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.svc.List(r.Context(), actorFrom(r.Context()), cursor, limit)
	if err != nil {
		return err
	}
	out := make([]webhookDTO, 0, len(page.Items))
	for _, e := range page.Items {
		out = append(out, toWebhookDTO(e))
	}
	writeList(w, out, page.NextCursor, page.Limit)
	return nil
}

func (h *WebhookHandlers) get(w http.ResponseWriter, r *http.Request) error {
	ep, err := h.svc.Get(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toWebhookDTO(ep))
	return nil
}

type updateWebhookRequest struct {
	URL         *string     `json:"url"`
	Events      *[]string   `json:"events"`
	Secret      *string     `json:"secret"`
	Enabled     *bool       `json:"enabled"`
	MaxInFlight *int        `json:"maxInFlight"`
	RateLimit   nullableInt `json:"rateLimit"`
}

func (h *WebhookHandlers) update(w http.ResponseWriter, r *http.Request) error {
	var in updateWebhookRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	ep, err := h.svc.Update(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], webhooks.UpdateInput{
		URL: in.URL, Events: in.Events, Secret: in.Secret, Enabled: in.Enabled,
		MaxInFlight: in.MaxInFlight, RateLimit: in.RateLimit.ptr(),
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toWebhookDTO(ep))
	return nil
}

func (h *WebhookHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.Delete(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"]); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

type testWebhookRequest struct {
	EventType string `json:"event_type"`
}

type deliveryQueuedDTO struct {
	DeliveryID string `json:"deliveryId"`
}

func (h *WebhookHandlers) test(w http.ResponseWriter, r *http.Request) error {
	var in testWebhookRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	id, err := h.svc.Test(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], in.EventType)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, deliveryQueuedDTO{DeliveryID: id})
	return nil
}

func (h *WebhookHandlers) deliveries(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.svc.ListDeliveries(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], r.URL.Query().Get("status"), cursor, limit)
	if err != nil {
		return err
	}
	out := make([]deliveryDTO, 0, len(page.Items))
	for _, d := range page.Items {
		out = append(out, toDeliveryDTO(d))
	}
	writeList(w, out, page.NextCursor, page.Limit)
	return nil
}

func (h *WebhookHandlers) retry(w http.ResponseWriter, r *http.Request) error {
	var none struct{}
	if err := decodeOptionalJSON(w, r, &none); err != nil {
		return err
	}
	vars := mux.Vars(r)
	d, err := h.svc.Retry(r.Context(), actorFrom(r.Context()), vars["id"], vars["deliveryId"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, toDeliveryDTO(d))
	return nil
}
