// Command limitserver is what the side-by-side benchmark compares the
// service with: the least a Go server can do for the same request on the
// same machine. -mode bare answers a fixed profile-sized JSON body with
// net/http alone; -mode read serves one row read by primary key through a
// pgx pool of 8, and a team's newest 50 rows (a page of the list); -mode
// tx commits a row and an outbox row in one transaction (Begin, two Exec,
// Commit) and answers 201. The bench creates
// the tables (limit_profiles, limit_outbox) in a schema of its own and
// passes it in the URL's search_path. -mode forward copies the bytes of
// every TCP connection to -to and back (io.Copy both ways), the least a Go
// process in the middle of a connection adds: the browser figures set the
// CDP relay beside it.
//
// It prints "listening on HOST:PORT" once it serves, and stops on SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"

	"github.com/profilesvc/profilesvc/tests/bench/load"
)

func main() {
	mode := flag.String("mode", "bare", "bare | read | tx | forward")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	database := flag.String("database", "", "PostgreSQL URL (read and tx)")
	to := flag.String("to", "", "where connections are forwarded (forward)")
	flag.Parse()
	var err error
	if *mode == "forward" {
		err = forward(*addr, *to)
	} else {
		err = run(*mode, *addr, *database)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "limitserver:", err)
		os.Exit(1)
	}
}

func run(mode, addr, database string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	mux := http.NewServeMux()
	switch mode {
	case "bare":
		mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(bareBody)
		})
	case "read", "tx":
		cfg, err := pgxpool.ParseConfig(database)
		if err != nil {
			return err
		}
		// 8 connections suit 2 cores (ARCHITECTURE's performance notes).
		cfg.MaxConns, cfg.MinConns = 8, 8
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		if mode == "read" {
			mux.HandleFunc("GET /profiles/{id}", readHandler(pool))
			mux.HandleFunc("GET /profiles", listHandler(pool))
		} else {
			mux.HandleFunc("POST /profiles", txHandler(pool))
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Println("listening on", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// forward copies each connection to to and back until either side ends.
func forward(addr, to string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("listening on", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer u.Close()
			go func() { _, _ = io.Copy(u, c) }()
			_, _ = io.Copy(c, u)
		}()
	}
}

// bareBody is about the size and shape of the service's answer to a
// profile GET.
var bareBody = []byte(`{"success":true,"data":{"id":"prf_01KAQX7H5W2Y3Z4A5B6C7D8E9F","name":"seed 42","templateId":"tpl_chrome_win_us","browser":"chrome",` +
	`"fingerprint":{"userAgent":"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",` +
	`"platform":"Win32","locale":"en-US","timezone":"America/New_York","screen":{"width":1920,"height":1080}},"proxy":null,"tags":["bench","seed"],` +
	`"notes":"","status":"idle","session":null,"data":null,"version":1,"createdAt":"2026-11-24T02:40:00.123456Z","updatedAt":"2026-11-24T02:40:00.123456Z"}}`)

// device is what every profile of the limit server holds of a device.
var device = json.RawMessage(load.ProfileDevice())

// profile is a row of limit_profiles, shaped like the service's profiles.
type profile struct {
	ID           string    `json:"id"`
	TeamID       string    `json:"-"`
	Name         string    `json:"name"`
	TemplateID   string    `json:"templateId"`
	Browser      string    `json:"browser"`
	UserAgent    string    `json:"userAgent"`
	Platform     string    `json:"platform"`
	Locale       string    `json:"locale"`
	Timezone     string    `json:"timezone"`
	ScreenWidth  int       `json:"screenWidth"`
	ScreenHeight int       `json:"screenHeight"`
	ProxyID      *string   `json:"proxyId"`
	Notes        string    `json:"notes"`
	Version      int       `json:"version"`
	CreatedBy    string    `json:"createdBy"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	SessionID    *string   `json:"sessionId"`
	// Device is the rest of the fingerprint, as the service keeps it: one
	// JSON column.
	Device json.RawMessage `json:"device"`
}

type envelope struct {
	Success bool `json:"success"`
	Data    any  `json:"data"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, err := json.Marshal(envelope{Success: true, Data: v})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

const profileColumns = `id, team_id, name, template_id, browser, user_agent, platform, locale, timezone,
	screen_width, screen_height, proxy_id, notes, version, created_by, created_at, updated_at, session_id, device`

func (p *profile) targets() []any {
	return []any{&p.ID, &p.TeamID, &p.Name, &p.TemplateID, &p.Browser, &p.UserAgent, &p.Platform, &p.Locale, &p.Timezone,
		&p.ScreenWidth, &p.ScreenHeight, &p.ProxyID, &p.Notes, &p.Version, &p.CreatedBy, &p.CreatedAt, &p.UpdatedAt, &p.SessionID, &p.Device}
}

func readHandler(pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var p profile
		err := pool.QueryRow(r.Context(), `SELECT `+profileColumns+` FROM limit_profiles WHERE id = $1`, r.PathValue("id")).Scan(p.targets()...)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, http.StatusOK, p)
	}
}

// listHandler answers the team's newest 50 profiles, as a page of the
// service's list does.
func listHandler(pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rows, err := pool.Query(r.Context(), `SELECT `+profileColumns+` FROM limit_profiles WHERE team_id = $1 ORDER BY id DESC LIMIT 50`, "team_bench")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer rows.Close()
		page := make([]profile, 0, 50)
		for rows.Next() {
			var p profile
			if err := rows.Scan(p.targets()...); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			page = append(page, p)
		}
		if err := rows.Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusOK, page)
	}
}

func txHandler(pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name       string `json:"name"`
			TemplateID string `json:"templateId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		now := time.Now().UTC()
		p := profile{ID: "prf_" + ulid.Make().String(), TeamID: "team_bench", Name: in.Name, TemplateID: in.TemplateID,
			Browser: "chrome", UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
			Platform: "Win32", Locale: "en-US", Timezone: "America/New_York", ScreenWidth: 1920, ScreenHeight: 1080,
			Version: 1, CreatedBy: "usr_bench", CreatedAt: now, UpdatedAt: now, Device: device}
		event, err := json.Marshal(map[string]any{"profile": p})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := commit(r.Context(), pool, p, event); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusCreated, p)
	}
}

func commit(ctx context.Context, pool *pgxpool.Pool, p profile, event []byte) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO limit_profiles (id, team_id, name, template_id, browser, user_agent, platform, locale, timezone,
		screen_width, screen_height, proxy_id, notes, version, created_by, created_at, updated_at, device)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		p.ID, p.TeamID, p.Name, p.TemplateID, p.Browser, p.UserAgent, p.Platform, p.Locale, p.Timezone,
		p.ScreenWidth, p.ScreenHeight, p.ProxyID, p.Notes, p.Version, p.CreatedBy, p.CreatedAt, p.UpdatedAt, string(p.Device)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO limit_outbox (id, team_id, type, occurred_at, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		"evt_"+ulid.Make().String(), p.TeamID, "profile.created", p.CreatedAt, event, p.CreatedAt); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
