package torture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/shopspring/decimal"
)

// front stands between one replica and one venue fake: the replica's
// HOOX_<VENUE>_BASE_URL points here, so the nemesis knows which replica
// sent a request and can let the venue accept a placement and then lose,
// garble or delay its answer, or kill the replica before it hears it.
type front struct {
	sim     *sim
	fake    string // "binance" or "bybit"
	target  string // the fake's base URL
	replica int
	srv     *http.Server
	url     string
}

func startFront(s *sim, fake, target string, replica int) (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{sim: s, fake: fake, target: target, replica: replica, url: "http://" + ln.Addr().String()}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *front) close() { _ = f.srv.Close() }

func (f *front) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	arrived := time.Since(f.sim.h.start)
	sig, fault := -1, ""
	var delay time.Duration
	isExit := exitPlacement(req, body)
	if isExit {
		// An exit (a leg): its own fault, and not a placement of the
		// signal's order for the 503 check. Its signal is its entry's (a
		// spot exit's quantity is what the entry received, not the
		// signal's).
		qty := placementQuantity(req, body)
		sig = f.sim.exitSignal(param(req, body, "clientAlgoId", "listClientOrderId", "newClientOrderId"))
		fault = f.sim.takeExitFault(sig)
		f.sim.h.add(sig, "venue_exit_placement", f.replica, "%s %s qty=%s fault=%s", f.fake, req.URL.Path, qty, orNone(fault))
		f.sim.placementArrived(placementRequest{Arrived: arrived, Replica: f.replica, Signal: sig, Exit: true,
			What: fmt.Sprintf("exit %s %s qty=%s", f.fake, req.URL.Path, qty)})
	} else if placement(req) {
		qty := placementQuantity(req, body)
		sig = f.sim.signalByQuantity(qty)
		if req.URL.Path == "/fapi/v1/order" && param(req, body, "reduceOnly") == "true" {
			// A close: its quantity is the position's, not a signal's.
			sig = f.sim.closeInFlight(f.replica)
		}
		f.sim.entryPlaced(sig, param(req, body, "newClientOrderId"))
		fault, delay = f.sim.takeFault(sig)
		f.sim.h.add(sig, "venue_placement", f.replica, "%s %s qty=%s fault=%s", f.fake, req.URL.Path, qty, orNone(fault))
		f.sim.placementArrived(placementRequest{Arrived: arrived, Replica: f.replica, Signal: sig,
			What: fmt.Sprintf("entry %s %s qty=%s", f.fake, req.URL.Path, qty)})
		if fault == FaultLookupLag {
			f.sim.lagNextLookup(f.fake, delay)
		}
	}
	if fault == FaultUnsent5xx {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		return
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, f.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return
	}
	out.Header = req.Header.Clone()
	resp, err := f.sim.venueClient.Do(out)
	if err != nil {
		hangUp(w)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		hangUp(w)
		return
	}
	if isExit {
		f.sim.exitAnswered(param(req, body, "clientAlgoId", "listClientOrderId", "newClientOrderId"), resp.StatusCode, answer)
	}
	if sig >= 0 && isExit {
		f.sim.h.add(sig, "venue_exit_answer", f.replica, "%d %s fault=%s", resp.StatusCode, clip(answer, 160), orNone(fault))
	} else if sig >= 0 {
		f.sim.h.add(sig, "venue_answer", f.replica, "%d %s fault=%s", resp.StatusCode, clip(answer, 160), orNone(fault))
		if accepted(f.fake, resp.StatusCode, answer) {
			f.sim.accepted(sig, f.replica, arrived)
		}
	}
	switch fault {
	case FaultAnswerLost:
		hangUp(w)
		return
	case FaultHTTP5xx:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		return
	case FaultHTTP408:
		w.WriteHeader(http.StatusRequestTimeout)
		return
	case FaultNonJSON:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "<html><body>Please wait while we check your browser…</body></html>")
		return
	case FaultSlowAnswer:
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return
		}
	case FaultKillAfterAccept:
		f.sim.killReplica(f.replica, sig, FaultKillAfterAccept)
		hangUp(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		conn.Close()
	}
}

// exitPlacement reports whether req places an exit: a USDⓈ-M conditional
// order through the Algo Order API, a spot OCO list, or a spot order of a
// type hoox sends only as an exit.
func exitPlacement(req *http.Request, body []byte) bool {
	if req.Method != http.MethodPost {
		return false
	}
	switch req.URL.Path {
	case "/fapi/v1/algoOrder", "/api/v3/orderList/oco":
		return true
	case "/api/v3/order":
		return spotExit[param(req, body, "type")] != ""
	}
	return false
}

// param is the first of names a Binance request carries, in its query or
// its form body.
func param(req *http.Request, body []byte, names ...string) string {
	form, _ := url.ParseQuery(string(body))
	for _, n := range names {
		if v := req.URL.Query().Get(n); v != "" {
			return v
		}
		if v := form.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// placement reports whether req places an order (Binance spot and
// futures, Bybit v5).
func placement(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return false
	}
	switch req.URL.Path {
	case "/api/v3/order", "/fapi/v1/order", "/v5/order/create":
		return true
	}
	return false
}

// placementQuantity is the quantity a placement carries, normalised
// (Binance: query or form; Bybit: JSON qty).
func placementQuantity(req *http.Request, body []byte) string {
	var q string
	if req.URL.Path == "/v5/order/create" {
		var b struct {
			Qty string `json:"qty"`
		}
		_ = json.Unmarshal(body, &b)
		q = b.Qty
	} else {
		q = req.URL.Query().Get("quantity")
		if q == "" {
			if form, err := url.ParseQuery(string(body)); err == nil {
				q = form.Get("quantity")
			}
		}
	}
	return normQty(q)
}

// normQty writes a decimal the way the checker compares quantities.
func normQty(q string) string {
	d, err := decimal.NewFromString(q)
	if err != nil {
		return q
	}
	return d.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func clip(b []byte, n int) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// accepted reports whether a venue's answer to a placement says it booked
// the order: Binance answers 200 with the order, Bybit retCode 0.
func accepted(fake string, status int, body []byte) bool {
	if status != http.StatusOK {
		return false
	}
	var b struct {
		OrderID *json.RawMessage `json:"orderId"`
		RetCode *int             `json:"retCode"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	if fake == "bybit" {
		return b.RetCode != nil && *b.RetCode == 0
	}
	return b.OrderID != nil
}
