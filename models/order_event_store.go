package models

import (
	"context"
	"slices"
	"time"

	"github.com/shotflow/shotflow/models/status"
)

// OrderEvent is one change of an order (migration 0020): the seq-th event of the order, of one of
// its jobs (JobID) or of the order itself (JobID nil: order.completed).
type OrderEvent struct {
	ID      int64 `gorm:"primaryKey"`
	OrderID string
	Seq     int64
	JobID   *string
	Type    string
}

// Order event types: the triggers of migration 0020 write them.
const (
	OrderEventJobQueued      = "job.queued"
	OrderEventJobStarted     = "job.started"
	OrderEventJobRetrying    = "job.retrying"
	OrderEventJobCompleted   = "job.completed"
	OrderEventJobFailed      = "job.failed"
	OrderEventJobCancelled   = "job.cancelled"
	OrderEventJobExpired     = "job.expired"
	OrderEventOrderCompleted = "order.completed"
)

// OrderEventsAfter returns the events of the order numbered after `after` and at most upTo, in
// order, at most limit of them. Every event up to an order's event_seq has committed (the
// triggers number them under the order's row lock), so with upTo read from the order first the
// page has no gap.
func (s *Store) OrderEventsAfter(ctx context.Context, orderID string, after, upTo int64, limit int) ([]OrderEvent, error) {
	var events []OrderEvent
	err := s.conn(ctx).Where("order_id = ? AND seq > ? AND seq <= ?", orderID, after, upTo).
		Order("seq").Limit(limit).Find(&events).Error
	return events, err
}

// OrderEventSeqs returns the event_seq of each of the orders that exists: the change feed's one
// read per poll of every order waited on.
func (s *Store) OrderEventSeqs(ctx context.Context, orderIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(orderIDs))
	for chunk := range slices.Chunk(orderIDs, 500) {
		var rows []struct {
			ID       string
			EventSeq int64
		}
		if err := s.conn(ctx).Model(&Order{}).Select("id", "event_seq").Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.ID] = r.EventSeq
		}
	}
	return out, nil
}

// OrderJobsByID returns the named jobs of the order (the others are left out), by ID.
func (s *Store) OrderJobsByID(ctx context.Context, orderID string, jobIDs []string) (map[string]*Job, error) {
	var jobs []Job
	if err := s.conn(ctx).Where("order_id = ? AND id IN ?", orderID, jobIDs).Find(&jobs).Error; err != nil {
		return nil, err
	}
	out := make(map[string]*Job, len(jobs))
	for i := range jobs {
		out[jobs[i].ID] = &jobs[i]
	}
	return out, nil
}

// PurgeEndedOrderEvents deletes up to limit rows of the change feed (order_events) of orders that
// ended before cutoff, oldest first, and returns how many it deleted. An order in progress keeps
// every row; an ended order's stream then answers only its end (engine.Feed.OrderEvents). The
// rows are taken in id order, the order they were written in, so a sweep reads the oldest first
// through the primary key.
func (s *Store) PurgeEndedOrderEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	var ids []int64
	err := s.conn(ctx).Table("order_events AS e").Select("e.id").
		Joins("JOIN orders o ON o.id = e.order_id").
		Where("o.status <> ? AND o.completed_at IS NOT NULL AND o.completed_at < ?", status.OrderInProgress, cutoff.UTC()).
		Order("e.id").Limit(limit).Pluck("e.id", &ids).Error
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	res := s.conn(ctx).Where("id IN ?", ids).Delete(&OrderEvent{})
	return res.RowsAffected, res.Error
}
