package httpapi

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/team"
)

type actorKey struct{}

// actorFrom returns the authenticated actor of the request. Only routes
// behind Authenticate have one.
func actorFrom(ctx context.Context) team.Actor {
	a, _ := ctx.Value(actorKey{}).(team.Actor)
	return a
}

// Authenticate resolves the request's credentials (SPEC section 5) into an
// actor, or answers 401/404 before the handler runs.
func Authenticate(svc *auth.Service) Middleware {
	return func(next http.Handler) http.Handler {
		return HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			c := auth.Credentials{APIKey: r.Header.Get("X-API-Key"), TeamID: r.Header.Get("X-Team-ID")}
			if h := r.Header.Get("Authorization"); h != "" {
				scheme, token, ok := strings.Cut(h, " ")
				if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
					return domain.Unauthorized("Authorization must be \"Bearer <token>\"")
				}
				c.BearerToken = strings.TrimSpace(token)
			}
			actor, err := svc.Authenticate(r.Context(), c)
			if err != nil {
				return err
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, actor)))
			return nil
		})
	}
}

// AuthHandlers serves the account endpoints.
type AuthHandlers struct{ svc *auth.Service }

// NewAuthHandlers returns the account endpoints of svc.
func NewAuthHandlers(svc *auth.Service) *AuthHandlers { return &AuthHandlers{svc: svc} }

// Routes lists the account endpoints.
func (h *AuthHandlers) Routes() []Route {
	return []Route{
		{Method: http.MethodPost, Path: "/api/v1/auth/register", Handler: h.register, Public: true, Name: "auth.register"},
		{Method: http.MethodPost, Path: loginRoute, Handler: h.login, Public: true, Name: "auth.login"},
		{Method: http.MethodPost, Path: "/api/v1/auth/refresh", Handler: h.refresh, Public: true, Name: "auth.refresh"},
		{Method: http.MethodPost, Path: "/api/v1/auth/forgot-password", Handler: h.forgotPassword, Public: true, Name: "auth.forgot_password"},
		{Method: http.MethodPost, Path: "/api/v1/auth/reset-password", Handler: h.resetPassword, Public: true, Name: "auth.reset_password"},
		{Method: http.MethodGet, Path: "/api/v1/me", Handler: h.me, Name: "me.read"},
		{Method: http.MethodPost, Path: "/api/v1/api-keys", Handler: h.createAPIKey, Name: "api_keys.create"},
		{Method: http.MethodGet, Path: "/api/v1/api-keys", Handler: h.listAPIKeys, Name: "api_keys.list"},
		{Method: http.MethodDelete, Path: "/api/v1/api-keys/{id}", Handler: h.deleteAPIKey, Name: "api_keys.delete"},
	}
}

type userDTO struct {
	ID        string `json:"id"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	CreatedAt int64  `json:"createdAt"`
}

func toUserDTO(u account.User) userDTO {
	return userDTO{ID: u.ID, Email: u.Email, Name: u.Name, CreatedAt: u.CreatedAt.UnixMilli()}
}

type teamRoleDTO struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

type signInDTO struct {
	User         userDTO     `json:"user"`
	Team         teamRoleDTO `json:"team"`
	AccessToken  string      `json:"accessToken"`
	RefreshToken string      `json:"refreshToken"`
	TokenType    string      `json:"tokenType"`
	ExpiresIn    int         `json:"expiresIn"`
}

func toSignInDTO(s auth.SignIn) signInDTO {
	return signInDTO{
		User:         toUserDTO(s.User),
		Team:         teamRoleDTO{ID: s.Team.ID, Name: s.Team.Name, Role: string(s.Role)},
		AccessToken:  s.Tokens.AccessToken,
		RefreshToken: s.Tokens.RefreshToken,
		TokenType:    "Bearer",
		ExpiresIn:    s.Tokens.ExpiresIn,
	}
}

type registerRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Name     string `json:"name"`
}

func (h *AuthHandlers) register(w http.ResponseWriter, r *http.Request) error {
	var in registerRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	s, err := h.svc.Register(r.Context(), auth.RegisterInput{Email: in.Email, Password: in.Password, Name: in.Name, ClientAddr: ClientAddr(r)})
	if err != nil {
		return err
	}
	writeCredentials(w, http.StatusCreated, toSignInDTO(s))
	return nil
}

type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (h *AuthHandlers) login(w http.ResponseWriter, r *http.Request) error {
	var in loginRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	s, err := h.svc.Login(r.Context(), auth.LoginInput{Email: in.Email, Password: in.Password, ClientAddr: ClientAddr(r)})
	if err != nil {
		return err
	}
	writeCredentials(w, http.StatusOK, toSignInDTO(s))
	return nil
}

// ClientAddr is the client's IP: the one TrustProxies found in
// X-Forwarded-For, else the peer's.
func ClientAddr(r *http.Request) string {
	if addr, ok := r.Context().Value(clientAddrKey{}).(string); ok {
		return addr
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type refreshRequest struct {
	RefreshToken string `json:"refreshToken"`
}

func (h *AuthHandlers) refresh(w http.ResponseWriter, r *http.Request) error {
	var in refreshRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	if in.RefreshToken == "" {
		return domain.Invalid("refreshToken", "is required")
	}
	s, err := h.svc.Refresh(r.Context(), in.RefreshToken)
	if err != nil {
		return err
	}
	writeCredentials(w, http.StatusOK, toSignInDTO(s))
	return nil
}

type forgotPasswordRequest struct {
	Email string `json:"email"`
}

type acceptedDTO struct {
	Message string `json:"message"`
}

func (h *AuthHandlers) forgotPassword(w http.ResponseWriter, r *http.Request) error {
	var in forgotPasswordRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	if err := h.svc.ForgotPassword(r.Context(), in.Email); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, acceptedDTO{Message: "if an account with this email exists, a reset token has been sent to it"})
	return nil
}

type resetPasswordRequest struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

func (h *AuthHandlers) resetPassword(w http.ResponseWriter, r *http.Request) error {
	var in resetPasswordRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	if err := h.svc.ResetPassword(r.Context(), in.Token, in.Password); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, acceptedDTO{Message: "password changed; every session of this account was signed out (access and refresh tokens issued before no longer work), its other reset tokens are void and all its API keys were revoked"})
	return nil
}

type meDTO struct {
	User userDTO     `json:"user"`
	Team teamRoleDTO `json:"team"`
	Role string      `json:"role"`
	// AuthMethod tells a program whether it acts through a token or a key.
	AuthMethod string `json:"authMethod"`
}

func (h *AuthHandlers) me(w http.ResponseWriter, r *http.Request) error {
	actor := actorFrom(r.Context())
	m, err := h.svc.Me(r.Context(), actor)
	if err != nil {
		return err
	}
	method := "bearer"
	if actor.APIKeyID != "" {
		method = "api_key"
	}
	writeJSON(w, http.StatusOK, meDTO{
		User:       toUserDTO(m.User),
		Team:       teamRoleDTO{ID: m.Team.ID, Name: m.Team.Name, Role: string(m.Role)},
		Role:       string(m.Role),
		AuthMethod: method,
	})
	return nil
}

type apiKeyDTO struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Prefix     string `json:"prefix"`
	CreatedAt  int64  `json:"createdAt"`
	LastUsedAt *int64 `json:"lastUsedAt"`
	// Key is present only in the response that creates the key.
	Key string `json:"key,omitempty"`
}

func toAPIKeyDTO(k account.APIKey) apiKeyDTO {
	d := apiKeyDTO{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt.UnixMilli()}
	if k.LastUsedAt != nil {
		ms := k.LastUsedAt.UnixMilli()
		d.LastUsedAt = &ms
	}
	return d
}

type createAPIKeyRequest struct {
	Name string `json:"name"`
}

func (h *AuthHandlers) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var in createAPIKeyRequest
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	k, err := h.svc.CreateAPIKey(r.Context(), actorFrom(r.Context()), in.Name)
	if err != nil {
		return err
	}
	d := toAPIKeyDTO(k.APIKey)
	d.Key = k.Key
	writeCredentials(w, http.StatusCreated, d)
	return nil
}

func (h *AuthHandlers) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	page, err := h.svc.ListAPIKeys(r.Context(), actorFrom(r.Context()), limit, cursor)
	if err != nil {
		return err
	}
	out := make([]apiKeyDTO, 0, len(page.Items))
	for _, k := range page.Items {
		out = append(out, toAPIKeyDTO(k))
	}
	writeList(w, out, page.NextCursor, page.Limit)
	return nil
}

func (h *AuthHandlers) deleteAPIKey(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.DeleteAPIKey(r.Context(), actorFrom(r.Context()), mux.Vars(r)["id"]); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// pageParams reads ?limit= (paging's page-size rule) and ?cursor=.
func pageParams(r *http.Request) (int, string, error) {
	q := r.URL.Query()
	limit, err := paging.ParseLimit(q.Get("limit"))
	return limit, q.Get("cursor"), err
}
