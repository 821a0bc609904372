-- Webhook retention: dispatched outbox events and finished deliveries are
-- deleted, oldest first, some time after they stopped changing.

-- Finished deliveries, oldest last change first.
CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (updated_at, id)
    WHERE status IN ('succeeded', 'failed');

-- Dispatched events, earliest dispatch first.
CREATE INDEX outbox_events_dispatched_idx ON outbox_events (dispatched_at, id)
    WHERE dispatched_at IS NOT NULL;

-- Whether a pending delivery still refers to an event.
CREATE INDEX webhook_deliveries_pending_event_idx ON webhook_deliveries (event_id)
    WHERE status = 'pending';
