// Package retention removes generated files once they are older than the retention period
// (OUTPUT_RETENTION): it deletes each output's blob and marks its asset row purged. Every worker
// runs the sweep periodically; downloads of a purged file and POST /jobs/{id}/refresh-url then
// answer 410 outputs_purged. The same sweep deletes expired Idempotency-Key records, and the
// webhook log (events, deliveries and their attempts) past WEBHOOK_LOG_RETENTION, and the change
// feed of orders that ended before ORDER_EVENTS_RETENTION.
//
// A file that a live packshot points at (a packshot job's candidate that is pending or accepted,
// not archived) is kept: it feeds photo sessions. So is the image of an account's generated fashion
// model or scenery that is DONE: it is a reusable record, listed with that image. Rejected,
// deleted and archived packshots and failed or archived models and sceneries are purged like any
// output.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/shotflow/shotflow/internal/platform/blobstore"
	"github.com/shotflow/shotflow/internal/platform/metrics"
	"github.com/shotflow/shotflow/models"
)

// DefaultBatchSize is how many files one batch of a sweep looks at.
const DefaultBatchSize = 100

// DefaultWebhookBatchSize is how many webhook deliveries (with their attempts), or events, one
// transaction of the webhook log's sweep deletes: small enough that a large backlog never holds
// one long transaction.
const DefaultWebhookBatchSize = 500

// Purger purges output files older than Retention.
type Purger struct {
	Store     *models.Store
	Blobs     *blobstore.Store
	Log       *zap.Logger
	Retention time.Duration
	// WebhookLogRetention is how long webhook events and deliveries are kept (PurgeWebhookLog);
	// 0 leaves the webhook log alone.
	WebhookLogRetention time.Duration
	// OrderEventsRetention is how long ended orders' change feed is kept (PurgeOrderEvents); 0
	// leaves it alone.
	OrderEventsRetention time.Duration
	BatchSize            int              // 0: DefaultBatchSize (files); DefaultWebhookBatchSize (webhook rows)
	Now                  func() time.Time // nil: time.Now
	Metrics              *metrics.Metrics // counts the purged files; nil counts nothing
}

func (p *Purger) now() time.Time {
	if p.Now != nil {
		return p.Now().UTC()
	}
	return time.Now().UTC()
}

// Purge removes every stored output file created before now minus Retention and returns how many
// it purged. It is idempotent and safe to run from several workers at once: each file is purged in
// its own transaction that first locks the asset row, so a file is deleted once, and never after a
// packshot that points at it was accepted (POST /jobs/{id}/accept locks the same row).
func (p *Purger) Purge(ctx context.Context) (int, error) {
	if p.Retention <= 0 {
		return 0, fmt.Errorf("retention: period must be positive, got %v", p.Retention)
	}
	batch := p.BatchSize
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	cutoff := p.now().Add(-p.Retention)
	purged := 0
	var failures []error
	// Keyset pagination over (created_at, id): every pass moves forward, so files that are kept or
	// taken by another worker are looked at once per sweep.
	var after *models.Asset
	for {
		page, err := p.Store.PurgeableOutputs(ctx, cutoff, after, batch)
		if err != nil {
			return purged, errors.Join(append(failures, fmt.Errorf("retention: list outputs: %w", err))...)
		}
		for i := range page {
			ok, err := p.purgeOne(ctx, page[i].ID)
			if ctx.Err() != nil {
				return purged, ctx.Err()
			}
			if err != nil {
				// One file that cannot be purged must not hold back the others; the next sweep
				// tries it again. Give up when failures are all there is.
				failures = append(failures, err)
				if len(failures) >= batch {
					return purged, errors.Join(failures...)
				}
				continue
			}
			if ok {
				purged++
				p.Metrics.Purged(1)
			}
		}
		if len(page) < batch {
			return purged, errors.Join(failures...)
		}
		after = &page[len(page)-1]
	}
}

// PurgeIdempotencyKeys deletes the Idempotency-Key records of every installation that expired
// before now, and returns how many it deleted. A request with an expired key claims it afresh
// anyway; the sweep only keeps the table from growing.
func (p *Purger) PurgeIdempotencyKeys(ctx context.Context) (int64, error) {
	return p.Store.PurgeExpiredIdempotencyKeys(ctx, "", p.now())
}

// PurgeWebhookLog deletes the webhook deliveries created before now minus WebhookLogRetention that
// have ended (delivered, failed or held, with no start owed), with their attempts, and then the
// events as old none of whose deliveries is left, in batches of one transaction each; it returns
// what it deleted. A delivery that is pending or delivering (its workflow may still attempt it) or
// whose start is owed is kept, and so is its event, until it ends. Safe to run from several
// workers at once.
func (p *Purger) PurgeWebhookLog(ctx context.Context) (models.PurgedWebhookLog, error) {
	var total models.PurgedWebhookLog
	if p.WebhookLogRetention <= 0 {
		return total, fmt.Errorf("retention: webhook log period must be positive, got %v", p.WebhookLogRetention)
	}
	batch := p.BatchSize
	if batch <= 0 {
		batch = DefaultWebhookBatchSize
	}
	cutoff := p.now().Add(-p.WebhookLogRetention)
	for {
		n, err := p.Store.PurgeExpiredWebhookDeliveries(ctx, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("retention: delete webhook deliveries: %w", err)
		}
		total.Deliveries += n.Deliveries
		total.Attempts += n.Attempts
		p.Metrics.WebhookLogPurged(metrics.RetentionDelivery, n.Deliveries)
		p.Metrics.WebhookLogPurged(metrics.RetentionAttempt, n.Attempts)
		if n.Deliveries < int64(batch) {
			break
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
	for {
		n, err := p.Store.PurgeExpiredWebhookEvents(ctx, cutoff, batch)
		if err != nil {
			return total, fmt.Errorf("retention: delete webhook events: %w", err)
		}
		total.Events += n
		p.Metrics.WebhookLogPurged(metrics.RetentionEvent, n)
		if n < int64(batch) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// PurgeOrderEvents deletes the change feed (order_events) of orders that ended before now minus
// OrderEventsRetention, in batches of one statement each, and returns how many rows it deleted.
// Orders in progress keep theirs. Safe to run from several workers at once.
func (p *Purger) PurgeOrderEvents(ctx context.Context) (int64, error) {
	if p.OrderEventsRetention <= 0 {
		return 0, fmt.Errorf("retention: order events period must be positive, got %v", p.OrderEventsRetention)
	}
	batch := p.BatchSize
	if batch <= 0 {
		batch = DefaultWebhookBatchSize
	}
	cutoff := p.now().Add(-p.OrderEventsRetention)
	var total int64
	for {
		n, err := p.Store.PurgeEndedOrderEvents(ctx, cutoff, batch)
		total += n
		p.Metrics.OrderEventsPurged(n)
		if err != nil {
			return total, fmt.Errorf("retention: delete order events: %w", err)
		}
		if n < int64(batch) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// purgeOne deletes the blob of one output and marks it purged, unless it was purged meanwhile or
// a live packshot now points at it. The blob is deleted while the row is locked and before the
// row is marked, so a crash in between leaves a row that the next sweep purges again (deleting a
// missing blob is not an error), never a stored file marked purged.
func (p *Purger) purgeOne(ctx context.Context, id string) (bool, error) {
	purged := false
	err := p.Store.Tx(ctx, func(tx *models.Store) error {
		a, ok, err := tx.LockOutputForPurge(ctx, id)
		if err != nil || !ok {
			return err // nil: another worker purged it, or it is kept
		}
		if err := p.Blobs.Delete(ctx, a.BlobKey); err != nil {
			return fmt.Errorf("delete blob %s: %w", a.BlobKey, err)
		}
		if err := tx.MarkOutputPurged(ctx, id, p.now()); err != nil {
			return err
		}
		purged = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("retention: purge asset %s: %w", id, err)
	}
	return purged, nil
}

// Run purges outputs, expired Idempotency-Key records and (when their retentions are set) the
// webhook log and ended orders' change feed at once and then every interval until ctx ends;
// failures are logged and retried on the next tick.
func (p *Purger) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := p.Purge(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.Log.Warn("output retention sweep", zap.Error(err), zap.Int("purged", n))
		case n > 0:
			p.Log.Info("purged outputs past retention", zap.Int("purged", n), zap.Duration("retention", p.Retention))
		}
		if _, err := p.PurgeIdempotencyKeys(ctx); err != nil && ctx.Err() == nil {
			p.Log.Warn("idempotency key sweep", zap.Error(err))
		}
		if p.WebhookLogRetention > 0 {
			n, err := p.PurgeWebhookLog(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				p.Log.Warn("webhook log retention sweep", zap.Error(err), zap.Int64("deliveries", n.Deliveries), zap.Int64("events", n.Events))
			case n.Deliveries > 0 || n.Events > 0:
				p.Log.Info("deleted webhook log past retention", zap.Int64("deliveries", n.Deliveries), zap.Int64("attempts", n.Attempts),
					zap.Int64("events", n.Events), zap.Duration("retention", p.WebhookLogRetention))
			}
		}
		if p.OrderEventsRetention > 0 {
			n, err := p.PurgeOrderEvents(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				p.Log.Warn("order events retention sweep", zap.Error(err), zap.Int64("deleted", n))
			case n > 0:
				p.Log.Info("deleted ended orders' events past retention", zap.Int64("deleted", n), zap.Duration("retention", p.OrderEventsRetention))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
