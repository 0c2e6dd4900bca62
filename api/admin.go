package api

import (
	"crypto/subtle"
	"strings"

	"github.com/labstack/echo/v4"
)

// Admin serves the /admin routes.
type Admin struct{}

func (a *Admin) routes(g *echo.Group) {}

// requireAdmin checks the bearer token in constant time. A token in the query
// string is never looked at; with no token configured every admin route
// answers 401.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AdminToken == "" {
			return problem(CodeUnauthorized, "admin is disabled: set HOOX_ADMIN_TOKEN to enable it")
		}
		auth := c.Request().Header.Get(echo.HeaderAuthorization)
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.cfg.AdminToken)) != 1 {
			return problem(CodeUnauthorized, "missing or wrong bearer token")
		}
		return next(c)
	}
}
