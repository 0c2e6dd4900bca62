package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/api/openapi"
)

// openapiDocument serves the API contract (package openapi).
func (s *Server) openapiDocument(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapi.Document())
}
