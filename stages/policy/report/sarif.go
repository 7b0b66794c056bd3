package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/nova-platform/nova/runner"
)

// sarifLevel maps a severity to SARIF's result level.
var sarifLevel = map[runner.Severity]string{
	runner.Critical: "error", runner.High: "error", runner.Medium: "warning", runner.Low: "note", runner.Info: "note",
}

// securitySeverity is GitHub code scanning's numeric severity (0.0–10.0):
// 9.0 and above shows as critical, 7.0 high, 4.0 medium, below that low.
var securitySeverity = map[runner.Severity]string{
	runner.Critical: "9.5", runner.High: "8.0", runner.Medium: "5.5", runner.Low: "3.0", runner.Info: "0.0",
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	ShortDescription     sarifText      `json:"shortDescription"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level      string         `json:"level"`
	Message    sarifText      `json:"message"`
	Descriptor *sarifRef      `json:"descriptor,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifRef struct {
	ID string `json:"id"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Kind                string            `json:"kind"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifText     `json:"message,omitempty"`
	Properties       map[string]any `json:"properties,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// WriteSARIF renders failing records as SARIF 2.1.0 results, for a
// code-scanning upload. Records that could not evaluate (error, skipped)
// become tool execution notifications; passes are left out.
func WriteSARIF(w io.Writer, pcrs []runner.PCR, opts Options) error {
	run := sarifRun{
		Tool:        sarifTool{Driver: sarifDriver{Name: "nova", InformationURI: "https://github.com/nova-platform/nova", Version: opts.Version, Rules: []sarifRule{}}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: true}},
		Results:     []sarifResult{},
	}
	ruleIndex := map[string]int{}
	for _, p := range sorted(pcrs) {
		switch p.Result {
		case runner.PCRError, runner.PCRSkipped:
			level := "note"
			if p.Result == runner.PCRError {
				level = "error"
			}
			run.Invocations[0].ToolExecutionNotifications = append(run.Invocations[0].ToolExecutionNotifications, sarifNotification{
				Level: level, Message: sarifText{p.Message}, Descriptor: &sarifRef{p.RuleID},
				Properties: map[string]any{"engine": p.Engine, "result": p.Result},
			})
			continue
		case runner.PCRPass:
			continue
		}
		idx, ok := ruleIndex[p.RuleID]
		if !ok {
			idx = len(run.Tool.Driver.Rules)
			ruleIndex[p.RuleID] = idx
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
				ID: p.RuleID, ShortDescription: sarifText{p.RuleID},
				DefaultConfiguration: sarifConfig{sarifLevel[p.Severity]},
				Properties: map[string]any{
					"security-severity": securitySeverity[p.Severity],
					"tags":              []string{"security", "nova", p.Engine},
				},
			})
		}
		run.Results = append(run.Results, sarifResult{
			RuleID: p.RuleID, RuleIndex: idx, Kind: "fail", Level: sarifLevel[p.Severity],
			Message:             sarifText{p.Message},
			Locations:           sarifLocations(p, opts),
			PartialFingerprints: map[string]string{"novaRuleResource/v1": fingerprint(p)},
			Properties:          map[string]any{"engine": p.Engine, "severity": p.Severity, "resourceRef": p.ResourceRef},
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}

// sarifLocations places a record in a file: the contract field it names, or
// else the contract's stack field, the line that chose the instances and
// resources the record is about. The resource itself is the logical
// location.
func sarifLocations(p runner.PCR, opts Options) []sarifLocation {
	loc := sarifLocation{}
	file, line, ok := locate(opts, p.ResourceRef)
	if !ok {
		file, line, ok = locate(opts, "contract:/stack")
	}
	if !ok && opts.ContractFile != "" {
		file, line, ok = opts.ContractFile, 1, true
	}
	if ok {
		loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtifact{URI: file}, Region: &sarifRegion{StartLine: max(line, 1)}}
	}
	if p.ResourceRef != "" {
		loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: p.ResourceRef, Kind: "resource"}}
	}
	if loc.PhysicalLocation == nil && loc.LogicalLocations == nil {
		return nil
	}
	return []sarifLocation{loc}
}

// fingerprint identifies a finding across runs, so code scanning tracks one
// alert per rule and resource rather than one per upload.
func fingerprint(p runner.PCR) string {
	sum := sha256.Sum256([]byte(p.RuleID + "\x00" + p.ResourceRef))
	return hex.EncodeToString(sum[:16])
}
