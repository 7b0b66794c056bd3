package runner

import (
	"context"
	"errors"
)

// Tee records each event with every recorder in order, stopping at the
// first failure: a run that cannot put an event where it must (the
// evidence repo before apply) stops, even if an earlier copy was written.
type Tee []Recorder

var (
	_ Recorder          = Tee(nil)
	_ CanonicalRecorder = Tee(nil)
	_ ChainHeader       = Tee(nil)
	_ Flusher           = Tee(nil)
)

// Record implements Recorder.
func (t Tee) Record(ctx context.Context, e Event) error {
	for _, r := range t {
		if err := r.Record(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// RecordCanonical implements CanonicalRecorder, handing canonical to
// every recorder that takes it.
func (t Tee) RecordCanonical(ctx context.Context, e Event, canonical []byte) error {
	for _, r := range t {
		if err := record(ctx, r, e, canonical); err != nil {
			return err
		}
	}
	return nil
}

// ChainHead implements ChainHeader with the first recorder that knows the
// chain: the evidence repo is its authority, a local log is not.
func (t Tee) ChainHead(ctx context.Context, contractID string) (int64, string, error) {
	for _, r := range t {
		if h, ok := r.(ChainHeader); ok {
			return h.ChainHead(ctx, contractID)
		}
	}
	return 0, "", nil
}

// Flush implements Flusher with every recorder that buffers.
func (t Tee) Flush(ctx context.Context, contractID string) error {
	var errs []error
	for _, r := range t {
		if f, ok := r.(Flusher); ok {
			errs = append(errs, f.Flush(ctx, contractID))
		}
	}
	return errors.Join(errs...)
}
