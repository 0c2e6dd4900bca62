package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
)

// killSwitchRequest is PUT /admin/kill-switch. Engaged is a pointer so a body
// that forgets it is refused rather than read as "release".
type killSwitchRequest struct {
	Engaged *bool  `json:"engaged"`
	Reason  string `json:"reason"`
}

// killSwitchResponse is the kill switch as stored. At is null when it was
// never set.
type killSwitchResponse struct {
	Engaged   bool       `json:"engaged"`
	Reason    string     `json:"reason"`
	At        *time.Time `json:"at"`
	UpdatedBy string     `json:"updated_by,omitempty"`
}

func newKillSwitchResponse(k db.KillSwitch) killSwitchResponse {
	r := killSwitchResponse{Engaged: k.Engaged, Reason: k.Reason, UpdatedBy: k.By}
	if !k.At.IsZero() {
		r.At = utc(&k.At)
	}
	return r
}

// getKillSwitch shows whether trading is halted.
func (a *Admin) getKillSwitch(c echo.Context) error {
	if err := checkQuery(c); err != nil {
		return err
	}
	k, err := db.GetKillSwitch(c.Request().Context(), a.db())
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, newKillSwitchResponse(k))
}

// putKillSwitch halts or resumes trading. It is stored in Postgres and the
// claim reads it on every signal, so every replica obeys at once.
func (a *Admin) putKillSwitch(c echo.Context) error {
	if err := checkQuery(c); err != nil {
		return err
	}
	var req killSwitchRequest
	if err := decodeAdminBody(c, &req, true); err != nil {
		return err
	}
	if req.Engaged == nil {
		return problem(codes.InvalidRequest, `body must say "engaged": true or false`)
	}
	if err := checkText("reason", req.Reason); err != nil {
		return err
	}
	k, err := db.SetKillSwitch(c.Request().Context(), a.db(), *req.Engaged, req.Reason, "admin",
		a.KillSwitchHook(*req.Engaged, req.Reason, "admin"))
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, newKillSwitchResponse(k))
}
