package runner

import (
	"context"
	"errors"
	"fmt"
)

// Error is an error that carries a reason code. Stages return it when they
// cannot evaluate at all; the runner and action/ branch on the code, never on
// the message.
type Error struct {
	Reason Reason
	err    error
}

// Errorf builds an *Error; format follows fmt.Errorf, so %w wraps.
func Errorf(r Reason, format string, a ...any) error {
	return &Error{Reason: r, err: fmt.Errorf(format, a...)}
}

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

// ReasonOf returns the reason code carried by err or anything it wraps.
// Cancellation is recognised even when a dependency did not wrap it in an
// *Error, so an interrupted run is never reported as an internal bug.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return RunCancelled
	}
	return InternalError
}
