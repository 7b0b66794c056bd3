# The consumer's contract policies: `conftest test --namespace contract -p
# policy .nova/contract.yml` evaluates them as Nova does before plan.
package contract

deny contains msg if {
	not input.inputs.owner
	msg := "inputs.owner must name the owning team"
}

warn contains msg if {
	not input.nfr.availability
	msg := "declare nfr.availability so the NFR stage can check it"
}
