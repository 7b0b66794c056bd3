package actrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	runnerv1 "code.gitea.io/actions-proto-go/runner/v1"
	"code.gitea.io/actions-proto-go/runner/v1/runnerv1connect"
	"connectrpc.com/connect"
	"github.com/nektos/act/pkg/model"
	"github.com/nektos/act/pkg/runner"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// minMaskedLine is the shortest line of a multi-line secret masked on its
// own: act masks a secret's whole value, but a job prints a PEM key line
// by line, and masking every short line would mask ordinary words.
const minMaskedLine = 8

// reporter turns act's log entries for one task into the log rows and
// step states Gitea keeps, and sends them. It is act's job logger (a
// logrus hook on a logger that writes nowhere else).
type reporter struct {
	client runnerv1connect.RunnerServiceClient
	taskID int64
	cancel context.CancelFunc
	echo   func(lines ...string)

	mu      sync.Mutex
	masks   []string
	steps   map[string]int // act's step id to the step's index in the job
	rows    []*runnerv1.LogRow
	acked   int // rows Gitea has stored
	state   *runnerv1.TaskState
	outputs map[string]string
	// closed is set once the final rows are written: act may still log
	// after its executor returned, but Gitea takes no rows after the log
	// is marked complete.
	closed bool
}

func newReporter(client runnerv1connect.RunnerServiceClient, task *runnerv1.Task, cancel context.CancelFunc, echo func(...string)) *reporter {
	return &reporter{
		client: client, taskID: task.GetId(), cancel: cancel, echo: echo,
		steps: map[string]int{},
		state: &runnerv1.TaskState{Id: task.GetId(), StartedAt: timestamppb.Now()},
	}
}

// setSteps names the job's steps the way act's step logger does: by id,
// or by index when a step has none. Gitea made a step record for each.
func (r *reporter) setSteps(job *model.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.Steps = nil
	for i, s := range job.Steps {
		id := strconv.Itoa(i)
		if s != nil && s.ID != "" {
			id = s.ID
		}
		r.steps[id] = i
		r.state.Steps = append(r.state.Steps, &runnerv1.StepState{Id: int64(i)})
	}
}

func (r *reporter) addMasks(secrets map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range secrets {
		if v == "" {
			continue
		}
		r.masks = append(r.masks, v)
		if strings.Contains(v, "\n") {
			for _, line := range strings.Split(v, "\n") {
				if line = strings.TrimSpace(line); len(line) >= minMaskedLine {
					r.masks = append(r.masks, line)
				}
			}
		}
	}
	// Longest first, so a line of a key never leaves the rest of the key
	// unmasked around it.
	slices.SortFunc(r.masks, func(a, b string) int { return len(b) - len(a) })
}

func (r *reporter) setOutputs(outputs map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outputs = maps.Clone(outputs)
}

// WithJobLogger is act's JobLoggerFactory: the logger of the job's
// entries, each of which goes to Fire.
func (r *reporter) WithJobLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	// Debug, because act reports skipped steps and jobs at that level.
	l.SetLevel(logrus.DebugLevel)
	l.AddHook(r)
	return l
}

func (r *reporter) Levels() []logrus.Level { return logrus.AllLevels }

// Fire records one entry of act's job logger: a row of the log unless it
// is debug noise, and the start, extent and result of the step it
// belongs to.
func (r *reporter) Fire(e *logrus.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var extra []string
	if e.Context != nil {
		extra = *runner.Masks(e.Context)
	}
	msg := r.mask(e.Message, extra)
	if r.closed {
		r.echo(msg)
		return nil
	}
	at := timestamppb.New(e.Time)
	var step *runnerv1.StepState
	if i := r.stepOf(e); i >= 0 {
		step = r.state.Steps[i]
		if step.StartedAt == nil {
			step.StartedAt = at
			step.LogIndex = int64(len(r.rows))
		}
	}
	if e.Level <= logrus.InfoLevel {
		r.addRows(at, msg)
		if step != nil {
			step.LogLength = int64(len(r.rows)) - step.LogIndex
		}
	}
	if v, ok := e.Data["stepResult"]; ok && step != nil {
		step.Result = stepResult(fmt.Sprint(v))
		step.StoppedAt = at
	}
	return nil
}

// stepOf is the index of the step an entry belongs to, or -1 for the
// job's own entries. Only a step's main stage counts: Gitea shows a step
// as one contiguous range of rows, and post stages run after later steps.
func (r *reporter) stepOf(e *logrus.Entry) int {
	if stage, _ := e.Data["stage"].(string); stage != "Main" {
		return -1
	}
	ids, _ := e.Data["stepID"].([]string)
	if len(ids) == 0 {
		return -1
	}
	if i, ok := r.steps[ids[0]]; ok && i < len(r.state.Steps) {
		return i
	}
	return -1
}

func (r *reporter) mask(s string, extra []string) string {
	for _, m := range r.masks {
		s = strings.ReplaceAll(s, m, "***")
	}
	for _, m := range extra {
		if m != "" {
			s = strings.ReplaceAll(s, m, "***")
		}
	}
	return s
}

// addRows appends msg, one row a line; the caller holds mu.
func (r *reporter) addRows(at *timestamppb.Timestamp, msg string) {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	for _, line := range lines {
		r.rows = append(r.rows, &runnerv1.LogRow{Time: at, Content: line})
	}
	r.echo(lines...)
}

// logf adds a row of the runner's own to the job's log.
func (r *reporter) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addRows(timestamppb.Now(), r.mask(fmt.Sprintf(format, args...), nil))
}

// start sends the log and step states every flushInterval while the task
// runs, as act_runner does, so Gitea shows progress and does not take the
// task for abandoned. The returned function stops it and waits.
func (r *reporter) start(ctx context.Context) func() {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(flushInterval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				callCtx, cancel := context.WithTimeout(ctx, rpcTimeout)
				if err := r.flush(callCtx, false); err != nil && ctx.Err() == nil {
					r.echo("actrunner: " + err.Error())
				}
				cancel()
			}
		}
	}()
	return func() {
		stop()
		<-done
	}
}

// close sets the task's result, settles the steps that never finished and
// sends everything, the log first and marked complete, as act_runner
// does. It reports with a context of its own: the task's may be cancelled.
func (r *reporter) close(jobResult string, runErr error, cancelled bool) error {
	r.mu.Lock()
	now := timestamppb.Now()
	result := taskResult(jobResult, runErr, cancelled)
	if runErr != nil {
		r.addRows(now, r.mask("actrunner: "+runErr.Error(), nil))
	} else if jobResult == "" {
		r.addRows(now, "actrunner: act ran no job (does a label of runs-on map to a platform?)")
	}
	for _, s := range r.state.Steps {
		switch {
		case s.Result != runnerv1.Result_RESULT_UNSPECIFIED:
		case s.StartedAt == nil:
			s.Result = runnerv1.Result_RESULT_SKIPPED
		default:
			s.Result, s.StoppedAt = runnerv1.Result_RESULT_CANCELLED, now
		}
	}
	r.state.Result, r.state.StoppedAt = result, now
	r.addRows(now, "actrunner: task "+strconv.FormatInt(r.taskID, 10)+" "+strings.ToLower(strings.TrimPrefix(result.String(), "RESULT_")))
	r.closed = true
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	return r.flush(ctx, true)
}

// flush sends the rows Gitea has not acknowledged, then the task state
// with the job's outputs. With noMore the log is complete and Gitea moves
// it to its log storage; the final state goes even when the log could not,
// so Gitea never keeps a finished task running. A cancellation Gitea
// answers with cancels the task.
func (r *reporter) flush(ctx context.Context, noMore bool) error {
	logErr := r.sendLog(ctx, noMore)
	if logErr != nil && !noMore {
		return logErr
	}
	r.mu.Lock()
	state := proto.Clone(r.state).(*runnerv1.TaskState)
	outputs := maps.Clone(r.outputs)
	r.mu.Unlock()
	res, err := r.client.UpdateTask(ctx, connect.NewRequest(&runnerv1.UpdateTaskRequest{State: state, Outputs: outputs}))
	if err != nil {
		return errors.Join(logErr, fmt.Errorf("sending the state of task %d: %w", r.taskID, err))
	}
	if res.Msg.GetState().GetResult() == runnerv1.Result_RESULT_CANCELLED {
		r.cancel()
	}
	return logErr
}

// sendLog sends the rows from the first one Gitea has not acknowledged.
// Gitea acknowledges by index and skips rows it already has, so a row
// whose answer was lost is simply sent again.
func (r *reporter) sendLog(ctx context.Context, noMore bool) error {
	const attempts = 3
	for range attempts {
		r.mu.Lock()
		start := r.acked
		rows := slices.Clone(r.rows[start:])
		r.mu.Unlock()
		if len(rows) == 0 {
			return nil
		}
		res, err := r.client.UpdateLog(ctx, connect.NewRequest(&runnerv1.UpdateLogRequest{
			TaskId: r.taskID, Index: int64(start), Rows: rows, NoMore: noMore,
		}))
		if err != nil {
			return fmt.Errorf("sending the log of task %d: %w", r.taskID, err)
		}
		r.mu.Lock()
		if ack := int(res.Msg.GetAckIndex()); ack > r.acked {
			r.acked = ack
		}
		r.mu.Unlock()
		if !noMore {
			return nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.acked < len(r.rows) {
		return fmt.Errorf("gitea stored %d of the %d log rows of task %d", r.acked, len(r.rows), r.taskID)
	}
	return nil
}

// taskResult is the result Gitea records for a job act finished with
// jobResult and runErr.
func taskResult(jobResult string, runErr error, cancelled bool) runnerv1.Result {
	switch {
	case cancelled:
		return runnerv1.Result_RESULT_CANCELLED
	case runErr == nil && jobResult == "success":
		return runnerv1.Result_RESULT_SUCCESS
	case runErr == nil && jobResult == "skipped":
		return runnerv1.Result_RESULT_SKIPPED
	}
	return runnerv1.Result_RESULT_FAILURE
}

// stepResult is the Result of act's step outcome.
func stepResult(outcome string) runnerv1.Result {
	switch outcome {
	case "success":
		return runnerv1.Result_RESULT_SUCCESS
	case "skipped":
		return runnerv1.Result_RESULT_SKIPPED
	}
	return runnerv1.Result_RESULT_FAILURE
}
