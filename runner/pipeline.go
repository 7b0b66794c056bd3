package runner

import (
	"context"
	"encoding/json"
	"time"
)

// Pipeline walks an ordered slice of stages, records one event per stage and
// stops at the first stage whose verdict is not pass.
type Pipeline struct {
	Stages []Stage
	Events *Emitter
	// Now is the clock used for stage durations; nil means time.Now.
	Now func() time.Time
	// OnResult, when set, sees each result as soon as its event is recorded
	// (progress lines).
	OnResult func(Result)
	// Finally, when set, runs once the run's outcome is recorded and
	// before the workspace lets go of the run lock, so what it records
	// (outcomes derived from the chain) is made visible with the outcome
	// in one push rather than in another after it.
	Finally func(ctx context.Context, st *State)
}

// Outcome is the end state of a run.
type Outcome struct {
	Results []Result `json:"stages"`
	// Verdict is the last stage's verdict: pass only when every stage passed.
	Verdict Verdict `json:"verdict"`
	// Reason is the first finding's code of the stage that stopped the run.
	Reason Reason `json:"reason,omitempty"`
}

// StageEventData is the data of every stage event: the stage's own payload
// (Result) beside the verdict and findings that explain it. DecodeEventData
// reads the payload back.
type StageEventData struct {
	Stage      string          `json:"stage"`
	Verdict    Verdict         `json:"verdict"`
	Summary    string          `json:"summary"`
	DurationMs int64           `json:"durationMs"`
	Findings   []Finding       `json:"findings,omitempty"`
	PCRs       []PCR           `json:"pcrs,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
}

// Run executes the stages in order against st. The workspace a stage left
// open in st is closed when the run ends, however it ends.
func (p *Pipeline) Run(ctx context.Context, st *State) Outcome {
	defer func() {
		for _, stage := range p.Stages {
			if pr, ok := stage.(Preparer); ok {
				pr.Abandon(st)
			}
		}
		if p.Finally != nil {
			p.Finally(context.WithoutCancel(ctx), st)
		}
		if st.Workspace != nil {
			p.flushOutcome(ctx, st)
			_ = st.Workspace.Close()
			st.Workspace = nil
		}
	}()
	now := p.Now
	if now == nil {
		now = time.Now
	}
	var out Outcome
	for i, stage := range p.Stages {
		if err := ctx.Err(); err != nil {
			res := erroredResult(stage.Name(), Errorf(RunCancelled, "run cancelled before stage %s: %w", stage.Name(), err))
			return p.finish(ctx, st, out, res)
		}
		start := now()
		res, err := stage.Run(ctx, st)
		if err != nil {
			// The follow-up events survive: a stage that cannot finish may
			// still know what must be on record (an apply whose outcome is
			// unknown).
			also := res.Also
			res = erroredResult(stage.Name(), err)
			res.Also = also
		}
		res.Stage = stage.Name()
		res.Duration = now().Sub(start)
		if res.Verdict == "" {
			res = erroredResult(stage.Name(), Errorf(InternalError, "stage %s returned no verdict", stage.Name()))
		}
		if res.Verdict != Pass {
			return p.finish(ctx, st, out, res)
		}
		if !res.Done {
			// Before the event's fsync, which the preparing work does not
			// need to wait for.
			p.prepare(ctx, st, i+1)
		}
		if err := p.record(ctx, st, &res); err != nil {
			return p.finish(ctx, st, out, erroredResult(stage.Name(), err))
		}
		if err := p.recordAlso(ctx, st, res.Also); err != nil {
			return p.finish(ctx, st, out, erroredResult(stage.Name(), err))
		}
		st.Completed = append(st.Completed, stage.Name())
		out.Results = append(out.Results, res)
		p.progress(res)
		if res.Done {
			break
		}
	}
	out.Verdict = Pass
	return out
}

// prepare offers the state to the stages from index next on that can
// start ahead of their turn.
func (p *Pipeline) prepare(ctx context.Context, st *State, next int) {
	for _, stage := range p.Stages[next:] {
		if pr, ok := stage.(Preparer); ok {
			pr.Prepare(ctx, st)
		}
	}
}

// finish records the result that stopped the run. A failure event is written
// even when the run's context is already cancelled: an interrupted run must
// still leave a trace.
func (p *Pipeline) finish(ctx context.Context, st *State, out Outcome, res Result) Outcome {
	if err := p.record(context.WithoutCancel(ctx), st, &res); err != nil {
		if res.Verdict != Errored {
			res = erroredResult(res.Stage, err)
		}
	} else if err := p.recordAlso(context.WithoutCancel(ctx), st, res.Also); err != nil {
		res = erroredResult(res.Stage, err)
	}
	out.Results = append(out.Results, res)
	out.Verdict = res.Verdict
	if len(res.Findings) > 0 {
		out.Reason = res.Findings[0].Reason
	}
	p.progress(res)
	return out
}

func (p *Pipeline) record(ctx context.Context, st *State, res *Result) error {
	if p.Events == nil {
		return nil
	}
	typ := res.Event
	switch {
	case res.Verdict == Fail || res.Verdict == Errored:
		typ = EventRunFailed
	case typ == "":
		typ = "nova." + res.Stage + ".completed"
	}
	var result json.RawMessage
	if res.Data != nil {
		raw, err := json.Marshal(res.Data)
		if err != nil {
			return Errorf(EventWriteFailed, "encoding %s result: %w", res.Stage, err)
		}
		result = raw
	}
	contractID, env := contractOf(st)
	_, err := p.Events.Emit(ctx, typ, contractID, env, StageEventData{
		Stage:      res.Stage,
		Verdict:    res.Verdict,
		Summary:    res.Summary,
		DurationMs: res.Duration.Milliseconds(),
		Findings:   res.Findings,
		PCRs:       res.PCRs,
		Result:     result,
	})
	return err
}

func (p *Pipeline) recordAlso(ctx context.Context, st *State, specs []EventSpec) error {
	if p.Events == nil {
		return nil
	}
	contractID, env := contractOf(st)
	for _, spec := range specs {
		if _, err := p.Events.Emit(ctx, spec.Type, contractID, env, spec.Data); err != nil {
			return err
		}
	}
	return nil
}

// flushOutcome makes an authorized run's outcome visible before the
// workspace lets go of the run lock: the next run of the contract, on any
// machine, would otherwise find the authorization without its outcome and
// hold the environment as indeterminate. A failed push leaves the events
// durable in the recorder's outbox, and whoever drains it reports it.
func (p *Pipeline) flushOutcome(ctx context.Context, st *State) {
	if p.Events == nil || st.Authorization == nil || st.Contract == nil {
		return
	}
	_ = p.Events.Flush(context.WithoutCancel(ctx), st.Contract.ID)
}

func contractOf(st *State) (string, Environment) {
	if st.Contract == nil {
		return "", ""
	}
	return st.Contract.ID, st.Contract.Environment
}

func (p *Pipeline) progress(res Result) {
	if p.OnResult != nil {
		p.OnResult(res)
	}
}

func erroredResult(stage string, err error) Result {
	return Result{
		Stage:    stage,
		Verdict:  Errored,
		Summary:  err.Error(),
		Findings: []Finding{{Reason: ReasonOf(err), Message: err.Error()}},
	}
}
