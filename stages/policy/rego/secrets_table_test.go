package rego

import (
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// secretCases are values as a contract might carry them, under a neutral
// input name unless the case is about the name. Positives are credentials
// in the forms that slipped through before (key=value, URLs with a
// password, an AWS secret access key next to its name) and the vendor
// formats; negatives are the near misses a real contract holds: references,
// placeholders, URLs without passwords, ordinary words.
var secretCases = []struct {
	key, value string
	secret     bool
}{
	// Positives.
	{"note", "password=hunter2", true},
	{"note", "PASSWORD = hunter2", true},
	{"note", "db_password: s3cr3t!", true},
	{"note", "pwd=Tr0ub4dor&3", true},
	{"note", "passphrase=correct-horse-battery", true},
	{"note", "secret=abc123def", true},
	{"note", "client_secret=9f8e7d6c5b4a", true},
	{"note", "api_key=AIzaSyD-abcdef123456", true},
	{"note", "apikey: 0123456789abcdef", true},
	{"note", "access_key=AKIDEXAMPLE0123", true},
	{"note", "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
	{"note", "auth_token=eyJhbGciOiJIUzI1NiJ9", true},
	{"note", "token: 1234abcd5678efgh", true},
	{"flags", "--user admin --password=hunter2", true},
	{"conn", "Server=db;User Id=sa;Password=Pa55word;", true},
	{"dsn", "postgres://admin:S3cret@db.internal/app", true},
	{"dsn", "mysql://root:toor@127.0.0.1:3306/mysql", true},
	{"url", "https://deploy:ghp_notreally@github.com/org/repo.git", true},
	{"url", "redis://:sup3rsecret@cache:6379/0", true},
	{"url", "amqp://guest:gu3st-pw@rabbit:5672/", true},
	{"note", "aws secret: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", true},
	{"note", "the token is Zx9Qw2Lp8Rt4Yu6Io0Pa1Sd3Fg", true},
	{"note", "AKIAABCDEFGHIJKLMNOP", true},
	{"note", "ASIAQWERTYUIOPASDFGH", true},
	{"note", "-----BEGIN RSA PRIVATE KEY-----\nMIIE...", true},
	{"note", "-----BEGIN OPENSSH PRIVATE KEY-----", true},
	{"note", "ghp_0123456789abcdefghijklmnopqrstuvwxyz", true},
	{"note", "xoxb-123456789012-abcdefghij", true},
	{"note", "glpat-abcdefghij0123456789", true},
	{"db_password", "hunter2", true},
	{"api_token", "abc", true},
	{"smtp_passwd", "mailpass", true},
	{"client_secret", "0123456789", true},
	{"private_key", "whatever", true},
	// Negatives.
	{"note", "password=", false},
	{"note", "password=${var.db_password}", false},
	{"note", "password=$DB_PASSWORD", false},
	{"note", "password=<set in vault>", false},
	{"note", "password=changeme", false},
	{"note", "password=xxxx", false},
	{"note", "password=***", false},
	{"note", "passwordless=true", false},
	{"note", "password_min_length=12", false},
	{"note", "token_ttl=3600", false},
	{"note", "secret_name=prod/db", false},
	{"note", "rotate the secret every 30 days", false},
	{"note", "use a token from the vault", false},
	{"note", "the password policy requires symbols", false},
	{"dsn", "postgres://db.internal:5432/app", false},
	{"dsn", "postgres://admin@db.internal/app", false},
	{"url", "https://github.com/org/repo.git", false},
	{"url", "git@github.com:org/repo.git", false},
	{"url", "https://${user}:${pass}@host/repo", false},
	{"url", "https://example.com/a:b@c", false}, // a path, not userinfo
	{"note", "AKIA", false},
	{"note", "AKIAabcdefghijklmnop", false},
	{"note", "-----BEGIN PUBLIC KEY-----", false},
	{"note", "-----BEGIN CERTIFICATE-----", false},
	{"note", "ghp_short", false},
	{"note", "token: abc", false},
	{"note", "the token is hello_world_this_is_long", false},
	{"note", "the secret is ALLUPPERCASEBUTNODIGITSXX", false},
	{"db_password_arn", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db", false},
	{"db_password", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db", false},
	{"api_token", "ssm:/prod/api-token", false},
	{"secret_name", "prod/db", false},
	{"greeting", "Hello, world!", false},
	{"audience", "world", false},
	{"bucket", "my-company-assets-eu-west-1", false},
	{"kms_key_arn", "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", false},
	{"image", "ghcr.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", false},
}

func TestSecretsRuleTable(t *testing.T) {
	positives, negatives := 0, 0
	for _, c := range secretCases {
		if c.secret {
			positives++
		} else {
			negatives++
		}
	}
	if positives < 30 || negatives < 30 {
		t.Fatalf("%d positives and %d negatives; the table needs at least 30 of each", positives, negatives)
	}
	e := newEngine(t)
	for _, c := range secretCases {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			p := runner.PolicyPayload{Phase: runner.PrePlan,
				Contract: &runner.Contract{ID: "0c0ffee0-1111-4222-8333-444455556666", Environment: runner.Dev, Inputs: map[string]any{c.key: c.value}},
				Target:   &runner.TargetStack{}}
			failed := false
			for _, r := range evaluate(t, e, p) {
				if r.RuleID != "nova.secrets.plaintext" {
					continue
				}
				if r.Result == runner.PCRFail {
					failed = true
				}
				if r.Result == runner.PCRError {
					t.Fatalf("rule errored: %s", r.Message)
				}
				if c.secret && len(c.value) >= 6 && (strings.Contains(r.Message, c.value) || strings.Contains(string(r.Evidence), c.value)) {
					t.Errorf("the record quotes the value: %s %s", r.Message, r.Evidence)
				}
			}
			if failed != c.secret {
				t.Errorf("secret found = %v, want %v", failed, c.secret)
			}
		})
	}
}
