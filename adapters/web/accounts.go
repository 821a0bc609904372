package web

import (
	"net/http"

	httpapi "github.com/profilesvc/profilesvc/adapters/http"
	"github.com/profilesvc/profilesvc/application/auth"
	"github.com/profilesvc/profilesvc/domain"
)

// accountForm is what the account pages show again after a refusal: never
// a password.
type accountForm struct {
	Email, Name, Next, Token string
	// Sent: the reset mail was asked for.
	Sent bool
}

func (c *Console) accountRoutes() []route {
	get, post := http.MethodGet, http.MethodPost
	return []route{
		{get, Prefix + "/signup", c.public(c.signupForm)},
		{post, Prefix + "/signup", c.public(c.signup)},
		{get, Prefix + "/signin", c.public(c.signinForm)},
		{post, Prefix + "/signin", c.public(c.signin)},
		{post, Prefix + "/signout", c.public(c.signout)},
		{get, Prefix + "/forgot-password", c.public(c.forgotForm)},
		{post, Prefix + "/forgot-password", c.public(c.forgot)},
		{get, Prefix + "/reset-password", c.public(c.resetForm)},
		{post, Prefix + "/reset-password", c.public(c.reset)},
		{get, Prefix + "/invitations/accept", c.signedIn(c.acceptForm)},
		{post, Prefix + "/invitations/accept", c.signedIn(c.accept)},
		{post, Prefix + "/team/switch", c.signedIn(c.switchTeam)},
	}
}

func (c *Console) home(q *request) error {
	return c.redirect(q, Prefix+"/profiles", "")
}

func (c *Console) signupForm(q *request) error {
	return c.render(q, http.StatusOK, "signup", "Create an account", accountForm{Next: q.r.URL.Query().Get("next")})
}

func (c *Console) signup(q *request) error {
	f, err := form(q)
	if err != nil {
		return err
	}
	in := accountForm{Email: f.Get("email"), Name: f.Get("name"), Next: f.Get("next")}
	s, err := c.svc.Auth.Register(q.r.Context(), auth.RegisterInput{
		Email: in.Email, Password: f.Get("password"), Name: in.Name, ClientAddr: httpapi.ClientAddr(q.r),
	})
	if err != nil {
		return c.renderWith(q, 0, "signup", "Create an account", in, err)
	}
	if err := c.startSession(q, s.Tokens.RefreshToken); err != nil {
		return err
	}
	return c.redirect(q, localPath(in.Next), "Welcome, "+s.User.Name+". Your team "+s.Team.Name+" is ready.")
}

func (c *Console) signinForm(q *request) error {
	return c.render(q, http.StatusOK, "signin", "Sign in", accountForm{Next: q.r.URL.Query().Get("next")})
}

func (c *Console) signin(q *request) error {
	f, err := form(q)
	if err != nil {
		return err
	}
	in := accountForm{Email: f.Get("email"), Next: f.Get("next")}
	s, err := c.svc.Auth.Login(q.r.Context(), auth.LoginInput{Email: in.Email, Password: f.Get("password"), ClientAddr: httpapi.ClientAddr(q.r)})
	if err != nil {
		return c.renderWith(q, 0, "signin", "Sign in", in, err)
	}
	if err := c.startSession(q, s.Tokens.RefreshToken); err != nil {
		return err
	}
	return c.redirect(q, localPath(in.Next), "")
}

func (c *Console) signout(q *request) error {
	if token := cookieValue(q.r, sessionCookie); token != "" {
		if err := c.svc.Auth.SignOut(q.r.Context(), token); err != nil {
			return err
		}
	}
	c.clearSession(q.w)
	return c.redirect(q, Prefix+"/signin", "You are signed out.")
}

func (c *Console) forgotForm(q *request) error {
	return c.render(q, http.StatusOK, "forgot", "Forgot your password", accountForm{})
}

func (c *Console) forgot(q *request) error {
	f, err := form(q)
	if err != nil {
		return err
	}
	in := accountForm{Email: f.Get("email")}
	if err := c.svc.Auth.ForgotPassword(q.r.Context(), in.Email); err != nil {
		return c.renderWith(q, 0, "forgot", "Forgot your password", in, err)
	}
	in.Sent = true
	return c.render(q, http.StatusOK, "forgot", "Forgot your password", in)
}

func (c *Console) resetForm(q *request) error {
	return c.render(q, http.StatusOK, "reset", "Choose a new password", accountForm{Token: q.r.URL.Query().Get("token")})
}

func (c *Console) reset(q *request) error {
	f, err := form(q)
	if err != nil {
		return err
	}
	in := accountForm{Token: f.Get("token")}
	if f.Get("password") != f.Get("confirm") {
		return c.renderWith(q, 0, "reset", "Choose a new password", in, domain.Invalid("confirm", "the two passwords differ"))
	}
	if err := c.svc.Auth.ResetPassword(q.r.Context(), in.Token, f.Get("password")); err != nil {
		return c.renderWith(q, 0, "reset", "Choose a new password", in, err)
	}
	c.clearSession(q.w)
	return c.redirect(q, Prefix+"/signin", "Your password is changed, and every session was signed out. Sign in with the new password.")
}

func (c *Console) acceptForm(q *request) error {
	return c.render(q, http.StatusOK, "accept", "Accept an invitation", accountForm{Token: q.r.URL.Query().Get("token")})
}

func (c *Console) accept(q *request) error {
	f, err := form(q)
	if err != nil {
		return err
	}
	in := accountForm{Token: f.Get("token")}
	tv, err := c.svc.Teams.Accept(q.r.Context(), q.actor, in.Token)
	if err != nil {
		return c.renderWith(q, 0, "accept", "Accept an invitation", in, err)
	}
	c.setCookie(q.w, teamCookie, tv.Team.ID, sessionMaxAge)
	return c.redirect(q, Prefix+"/profiles", "You joined "+tv.Team.Name+" as "+string(tv.Role)+".")
}

// switchTeam makes the console act in another team of the user's; one
// they are not an active member of is not found, as X-Team-ID is.
func (c *Console) switchTeam(q *request) error {
	f, err := form(q)
	if err != nil {
		return err
	}
	id := f.Get("team")
	if err := c.layout(q); err != nil {
		return err
	}
	for _, tv := range q.teams {
		if tv.Team.ID == id {
			c.setCookie(q.w, teamCookie, id, sessionMaxAge)
			return c.redirect(q, Prefix+"/profiles", "You are now working in "+tv.Team.Name+".")
		}
	}
	return domain.NotFound("team")
}
