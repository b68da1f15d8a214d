package plugin

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models/ids"
	"github.com/shotflow/shotflow/models/instant"
	"github.com/shotflow/shotflow/models/status"
)

// GET /jobs page size bounds (api/openapi.yaml, listJobs: limit).
const (
	DefaultJobsLimit = 50
	MaxJobsLimit     = 200
	maxCursorLength  = 512
)

// JobStatuses are the JobStatus values GET /jobs filters by (docs/job-states.md).
var JobStatuses = []string{status.JobPending, status.JobInProgress, status.JobRetryPending, status.JobCompleted,
	status.JobFailed, status.JobCancelled, status.JobExpired}

// JobsPage is the answer of GET /jobs: the installation's jobs, newest first. NextCursor is null on
// the last page.
type JobsPage struct {
	Jobs       []JobResponse `json:"jobs"`
	NextCursor *string       `json:"next_cursor"`
}

// listJobs answers GET /jobs.
func (h *Handler) listJobs(c *gin.Context) {
	inst := caller(c).Installation
	f, ok := h.jobFilter(c, inst.ID)
	if !ok {
		return
	}
	jobs, err := h.Engine.Jobs.ListJobs(c.Request.Context(), inst.ID, f)
	if err != nil {
		h.fail(c, err)
		return
	}
	page := JobsPage{Jobs: make([]JobResponse, 0, len(jobs.Jobs))}
	if jobs.More {
		last := jobs.Jobs[len(jobs.Jobs)-1]
		next := h.encodeJobCursor(inst.ID, engine.JobCursor{CreatedAt: last.CreatedAt, ID: last.ID})
		page.NextCursor = &next
	}
	for _, j := range jobs.Jobs {
		page.Jobs = append(page.Jobs, h.jobResponse(j))
	}
	c.PureJSON(http.StatusOK, page)
}

// jobFilter reads the query parameters of GET /jobs; on a bad one it answers 400 naming it.
func (h *Handler) jobFilter(c *gin.Context, installationID string) (engine.JobFilter, bool) {
	f := engine.JobFilter{Limit: DefaultJobsLimit}
	query := c.Request.URL.Query()
	bad := func(msg string) (engine.JobFilter, bool) {
		h.Fail(c, http.StatusBadRequest, CodeInvalidInput, msg)
		return engine.JobFilter{}, false
	}
	for _, name := range []string{"status", "created_after", "created_before", "limit", "cursor"} {
		if len(query[name]) > 1 {
			return bad(name + " may be given only once.")
		}
	}
	if raw, ok := c.GetQuery("status"); ok {
		if !slices.Contains(JobStatuses, raw) {
			return bad("status must be one of: " + strings.Join(JobStatuses, ", ") + ".")
		}
		f.Status = raw
	}
	for _, p := range []struct {
		name string
		dst  **time.Time
	}{{"created_after", &f.CreatedAfter}, {"created_before", &f.CreatedBefore}} {
		raw, ok := c.GetQuery(p.name)
		if !ok {
			continue
		}
		t, err := instant.Parse(raw)
		switch {
		case errors.Is(err, instant.ErrOutOfRange):
			return bad(p.name + " " + instant.OutOfRangeText + ".")
		case err != nil:
			return bad(p.name + " must be an RFC 3339 date-time such as 2026-06-01T12:00:00Z" + instant.PlusHint(raw) + ".")
		}
		*p.dst = &t
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && !f.CreatedAfter.Before(*f.CreatedBefore) {
		return bad("created_after must be earlier than created_before (created_after is inclusive, created_before exclusive).")
	}
	if raw, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxJobsLimit {
			return bad("limit must be an integer from 1 to " + strconv.Itoa(MaxJobsLimit) + ".")
		}
		f.Limit = n
	}
	if raw, ok := c.GetQuery("cursor"); ok {
		cur, ok := h.decodeJobCursor(installationID, raw)
		if !ok {
			return bad("cursor is not a next_cursor of GET /jobs for this API key's installation; pass it back unchanged, or omit it to start from the newest job.")
		}
		f.After = &cur
	}
	return f, true
}

// jobCursorToken is the JSON inside a GET /jobs cursor: the position and its MAC.
type jobCursorToken struct {
	CreatedAt string `json:"t"`
	ID        string `json:"id"`
	MAC       string `json:"s"`
}

// encodeJobCursor makes the opaque next_cursor: base64url of the last job's (created_at, id),
// signed for the installation so that a cursor that was altered, or made for another
// installation, is refused.
func (h *Handler) encodeJobCursor(installationID string, cur engine.JobCursor) string {
	at := cur.CreatedAt.UTC().Format(time.RFC3339Nano)
	data, _ := json.Marshal(jobCursorToken{CreatedAt: at, ID: cur.ID, MAC: h.jobCursorMAC(installationID, at, cur.ID)})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeJobCursor checks and reads a cursor made by encodeJobCursor for the installation.
func (h *Handler) decodeJobCursor(installationID, raw string) (engine.JobCursor, bool) {
	if raw == "" || len(raw) > maxCursorLength {
		return engine.JobCursor{}, false
	}
	data, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return engine.JobCursor{}, false
	}
	var tok jobCursorToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.MAC == "" {
		return engine.JobCursor{}, false
	}
	if !hmac.Equal([]byte(tok.MAC), []byte(h.jobCursorMAC(installationID, tok.CreatedAt, tok.ID))) {
		return engine.JobCursor{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, tok.CreatedAt)
	if err != nil || !ids.IsUUID(tok.ID) {
		return engine.JobCursor{}, false
	}
	return engine.JobCursor{CreatedAt: at.UTC(), ID: tok.ID}, true
}

// jobCursorMAC authenticates a cursor position with the service's URL-signing key (HMAC-SHA256).
// Its pseudo-method CURSOR keeps these MACs apart from every upload and download signature, which
// sign PUT or GET, so neither can be passed off as the other.
func (h *Handler) jobCursorMAC(installationID, createdAt, id string) string {
	signed := h.Signer.URL("CURSOR", "/jobs/"+url.PathEscape(installationID)+"/"+url.PathEscape(createdAt)+"/"+url.PathEscape(id), time.Unix(0, 0))
	u, err := url.Parse(signed)
	if err != nil {
		return ""
	}
	return u.Query().Get("signature")
}
