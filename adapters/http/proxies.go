package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/proxies"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/proxy"
)

// ProxyHandlers serves a team's proxies (SPEC's /api/v1/proxies paths).
type ProxyHandlers struct{ svc *proxies.Service }

// NewProxyHandlers returns the proxy endpoints of svc.
func NewProxyHandlers(svc *proxies.Service) *ProxyHandlers { return &ProxyHandlers{svc: svc} }

// Routes lists the proxy endpoints.
func (h *ProxyHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodGet, Path: "/api/v1/proxies", Handler: h.list, Name: "proxies.list"},
		{Method: http.MethodPost, Path: "/api/v1/proxies", Handler: h.add, Name: "proxies.add"},
		{Method: http.MethodPost, Path: "/api/v1/proxies/test", Handler: h.test, Name: "proxies.test"},
		{Method: http.MethodGet, Path: "/api/v1/proxies/{id}", Handler: h.get, Name: "proxies.read"},
		{Method: http.MethodPatch, Path: "/api/v1/proxies/{id}", Handler: h.update, Name: "proxies.update"},
		{Method: http.MethodDelete, Path: "/api/v1/proxies/{id}", Handler: h.delete, Name: "proxies.delete"},
		{Method: http.MethodPost, Path: "/api/v1/proxies/{id}/check", Handler: h.check, Name: "proxies.check"},
	}
}

type proxyCheckDTO struct {
	OK        bool    `json:"ok"`
	LatencyMs int64   `json:"latencyMs"`
	ExitIP    *string `json:"exitIp"`
	Country   *string `json:"country"`
	City      *string `json:"city"`
	Timezone  *string `json:"timezone"`
	Error     *string `json:"error"`
}

type proxyLastCheckDTO struct {
	CheckedAt int64 `json:"checkedAt"`
	proxyCheckDTO
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toProxyCheckDTO(c proxy.Check) proxyCheckDTO {
	return proxyCheckDTO{OK: c.OK, LatencyMs: c.LatencyMs, ExitIP: nonEmpty(c.ExitIP), Country: nonEmpty(c.Country),
		City: nonEmpty(c.City), Timezone: nonEmpty(c.Timezone), Error: nonEmpty(c.Error)}
}

type proxyDTO struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	Type        string             `json:"type"`
	Host        string             `json:"host"`
	Port        int                `json:"port"`
	Username    *string            `json:"username"`
	HasPassword bool               `json:"hasPassword"`
	Status      string             `json:"status"`
	LastCheck   *proxyLastCheckDTO `json:"lastCheck"`
	CreatedAt   int64              `json:"createdAt"`
	UpdatedAt   int64              `json:"updatedAt"`
}

// toProxyDTO leaves the password out: it is write-only.
func toProxyDTO(p proxy.Proxy) proxyDTO {
	out := proxyDTO{ID: p.ID, Name: p.Name, Type: string(p.Type), Host: p.Host, Port: p.Port, Username: nonEmpty(p.Username),
		HasPassword: p.HasPassword(), Status: string(p.Status), CreatedAt: p.CreatedAt.UnixMilli(), UpdatedAt: p.UpdatedAt.UnixMilli()}
	if c := p.LastCheck; c != nil {
		out.LastCheck = &proxyLastCheckDTO{CheckedAt: c.CheckedAt.UnixMilli(), proxyCheckDTO: toProxyCheckDTO(*c)}
	}
	return out
}

// proxyRequest is a proxy by its fields or by the short form url.
type proxyRequest struct {
	URL      *string `json:"url"`
	Name     *string `json:"name"`
	Type     *string `json:"type"`
	Host     *string `json:"host"`
	Port     *int    `json:"port"`
	Username *string `json:"username"`
	Password *string `json:"password"`
}

func (in proxyRequest) input() (proxies.Input, error) {
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	out := proxies.Input{URL: str(in.URL), Name: str(in.Name), Type: str(in.Type), Host: str(in.Host),
		Username: str(in.Username), Password: str(in.Password)}
	if in.Port != nil {
		out.Port = *in.Port
	}
	if in.URL != nil && (in.Type != nil || in.Host != nil || in.Port != nil || in.Username != nil || in.Password != nil) {
		return proxies.Input{}, domain.Invalid("url", "give either url or type, host and port, not both")
	}
	if in.URL != nil && out.URL == "" {
		return proxies.Input{}, domain.Invalid("url", "must look like socks5://user:password@host:port")
	}
	return out, nil
}

func decodeProxyRequest(w http.ResponseWriter, r *http.Request) (proxies.Input, error) {
	var in proxyRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return proxies.Input{}, err
	}
	return in.input()
}

func (h *ProxyHandlers) add(w http.ResponseWriter, r *http.Request) error {
	in, err := decodeProxyRequest(w, r)
	if err != nil {
		return err
	}
	p, err := h.svc.Add(r.Context(), actorFrom(r.Context()), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toProxyDTO(p))
	return nil
}

func (h *ProxyHandlers) test(w http.ResponseWriter, r *http.Request) error {
	in, err := decodeProxyRequest(w, r)
	if err != nil {
		return err
	}
	c, err := h.svc.Test(r.Context(), actorFrom(r.Context()), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProxyCheckDTO(c))
	return nil
}

func (h *ProxyHandlers) list(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.svc.List(r.Context(), actorFrom(r.Context()), r.URL.Query().Get("status"), cursor, limit)
	if err != nil {
		return err
	}
	out := make([]proxyDTO, 0, len(page.Items))
	for _, p := range page.Items {
		out = append(out, toProxyDTO(p))
	}
	writeList(w, out, page.NextCursor, page.Limit)
	return nil
}

func (h *ProxyHandlers) get(w http.ResponseWriter, r *http.Request) error {
	p, err := h.svc.Get(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProxyDTO(p))
	return nil
}

type updateProxyRequest struct {
	Name     *string `json:"name"`
	Type     *string `json:"type"`
	Host     *string `json:"host"`
	Port     *int    `json:"port"`
	Username *string `json:"username"`
	Password *string `json:"password"`
}

func (h *ProxyHandlers) update(w http.ResponseWriter, r *http.Request) error {
	var in updateProxyRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	p, err := h.svc.Update(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"], proxies.UpdateInput(in))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProxyDTO(p))
	return nil
}

func (h *ProxyHandlers) delete(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.Delete(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"]); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

func (h *ProxyHandlers) check(w http.ResponseWriter, r *http.Request) error {
	var none struct{}
	if err := decodeOptionalJSON(w, r, &none); err != nil {
		return err
	}
	c, err := h.svc.Check(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProxyCheckDTO(c))
	return nil
}
