package audit

import "strings"

// csvText is a text cell as the CSV writers write it. Cells come from the
// change under review (contract ids, approver logins, reasons), and a
// spreadsheet runs a cell that starts with =, +, -, @, a tab or a carriage
// return as a formula (=HYPERLINK(…) leaks data when clicked, DDE runs
// commands): following OWASP's CSV injection guidance, such a cell gets a
// leading single quote, which spreadsheets read as "this is text".
// encoding/csv does the quoting. Numbers and times Nova formats itself
// are not text cells, and JSON Lines keeps every value as it is.
func csvText(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}
