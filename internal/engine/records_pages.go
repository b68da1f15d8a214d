package engine

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/ids"
)

// The pages of the external API's record lists (GET /products, /models, /sceneries, /packshots,
// /image-picker and /videos; api/external/openapi.yaml, "Paging the record lists"): cursor paging
// in the manner of Stripe's lists. A page holds at most limit records, newest first by
// (createdAt, id); starting_after names the last record of the previous page, and the page holds
// the records after it in that order. The store's query orders the rows and cuts the page
// (LIMIT limit+1, the one beyond telling whether more follow), so a request fetches, signs and
// renders at most a page however many records the account has.

// MaxRecordPage is the most records one page of an external record list holds, and the page size
// when the client names none: an account with no more records than that still gets all of them in
// one answer, as before the lists were paged.
const MaxRecordPage = 1000

// The paging parameters of the external record lists, as refusals name them.
const (
	recordLimitParam  = "limit"
	recordCursorParam = "starting_after"
)

// RecordPage asks for a page of an external record list: at most Limit records (1 to
// MaxRecordPage; 0 is MaxRecordPage), those after the record StartingAfter in the list's
// newest-first order ("" for the first page). StartingAfter is a record ID of the list, in either
// case; it may name a record the list no longer shows (archived, deleted or rated otherwise since
// the previous page), since it stands for a place in the order.
type RecordPage struct {
	Limit         int
	StartingAfter string
}

// RecordListQuery reads the paging parameters of an external record list from its query: each may
// be given once; limit is an integer from 1 to MaxRecordPage (MaxRecordPage when left out);
// starting_after is taken as sent (the use case checks that it is a record ID). A parameter given
// empty is refused, not read as left out. A refusal is KindInvalid naming the parameter. Other
// parameters are the caller's.
func RecordListQuery(query url.Values) (RecordPage, error) {
	var page RecordPage
	for _, name := range []string{recordLimitParam, recordCursorParam} {
		if len(query[name]) > 1 {
			return page, refuse(KindInvalid, "", name, "may be given only once.")
		}
	}
	if query.Has(recordLimitParam) {
		n, err := strconv.Atoi(query.Get(recordLimitParam))
		if err != nil || n < 1 || n > MaxRecordPage {
			return page, invalidRecordLimit()
		}
		page.Limit = n
	}
	if query.Has(recordCursorParam) {
		page.StartingAfter = query.Get(recordCursorParam)
		if page.StartingAfter == "" {
			return page, refuse(KindInvalid, "", recordCursorParam, "must be the id of the last record of the previous page; leave it out for the first page.")
		}
	}
	return page, nil
}

func invalidRecordLimit() *Error {
	return refuse(KindInvalid, "", recordLimitParam, "must be an integer from 1 to %d (the default).", MaxRecordPage)
}

// storePage checks the page and returns its limit and what the store is asked for: one record
// beyond the limit, so that cutRecordPage can tell whether more follow, after the canonical form of
// the cursor's ID. KindInvalid for a limit out of range or a cursor that is not a UUID.
func (p RecordPage) storePage() (int, models.RecordPage, error) {
	if p.Limit == 0 {
		p.Limit = MaxRecordPage
	}
	if p.Limit < 1 || p.Limit > MaxRecordPage {
		return 0, models.RecordPage{}, invalidRecordLimit()
	}
	if p.StartingAfter != "" && !ids.IsUUID(p.StartingAfter) {
		return 0, models.RecordPage{}, refuse(KindInvalid, "", recordCursorParam, "must be the id (a UUID) of the last record of the previous page.")
	}
	return p.Limit, models.RecordPage{Limit: p.Limit + 1, StartingAfter: ids.Canonical(p.StartingAfter)}, nil
}

// cutRecordPage trims the rows the store answered for a page (storePage: one beyond limit) to limit
// and reports whether more follow. A cursor the account has no record of in the list is
// KindInvalid naming starting_after, the same for a record of another account as for none.
func cutRecordPage[T any](rows []T, limit int, err error) ([]T, bool, error) {
	if errors.Is(err, models.ErrUnknownCursor) {
		return nil, false, refuse(KindInvalid, "", recordCursorParam,
			"names no record of this list; pass the id of the last record of the previous page, or leave it out for the first page.")
	}
	if err != nil {
		return nil, false, err
	}
	rows, more := trimPage(rows, limit)
	return rows, more, nil
}
