package api

import (
	"log/slog"

	"github.com/labstack/echo/v4"
	"riverqueue.com/riverui"

	"github.com/hoox/hoox/gateway"
)

// riverUIPrefix is where River's web UI is mounted. It sits inside the admin
// group, so every request, the UI's assets and JSON API included, needs the
// bearer token. A browser cannot add that header on navigation: operators
// reach the UI through a proxy or port-forward that injects
// "Authorization: Bearer $HOOX_ADMIN_TOKEN" (or a browser extension that
// adds headers), and scripts call /admin/river/api/… with curl. No cookie or
// query-string token is accepted, so the token never lands in logs or
// browser history.
const riverUIPrefix = "/admin/river"

// mountRiverUI serves River's UI (jobs, queues, retries) when a River client
// was given.
func (a *Admin) mountRiverUI(g *echo.Group) {
	if a.River == nil {
		return
	}
	logger := a.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(a.River, nil),
		Logger:    logger,
		Prefix:    riverUIPrefix,
	})
	if err != nil {
		// Only a broken build of riverui (its embedded frontend missing)
		// gets here; the rest of the admin API must still work.
		logger.Error("river ui unavailable", "error", err)
		unavailable := func(echo.Context) error {
			return problem(gateway.CodeUnavailable, "River's UI could not be built; see the server log")
		}
		g.Any("/river", unavailable)
		g.Any("/river/*", unavailable)
		return
	}
	a.riverUI = h
	g.Any("/river", echo.WrapHandler(h))
	g.Any("/river/*", echo.WrapHandler(h))
}
